// tempra/backend/native/neural_grad.cpp: the backward kernels of rms_norm, layer_norm and
// attention.
//
// - rms_norm / layer_norm: scalar's formulas (scalar/neural_grad.cpp); the row statistics and
//   row sums are vector sums (row_math.h: reassociated, the multiply-adds fused), the rest is
//   scalar's expression lane by lane. The weight and bias gradients are scalar's column sums,
//   vectorized across columns: each column adds its rows in row order, the same operations as
//   scalar on the same row statistics.
// - attention: the FlashAttention backward (Dao et al. 2022) for one (batch, kv head) at a time,
//   written as five GEMMs on native::gemm over the stacked rows of the query heads that share
//   the kv head (GQA: those heads' rows of q, out and g are one contiguous [group * Tq, D]
//   block):
//     S  = Q K^T                      (then P = softmax(S * scale + mask), rows masked as scalar)
//     dP = dO V^T
//     dS = P * (dP - rowsum(dO * O))
//     dV = P^T dO,  dQ = dS K * scale,  dK = dS^T Q * scale
//   The sums over the group's query heads and positions are the inner dimension of the dV and
//   dK products, so nothing accumulates across calls. P and dP (then dS) live in the caller's
//   scratch (2 * B * Hq * Tq * Tk); dS ends in its first half, as the contract says. A task is
//   one (batch, kv head) and owns its rows of gq and its gk, gv blocks; GEMM results do not
//   depend on the thread count, so neither do these.
#include <cmath>
#include <limits>

#include "tempra/backend/native/native.h"
#include "tempra/backend/native/row_math.h"
#include "tempra/backend/scalar/scalar.h"

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native {
namespace {

using namespace simd;

// Applies fn(j, count) to the row [0, n) a vector at a time, the last one partial.
template <class Fn>
inline void for_lanes(int64_t n, Fn fn) {
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) fn(j, kLanes);
  if (j < n) fn(j, int(n - j));
}

inline V load_n(const float* p, int count) {
  return count == kLanes ? load(p) : load_partial(p, count);
}
inline void store_n(float* p, V v, int count) {
  if (count == kLanes)
    store(p, v);
  else
    store_partial(p, v, count);
}

// gw[j] = sum over rows of g[r, j] * ((x[r, j] - shift[r]) * inv[r]) and gb[j] = sum of g[r, j]
// for the columns of one task, rows in order (scalar's norm_parameter_grads, lanes across j).
void norm_parameter_grads(const float* x, const float* g, int64_t rows, int64_t n, const float* shift, const float* inv,
                          float* gw, float* gb, ThreadPool& pool) {
  pool.parallel_for(n, scalar::rows_per_chunk(rows), [&](int64_t j0, int64_t j1) {
    if (gw) std::fill(gw + j0, gw + j1, 0.0f);
    if (gb) std::fill(gb + j0, gb + j1, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * n;
      const float* gr = g + r * n;
      const V m = set1(shift ? shift[r] : 0.0f), s = set1(inv[r]);
      for_lanes(j1 - j0, [&](int64_t o, int count) {
        const int64_t j = j0 + o;
        const V gv = load_n(gr + j, count);
        if (gw) store_n(gw + j, add(load_n(gw + j, count), mul(gv, mul(sub(load_n(xr + j, count), m), s))), count);
        if (gb) store_n(gb + j, add(load_n(gb + j, count), gv), count);
      });
    }
  });
}

}  // namespace

void rms_norm_grad(const float* x, const float* weight, const float* g, int64_t rows, int64_t n, double eps, float* gx,
                   float* gw, float* scratch, ThreadPool& pool) {
  float* inv = scratch;
  pool.parallel_for(rows, scalar::rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* xr = x + r * n;
      const float* gr = g + r * n;
      const float s = 1.0f / std::sqrt(row_sum_squares(xr, n) / float(n) + float(eps));
      inv[r] = s;
      if (!gx) continue;
      auto u = [&](int64_t j, int count) {
        const V gv = load_n(gr + j, count);
        return weight ? mul(gv, load_n(weight + j, count)) : gv;
      };
      V acc = zero();  // sum(u x), one accumulator: rows are short next to the GEMMs around them
      for_lanes(n, [&](int64_t j, int count) { acc = fma(u(j, count), load_n(xr + j, count), acc); });
      const float coef = s * s * s * reduce_add(acc) / float(n);
      float* out = gx + r * n;
      const V vs = set1(s), vcoef = set1(coef);
      for_lanes(n, [&](int64_t j, int count) {
        store_n(out + j, sub(mul(u(j, count), vs), mul(load_n(xr + j, count), vcoef)), count);
      });
    }
  });
  if (gw) norm_parameter_grads(x, g, rows, n, nullptr, inv, gw, nullptr, pool);
}

void layer_norm_grad(const float* x, const float* weight, const float* g, int64_t rows, int64_t n, double eps,
                     float* gx, float* gw, float* gb, float* scratch, ThreadPool& pool) {
  float* means = scratch;
  float* inv = scratch + rows;
  pool.parallel_for(rows, scalar::rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* xr = x + r * n;
      const float* gr = g + r * n;
      const float mean = row_sum(xr, n) / float(n);
      const float s = 1.0f / std::sqrt(row_sum_squared_deviations(xr, n, mean) / float(n) + float(eps));
      means[r] = mean;
      inv[r] = s;
      if (!gx) continue;
      const V vmean = set1(mean), vs = set1(s);
      auto u = [&](int64_t j, int count) {
        const V gv = load_n(gr + j, count);
        return weight ? mul(gv, load_n(weight + j, count)) : gv;
      };
      auto xhat = [&](int64_t j, int count) { return mul(sub(load_n(xr + j, count), vmean), vs); };
      V sum_u = zero(), sum_u_xhat = zero();
      for_lanes(n, [&](int64_t j, int count) {
        const V uv = u(j, count);
        sum_u = add(sum_u, uv);
        sum_u_xhat = fma(uv, xhat(j, count), sum_u_xhat);
      });
      const V mean_u = set1(reduce_add(sum_u) / float(n)), mean_u_xhat = set1(reduce_add(sum_u_xhat) / float(n));
      float* out = gx + r * n;
      for_lanes(n, [&](int64_t j, int count) {
        store_n(out + j, mul(vs, sub(sub(u(j, count), mean_u), mul(xhat(j, count), mean_u_xhat))), count);
      });
    }
  });
  if (gw || gb) norm_parameter_grads(x, g, rows, n, means, inv, gw, gb, pool);
}

void attention_grad(const float* q, const float* k, const float* v, const float* out, const float* g,
                    const AttentionShape& s, TensorRef<const float> mask, bool causal, double scale, float* scores,
                    float* gq, float* gk, float* gv, ThreadPool& pool) {
  const int64_t group = s.q_heads / s.kv_heads, rows = group * s.q_len;
  const int64_t D = s.head_dim, Dv = s.value_dim, Tk = s.kv_len;
  const int64_t score_count = s.batch * s.q_heads * s.q_len * Tk;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const Dims& ms = mask.strides;
  const V vscale = set1(float(scale));
  pool.parallel_for(s.batch * s.kv_heads, 1, [&](int64_t first, int64_t last) {
    for (int64_t task = first; task < last; ++task) {
      const int64_t b = task / s.kv_heads, kv = task % s.kv_heads;
      const int64_t row0 = (b * s.q_heads + kv * group) * s.q_len;  // the group's first query row
      const float* Q = q + row0 * D;
      const float* O = out + row0 * Dv;
      const float* dO = g + row0 * Dv;
      const float* K = k + task * Tk * D;
      const float* Vv = v + task * Tk * Dv;
      float* dS = scores + row0 * Tk;               // dP, then dS
      float* P = scores + score_count + row0 * Tk;  // S, then P
      float* dQ = gq + row0 * D;
      float* dK = gk + task * Tk * D;
      float* dV = gv + task * Tk * Dv;
      // S = Q K^T, then each row's probabilities as the forward forms them.
      gemm(rows, Tk, D, Q, D, 1, K, 1, D, P, Tk, pool);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t h = kv * group + r / s.q_len, i = r % s.q_len;
        const int64_t visible = causal ? i + (Tk - s.q_len) + 1 : Tk;
        const float* mask_row = mask.data ? mask.data + b * ms[0] + h * ms[1] + i * ms[2] : nullptr;
        float* p = P + r * Tk;
        for_lanes(visible, [&](int64_t j, int count) { store_n(p + j, mul(load_n(p + j, count), vscale), count); });
        std::fill(p + visible, p + Tk, neg_inf);
        if (mask_row)
          for (int64_t j = 0; j < visible; ++j) p[j] += mask_row[j * ms[3]];
        const V inv = set1(1.0f / row_exp_in_place(p, Tk, row_max(p, Tk)));
        for_lanes(Tk, [&](int64_t j, int count) { store_n(p + j, mul(load_n(p + j, count), inv), count); });
      }
      // dP = dO V^T; dS = P * (dP - delta), delta = rowsum(dO * O).
      gemm(rows, Tk, Dv, dO, Dv, 1, Vv, 1, Dv, dS, Tk, pool);
      for (int64_t r = 0; r < rows; ++r) {
        const V delta = set1(row_dot(dO + r * Dv, O + r * Dv, Dv));
        float* ds = dS + r * Tk;
        const float* p = P + r * Tk;
        for_lanes(Tk, [&](int64_t j, int count) {
          store_n(ds + j, mul(load_n(p + j, count), sub(load_n(ds + j, count), delta)), count);
        });
      }
      gemm(Tk, Dv, rows, P, 1, Tk, dO, Dv, 1, dV, Dv, pool);  // dV = P^T dO
      gemm(rows, D, Tk, dS, Tk, 1, K, D, 1, dQ, D, pool);     // dQ = dS K
      gemm(Tk, D, rows, dS, 1, Tk, Q, D, 1, dK, D, pool);     // dK = dS^T Q
      for_lanes(rows * D, [&](int64_t j, int count) { store_n(dQ + j, mul(load_n(dQ + j, count), vscale), count); });
      for_lanes(Tk * D, [&](int64_t j, int count) { store_n(dK + j, mul(load_n(dK + j, count), vscale), count); });
    }
  });
}

}  // namespace tempra::native
#endif  // TEMPRA_SIMD_ARM
