// tests/llm/qwen3_vocab.cpp: see qwen3_vocab.h.
#include "llm/qwen3_vocab.h"

#include <string>

#include <unistd.h>

#include "support/llama_oracle.h"
#include "tempra/core/error.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/llm/model/synth.h"

namespace tempra::testing {

void write_qwen3_vocab_gguf(const std::filesystem::path& path, const std::filesystem::path& tokenizer_json,
                            const std::string& pre) {
  check(std::filesystem::exists(tokenizer_json), "qwen3_vocab", "cannot read ", tokenizer_json.string(),
        ": run tools/oracle/install.sh");
  io::GgufWriter w;
  auto& m = w.metadata();
  m.add("general.architecture", {std::string("qwen3")});
  m.add("general.name", {std::string("tempra-qwen3-vocab")});
  m.add("qwen3.block_count", {uint32_t{1}});
  m.add("qwen3.context_length", {uint32_t{4096}});
  m.add("qwen3.embedding_length", {uint32_t{64}});
  m.add("qwen3.feed_forward_length", {uint32_t{128}});
  m.add("qwen3.attention.head_count", {uint32_t{2}});
  m.add("qwen3.attention.head_count_kv", {uint32_t{1}});
  m.add("qwen3.attention.key_length", {uint32_t{32}});
  m.add("qwen3.attention.value_length", {uint32_t{32}});
  m.add("qwen3.rope.freq_base", {1000000.0f});
  m.add("qwen3.attention.layer_norm_rms_epsilon", {1e-6f});
  // The converter's tokenizer keys, shared with the model synthesizer (llm/synth.h).
  llm::add_qwen3_tokenizer_metadata(m, tokenizer_json.parent_path(), kQwen3VocabSize);
  m.set("tokenizer.ggml.pre", {pre});
  w.write(path);
}

Qwen3Vocab load_qwen3_vocab(const std::filesystem::path& tokenizer_json, const std::string& pre) {
  namespace fs = std::filesystem;
  init_llama();
  const fs::path dir = fs::temp_directory_path() / ("tempra-qwen3-vocab-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path gguf = dir / ("qwen3-vocab-" + pre + ".gguf");
  write_qwen3_vocab_gguf(gguf, tokenizer_json, pre);
  Qwen3Vocab q;
  q.tokenizer = std::make_unique<llm::Tokenizer>(llm::Tokenizer::from_gguf(io::GgufFile::open(gguf)));
  llama_model_params params = llama_model_default_params();
  params.vocab_only = true;
  q.model = llama_model_load_from_file(gguf.c_str(), params);
  if (q.model) q.vocab = llama_model_get_vocab(q.model);
  fs::remove_all(dir);
  return q;
}

}  // namespace tempra::testing
