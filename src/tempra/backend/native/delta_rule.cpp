// tempra/backend/native/delta_rule.cpp: the gated delta rule (DeltaRuleArgs in kernel_args.h)
// with the rows of each state matrix in vector lanes.
//
// The rows of M evolve independently, and M is stored column by column, so kLanes consecutive
// rows are one vector of a column: each lane runs scalar's row loop, the same operations in the
// same order (bitwise scalar's), and no dot needs a horizontal sum. A token makes two sweeps over
// the columns of a band of W vectors of rows: decay and M . k, then the update and M . q. A band
// of 4 vectors (64 rows of 128 columns on AVX-512: 32 KiB) stays in L1 between the sweeps.
#include <cmath>

#include "tempra/backend/native/native.h"
#include "tempra/backend/native/simd.h"

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native {
namespace {

using simd::V;
constexpr int kLanes = simd::kLanes;

// One token through rows [j0, j0 + (W - 1) * kLanes + last) of one head's M (S x S, column i
// at M + i * S): the last of the band's W vectors holds `last` rows, fewer than kLanes only when
// kPartial.
template <int W, bool kPartial>
void advance_band(float* M, int64_t S, int64_t j0, int last, const float* q, const float* k, const float* v,
                  float decay, float beta, float scale, float* out) {
  const auto load = [&](const float* p, int w) {
    if constexpr (kPartial) {
      if (w == W - 1) return simd::load_partial(p, last);
    }
    return simd::load(p);
  };
  const auto store = [&](float* p, V x, int w) {
    if constexpr (kPartial) {
      if (w == W - 1) return simd::store_partial(p, x, last);
    }
    simd::store(p, x);
  };
  const V decay_v = simd::set1(decay);
  V acc[W], delta[W];
  for (int w = 0; w < W; ++w) acc[w] = simd::zero();
  for (int64_t i = 0; i < S; ++i) {  // M *= decay; acc = M . k
    float* column = M + i * S + j0;
    const V ki = simd::set1(k[i]);
    for (int w = 0; w < W; ++w) {
      const V m = simd::mul(load(column + w * kLanes, w), decay_v);
      store(column + w * kLanes, m, w);
      acc[w] = simd::add(acc[w], simd::mul(m, ki));
    }
  }
  const V beta_v = simd::set1(beta);
  for (int w = 0; w < W; ++w) {
    delta[w] = simd::mul(simd::sub(load(v + j0 + w * kLanes, w), acc[w]), beta_v);
    acc[w] = simd::zero();
  }
  for (int64_t i = 0; i < S; ++i) {  // M += k delta; acc = M . q
    float* column = M + i * S + j0;
    const V ki = simd::set1(k[i]), qi = simd::set1(q[i]);
    for (int w = 0; w < W; ++w) {
      const V m = simd::add(load(column + w * kLanes, w), simd::mul(ki, delta[w]));
      store(column + w * kLanes, m, w);
      acc[w] = simd::add(acc[w], simd::mul(m, qi));
    }
  }
  const V scale_v = simd::set1(scale);
  for (int w = 0; w < W; ++w) store(out + j0 + w * kLanes, simd::mul(acc[w], scale_v), w);
}

}  // namespace

void gated_delta_rule(const DeltaRuleArgs& a, ThreadPool& pool) {
  constexpr int kBand = 4;
  const int64_t S = a.head_dim;
  const float scale = 1.0f / std::sqrt(float(S));
  pool.parallel_for(a.v_heads, 1, [&](int64_t first, int64_t last) {
    for (int64_t h = first; h < last; ++h) {
      float* M = a.state + h * S * S;
      for (int64_t t = 0; t < a.n; ++t) {
        const auto [q, k, v, decay, beta, out] = delta_rule_step(a, h, t);
        int64_t j = 0;
        for (; j + kBand * kLanes <= S; j += kBand * kLanes)
          advance_band<kBand, false>(M, S, j, kLanes, q, k, v, decay, beta, scale, out);
        for (; j + kLanes <= S; j += kLanes) advance_band<1, false>(M, S, j, kLanes, q, k, v, decay, beta, scale, out);
        if (j < S) advance_band<1, true>(M, S, j, int(S - j), q, k, v, decay, beta, scale, out);
      }
    }
  });
}

}  // namespace tempra::native
#endif
