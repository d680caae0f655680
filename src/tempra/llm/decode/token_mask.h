// tempra/llm/decode/token_mask.h: a set of allowed token ids, one bit per token of the vocabulary.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace tempra::llm {

class TokenMask {
 public:
  TokenMask() = default;
  explicit TokenMask(int32_t n_vocab) { reset(n_vocab); }

  // n_vocab tokens, none allowed.
  void reset(int32_t n_vocab) {
    size_ = n_vocab;
    words_.assign((size_t(n_vocab) + 63) / 64, 0);
  }
  int32_t size() const { return size_; }
  void allow(int32_t id) { words_[size_t(id) >> 6] |= uint64_t(1) << (id & 63); }
  bool allowed(int32_t id) const { return (words_[size_t(id) >> 6] >> (id & 63)) & 1; }
  int64_t count() const {
    int64_t n = 0;
    for (uint64_t w : words_) n += std::popcount(w);
    return n;
  }
  bool operator==(const TokenMask&) const = default;

 private:
  int32_t size_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace tempra::llm
