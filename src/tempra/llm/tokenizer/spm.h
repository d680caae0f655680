// tempra/llm/tokenizer/spm.h: SentencePiece-style merging of GGUF `llama` vocabs (Llama 2,
// Mistral, TinyLlama, Gemma): pieces chosen by score, bytes as <0xXX> tokens.
//
// Contract: SpmModel holds the vocab's text -> id map and each token's score. encode(text, out)
// takes one fragment of text whose spaces are already written as U+2581 (Tokenizer does that,
// with the space prefix) and appends its ids: the text is cut into UTF-8 characters (a lead byte
// says how many bytes follow, as llama.cpp's unicode_len_utf8 reads it, whatever they are), then
// the adjacent pair whose concatenation is the highest-scoring token is merged (the leftmost
// among equal scores), again and again until no adjacent pair forms a token; each piece left is
// its token, or, when it is not one, each of its bytes as the byte's "<0xXX>" token (or, failing
// that, the one-byte token). A byte with no token at all throws tempra::Error.
// Parity: llama.cpp's llm_tokenizer_spm_session::tokenize (same queue order: std::priority_queue
// with its comparator; later duplicates of a token text win). O(n log n) in the text's length.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tempra::llm {

class SpmModel {
 public:
  SpmModel() = default;
  SpmModel(const std::vector<std::string>& tokens, std::vector<float> scores);

  // The id of a token text, or -1.
  int32_t find(std::string_view text) const;
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  int32_t byte_token(uint8_t byte) const;

  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> token_ids_;
  std::vector<float> scores_;
};

}  // namespace tempra::llm
