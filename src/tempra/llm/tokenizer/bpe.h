// tempra/llm/tokenizer/bpe.h: byte-level BPE merging of one pre-tokenized word (GPT-2 style).
//
// Contract: BpeModel holds the vocab's text -> id map and the merge ranks. encode_word takes a
// word already written in the byte-level alphabet (unicode.h, byte_to_codepoint), splits it into
// UTF-8 characters, and repeatedly merges the adjacent pair of lowest rank (the leftmost among
// equal ranks) until no ranked pair remains; each final piece becomes its token id, or, if the
// vocab lacks it, the ids of its single bytes that the vocab has (others are dropped).
// Parity: llama.cpp's llm_tokenizer_bpe_session::tokenize (same order of merges, same fallback;
// later duplicates of a token text win, earlier duplicates of a merge win). O(n log n) per word.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tempra::llm {

class BpeModel {
 public:
  BpeModel() = default;
  // `merges` are GGUF's "left right" strings (split at the first space after the first byte).
  BpeModel(const std::vector<std::string>& tokens, const std::vector<std::string>& merges);

  // The id of a token text, or -1.
  int32_t find(std::string_view text) const;
  // The rank of merging `left` and `right`, or -1 if they do not merge.
  int32_t rank(std::string_view left, std::string_view right) const;
  // Appends the ids of `word` (byte-level alphabet, UTF-8) to `out`.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Map = std::unordered_map<std::string, int32_t, Hash, std::equal_to<>>;
  Map token_ids_;
  Map merge_ranks_;  // key: left '\0' right (byte-level texts never hold a NUL)
};

}  // namespace tempra::llm
