// tempra/backend/native/row_math.h: reductions over one contiguous row, vectorized.
//
// Four vector accumulators (instruction-level parallelism), folded in a fixed tree and then
// across lanes: the order depends on n only, never on threads or alignment. The tail (n mod
// kLanes elements) is padded with the operation's identity and goes through the same vector
// code. Sums differ from scalar's in-order loop by reassociation only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "tempra/backend/native/simd.h"

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native {

// The last `count` (< kLanes) elements at p, the other lanes set to `fill`.
inline simd::V load_tail(const float* p, int count, float fill) {
  float lanes[simd::kLanes];
  std::fill(lanes, lanes + simd::kLanes, fill);
  std::copy(p, p + count, lanes);
  return simd::load(lanes);
}

// Folds f(x[j]) over the row with `combine`, four accumulators wide. `fill` is the input value
// whose f is combine's identity: it pads the tail and starts the accumulators.
template <class F, class Combine>
inline simd::V fold_row(const float* x, int64_t n, float fill, F f, Combine combine) {
  using namespace simd;
  const V identity = f(set1(fill));
  V acc[4] = {identity, identity, identity, identity};
  int64_t j = 0;
  for (; j + 4 * kLanes <= n; j += 4 * kLanes)
    for (int u = 0; u < 4; ++u) acc[u] = combine(acc[u], f(load(x + j + u * kLanes)));
  for (; j + kLanes <= n; j += kLanes) acc[0] = combine(acc[0], f(load(x + j)));
  if (j < n) acc[1] = combine(acc[1], f(load_tail(x + j, int(n - j), fill)));
  return combine(combine(acc[0], acc[1]), combine(acc[2], acc[3]));
}

inline float row_sum(const float* x, int64_t n) {
  using namespace simd;
  return reduce_add(fold_row(x, n, 0.0f, [](V v) { return v; }, [](V a, V b) { return add(a, b); }));
}

// sum a[j] b[j]: fused multiply-adds into four accumulators, folded like fold_row.
inline float row_dot(const float* a, const float* b, int64_t n) {
  using namespace simd;
  V acc[4] = {zero(), zero(), zero(), zero()};
  int64_t j = 0;
  for (; j + 4 * kLanes <= n; j += 4 * kLanes)
    for (int u = 0; u < 4; ++u) acc[u] = fma(load(a + j + u * kLanes), load(b + j + u * kLanes), acc[u]);
  for (; j + kLanes <= n; j += kLanes) acc[0] = fma(load(a + j), load(b + j), acc[0]);
  if (j < n) acc[1] = fma(load_partial(a + j, int(n - j)), load_partial(b + j, int(n - j)), acc[1]);
  return reduce_add(add(add(acc[0], acc[1]), add(acc[2], acc[3])));
}

inline float row_sum_squares(const float* x, int64_t n) {
  using namespace simd;
  return reduce_add(fold_row(x, n, 0.0f, [](V v) { return mul(v, v); }, [](V a, V b) { return add(a, b); }));
}

// sum (x - mean)^2; the padding lanes hold `mean` so they add zero.
inline float row_sum_squared_deviations(const float* x, int64_t n, float mean) {
  using namespace simd;
  const V m = set1(mean);
  return reduce_add(fold_row(
      x, n, mean, [m](V v) { const V d = sub(v, m); return mul(d, d); }, [](V a, V b) { return add(a, b); }));
}

// The largest element, NaNs ignored (they reach the result of softmax and logsumexp through
// their exp terms instead); -inf for an all-NaN or all -inf row.
inline float row_max(const float* x, int64_t n) {
  using namespace simd;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  return reduce_max(fold_row(x, n, neg_inf, [](V v) { return v; }, [](V a, V b) { return max_raw(b, a); }));
}

// max(-x): the row's minimum, negated.
inline float row_max_negated(const float* x, int64_t n) {
  using namespace simd;
  const float inf = std::numeric_limits<float>::infinity();
  return reduce_max(fold_row(x, n, inf, [](V v) { return neg(v); }, [](V a, V b) { return max_raw(b, a); }));
}

// Whether any element is NaN.
inline bool row_has_nan(const float* x, int64_t n) {
  using namespace simd;
  const float flag = reduce_add(fold_row(
      x, n, 0.0f, [](V v) { return select(is_nan(v), set1(1.0f), zero()); }, [](V a, V b) { return add(a, b); }));
  return flag != 0.0f;
}

// sum exp(x - peak); padding lanes are -inf, whose exp is 0.
inline float row_sum_exp(const float* x, int64_t n, float peak) {
  using namespace simd;
  const V p = set1(peak);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  return reduce_add(fold_row(
      x, n, neg_inf, [p](V v) { return exp(sub(v, p)); }, [](V a, V b) { return add(a, b); }));
}

// y = exp(y - peak) in place; returns the sum of the new y, in row_sum's order.
inline float row_exp_in_place(float* y, int64_t n, float peak) {
  using namespace simd;
  const V p = set1(peak);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) store(y + j, exp(sub(load(y + j), p)));
  if (j < n) store_partial(y + j, exp(sub(load_partial(y + j, int(n - j)), p)), int(n - j));
  return row_sum(y, n);
}

}  // namespace tempra::native
#endif
