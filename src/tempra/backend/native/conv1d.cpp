// tempra/backend/native/conv1d.cpp: conv1d and its gradients for stride-1 convolutions that
// read no padding (the "valid" convolutions of a WaveNet: NAM's layers, dilated).
//
// The forward and the input gradient are one computation, a correlation of rows:
//
//   out[o][t] = bias[o] + sum_i sum_tap W(o, i, tap) in[i][t + offset + tap * step]
//
// with in[i][j] = 0 outside [0, in_len). The forward is it with in = x, W = w, offset = 0,
// step = dilation; the input gradient gx[ic][s] = sum_oc sum_tap w[oc][ic][tap] g[oc][s - tap d]
// is it with in = g, W = w transposed in its channels, offset = 0, step = -dilation. The
// interior, where every tap reads inside the row, is tiled as a small GEMM in registers: 4 output
// channels by 4 vectors of t (16 accumulators), each input value broadcast-free (a vector of
// in's row) and each weight broadcast, so 8 loads feed 16 multiply-adds. The edges (for the
// input gradient, the first and the last (K - 1) d positions of a row, where some taps fall
// outside g) and the tail of a row shorter than a tile add one (i, tap) term at a time over the
// t it reaches, a vector at a time.
//
// The weight gradient gw[oc][ic][tap] = sum_b sum_t g[b][oc][t] x[b][ic][t + tap d] is a GEMM
// over the long (b, t) dimension: tiles of 4 output channels by 4 (ic, tap) pairs, 16 vector
// accumulators over t, each reduced to a float once at the end. gb is g's sum over (b, t).
//
// Each output element is owned by one task and summed in one order (over i, then tap; over b,
// then t in vector lanes), so results do not depend on the thread count. They differ from
// scalar's (which sums one element at a time, unfused) by reassociation and fused multiply-adds:
// tests/backend/native_conv1d_test.cpp holds them to a bound written from that. Other shapes
// (strides, padding) take the scalar kernels.
#include <algorithm>

#include "tempra/backend/native/native.h"
#include "tempra/backend/native/simd.h"
#include "tempra/backend/scalar/scalar.h"

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native {
namespace {

using simd::V;
constexpr int kL = simd::kLanes;

struct Correlation {
  const float* in;  // [in_channels][in_len]
  int64_t in_channels, in_len;
  const float* w;  // W(o, i, tap) = w[o * w_out + i * w_in + tap]
  int64_t w_out, w_in, kernel;
  int64_t step;       // in's index for (t, tap): t + tap * step
  const float* bias;  // per o, or null
  float* out;         // [outputs][out_len]
  int64_t out_len;
};

// Row o over t in [lo, hi), where some taps fall outside in's row: each (i, tap) adds its term
// over the t whose source is inside, a vector at a time, in the order the tiles sum them.
void edge(const Correlation& c, int64_t o, int64_t lo, int64_t hi) {
  if (lo >= hi) return;
  float* out = c.out + o * c.out_len;
  const float b = c.bias ? c.bias[o] : 0.0f;
  for (int64_t t = lo; t < hi; ++t) out[t] = b;
  for (int64_t i = 0; i < c.in_channels; ++i)
    for (int64_t tap = 0; tap < c.kernel; ++tap) {
      const int64_t offset = tap * c.step;
      const int64_t first = std::max(lo, -offset), last = std::min(hi, c.in_len - offset);
      const float* row = c.in + i * c.in_len;  // read at t + offset, inside [0, in_len) for t in [first, last)
      const V w = simd::set1(c.w[o * c.w_out + i * c.w_in + tap]);
      int64_t t = first;
      for (; t + kL <= last; t += kL)
        simd::store(out + t, simd::fma(w, simd::load(row + (t + offset)), simd::load(out + t)));
      if (t < last) {
        const int n = int(last - t);
        simd::store_partial(out + t,
                            simd::fma(w, simd::load_partial(row + (t + offset), n), simd::load_partial(out + t, n)), n);
      }
    }
}

// Rows o0 .. o0 + kO - 1 over t in [t0, t0 + kT * kL), every tap inside.
template <int kO, int kT>
void tile(const Correlation& c, int64_t o0, int64_t t0) {
  V acc[kO][kT];
  for (int o = 0; o < kO; ++o)
    for (int j = 0; j < kT; ++j) acc[o][j] = c.bias ? simd::set1(c.bias[o0 + o]) : simd::zero();
  for (int64_t i = 0; i < c.in_channels; ++i)
    for (int64_t tap = 0; tap < c.kernel; ++tap) {
      const float* src = c.in + i * c.in_len + t0 + tap * c.step;
      V x[kT];
      for (int j = 0; j < kT; ++j) x[j] = simd::load(src + j * kL);
      for (int o = 0; o < kO; ++o) {
        const V w = simd::set1(c.w[(o0 + o) * c.w_out + i * c.w_in + tap]);
        for (int j = 0; j < kT; ++j) acc[o][j] = simd::fma(w, x[j], acc[o][j]);
      }
    }
  for (int o = 0; o < kO; ++o)
    for (int j = 0; j < kT; ++j) simd::store(c.out + (o0 + o) * c.out_len + t0 + j * kL, acc[o][j]);
}

template <int kO>
void rows(const Correlation& c, int64_t o0, int64_t lo, int64_t hi) {
  int64_t t = lo;
  for (; t + 4 * kL <= hi; t += 4 * kL) tile<kO, 4>(c, o0, t);
  for (; t + kL <= hi; t += kL) tile<kO, 1>(c, o0, t);
  for (int o = 0; o < kO; ++o) edge(c, o0 + o, t, hi);
}

// Output rows [o_begin, o_end) of the correlation.
void correlate(const Correlation& c, int64_t o_begin, int64_t o_end) {
  const int64_t reach = (c.kernel - 1) * c.step;  // the last tap's offset (negative for step < 0)
  const int64_t lo = std::min(c.out_len, std::max<int64_t>(0, -std::min<int64_t>(0, reach)));
  const int64_t hi = std::max(lo, std::min(c.out_len, c.in_len - std::max<int64_t>(0, reach)));
  for (int64_t o = o_begin; o < o_end; ++o) {
    edge(c, o, 0, lo);
    edge(c, o, hi, c.out_len);
  }
  int64_t o = o_begin;
  for (; o + 4 <= o_end; o += 4) rows<4>(c, o, lo, hi);
  for (; o < o_end; ++o) rows<1>(c, o, lo, hi);
}

bool fast_shape(const Conv1dShape& s) {
  return s.stride == 1 && s.pad_left == 0 && s.out_len + (s.kernel - 1) * s.dilation <= s.in_len;
}

constexpr int64_t kBlock = 4;  // output channels per task

// The correlation make(b, g) of every (batch, group) over its `rows` output rows, a task per
// block of kBlock rows: each task writes its own rows.
template <class Make>
void correlate_all(const Conv1dShape& s, int64_t rows, ThreadPool& pool, const Make& make) {
  const int64_t blocks = (rows + kBlock - 1) / kBlock, tasks = s.batch * s.groups * blocks;
  pool.parallel_for(tasks, 1, [&](int64_t first, int64_t last) {
    for (int64_t task = first; task < last; ++task) {
      const int64_t b = task / (s.groups * blocks), g = task / blocks % s.groups, block = task % blocks;
      correlate(make(b, g), block * kBlock, std::min(rows, (block + 1) * kBlock));
    }
  });
}

}  // namespace

void conv1d(const float* x, const float* w, const float* bias, const Conv1dShape& s, float* out, ThreadPool& pool) {
  if (!fast_shape(s)) return scalar::conv1d<float>(x, w, bias, s, out, pool);
  const int64_t in_pg = s.in_channels / s.groups, out_pg = s.out_channels / s.groups;
  correlate_all(s, out_pg, pool, [&](int64_t b, int64_t g) {
    return Correlation{x + (b * s.in_channels + g * in_pg) * s.in_len,
                       in_pg,
                       s.in_len,
                       w + g * out_pg * in_pg * s.kernel,
                       in_pg * s.kernel,
                       s.kernel,
                       s.kernel,
                       s.dilation,
                       bias ? bias + g * out_pg : nullptr,
                       out + (b * s.out_channels + g * out_pg) * s.out_len,
                       s.out_len};
  });
}

void conv1d_grad(const float* x, const float* w, const float* g, const Conv1dShape& s, float* gx, float* gw, float* gb,
                 ThreadPool& pool) {
  if (!fast_shape(s)) return scalar::conv1d_grad<float>(x, w, g, s, gx, gw, gb, pool);
  const int64_t in_pg = s.in_channels / s.groups, out_pg = s.out_channels / s.groups;
  if (gx)
    // W(ic, oc, tap) = w[oc][ic][tap]; gx[s] reads g[s - tap d].
    correlate_all(s, in_pg, pool, [&](int64_t b, int64_t grp) {
      return Correlation{g + (b * s.out_channels + grp * out_pg) * s.out_len,
                         out_pg,
                         s.out_len,
                         w + grp * out_pg * in_pg * s.kernel,
                         s.kernel,
                         in_pg * s.kernel,
                         s.kernel,
                         -s.dilation,
                         nullptr,
                         gx + (b * s.in_channels + grp * in_pg) * s.in_len,
                         s.in_len};
    });
  if (!gw && !gb) return;
  // gw, gb: one task per block of 4 output channels (within a group).
  const int64_t blocks = (out_pg + kBlock - 1) / kBlock;
  pool.parallel_for(s.groups * blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t task = first; task < last; ++task) {
      const int64_t grp = task / blocks, oc0 = grp * out_pg + task % blocks * kBlock;
      const int64_t n_oc = std::min(kBlock, grp * out_pg + out_pg - oc0);
      const int64_t vec_end = s.out_len / kL * kL;
      if (gb)
        for (int64_t oc = oc0; oc < oc0 + n_oc; ++oc) {
          V acc = simd::zero();
          float tail = 0;
          for (int64_t b = 0; b < s.batch; ++b) {
            const float* gr = g + (b * s.out_channels + oc) * s.out_len;
            for (int64_t t = 0; t < vec_end; t += kL) acc = simd::add(acc, simd::load(gr + t));
            for (int64_t t = vec_end; t < s.out_len; ++t) tail += gr[t];
          }
          gb[oc] = simd::reduce_add(acc) + tail;
        }
      if (!gw) continue;
      const int64_t pairs = in_pg * s.kernel;  // (ic, tap), ic-major as gw stores them
      for (int64_t p0 = 0; p0 < pairs; p0 += 4) {
        const int64_t n_p = std::min<int64_t>(4, pairs - p0);
        V acc[4][4];
        float tail[4][4] = {};
        for (auto& row : acc)
          for (V& a : row) a = simd::zero();
        for (int64_t b = 0; b < s.batch; ++b) {
          const float* gr[4];
          const float* xr[4];
          for (int64_t o = 0; o < 4; ++o) gr[o] = g + (b * s.out_channels + oc0 + std::min(o, n_oc - 1)) * s.out_len;
          for (int64_t p = 0; p < 4; ++p) {
            const int64_t pair = p0 + std::min(p, n_p - 1), ic = pair / s.kernel, tap = pair % s.kernel;
            xr[p] = x + (b * s.in_channels + grp * in_pg + ic) * s.in_len + tap * s.dilation;
          }
          for (int64_t t = 0; t < vec_end; t += kL) {
            const V g0 = simd::load(gr[0] + t), g1 = simd::load(gr[1] + t), g2 = simd::load(gr[2] + t),
                    g3 = simd::load(gr[3] + t);
            for (int p = 0; p < 4; ++p) {
              const V xv = simd::load(xr[p] + t);
              acc[0][p] = simd::fma(g0, xv, acc[0][p]);
              acc[1][p] = simd::fma(g1, xv, acc[1][p]);
              acc[2][p] = simd::fma(g2, xv, acc[2][p]);
              acc[3][p] = simd::fma(g3, xv, acc[3][p]);
            }
          }
          for (int64_t t = vec_end; t < s.out_len; ++t)
            for (int o = 0; o < 4; ++o)
              for (int p = 0; p < 4; ++p) tail[o][p] += gr[o][t] * xr[p][t];
        }
        for (int64_t o = 0; o < n_oc; ++o)
          for (int64_t p = 0; p < n_p; ++p) gw[(oc0 + o) * pairs + p0 + p] = simd::reduce_add(acc[o][p]) + tail[o][p];
      }
    }
  });
}

}  // namespace tempra::native
#endif
