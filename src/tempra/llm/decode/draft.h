// tempra/llm/decode/draft.h: speculative drafts from the context itself, and the gate that says
// when verifying one pays.
//
// ContextDrafter: the tokens so far (prompt and output) indexed by their n-grams, for n in
// {1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32}: each n-gram maps to where it last ended. draft() finds
// the longest of those n for which the sequence's last n tokens occurred before, takes their most
// recent earlier occurrence, and proposes the tokens that followed it. Quoting, extraction and
// code edits repeat long runs of the context, so the continuation of the longest recent match is
// what a model copying would say next. Appending is O(1) per token (eleven hash inserts);
// truncate() rewinds (a new prompt that shares a prefix with the old one).
//
// SpeculationGate: whether to verify a draft, and how much of it, from what it measured on this
// machine and model: the time t(r) of a forward pass of r rows (r = 1 is a plain decode step;
// r = k + 1 verifies k drafted tokens) and the recent acceptance rate of drafts by match length.
// Verifying k tokens accepted each with probability a yields 1 + a + ... + a^k tokens in t(k + 1)
// against 1 token in t(1); the gate takes the k with the best tokens per millisecond and
// speculates only when that beats plain decoding. In a batch (the server) the other rows of the
// step count too: with R rows already expected to give T tokens, k more rows must raise
// (T + 1 + a + ... + a^k) / t(R + 1 + k) above (T + 1) / t(R + 1). When it declines it still probes
// now and then (a one-token draft, 1 declined step in 32), so it notices when the text turns
// copy-heavy; the acceptance estimates start at 0.3.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace tempra::llm {

class ContextDrafter {
 public:
  static constexpr std::array<int, 11> kLengths = {1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32};

  void append(int32_t token) { tokens_.push_back(token); }
  void append(std::span<const int32_t> tokens) { tokens_.insert(tokens_.end(), tokens.begin(), tokens.end()); }
  void truncate(size_t n);
  const std::vector<int32_t>& tokens() const { return tokens_; }

  struct Draft {
    std::vector<int32_t> tokens;  // at most max_tokens
    int match_length = 0;         // of the suffix that matched (0: no draft)
  };
  // Up to max_tokens tokens that followed the longest earlier occurrence of the sequence's end.
  Draft draft(int max_tokens);

 private:
  void index_up_to(size_t end);  // n-grams ending before `end`
  uint64_t hash(size_t end, int n) const;  // of tokens_[end - n, end)

  std::vector<int32_t> tokens_;
  size_t indexed_ = 0;  // n-grams ending at positions < indexed_ are in the maps
  std::array<std::unordered_map<uint64_t, uint32_t>, kLengths.size()> last_end_;  // hash -> end (exclusive)
};

class SpeculationGate {
 public:
  static constexpr int kMaxRows = 32;  // the most rows a verify pass may have (the model's `few` path)

  // How many of `available` drafted tokens to verify (0: decode one token the plain way), beside
  // `rows_before` rows of the same step expected to yield `tokens_before` tokens.
  int choose(int available, int match_length, int rows_before = 0, double tokens_before = 0);
  // The tokens a verify pass of k drafts is expected to yield (1 + a + ... + a^k).
  double expected_tokens(int k, int match_length) const;
  void record_step(int rows, double ms) { record_rows(rows, ms); }
  void record_decode(double ms) { record_rows(1, ms); }
  void record_verify(int drafted, int accepted, int match_length, double ms) {
    record_rows(drafted + 1, ms);
    record_acceptance(drafted, accepted, match_length);
  }
  void record_acceptance(int drafted, int accepted, int match_length);

  double acceptance(int match_length) const { return accept_[bucket(match_length)]; }

 private:
  static int bucket(int match_length);
  void record_rows(int rows, double ms);
  double rows_ms(int rows) const;

  std::array<double, kMaxRows + 1> ms_{};  // EMA of a forward pass of r rows (0: not measured)
  std::array<double, 5> accept_ = {0.3, 0.3, 0.3, 0.3, 0.3};  // per-token acceptance, by match length
  uint64_t declined_ = 0;
};

}  // namespace tempra::llm
