// tempra/llm/tokenizer/bpe_trainer.h: learning a byte-level BPE vocab from text, as nanochat's
// tokenizer stage and GPT-2/GPT-4's trainers do: words first (the pre-tokenizer's split), then
// merges learned inside words only.
//
// Contract (tools/bpe_reference.py implements the same rule in plain Python; the test holds the
// two to identical merges):
//   - WordCounts::add(text) cuts every occurrence of a special token's text out of `text` (they
//     are never learned from), splits each remaining fragment into words with the pre-tokenizer
//     (pretokenize.h) and counts each word's UTF-8 bytes. Text that is not well-formed UTF-8
//     throws tempra::Error naming the byte offset: a trained vocab would otherwise learn bytes the
//     tokenizer can never see.
//   - train_bpe(words, options) starts from the 256 single-byte tokens (id = byte value) and
//     repeats one merge: the adjacent pair of symbols that occurs most often over all words (each
//     word weighted by its count), ties going to the smaller (left id, right id); every
//     occurrence is replaced, left to right without overlap, in every word. The merged bytes
//     become a new token unless a token already has them (then that one, and the merge is still
//     recorded, as Hugging Face's trainer does). It stops when the vocab holds vocab_size tokens
//     with the specials, or when the best pair occurs fewer than min_count times.
//   - The result is a gpt2 TokenizerVocab that Tokenizer and llama.cpp load: the tokens in the
//     byte-level alphabet (unicode.h), merges "left right" in the order learned (their rank),
//     then the specials as CONTROL tokens; bos and pad are the first special, eos the last
//     (<|endoftext|> and <|im_end|> by default, as Qwen3's vocab has them), add_bos off.
//   - Bad options throw tempra::Error naming them: a vocab_size below 256 + the specials, an
//     empty or duplicated special, an empty corpus.
// Cost: O(total word bytes) to count; each merge touches only the words holding its pair.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tempra/llm/tokenizer/pretokenize.h"
#include "tempra/llm/tokenizer/tokenizer.h"

namespace tempra::llm {

struct BpeTrainOptions {
  int32_t vocab_size = 4096;  // every token: 256 bytes, the merges' tokens and the specials
  int64_t min_count = 2;      // a pair seen fewer times is not merged
  PreTokenizer pre = PreTokenizer::qwen2;
  std::vector<std::string> specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
};

// The name GGUF's tokenizer.ggml.pre gives `pre` (qwen2, qwen35, llama-bpe).
std::string_view pre_tokenizer_name(PreTokenizer pre);

class WordCounts {
 public:
  WordCounts(PreTokenizer pre, std::vector<std::string> specials);
  void add(std::string_view text);
  const std::unordered_map<std::string, int64_t>& counts() const { return counts_; }
  int64_t total_words() const { return total_; }

 private:
  void add_fragment(std::string_view fragment);

  PreTokenizer pre_;
  std::vector<std::string> specials_;
  std::unordered_map<std::string, int64_t> counts_;
  int64_t total_ = 0;
};

// Called after every merge with (merges so far, that merge's count).
using BpeProgress = std::function<void(int32_t merges, int64_t count)>;

TokenizerVocab train_bpe(const WordCounts& words, const BpeTrainOptions& options, const BpeProgress& progress = {});

}  // namespace tempra::llm
