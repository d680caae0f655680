// tempra/backend/scalar/neural_grad.cpp: the backward kernels of the norms, attention and conv1d.
//
// rms_norm, y = x s w with s = (mean(x^2) + eps)^(-1/2), u = g w:
//   gx = s u - x s^3 sum(u x) / n;  gw = sum over rows of g x s.
// layer_norm, y = xhat w + b with xhat = (x - mean) s, s = (var + eps)^(-1/2):
//   gx = s (u - mean(u) - xhat mean(u xhat));  gw = sum over rows of g xhat;  gb = sum of g.
// attention (the FlashAttention backward, Dao et al. 2022, Algorithm 4, one query row at a time):
//   the row's probabilities P are recomputed from q and k exactly as the forward forms them
//   (scores, row maximum, exponentials, sum), then
//   dV += P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dO * O)), dQ = dS K * scale,
//   dK += dS^T Q * scale, with the sums over the query heads that share a kv head (GQA).
//   Recomputing the row's maximum and sum costs O(Tk) next to the row's O(Tk (D + Dv)) dot
//   products, so the forward saves nothing but its output.
// conv1d: gx is the transposed convolution of g with w, gw the correlation of g with x, gb the
//   sum of g over batch and time (torch.nn.grad.conv1d_input / conv1d_weight).
//
// Determinism: every gradient element has one owner and one summation order. gw/gb of the norms
// sum over rows in row order (a task owns a block of columns); attention's gk/gv are owned by
// the task of their (batch, kv head), which walks its query heads and positions in order;
// conv1d's gx is owned per (batch, input channel), gw/gb per output channel.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tempra/backend/scalar/scalar.h"

namespace tempra::scalar {
namespace {

// gw[j] (+)= sum over rows r of g[r, j] * xhat(r, j), gb[j] = sum over rows of g[r, j], for a
// task's block of columns, rows in order. xhat(r, j) = (x[r, j] - shift[r]) * inv[r].
template <class T>
void norm_parameter_grads(const T* x, const T* g, int64_t rows, int64_t n, const T* shift, const T* inv, T* gw, T* gb,
                          ThreadPool& pool) {
  pool.parallel_for(n, rows_per_chunk(rows), [&](int64_t j0, int64_t j1) {
    if (gw) std::fill(gw + j0, gw + j1, T(0));
    if (gb) std::fill(gb + j0, gb + j1, T(0));
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = x + r * n;
      const T* gr = g + r * n;
      const T m = shift ? shift[r] : T(0), s = inv[r];
      for (int64_t j = j0; j < j1; ++j) {
        if (gw) gw[j] += gr[j] * ((xr[j] - m) * s);
        if (gb) gb[j] += gr[j];
      }
    }
  });
}

}  // namespace

template <class T>
void rms_norm_grad(const T* x, const T* weight, const T* g, int64_t rows, int64_t n, double eps, T* gx, T* gw,
                   T* scratch, ThreadPool& pool) {
  T* inv = scratch;
  pool.parallel_for(rows, rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* xr = x + r * n;
      const T* gr = g + r * n;
      T squares = 0;
      for (int64_t j = 0; j < n; ++j) squares += xr[j] * xr[j];
      const T s = T(1) / std::sqrt(squares / static_cast<T>(n) + static_cast<T>(eps));
      inv[r] = s;
      if (!gx) continue;
      T dot = 0;  // sum(u x)
      for (int64_t j = 0; j < n; ++j) dot += (weight ? gr[j] * weight[j] : gr[j]) * xr[j];
      const T coef = s * s * s * dot / static_cast<T>(n);
      T* out = gx + r * n;
      for (int64_t j = 0; j < n; ++j) out[j] = (weight ? gr[j] * weight[j] : gr[j]) * s - xr[j] * coef;
    }
  });
  // rms_norm has no shift: xhat = x * s.
  if (gw) norm_parameter_grads<T>(x, g, rows, n, nullptr, inv, gw, nullptr, pool);
}

template <class T>
void layer_norm_grad(const T* x, const T* weight, const T* g, int64_t rows, int64_t n, double eps, T* gx, T* gw, T* gb,
                     T* scratch, ThreadPool& pool) {
  T* means = scratch;
  T* inv = scratch + rows;
  pool.parallel_for(rows, rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* xr = x + r * n;
      const T* gr = g + r * n;
      T sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += xr[j];
      const T mean = sum / static_cast<T>(n);
      T squares = 0;
      for (int64_t j = 0; j < n; ++j) squares += (xr[j] - mean) * (xr[j] - mean);
      const T s = T(1) / std::sqrt(squares / static_cast<T>(n) + static_cast<T>(eps));
      means[r] = mean;
      inv[r] = s;
      if (!gx) continue;
      T sum_u = 0, sum_u_xhat = 0;
      for (int64_t j = 0; j < n; ++j) {
        const T u = weight ? gr[j] * weight[j] : gr[j];
        sum_u += u;
        sum_u_xhat += u * ((xr[j] - mean) * s);
      }
      const T mean_u = sum_u / static_cast<T>(n), mean_u_xhat = sum_u_xhat / static_cast<T>(n);
      T* out = gx + r * n;
      for (int64_t j = 0; j < n; ++j) {
        const T u = weight ? gr[j] * weight[j] : gr[j];
        out[j] = s * (u - mean_u - ((xr[j] - mean) * s) * mean_u_xhat);
      }
    }
  });
  if (gw || gb) norm_parameter_grads<T>(x, g, rows, n, means, inv, gw, gb, pool);
}

template <class T>
void attention_grad(const T* q, const T* k, const T* v, const T* out, const T* g, const AttentionShape& s,
                    TensorRef<const T> mask, bool causal, double scale, T* scores, T* gq, T* gk, T* gv,
                    ThreadPool& pool) {
  const int64_t group = s.q_heads / s.kv_heads;
  const int64_t D = s.head_dim, Dv = s.value_dim;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const T sc = static_cast<T>(scale);
  const Dims& ms = mask.strides;  // [B, Hq, Tq, Tk], zero on broadcast axes
  // A task is one (batch, kv head): it owns that head's gk and gv and its query heads' gq rows.
  pool.parallel_for(s.batch * s.kv_heads, 1, [&](int64_t first, int64_t last) {
    for (int64_t task = first; task < last; ++task) {
      const int64_t b = task / s.kv_heads, kv = task % s.kv_heads;
      const T* keys = k + task * s.kv_len * D;
      const T* values = v + task * s.kv_len * Dv;
      T* gkeys = gk + task * s.kv_len * D;
      T* gvalues = gv + task * s.kv_len * Dv;
      std::fill(gkeys, gkeys + s.kv_len * D, T(0));
      std::fill(gvalues, gvalues + s.kv_len * Dv, T(0));
      for (int64_t h = kv * group; h < (kv + 1) * group; ++h) {
        for (int64_t i = 0; i < s.q_len; ++i) {
          const int64_t row = (b * s.q_heads + h) * s.q_len + i;
          const T* q_row = q + row * D;
          const T* o_row = out + row * Dv;
          const T* g_row = g + row * Dv;
          const T* mask_row = mask.data ? mask.data + b * ms[0] + h * ms[1] + i * ms[2] : nullptr;
          T* p = scores + row * s.kv_len;
          const int64_t visible = causal ? i + (s.kv_len - s.q_len) + 1 : s.kv_len;
          // P, as scalar::attention forms it.
          T peak = neg_inf;
          for (int64_t j = 0; j < s.kv_len; ++j) {
            T score = neg_inf;
            if (j < visible) {
              T dot = 0;
              for (int64_t d = 0; d < D; ++d) dot += q_row[d] * keys[j * D + d];
              score = dot * sc;
            }
            if (mask_row) score += mask_row[j * ms[3]];
            p[j] = score;
            peak = std::max(peak, score);
          }
          T sum = 0;
          for (int64_t j = 0; j < s.kv_len; ++j) {
            p[j] = std::exp(p[j] - peak);
            sum += p[j];
          }
          for (int64_t j = 0; j < s.kv_len; ++j) p[j] = p[j] / sum;
          // delta = rowsum(dO * O) = sum_j P_j dP_j.
          T delta = 0;
          for (int64_t d = 0; d < Dv; ++d) delta += g_row[d] * o_row[d];
          T* gq_row = gq + row * D;
          std::fill(gq_row, gq_row + D, T(0));
          for (int64_t j = 0; j < s.kv_len; ++j) {
            if (j >= visible) {  // hidden keys: P = 0 and no path from q or k
              p[j] = T(0);
              continue;
            }
            T dp = 0;
            for (int64_t d = 0; d < Dv; ++d) dp += g_row[d] * values[j * Dv + d];
            for (int64_t d = 0; d < Dv; ++d) gvalues[j * Dv + d] += p[j] * g_row[d];
            const T ds = p[j] * (dp - delta);
            p[j] = ds;
            for (int64_t d = 0; d < D; ++d) gq_row[d] += ds * keys[j * D + d];
            for (int64_t d = 0; d < D; ++d) gkeys[j * D + d] += ds * q_row[d];
          }
          for (int64_t d = 0; d < D; ++d) gq_row[d] *= sc;
        }
      }
      for (int64_t e = 0; e < s.kv_len * D; ++e) gkeys[e] *= sc;
    }
  });
}

template <class T>
void conv1d_grad(const T* x, const T* w, const T* g, const Conv1dShape& s, T* gx, T* gw, T* gb, ThreadPool& pool) {
  const int64_t in_per_group = s.in_channels / s.groups, out_per_group = s.out_channels / s.groups;
  // The input position tap `tap` of output t reads (padding reads as zero, so it has no gradient).
  auto source = [&](int64_t t, int64_t tap) { return t * s.stride + tap * s.dilation - s.pad_left; };
  // gx: one task per (batch, input channel) row.
  auto input_rows = [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) {
      const int64_t b = row / s.in_channels, ic = row % s.in_channels, grp = ic / in_per_group;
      const int64_t local = ic % in_per_group;
      T* gx_row = gx + row * s.in_len;
      std::fill(gx_row, gx_row + s.in_len, T(0));
      for (int64_t oc = grp * out_per_group; oc < (grp + 1) * out_per_group; ++oc) {
        const T* g_row = g + (b * s.out_channels + oc) * s.out_len;
        const T* w_row = w + (oc * in_per_group + local) * s.kernel;
        for (int64_t t = 0; t < s.out_len; ++t)
          for (int64_t tap = 0; tap < s.kernel; ++tap) {
            const int64_t src = source(t, tap);
            if (src >= 0 && src < s.in_len) gx_row[src] += w_row[tap] * g_row[t];
          }
      }
    }
  };
  // gw and gb: one task per output channel, summing over batch and time in order.
  auto output_channels = [&](int64_t first, int64_t last) {
    for (int64_t oc = first; oc < last; ++oc) {
      const int64_t grp = oc / out_per_group;
      if (gb) {
        T acc = 0;
        for (int64_t b = 0; b < s.batch; ++b)
          for (int64_t t = 0; t < s.out_len; ++t) acc += g[(b * s.out_channels + oc) * s.out_len + t];
        gb[oc] = acc;
      }
      if (!gw) continue;
      for (int64_t local = 0; local < in_per_group; ++local)
        for (int64_t tap = 0; tap < s.kernel; ++tap) {
          T acc = 0;
          for (int64_t b = 0; b < s.batch; ++b) {
            const T* g_row = g + (b * s.out_channels + oc) * s.out_len;
            const T* x_row = x + (b * s.in_channels + grp * in_per_group + local) * s.in_len;
            for (int64_t t = 0; t < s.out_len; ++t) {
              const int64_t src = source(t, tap);
              if (src >= 0 && src < s.in_len) acc += g_row[t] * x_row[src];
            }
          }
          gw[(oc * in_per_group + local) * s.kernel + tap] = acc;
        }
    }
  };
  if (gx) pool.parallel_for(s.batch * s.in_channels, rows_per_chunk(s.out_len * out_per_group * s.kernel), input_rows);
  if (gw || gb)
    pool.parallel_for(s.out_channels, rows_per_chunk(s.batch * s.out_len * (in_per_group * s.kernel + 1)),
                      output_channels);
}

#define TEMPRA_INSTANTIATE(T)                                                                                      \
  template void rms_norm_grad<T>(const T*, const T*, const T*, int64_t, int64_t, double, T*, T*, T*, ThreadPool&); \
  template void layer_norm_grad<T>(const T*, const T*, const T*, int64_t, int64_t, double, T*, T*, T*, T*,         \
                                   ThreadPool&);                                                                   \
  template void attention_grad<T>(const T*, const T*, const T*, const T*, const T*, const AttentionShape&,         \
                                  TensorRef<const T>, bool, double, T*, T*, T*, T*, ThreadPool&);                  \
  template void conv1d_grad<T>(const T*, const T*, const T*, const Conv1dShape&, T*, T*, T*, ThreadPool&);
TEMPRA_INSTANTIATE(float)
TEMPRA_INSTANTIATE(double)
#undef TEMPRA_INSTANTIATE

}  // namespace tempra::scalar
