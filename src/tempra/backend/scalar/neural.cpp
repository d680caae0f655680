// tempra/backend/scalar/neural.cpp: normalization, rotary embedding, attention, conv1d.
//
// rms_norm: y = x / sqrt(mean(x^2) + eps) * w (Zhang & Sennrich 2019; llama.cpp's ggml_rms_norm).
// layer_norm: y = (x - mean) / sqrt(var + eps) * w + b, population variance (as torch).
// rope: llama.cpp's rope with theta_i = pos * freq_scale * freq_base^(-2i / n_dims) / freq_factors[i] and
//   YaRN's blend (rope_rotation in kernel_args.h), computed in double so positions in the tens of
//   thousands keep their phase.
// attention: scores = q.k^T * scale (+ mask, causal), softmax over keys, times v; query head h
//   reads kv head h / (Hq / Hkv) (grouped-query attention).
// cache_attention: the same, causal, over a KV cache read in place (f32, f16 or Q8_0 rows
//   widened element by element, Q8_0 as code * scale like its reference decoder): bitwise
//   attention<float> on the widened prefix.
// conv1d: cross-correlation as torch.nn.functional.conv1d, with explicit left/right zero padding.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tempra/backend/scalar/scalar.h"
#include "tempra/quant/blocks.h"

namespace tempra::scalar {

template <class T>
void rms_norm(const T* in, int64_t rows, int64_t n, const T* weight, double eps, T* out, ThreadPool& pool) {
  pool.parallel_for(rows, rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* x = in + r * n;
      T* y = out + r * n;
      T squares = 0;
      for (int64_t j = 0; j < n; ++j) squares += x[j] * x[j];
      const T inv = T(1) / std::sqrt(squares / static_cast<T>(n) + static_cast<T>(eps));
      for (int64_t j = 0; j < n; ++j) y[j] = weight ? x[j] * inv * weight[j] : x[j] * inv;
    }
  });
}

template <class T>
void layer_norm(const T* in, int64_t rows, int64_t n, const T* weight, const T* bias, double eps, T* out,
                ThreadPool& pool) {
  pool.parallel_for(rows, rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* x = in + r * n;
      T* y = out + r * n;
      T sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += x[j];
      const T mean = sum / static_cast<T>(n);
      T squares = 0;
      for (int64_t j = 0; j < n; ++j) squares += (x[j] - mean) * (x[j] - mean);
      const T inv = T(1) / std::sqrt(squares / static_cast<T>(n) + static_cast<T>(eps));
      for (int64_t j = 0; j < n; ++j) {
        T v = (x[j] - mean) * inv;
        if (weight) v *= weight[j];
        if (bias) v += bias[j];
        y[j] = v;
      }
    }
  });
}

template <class T>
void rope(const T* in, int64_t outer, int64_t seq, int64_t heads, int64_t head_dim, const int32_t* positions,
          const RopeParams& params, T* out, ThreadPool& pool) {
  const int64_t half = params.n_dims / 2;
  pool.parallel_for(outer * seq, rows_per_chunk(heads * head_dim), [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) {
      for (int64_t h = 0; h < heads; ++h) {
        const T* x = in + (row * heads + h) * head_dim;
        T* y = out + (row * heads + h) * head_dim;
        for (int64_t i = 0; i < half; ++i) {
          double cosine = 0, sine = 0;
          rope_rotation(params, positions[row % seq], i, cosine, sine);
          const T c = static_cast<T>(cosine), s = static_cast<T>(sine);
          const int64_t i0 = params.mode == RopeMode::normal ? 2 * i : i;
          const int64_t i1 = params.mode == RopeMode::normal ? 2 * i + 1 : i + half;
          const T x0 = x[i0], x1 = x[i1];
          y[i0] = x0 * c - x1 * s;
          y[i1] = x0 * s + x1 * c;
        }
        for (int64_t j = params.n_dims; j < head_dim; ++j) y[j] = x[j];
      }
    }
  });
}

template <class T>
void attention(const T* q, const T* k, const T* v, const AttentionShape& s, TensorRef<const T> mask, bool causal,
               double scale, T* scores, T* out, ThreadPool& pool) {
  const int64_t group = s.q_heads / s.kv_heads;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const Dims& ms = mask.strides;  // [B, Hq, Tq, Tk], zero on broadcast axes
  pool.parallel_for(s.batch * s.q_heads * s.q_len, rows_per_chunk(s.kv_len * s.head_dim),
                    [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) {
      const int64_t i = row % s.q_len, h = (row / s.q_len) % s.q_heads, b = row / (s.q_len * s.q_heads);
      const int64_t kv_head = b * s.kv_heads + h / group;
      const T* q_row = q + row * s.head_dim;
      const T* keys = k + kv_head * s.kv_len * s.head_dim;
      const T* values = v + kv_head * s.kv_len * s.value_dim;
      const T* mask_row = mask.data ? mask.data + b * ms[0] + h * ms[1] + i * ms[2] : nullptr;
      T* p = scores + row * s.kv_len;
      const int64_t visible = causal ? i + (s.kv_len - s.q_len) + 1 : s.kv_len;
      T peak = neg_inf;
      for (int64_t j = 0; j < s.kv_len; ++j) {
        T dot = 0;
        for (int64_t d = 0; d < s.head_dim; ++d) dot += q_row[d] * keys[j * s.head_dim + d];
        T score = j < visible ? dot * static_cast<T>(scale) : neg_inf;
        if (mask_row) score += mask_row[j * ms[3]];
        p[j] = score;
        peak = std::max(peak, score);
      }
      T sum = 0;
      for (int64_t j = 0; j < s.kv_len; ++j) {
        p[j] = std::exp(p[j] - peak);
        sum += p[j];
      }
      T* o = out + row * s.value_dim;
      std::fill(o, o + s.value_dim, T(0));
      for (int64_t j = 0; j < s.kv_len; ++j) {
        const T weight = p[j] / sum;
        for (int64_t d = 0; d < s.value_dim; ++d) o[d] += weight * values[j * s.value_dim + d];
      }
    }
  });
}

// Element e of a stored K/V array, widened to f32 (float passes through; f16 through
// tempra/core/half.h, exact; Q8_0 blocks of 32 decode as quant::dequantize_row_q8_0 does).
inline float element(const float* p, int64_t e) { return p[e]; }
inline float element(const f16_t* p, int64_t e) { return to_f32(p[e]); }
inline float element(const quant::BlockQ8_0* p, int64_t e) { return quant::q8_0_element(p, e); }

template <class KV>
void cache_attention(const CacheAttentionArgs<KV>& a, float* scores, ThreadPool& pool) {
  const int64_t group = a.q_heads / a.kv_heads, D = a.head_dim;
  pool.parallel_for(a.q_len * a.q_heads, rows_per_chunk(a.kv_len * D), [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) {  // row = i * q_heads + h, token-major like q
      const int64_t i = row / a.q_heads, h = row % a.q_heads;
      const float* q_row = a.q + row * D;
      const int64_t head = (h / group) * a.kv_head_stride;  // element offset of the kv head's rows
      float* p = scores + row * a.kv_len;
      // Keys outside [first, visible) are masked; attention<float> gives them exp(-inf) = 0,
      // which adds nothing to the sums below, so skipping them keeps its bits.
      const int64_t visible = i + (a.kv_len - a.q_len) + 1;
      const int64_t first = first_visible_key(visible, a.window);
      float peak = -std::numeric_limits<float>::infinity();
      for (int64_t j = first; j < visible; ++j) {
        float dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += q_row[d] * element(a.k, head + j * D + d);
        p[j] = dot * static_cast<float>(a.scale);
        peak = std::max(peak, p[j]);
      }
      float sum = 0;
      for (int64_t j = first; j < visible; ++j) {
        p[j] = std::exp(p[j] - peak);
        sum += p[j];
      }
      float* o = a.out + row * D;
      std::fill(o, o + D, 0.0f);
      for (int64_t j = first; j < visible; ++j) {
        const float weight = p[j] / sum;
        for (int64_t d = 0; d < D; ++d) o[d] += weight * element(a.v, head + j * D + d);
      }
    }
  });
}
template void cache_attention<float>(const CacheAttentionArgs<float>&, float*, ThreadPool&);
template void cache_attention<f16_t>(const CacheAttentionArgs<f16_t>&, float*, ThreadPool&);
template void cache_attention<quant::BlockQ8_0>(const CacheAttentionArgs<quant::BlockQ8_0>&, float*, ThreadPool&);

template <class T>
void conv1d(const T* x, const T* w, const T* bias, const Conv1dShape& s, T* out, ThreadPool& pool) {
  const int64_t in_per_group = s.in_channels / s.groups, out_per_group = s.out_channels / s.groups;
  pool.parallel_for(s.batch * s.out_channels, rows_per_chunk(s.out_len * in_per_group * s.kernel),
                    [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) {
      const int64_t b = row / s.out_channels, oc = row % s.out_channels, g = oc / out_per_group;
      T* y = out + row * s.out_len;
      for (int64_t t = 0; t < s.out_len; ++t) {
        T acc = bias ? bias[oc] : T(0);
        for (int64_t ic = 0; ic < in_per_group; ++ic) {
          const T* x_row = x + (b * s.in_channels + g * in_per_group + ic) * s.in_len;
          const T* w_row = w + (oc * in_per_group + ic) * s.kernel;
          for (int64_t tap = 0; tap < s.kernel; ++tap) {
            const int64_t src = t * s.stride + tap * s.dilation - s.pad_left;  // padding reads as zero
            if (src >= 0 && src < s.in_len) acc += w_row[tap] * x_row[src];
          }
        }
        y[t] = acc;
      }
    }
  });
}

#define TEMPRA_INSTANTIATE(T)                                                                                 \
  template void rms_norm<T>(const T*, int64_t, int64_t, const T*, double, T*, ThreadPool&);                  \
  template void layer_norm<T>(const T*, int64_t, int64_t, const T*, const T*, double, T*, ThreadPool&);      \
  template void rope<T>(const T*, int64_t, int64_t, int64_t, int64_t, const int32_t*, const RopeParams&, T*,  \
                        ThreadPool&);                                                                         \
  template void attention<T>(const T*, const T*, const T*, const AttentionShape&, TensorRef<const T>, bool,   \
                             double, T*, T*, ThreadPool&);                                                    \
  template void conv1d<T>(const T*, const T*, const T*, const Conv1dShape&, T*, ThreadPool&);
TEMPRA_INSTANTIATE(float)
TEMPRA_INSTANTIATE(double)
#undef TEMPRA_INSTANTIATE

}  // namespace tempra::scalar
