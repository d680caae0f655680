// tempra/backend/native/neural.cpp: rms_norm, layer_norm, rope and attention.
//
// - rms_norm / layer_norm: the row statistics are vector sums (row_math.h: reassociated), the
//   scaling is the scalar expression lane by lane. Within ~n eps relative of scalar.
// - rope: cos/sin come from the same double-precision expression as scalar's, computed once
//   per position instead of once per head (once per call for a batch of sequences that share
//   their positions), and the rotation is the same two products and one
//   sum or difference per element (native and scalar are both compiled with -ffp-contract=off,
//   so neither fuses them): bitwise equal to scalar.
// - attention: one pass over the keys with an online softmax (Milakov & Gimelshein 2018; the
//   FlashAttention recurrence): a running maximum m, normalizer l and output accumulator per
//   query, rescaled by exp(m_old - m_new) when the maximum grows, so no [Tq, Tk] score matrix
//   is materialized. A task is one (batch, kv head, tile of query positions): the tile's query
//   heads that share the kv head (grouped-query attention) and positions walk the keys together
//   in blocks, so each key and value row is loaded once per tile rather than once per query.
//   A tile of kLanes rows or more (a prompt's) forms its scores with the rows in vector lanes
//   (transposed_score_tile), a smaller one (a decode step's, unless a kv head's group of query
//   heads fills a vector) or one whose head dimension is not whole vectors by lane-wise dot
//   products (score_tile): the same sums in the same order, so a row's bits do not depend on
//   which path or tile computed it. Within ~1e-5 relative of scalar's exact softmax (bound in the parity
//   test).
// - cache_attention: the same tiles over a KV cache read in place; f16 and Q8_0 key/value rows
//   are widened to f32 (F16C / NEON; Q8_0 codes times the block's scale) one block of keys at a
//   time into per-thread scratch, once for all the rows of a tile; no f32 copy of the whole
//   prefix is ever made.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "tempra/backend/native/native.h"
#include "tempra/backend/native/row_math.h"
#include "tempra/backend/native/scratch.h"
#include "tempra/backend/scalar/scalar.h"
#include "tempra/quant/blocks.h"

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native {
namespace {

using namespace simd;

// y[j] = x[j] * inv (* w[j]) (+ b[j]), lane by lane in scalar's order.
inline void scale_row(const float* x, float inv, float shift, const float* w, const float* b, float* y, int64_t n) {
  const V vinv = set1(inv), vshift = set1(shift);
  auto one = [&](V v, const float* wj, const float* bj, int count) {
    V r = mul(sub(v, vshift), vinv);
    if (w) r = mul(r, count == kLanes ? load(wj) : load_partial(wj, count));
    if (b) r = add(r, count == kLanes ? load(bj) : load_partial(bj, count));
    return r;
  };
  // w and b may be null (rms_norm has no bias): no offset is applied to a null pointer.
  auto at = [](const float* p, int64_t j) { return p != nullptr ? p + j : nullptr; };
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) store(y + j, one(load(x + j), at(w, j), at(b, j), kLanes));
  if (j < n)
    store_partial(y + j, one(load_partial(x + j, int(n - j)), at(w, j), at(b, j), int(n - j)), int(n - j));
}

constexpr int kQueryTile = 16;    // query positions per attention task
constexpr int kMaxTileRows = 64;  // query heads per kv head x positions, at most
constexpr int kKeyBlock = 32;  // keys per block: their widened K and V (32 KiB at D = 128) stay in L1
static_assert(kCacheKeyAlignment % kKeyBlock == 0, "a view at kCacheKeyAlignment must keep the key blocks in place");

}  // namespace

void rms_norm(const float* in, int64_t rows, int64_t n, const float* weight, double eps, float* out,
              ThreadPool& pool) {
  pool.parallel_for(rows, scalar::rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* x = in + r * n;
      const float inv = 1.0f / std::sqrt(row_sum_squares(x, n) / float(n) + float(eps));
      scale_row(x, inv, 0.0f, weight, nullptr, out + r * n, n);
    }
  });
}

void layer_norm(const float* in, int64_t rows, int64_t n, const float* weight, const float* bias, double eps,
                float* out, ThreadPool& pool) {
  pool.parallel_for(rows, scalar::rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* x = in + r * n;
      const float mean = row_sum(x, n) / float(n);
      const float inv = 1.0f / std::sqrt(row_sum_squared_deviations(x, n, mean) / float(n) + float(eps));
      scale_row(x, inv, mean, weight, bias, out + r * n, n);
    }
  });
}

void rope(const float* in, int64_t outer, int64_t seq, int64_t heads, int64_t head_dim, const int32_t* positions,
          const RopeParams& params, float* out, ThreadPool& pool) {
  const int64_t half = params.n_dims / 2;
  // Each position's table once when the caller computed them (params.rotations) or several
  // sequences share the positions (a training batch: the tables go to the caller's scratch,
  // which the tasks only read); otherwise each row makes its own.
  const bool shared = params.rotations != nullptr || outer > 1;
  const float* shared_table = params.rotations;
  if (shared && shared_table == nullptr) {
    float* table = thread_scratch(2).floats(seq * 2 * half);
    fill_rope_rotations(params, positions, seq, table);
    shared_table = table;
  }
  pool.parallel_for(outer * seq, scalar::rows_per_chunk(heads * head_dim), [&](int64_t first, int64_t last) {
    float* table = shared ? nullptr : thread_scratch(2).floats(2 * half);  // cos then sin, for this position
    for (int64_t row = first; row < last; ++row) {
      const float* cosines = shared ? shared_table + (row % seq) * 2 * half : table;
      const float* sines = cosines + half;
      if (!shared) fill_rope_rotations(params, positions + row % seq, 1, table);
      for (int64_t h = 0; h < heads; ++h) {
        const float* x = in + (row * heads + h) * head_dim;
        float* y = out + (row * heads + h) * head_dim;
        int64_t i = 0;
        if (params.mode == RopeMode::neox) {
          for (; i + kLanes <= half; i += kLanes) {
            const V x0 = load(x + i), x1 = load(x + i + half), c = load(cosines + i), s = load(sines + i);
            store(y + i, sub(mul(x0, c), mul(x1, s)));
            store(y + i + half, add(mul(x0, s), mul(x1, c)));
          }
        }
        for (; i < half; ++i) {
          const int64_t i0 = params.mode == RopeMode::normal ? 2 * i : i;
          const int64_t i1 = params.mode == RopeMode::normal ? 2 * i + 1 : i + half;
          const float x0 = x[i0], x1 = x[i1];
          y[i0] = x0 * cosines[i] - x1 * sines[i];
          y[i1] = x0 * sines[i] + x1 * cosines[i];
        }
        for (int64_t j = params.n_dims; j < head_dim; ++j) y[j] = x[j];
      }
    }
  });
}

namespace {

// A position in a Q8_0 K/V array counted in elements, so that attend_tile's row arithmetic
// (keys + j * D + d) works on blocks as on plain arrays.
struct Q8_0Elements {
  const quant::BlockQ8_0* blocks;
  int64_t element;
  Q8_0Elements operator+(int64_t n) const { return {blocks, element + n}; }
};
inline const float* kv_elements(const float* p) { return p; }
inline const f16_t* kv_elements(const f16_t* p) { return p; }
inline Q8_0Elements kv_elements(const quant::BlockQ8_0* p) { return {p, 0}; }

// One stored K/V vector of kLanes elements (or the first `count`) widened to f32 in registers.
// A Q8_0 vector never straddles blocks (head_dim and the block are multiples of kLanes) and
// decodes as code * scale, quant::dequantize_row_q8_0's single rounding.
inline V load_kv(const float* p) { return load(p); }
inline V load_kv(const f16_t* p) { return load_f16(reinterpret_cast<const uint16_t*>(p)); }
inline V load_kv(Q8_0Elements p) {
  const quant::BlockQ8_0& block = p.blocks[p.element / quant::kBlock32];
  return mul(load_i8(block.qs + p.element % quant::kBlock32), set1(to_f32(block.d)));
}
inline float kv_element(const float* p, int i) { return p[i]; }
inline float kv_element(const f16_t* p, int i) { return to_f32(p[i]); }
inline float kv_element(Q8_0Elements p, int i) { return quant::q8_0_element(p.blocks, p.element + i); }
inline V load_kv_partial(const float* p, int count) { return load_partial(p, count); }
template <class KVElements>
V load_kv_partial(KVElements p, int count) {
  float widened[kLanes];
  for (int i = 0; i < count; ++i) widened[i] = kv_element(p, i);
  return load_partial(widened, count);
}

// The rows of one attention task: query heads sharing one kv head, at one or more positions.
struct TileRows {
  int64_t rows;
  const float* q[kMaxTileRows];
  float* out[kMaxTileRows];
  const float* mask[kMaxTileRows];  // null: no mask for that row
  int64_t mask_stride;              // between keys of a mask row
  int64_t visible[kMaxTileRows];    // keys [first, visible) pass the causal (and window) test
  int64_t first[kMaxTileRows];      // 0 unless a sliding window hides the older keys
  int64_t key_end;                  // keys [0, key_end) are scored for some row
};

// Rows [0, count) of K or V (width elements each) widened to f32 into dst (row stride width).
template <class KVElements>
void widen_rows(KVElements src, int64_t count, int64_t width, float* dst) {
  for (int64_t j = 0; j < count; ++j) {
    int64_t d = 0;
    for (; d + kLanes <= width; d += kLanes) store(dst + j * width + d, load_kv(src + j * width + d));
    if (d < width)
      store_partial(dst + j * width + d, load_kv_partial(src + j * width + d, int(width - d)), int(width - d));
  }
}

// Register blocking of the two products (AVX2 has 16 vector registers, the others 32).
constexpr int kScoreRows = 4, kScoreKeys = kLanes == 8 ? 2 : 4;
// The value product: blocks of kValueRows x kValueVectors, and kRowValueVectors for a row alone
// (a decode step's). Chosen by a throwaway loop over value_tile (48 rows, 32 keys, Dv = 128, one
// AMD EPYC Zen 5 core; not kept): 8 x 2 blocks 5.3-5.5 G vector multiply-adds/s where 4 x 4 ran
// 2.5, AVX2's 4 x 2 5.8. kernels_bench's cache_attention_f16 cases time the whole kernel.
constexpr int kValueRows = kLanes == 16 ? 8 : 4, kValueVectors = kLanes == 4 ? 4 : 2;
constexpr int kRowValueVectors = kLanes == 8 ? 2 : 4;

// out[r * stride + j] = q_r . k_j for RR rows and KK keys (rows of k D apart): lane-wise
// multiply-adds in increasing d, then each vector's lanes summed by reduce_add4's tree, so every
// score has the same bits whichever block of rows and keys computes it.
template <int RR, int KK>
void score_tile(const float* const* q, const float* k, int64_t D, float* out, int64_t stride) {
  V acc[RR][KK];
  for (int r = 0; r < RR; ++r)
    for (int j = 0; j < KK; ++j) acc[r][j] = zero();
  int64_t d = 0;
  for (; d + kLanes <= D; d += kLanes) {
    V kv[KK];
    for (int j = 0; j < KK; ++j) kv[j] = load(k + j * D + d);
    for (int r = 0; r < RR; ++r) {
      const V qv = load(q[r] + d);
      for (int j = 0; j < KK; ++j) acc[r][j] = fma(qv, kv[j], acc[r][j]);
    }
  }
  if (d < D) {
    const int tail = int(D - d);
    V kv[KK];
    for (int j = 0; j < KK; ++j) kv[j] = load_partial(k + j * D + d, tail);
    for (int r = 0; r < RR; ++r) {
      const V qv = load_partial(q[r] + d, tail);
      for (int j = 0; j < KK; ++j) acc[r][j] = fma(qv, kv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < RR; ++r) {
    float sums[4];
    if constexpr (KK == 4) {
      reduce_add4(acc[r][0], acc[r][1], acc[r][2], acc[r][3], sums);
    } else if constexpr (KK == 2) {
      reduce_add4(acc[r][0], acc[r][1], zero(), zero(), sums);
    } else {
      reduce_add4(acc[r][0], zero(), zero(), zero(), sums);
    }
    for (int j = 0; j < KK; ++j) out[r * stride + j] = sums[j];
  }
}

// block[r * kKeyBlock + j] = q_r . k_j for the tile's rows and the block's keys [0, keys_here), in
// register blocks of kScoreRows x kScoreKeys.
void score_block(const TileRows& t, const float* k, int64_t D, int64_t keys_here, float* block) {
  int64_t r = 0;
  for (; r + kScoreRows <= t.rows; r += kScoreRows) {
    int64_t j = 0;
    for (; j + kScoreKeys <= keys_here; j += kScoreKeys)
      score_tile<kScoreRows, kScoreKeys>(t.q + r, k + j * D, D, block + r * kKeyBlock + j, kKeyBlock);
    for (; j < keys_here; ++j)
      score_tile<kScoreRows, 1>(t.q + r, k + j * D, D, block + r * kKeyBlock + j, kKeyBlock);
  }
  for (; r < t.rows; ++r) {
    int64_t j = 0;
    for (; j + kScoreKeys <= keys_here; j += kScoreKeys)
      score_tile<1, kScoreKeys>(t.q + r, k + j * D, D, block + r * kKeyBlock + j, kKeyBlock);
    for (; j < keys_here; ++j) score_tile<1, 1>(t.q + r, k + j * D, D, block + r * kKeyBlock + j, kKeyBlock);
  }
}

// The same scores with the rows in vector lanes, for tiles of kLanes rows and more (a prompt's)
// whose head dimension is whole vectors.
// score_tile's lane i sums the products at d = i, i + kLanes, ... in order (a leaf: one chain of
// multiply-adds) and reduce_add4's tree then adds the lanes; here each leaf is a chain for
// kLanes rows at once over the queries transposed (qt[d * W + r], W rows), and the tree's
// additions are additions of whole vectors: the same operations on the same values, so the same
// bits, with no horizontal shuffles and a key's element broadcast to kLanes rows. The tree's two
// leaves of each first addition run side by side (twice the chains in flight). out[j * W + r]:
// key j's score for row r, for KJ keys (rows of k D apart) and the kLanes rows at qt.
// (A throwaway loop on one AMD EPYC Zen 5 core, 16 rows x 32 keys at D = 128, not kept: 2.8-2.9 G
// vector multiply-adds/s for score_tile's 4 x 4 blocks, 4.4-4.7 G for these with KJ = 8;
// kernels_bench's cache_attention_f16 cases time the whole kernel.)
template <int KJ>
void transposed_score_tile(const float* qt, int64_t W, const float* k, int64_t D, float* out) {
  V pair_sums[kLanes / 2][KJ];
  for (int leaf = 0; leaf < kLanes / 2; ++leaf) {
    const int a = tree_leaf(leaf, 0), b = tree_leaf(leaf, 1);
    V pa[KJ], pb[KJ];
    for (int j = 0; j < KJ; ++j) pa[j] = pb[j] = zero();
    for (int64_t d = 0; d < D; d += kLanes) {
      const V qa = load(qt + (d + a) * W), qb = load(qt + (d + b) * W);
      for (int j = 0; j < KJ; ++j) {
        pa[j] = fma(qa, set1(k[j * D + d + a]), pa[j]);
        pb[j] = fma(qb, set1(k[j * D + d + b]), pb[j]);
      }
    }
    for (int j = 0; j < KJ; ++j) pair_sums[leaf][j] = add(pa[j], pb[j]);
  }
  for (int n = kLanes / 2; n > 1; n /= 2)  // adjacent pairs, up to one
    for (int i = 0; i < n / 2; ++i)
      for (int j = 0; j < KJ; ++j) pair_sums[i][j] = add(pair_sums[2 * i][j], pair_sums[2 * i + 1][j]);
  for (int j = 0; j < KJ; ++j) store(out + j * W, pair_sums[0][j]);
}

// Keys per transposed_score_tile: 8 (16 chains) where 32 registers hold them, 4 on AVX2.
constexpr int kTransposedKeys = kLanes == 8 ? 4 : 8;
static_assert(kKeyBlock % kTransposedKeys == 0 && kKeyBlock % kLanes == 0);

// block[r * kKeyBlock + j] = q_r . k_j through transposed_score_tile, for W rows (a multiple of
// kLanes) whose queries qt holds transposed, and keys [0, keys_here); keys_t: kKeyBlock x W
// scratch. Columns from keys_here up to the next multiple of kLanes, and rows from the tile's
// up to W, receive what keys_t held there; the softmax replaces the former with -inf and never
// reads the latter.
void score_block_transposed(const float* qt, int64_t W, const float* k, int64_t D, int64_t keys_here, float* keys_t,
                            float* block) {
  for (int64_t r0 = 0; r0 < W; r0 += kLanes) {
    int64_t j = 0;
    for (; j + kTransposedKeys <= keys_here; j += kTransposedKeys)
      transposed_score_tile<kTransposedKeys>(qt + r0, W, k + j * D, D, keys_t + j * W + r0);
    for (; j < keys_here; ++j) transposed_score_tile<1>(qt + r0, W, k + j * D, D, keys_t + j * W + r0);
  }
  // [key][row] -> [row][key], kLanes x kLanes at a time; key rows of keys_t past keys_here hold
  // what an earlier block left (or attend_tile's zeros), never read as scores.
  for (int64_t r0 = 0; r0 < W; r0 += kLanes)
    for (int64_t j0 = 0; j0 < keys_here; j0 += kLanes) {
      V tile[kLanes];
      for (int i = 0; i < kLanes; ++i) tile[i] = load(keys_t + (j0 + i) * W + r0);
      transpose(tile);
      for (int i = 0; i < kLanes; ++i) store(block + (r0 + i) * kKeyBlock + j0, tile[i]);
    }
}

// acc[r] = acc[r] * correction[r] + sum_j p[r][j] v_j for RR rows over `count` lanes of the value
// dimension from d (count <= kLanes * CC; the last vector may be partial): multiply-adds in
// increasing j, one accumulator per row and vector. kFull (count == kLanes * CC, as for every
// chunk of a head dimension that is a multiple of it) compiles the loads without the count's
// tests, which otherwise kept g++ from holding the accumulators in registers (each key stored
// all RR x CC of them to the stack: a third of the FMA rate at Dv = 128 on a Zen 4). The
// operations, and so the bits, are the same either way.
template <int RR, int CC, bool kFull>
void value_tile(float* const* acc, const float* const* p, const float* correction, const float* v, int64_t Dv,
                int64_t keys, int64_t d, int64_t count) {
  V a[RR][CC];
  // Vectors past `count` are computed on zeros and never stored.
  auto lanes_of = [&](int c) { return kFull ? kLanes : int(std::clamp<int64_t>(count - c * kLanes, 0, kLanes)); };
  auto load_lanes = [&](const float* src, int c) {
    if constexpr (kFull) return load(src);
    const int lanes = lanes_of(c);
    return lanes == kLanes ? load(src) : lanes > 0 ? load_partial(src, lanes) : zero();
  };
  for (int r = 0; r < RR; ++r)
    for (int c = 0; c < CC; ++c) a[r][c] = mul(load_lanes(acc[r] + d + c * kLanes, c), set1(correction[r]));
  for (int64_t j = 0; j < keys; ++j) {
    V vv[CC];
    for (int c = 0; c < CC; ++c) vv[c] = load_lanes(v + j * Dv + d + c * kLanes, c);
    for (int r = 0; r < RR; ++r) {
      const V pj = set1(p[r][j]);
      for (int c = 0; c < CC; ++c) a[r][c] = fma(pj, vv[c], a[r][c]);
    }
  }
  for (int r = 0; r < RR; ++r)
    for (int c = 0; c < CC; ++c) {
      float* dst = acc[r] + d + c * kLanes;
      if (lanes_of(c) == kLanes) store(dst, a[r][c]);
      else if (lanes_of(c) > 0) store_partial(dst, a[r][c], lanes_of(c));
    }
}

// A row's scores s[0, kKeyBlock) of the block at key j0 as scalar forms them before its
// softmax: q . k * scale for the keys it sees, -inf for the others (those before `first`, from
// `visible` on, and past keys_here, so that the whole block can be exponentiated and summed in
// one order whichever rows set keys_here). Lane by lane, the same multiplications as scalar's;
// returns the block's maximum (exact in any order).
float visible_scores(float* s, int64_t j0, int64_t keys_here, int64_t first, int64_t visible, float scale) {
  alignas(64) static constexpr float kLaneIndex[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  static_assert(kLanes <= 16 && kKeyBlock % kLanes == 0);
  const V neg_inf = set1(-std::numeric_limits<float>::infinity()), vscale = set1(scale);
  // The visible keys as block indices [lo, hi): small integers, exact as floats.
  const V lo = set1(float(std::clamp<int64_t>(first - j0, 0, kKeyBlock)));
  const V hi = set1(float(std::clamp<int64_t>(visible - j0, 0, keys_here)));
  V block_max = neg_inf;
  for (int j = 0; j < kKeyBlock; j += kLanes) {
    const V index = add(load(kLaneIndex), set1(float(j)));
    V score = select(less(index, lo), neg_inf, mul(load(s + j), vscale));
    score = select(less(index, hi), score, neg_inf);
    store(s + j, score);
    block_max = max_raw(score, block_max);  // -inf lanes never NaN: the maximum of what is there
  }
  return reduce_max(block_max);
}

// The same with an additive mask row (attention's mask argument), one key at a time.
float masked_scores(float* s, int64_t j0, int64_t keys_here, const TileRows& t, int64_t r, float scale) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  float block_max = neg_inf;
  for (int64_t j = 0; j < keys_here; ++j) {
    float score = j0 + j < t.visible[r] && j0 + j >= t.first[r] ? s[j] * scale : neg_inf;
    score += t.mask[r][(j0 + j) * t.mask_stride];
    s[j] = score;
    block_max = std::max(block_max, score);
  }
  std::fill(s + keys_here, s + kKeyBlock, neg_inf);
  return block_max;
}

// value_tile for RR rows over the whole value dimension: chunks of kLanes * CC, the last one
// partial where Dv is not a multiple of it.
template <int RR, int CC>
void value_rows(float* const* acc, const float* const* p, const float* correction, const float* v, int64_t Dv,
                int64_t keys) {
  constexpr int64_t chunk = int64_t(kLanes) * CC;
  int64_t d = 0;
  for (; d + chunk <= Dv; d += chunk) value_tile<RR, CC, true>(acc, p, correction, v, Dv, keys, d, chunk);
  if (d < Dv) value_tile<RR, CC, false>(acc, p, correction, v, Dv, keys, d, Dv - d);
}

// Floats of attend_tile's scratch for value dimension Dv and key dimension D.
int64_t tile_scratch_floats(int64_t D, int64_t Dv) {
  // acc, widened K and V, the scores, the queries transposed, the scores key by key.
  return kMaxTileRows * Dv + kKeyBlock * (D + Dv) + kMaxTileRows * kKeyBlock + D * kMaxTileRows +
         kKeyBlock * kMaxTileRows;
}

// The online-softmax pass of one tile over keys[j * D], values[j * Dv] (KVElements: a pointer
// or Q8_0Elements); writes each row's normalized output. Per block of kKeyBlock keys, the keys
// and values are widened to f32 once for the whole tile (not once per row), the scores of all
// rows come from register-blocked products (transposed_score_tile for tiles of kLanes rows and
// more, score_tile otherwise), and the probabilities times the values from value_tile; each
// score, probability and output element has the same bits whichever rows share the tile, so a
// row's result does not depend on how its sequence is split into passes.
template <class KVElements>
void attend_tile(const TileRows& t, KVElements keys, KVElements values, int64_t D, int64_t Dv, float scale,
                 float* scratch) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  float* acc_all = scratch;                         // rows x Dv
  float* widened_k = acc_all + kMaxTileRows * Dv;   // kKeyBlock x D
  float* widened_v = widened_k + kKeyBlock * D;     // kKeyBlock x Dv
  float* block = widened_v + kKeyBlock * Dv;        // rows x kKeyBlock: scores, then probabilities
  float* qt = block + kMaxTileRows * kKeyBlock;      // D x W: the queries transposed
  float* keys_t = qt + D * kMaxTileRows;             // kKeyBlock x W: scores, key by key
  // Tiles of kLanes rows and more (a prompt's; a decode step's where a kv head's group of query
  // heads fills a vector) take their scores with the rows in lanes when D is whole vectors (the
  // bits of score_tile's); W: the rows rounded up to whole vectors, zeros past t.rows.
  const int64_t W = (t.rows + kLanes - 1) / kLanes * kLanes;
  const bool rows_in_lanes = t.rows >= kLanes && D % kLanes == 0;
  // Entries past a block's keys are read (and then hidden) a vector at a time: give them values.
  std::fill(block, block + W * kKeyBlock, 0.0f);
  std::fill(keys_t, keys_t + kKeyBlock * W, 0.0f);
  if (rows_in_lanes)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t r = 0; r < W; ++r) qt[d * W + r] = r < t.rows ? t.q[r][d] : 0.0f;
  float m[kMaxTileRows], l[kMaxTileRows], correction[kMaxTileRows];
  float* acc_rows[kMaxTileRows];
  const float* p_rows[kMaxTileRows];
  for (int64_t r = 0; r < t.rows; ++r) {
    m[r] = neg_inf;
    l[r] = 0.0f;
    std::fill(acc_all + r * Dv, acc_all + (r + 1) * Dv, 0.0f);
    acc_rows[r] = acc_all + r * Dv;
    p_rows[r] = block + r * kKeyBlock;
  }
  // Blocks no row sees (older than every row's window) are skipped; the blocks stay aligned to
  // multiples of kKeyBlock, so each row's sums keep their order however its sequence is split.
  int64_t first_block = t.key_end;
  for (int64_t r = 0; r < t.rows; ++r) first_block = std::min(first_block, t.first[r]);
  first_block -= first_block % kKeyBlock;
  for (int64_t j0 = first_block; j0 < t.key_end; j0 += kKeyBlock) {
    const int64_t keys_here = std::min<int64_t>(t.key_end, j0 + kKeyBlock) - j0;
    const float *k, *v;
    if constexpr (std::is_same_v<KVElements, const float*>) {
      k = keys + j0 * D;
      v = values + j0 * Dv;
    } else {
      widen_rows(keys + j0 * D, keys_here, D, widened_k);
      widen_rows(values + j0 * Dv, keys_here, Dv, widened_v);
      k = widened_k;
      v = widened_v;
    }
    // Scores q . k, scaled (and masked) below as scalar does before its softmax.
    if (rows_in_lanes) score_block_transposed(qt, W, k, D, keys_here, keys_t, block);
    else score_block(t, k, D, keys_here, block);
    bool sees[kMaxTileRows];
    for (int64_t r = 0; r < t.rows; ++r) {
      float* s = block + r * kKeyBlock;
      const float block_max = t.mask[r] ? masked_scores(s, j0, keys_here, t, r, scale)
                                        : visible_scores(s, j0, keys_here, t.first[r], t.visible[r], scale);
      sees[r] = block_max != neg_inf;
      if (!sees[r]) continue;  // nothing visible here: the row's state stays as it is
      const float m_new = std::max(m[r], block_max);
      correction[r] = std::exp(m[r] - m_new);                                // 0 on the first visible block
      l[r] = l[r] * correction[r] + row_exp_in_place(s, kKeyBlock, m_new);  // s[j] = p_j
      m[r] = m_new;
    }
    // acc = acc * correction + sum_j p_j v_j for the rows that see a key here, in blocks of rows.
    for (int64_t r = 0; r < t.rows;) {
      if (!sees[r]) {
        ++r;
      } else if (r + kValueRows <= t.rows && std::all_of(sees + r, sees + r + kValueRows, [](bool b) { return b; })) {
        value_rows<kValueRows, kValueVectors>(acc_rows + r, p_rows + r, correction + r, v, Dv, keys_here);
        r += kValueRows;
      } else {
        value_rows<1, kRowValueVectors>(acc_rows + r, p_rows + r, correction + r, v, Dv, keys_here);
        ++r;
      }
    }
  }
  for (int64_t r = 0; r < t.rows; ++r) {
    // A row that saw no finite score: scalar's softmax is 0/0 there; keep its NaN.
    const float inv = m[r] == neg_inf ? std::numeric_limits<float>::quiet_NaN() : 1.0f / l[r];
    scale_row(acc_all + r * Dv, inv, 0.0f, nullptr, nullptr, t.out[r], Dv);
  }
}

}  // namespace

void attention(const float* q, const float* k, const float* v, const AttentionShape& s, TensorRef<const float> mask,
               bool causal, double scale, float* scores, float* out, ThreadPool& pool) {
  const int64_t group = s.q_heads / s.kv_heads;
  if (group > kMaxTileRows) return scalar::attention(q, k, v, s, mask, causal, scale, scores, out, pool);
  const int64_t tile = std::max<int64_t>(1, std::min<int64_t>(kQueryTile, kMaxTileRows / group));
  const int64_t tiles = (s.q_len + tile - 1) / tile;
  const Dims& ms = mask.strides;
  const int64_t D = s.head_dim, Dv = s.value_dim;
  pool.parallel_for(s.batch * s.kv_heads * tiles, 1, [&](int64_t first, int64_t last) {
    float* scratch = thread_scratch(3).floats(tile_scratch_floats(D, Dv));
    for (int64_t task = first; task < last; ++task) {
      const int64_t t = task % tiles, kv = (task / tiles) % s.kv_heads, b = task / (tiles * s.kv_heads);
      const int64_t i0 = t * tile, positions = std::min(tile, s.q_len - i0);
      // Row r of the tile: query head h = kv * group + r / positions, position i = i0 + r % positions.
      TileRows rows{};
      rows.rows = group * positions;
      rows.mask_stride = ms[3];
      for (int64_t r = 0; r < rows.rows; ++r) {
        const int64_t h = kv * group + r / positions, i = i0 + r % positions;
        rows.q[r] = q + ((b * s.q_heads + h) * s.q_len + i) * D;
        rows.out[r] = out + ((b * s.q_heads + h) * s.q_len + i) * Dv;
        rows.mask[r] = mask.data ? mask.data + b * ms[0] + h * ms[1] + i * ms[2] : nullptr;
        rows.visible[r] = causal ? i + (s.kv_len - s.q_len) + 1 : s.kv_len;
        rows.key_end = std::max(rows.key_end, mask.data ? s.kv_len : std::min(rows.visible[r], s.kv_len));
      }
      attend_tile(rows, k + (b * s.kv_heads + kv) * s.kv_len * D, v + (b * s.kv_heads + kv) * s.kv_len * Dv, D, Dv,
                  float(scale), scratch);
    }
  });
}

template <class KV>
void cache_attention(const CacheAttentionArgs<KV>& a, float* scores, ThreadPool& pool) {
  const int64_t group = a.q_heads / a.kv_heads, D = a.head_dim;
  if (group > kMaxTileRows) return scalar::cache_attention(a, scores, pool);
  const int64_t tile = std::max<int64_t>(1, std::min<int64_t>(kQueryTile, kMaxTileRows / group));
  const int64_t tiles = (a.q_len + tile - 1) / tile;
  pool.parallel_for(a.kv_heads * tiles, 1, [&](int64_t first, int64_t last) {
    float* scratch = thread_scratch(3).floats(tile_scratch_floats(D, D));
    for (int64_t task = first; task < last; ++task) {
      const int64_t t = task % tiles, kv = task / tiles;
      const int64_t i0 = t * tile, positions = std::min(tile, a.q_len - i0);
      TileRows rows{};
      rows.rows = group * positions;
      for (int64_t r = 0; r < rows.rows; ++r) {
        const int64_t h = kv * group + r / positions, i = i0 + r % positions;
        rows.q[r] = a.q + (i * a.q_heads + h) * D;  // token-major
        rows.out[r] = a.out + (i * a.q_heads + h) * D;
        rows.visible[r] = i + (a.kv_len - a.q_len) + 1;
        rows.first[r] = first_visible_key(rows.visible[r], a.window);
        rows.key_end = std::max(rows.key_end, rows.visible[r]);
      }
      attend_tile(rows, kv_elements(a.k) + kv * a.kv_head_stride, kv_elements(a.v) + kv * a.kv_head_stride, D, D,
                  float(a.scale), scratch);
    }
  });
}
template void cache_attention<float>(const CacheAttentionArgs<float>&, float*, ThreadPool&);
template void cache_attention<f16_t>(const CacheAttentionArgs<f16_t>&, float*, ThreadPool&);
template void cache_attention<quant::BlockQ8_0>(const CacheAttentionArgs<quant::BlockQ8_0>&, float*, ThreadPool&);

}  // namespace tempra::native
#endif  // TEMPRA_SIMD_ARM
