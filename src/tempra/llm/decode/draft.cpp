// tempra/llm/decode/draft.cpp: see draft.h.
#include "tempra/llm/decode/draft.h"

#include <algorithm>
#include <cmath>

namespace tempra::llm {

void ContextDrafter::truncate(size_t n) {
  if (n >= tokens_.size()) return;
  tokens_.resize(n);
  if (indexed_ > n) {  // forget what the maps may point past: rebuild them (rare: a new prompt)
    for (auto& map : last_end_) map.clear();
    indexed_ = 0;
  }
}

uint64_t ContextDrafter::hash(size_t end, int n) const {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ uint64_t(n);
  for (size_t i = end - size_t(n); i < end; ++i) h = (h ^ uint32_t(tokens_[i])) * 0x100000001B3ull + (h >> 29);
  return h;
}

void ContextDrafter::index_up_to(size_t end) {
  for (; indexed_ < end; ++indexed_) {
    const size_t stop = indexed_ + 1;  // the n-grams ending at position indexed_
    for (size_t l = 0; l < kLengths.size() && size_t(kLengths[l]) <= stop; ++l)
      last_end_[l][hash(stop, kLengths[l])] = uint32_t(stop);
  }
}

ContextDrafter::Draft ContextDrafter::draft(int max_tokens) {
  Draft out;
  const size_t n = tokens_.size();
  if (n < 2 || max_tokens <= 0) return out;
  index_up_to(n - 1);  // every n-gram that ends before the last token
  for (size_t l = kLengths.size(); l-- > 0;) {
    const int len = kLengths[l];
    if (size_t(len) > n - 1) continue;
    const auto it = last_end_[l].find(hash(n, len));
    if (it == last_end_[l].end()) continue;
    const size_t end = it->second;  // the earlier occurrence is tokens_[end - len, end)
    if (!std::equal(tokens_.begin() + std::ptrdiff_t(end - size_t(len)), tokens_.begin() + std::ptrdiff_t(end),
                    tokens_.end() - len))
      continue;  // a hash collision
    const size_t take = std::min(size_t(max_tokens), n - end);
    out.tokens.assign(tokens_.begin() + std::ptrdiff_t(end), tokens_.begin() + std::ptrdiff_t(end + take));
    out.match_length = len;
    return out;
  }
  return out;
}

// --- the gate ----------------------------------------------------------------------------------

int SpeculationGate::bucket(int match_length) {
  if (match_length <= 1) return 0;
  if (match_length <= 2) return 1;
  if (match_length <= 4) return 2;
  if (match_length <= 8) return 3;
  return 4;
}

void SpeculationGate::record_rows(int rows, double ms) {
  if (rows < 1 || rows > kMaxRows || !(ms > 0)) return;
  double& m = ms_[size_t(rows)];
  m = m == 0 ? ms : 0.8 * m + 0.2 * ms;
}

double SpeculationGate::rows_ms(int rows) const {
  if (ms_[size_t(rows)] > 0) return ms_[size_t(rows)];
  // Not measured yet: interpolate from the nearest measured sizes; with none, assume a pass of r
  // rows costs what one does (decode is bound by reading the weights), so the first drafts are tried.
  int below = rows - 1, above = rows + 1;
  while (below >= 1 && ms_[size_t(below)] == 0) --below;
  while (above <= kMaxRows && ms_[size_t(above)] == 0) ++above;
  if (below >= 1 && above <= kMaxRows)
    return ms_[size_t(below)] + (ms_[size_t(above)] - ms_[size_t(below)]) * (rows - below) / double(above - below);
  if (below >= 1) return ms_[size_t(below)] * (1.0 + 0.02 * (rows - below));
  if (above <= kMaxRows) return ms_[size_t(above)];
  return 1.0;
}

double SpeculationGate::expected_tokens(int k, int match_length) const {
  const double a = std::clamp(accept_[size_t(bucket(match_length))], 0.0, 0.999);
  double expected = 1.0, power = 1.0;
  for (int i = 0; i < k; ++i) expected += power *= a;
  return expected;
}

int SpeculationGate::choose(int available, int match_length, int rows_before, double tokens_before) {
  available = std::min(available, kMaxRows - 1 - rows_before);
  if (available <= 0) return 0;
  double best_rate = (tokens_before + 1.0) / rows_ms(rows_before + 1);  // plain decoding
  int best = 0;
  for (int k = 1; k <= available; ++k) {
    const double rate = (tokens_before + expected_tokens(k, match_length)) / rows_ms(rows_before + 1 + k);
    if (rate > best_rate * 1.001) {
      best = k;
      best_rate = rate;
    }
  }
  if (best > 0) return best;
  // Declined: probe a one-token draft now and then, so the acceptance estimate can recover.
  return (++declined_ % 32 == 0) ? 1 : 0;
}

void SpeculationGate::record_acceptance(int drafted, int accepted, int match_length) {
  if (drafted <= 0) return;
  // Each drafted token up to the first rejection was a trial: accepted ones succeeded, the first
  // rejected one failed (the rest were never tried).
  double& a = accept_[size_t(bucket(match_length))];
  const int trials = std::min(drafted, accepted + 1);
  for (int i = 0; i < trials; ++i) a = 0.9 * a + 0.1 * (i < accepted ? 1.0 : 0.0);
}

}  // namespace tempra::llm
