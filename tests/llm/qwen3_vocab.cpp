// tests/llm/qwen3_vocab.cpp: see qwen3_vocab.h.
#include "llm/qwen3_vocab.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tempra/core/error.h"
#include "tempra/io/gguf_writer.h"

namespace tempra::testing {
namespace {

using io::GgufArray;
using io::GgufValue;

constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;

bool looks_special(const std::string& text) {  // conversion/base.py, does_token_look_special
  const auto wrapped = [&](std::string_view open, std::string_view close) {
    return text.size() >= open.size() + close.size() && text.starts_with(open) && text.ends_with(close);
  };
  return text == "<pad>" || text == "<mask>" || text == "<2mass>" || text == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wrapped("<unused", ">");
}

}  // namespace

void write_qwen3_vocab_gguf(const std::filesystem::path& path, const std::filesystem::path& tokenizer_json) {
  std::ifstream in(tokenizer_json, std::ios::binary);
  check(bool(in), "qwen3_vocab", "cannot read ", tokenizer_json.string(), ": run tools/oracle/install.sh");
  const nlohmann::json json = nlohmann::json::parse(in);

  std::vector<std::string> tokens(kQwen3VocabSize);
  std::vector<int32_t> types(kQwen3VocabSize, kUnused);
  std::vector<bool> present(kQwen3VocabSize, false);
  for (const auto& [text, id] : json.at("model").at("vocab").items()) {
    const int32_t i = id.get<int32_t>();
    tokens.at(i) = text;
    types[i] = kNormal;
    present[i] = true;
  }
  for (const auto& added : json.at("added_tokens")) {
    const int32_t i = added.at("id").get<int32_t>();
    tokens.at(i) = added.at("content").get<std::string>();
    types[i] = added.at("special").get<bool>() || looks_special(tokens[i]) ? kControl : kUserDefined;
    present[i] = true;
  }
  for (int32_t i = 0; i < kQwen3VocabSize; ++i)
    if (!present[i]) tokens[i] = "[PAD" + std::to_string(i) + "]";

  std::vector<std::string> merges;
  merges.reserve(json.at("model").at("merges").size());
  for (const auto& merge : json.at("model").at("merges")) {
    if (merge.is_string()) {
      merges.push_back(merge.get<std::string>());
    } else {
      std::string joined = merge.at(0).get<std::string>();
      joined += ' ';
      joined += merge.at(1).get<std::string>();
      merges.push_back(std::move(joined));
    }
  }

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
  m.add("tokenizer.ggml.model", {std::string("gpt2")});
  m.add("tokenizer.ggml.pre", {std::string("qwen2")});
  m.add("tokenizer.ggml.tokens", {GgufArray{std::move(tokens)}});
  m.add("tokenizer.ggml.token_type", {GgufArray{std::move(types)}});
  m.add("tokenizer.ggml.merges", {GgufArray{std::move(merges)}});
  m.add("tokenizer.ggml.bos_token_id", {uint32_t{151643}});
  m.add("tokenizer.ggml.eos_token_id", {uint32_t{151645}});
  m.add("tokenizer.ggml.padding_token_id", {uint32_t{151643}});
  m.add("tokenizer.ggml.add_bos_token", {false});
  w.write(path);
}

}  // namespace tempra::testing
