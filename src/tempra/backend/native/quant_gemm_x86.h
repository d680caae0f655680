// tempra/backend/native/quant_gemm_x86.h: what the x86 integer GEMMs share
// (quant_gemm_avx2.cpp, quant_gemm_avx512.cpp): the 8 x 8 transpose, the formats read as blocks
// of 32 (which block, which activations, its codes), and the K-quants' packed layout, for groups
// of 8 (ymm) or 16 (zmm) columns.
//
// The K-quants' scalar dot keeps eight integer lane sums per super-block, lane l adding every
// element e = l mod 8 times its sub-block's scale. Element quad (l, t) of a column is its four
// lane-l elements of sub-block t (32 t + l, + 8, + 16, + 24), as signed codes (Q4_K/Q5_K: 0..31;
// Q6_K: code - 32); the activation's quad is the same four elements as unsigned a + 128.
// vpmaddubsw takes them in two pairs (each within 2 * 255 * 32 < 2^15), and the pairs times their
// scales (Q4_K/Q5_K: s_t twice; Q6_K: its two scales of 16) go into lane l's int32 sum
// (vpmaddwd and an add, or vpdpwssd), exactly. The + 128 added 128 * sum(scale * code) over the
// lane, a term of the weights alone: the lane's sum starts at minus that, tabled when packing.
// Q4_K/Q5_K's mins term is a small integer dot of the Q8_K block sums against the sub-block mins.
//
// The functions carry target("avx2,f16c") and internal linkage, as quant_dot_x86.h's: they are
// called from AVX2 and AVX-512 functions alike, only after their arm's CPUID check. Include only
// from translation units compiled with -ffp-contract=off.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "tempra/backend/native/prefetch.h"
#include "tempra/backend/native/quant_dot_x86.h"
#include "tempra/backend/native/scratch.h"
#include "tempra/core/thread_pool.h"
#include "tempra/quant/blocks.h"

namespace tempra::native::x86 {
namespace {

#define TEMPRA_X86_PACK __attribute__((target("avx2,f16c")))

// v[i] = int32 j of each input i  <->  int32 i of each v[j]: the 8 x 8 transpose.
TEMPRA_X86_PACK inline void transpose8(__m256i v[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
    v[i + 4] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
  }
}

// ---- Blocks of 32: Q8_0, Q4_0, IQ4_NL, and the super-block formats IQ4_XS and TQ2_0 ----

enum class Weights { q8_0, q4_0, iq4_nl, iq4_xs, tq2_0 };

template <Weights W>
using Block = std::conditional_t<
    W == Weights::q8_0, quant::BlockQ8_0,
    std::conditional_t<
        W == Weights::q4_0, quant::BlockQ4_0,
        std::conditional_t<W == Weights::iq4_nl, quant::BlockIQ4_NL,
                           std::conditional_t<W == Weights::iq4_xs, quant::BlockIQ4_XS, quant::BlockTQ2_0>>>>;

// The super-block formats (partner Q8_K), read as eight blocks of 32: IQ4_XS's sub-blocks, each
// with its own scale; TQ2_0's block s = 4 g + p, elements 32 s .. 32 s + 31 (bit pair p of its
// 32-byte group g).
template <Weights W>
constexpr bool kSuper = W == Weights::iq4_xs || W == Weights::tq2_0;

// The activations' format.
template <Weights W>
using Partner = std::conditional_t<kSuper<W>, quant::BlockQ8_K, quant::BlockQ8_0>;

// Blocks of 32 per weight block.
template <Weights W>
constexpr int kSubBlocks = kSuper<W> ? quant::kSuperBlock / quant::kBlock32 : 1;

// Blocks of 32 whose integer sums add up before one float step: TQ2_0's whole super-block has one.
template <Weights W>
constexpr int kSumBlocks = W == Weights::tq2_0 ? kSubBlocks<W> : 1;

// Where block b of 32 (counted along the row) has its activation bytes in a row of the partner.
template <Weights W>
inline size_t a_block_offset(int64_t b) {
  if constexpr (kSuper<W>)
    return size_t(b) / kSubBlocks<W> * sizeof(quant::BlockQ8_K) + offsetof(quant::BlockQ8_K, qs) +
           size_t(b) % kSubBlocks<W> * quant::kBlock32;
  else
    return size_t(b) * sizeof(quant::BlockQ8_0) + offsetof(quant::BlockQ8_0, qs);
}

// The 16 bytes of nibbles of block of 32 number s in a 4-bit format's weight block (Q4_0,
// IQ4_NL: s = 0).
template <Weights W>
inline const uint8_t* nibbles_of(const Block<W>& x, int s) {
  return x.qs + quant::kBlock32 / 2 * s;
}

// Block of 32 number s of a weight block, one byte per element in element order: Q4_0's and
// TQ2_0's codes (value code - 8, code - 1); Q8_0's and IQ4's values (the grid looked up), or with
// kUnsigned those values + 128 as unsigned bytes (vpdpbusd's operand).
template <Weights W, bool kUnsigned>
TEMPRA_X86_PACK inline __m256i block_codes(const Block<W>& x, int s) {
  if constexpr (W == Weights::q8_0) {
    const __m256i values = load256(x.qs);
    return kUnsigned ? _mm256_xor_si256(values, _mm256_set1_epi8(static_cast<char>(0x80))) : values;
  } else if constexpr (W == Weights::q4_0) {
    return nibbles(nibbles_of<W>(x, s));
  } else if constexpr (W == Weights::tq2_0) {
    return _mm256_and_si256(_mm256_srli_epi16(load256(x.qs + 32 * (s / 4)), 2 * (s % 4)), _mm256_set1_epi8(3));
  } else {
    const __m256i table = _mm256_broadcastsi128_si256(iq4_values_128(kUnsigned));
    return _mm256_shuffle_epi8(table, nibbles(nibbles_of<W>(x, s)));
  }
}

// ---- K-quants ----

// One super-block of one group of kCols columns.
template <int kCols>
struct alignas(64) PackedKSuperBlock {
  int8_t quads[8 * 8][kCols][4];  // quad 8 l + t of column c: its lane-l codes of sub-block t
  int32_t scales[8][kCols];       // sub-block t's scales as an int16 pair
  int32_t start[8][kCols];        // lane l: -128 * sum(scale * code) over the lane
  int32_t mins[8][kCols];         // (min_i, min_i) as int16 (Q4_K, Q5_K)
  float d[kCols], dmin[kCols];
};
// Every field of a super-block, and the next super-block, starts on a vector of kCols int32.
static_assert(sizeof(PackedKSuperBlock<8>) % 32 == 0 && offsetof(PackedKSuperBlock<8>, d) % 32 == 0);
static_assert(sizeof(PackedKSuperBlock<16>) % 64 == 0 && offsetof(PackedKSuperBlock<16>, d) % 64 == 0 &&
              offsetof(PackedKSuperBlock<16>, dmin) % 64 == 0);

enum class KWeights { q4_k, q5_k, q6_k };

template <KWeights W>
using KBlock = std::conditional_t<W == KWeights::q4_k, quant::BlockQ4_K,
                                  std::conditional_t<W == KWeights::q5_k, quant::BlockQ5_K, quant::BlockQ6_K>>;

// 32 bytes of one sub-block (elements 0..31) as eight quads: int32 l = elements l, l + 8, l + 16,
// l + 24.
TEMPRA_X86_PACK inline __m256i lane_quads(__m256i x) {
  const __m256i pairs = _mm256_shuffle_epi8(x, _mm256_broadcastsi128_si256(lane_pairs_order_128()));
  const __m128i low = _mm256_castsi256_si128(pairs), high = _mm256_extracti128_si256(pairs, 1);
  return _mm256_set_m128i(_mm_unpackhi_epi16(low, high), _mm_unpacklo_epi16(low, high));
}

// Sub-block t (elements 32 t .. 32 t + 31) of one column's super-block as signed codes.
template <KWeights W>
TEMPRA_X86_PACK inline __m256i signed_codes(const KBlock<W>& x, int t) {
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  if constexpr (W == KWeights::q6_k) {
    const int half = t / 4, quarter = t % 4;
    const __m256i ql = load256(x.ql + 64 * half + 32 * (quarter % 2));
    const __m256i qh = load256(x.qh + 32 * half);
    const __m256i low = _mm256_and_si256(quarter < 2 ? ql : _mm256_srli_epi16(ql, 4), nibble);
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * quarter), _mm256_set1_epi8(3));
    return _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), _mm256_set1_epi8(32));
  } else {
    const __m256i q = load256(x.qs + 32 * (t / 2));
    __m256i codes = _mm256_and_si256(t % 2 ? _mm256_srli_epi16(q, 4) : q, nibble);
    if constexpr (W == KWeights::q5_k) {
      const __m256i bit = _mm256_and_si256(_mm256_srli_epi16(load256(x.qh), t), _mm256_set1_epi8(1));
      codes = _mm256_or_si256(codes, _mm256_slli_epi16(bit, 4));
    }
    return codes;
  }
}

// 32 bytes (elements e0 .. e31) in "quad order": dword l = e_l, e_l+8, e_l+16, e_l+24, the four
// elements of lane l, for the K-quant decode GEMVs (quant_gemv_k_avx2.cpp; the VNNI arm's
// quant_gemv_k_avx512.cpp does the same to each half of a zmm). Dwords 0, 2, 4, 6 (elements
// 0-3, 8-11, 16-19, 24-27: lanes 0..3) gather in the low 128-bit lane and 1, 3, 5, 7 in the high
// one; then each lane is a 4 x 4 byte transpose.
TEMPRA_X86_PACK inline __m256i quad_order(__m256i v) {
  const __m256i dwords = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
  return _mm256_shuffle_epi8(dwords, _mm256_broadcastsi128_si256(quad_transpose_128()));
}

// A super-block's scale pairs for the decode GEMVs, int32 t = sub-block t's (Q4_K/Q5_K: (s_t,
// s_t); Q6_K: its two scales of 16), and (Q4_K, Q5_K) its mins term against the activation
// block's sums as eight int32 to add, into min_terms.
template <KWeights W>
TEMPRA_X86_PACK inline __m256i scale_pairs_k(const KBlock<W>& x, const int16_t* bsums, __m256i& min_terms) {
  if constexpr (W == KWeights::q6_k) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales)));
  } else {
    __m256i pairs, min_pairs;
    scale_min_pairs_k4(x.scales, pairs, min_pairs);
    min_terms = mins_terms(min_pairs, bsums);
    return pairs;
  }
}

// A K-quant block's dmin as f16 bits (Q4_K, Q5_K), or 0 (Q6_K has none).
template <class Block>
inline uint16_t dmin_bits(const Block& x) {
  if constexpr (requires { x.dmin; })
    return x.dmin.bits;
  else
    return 0;
}

// The float steps of a K-quant decode GEMV over eight weight rows: the scalar dot's
// (scalar/k_quant_lanes.h), the rows as the lanes of vectors. Per super-block, the rows' eight
// lane sums transposed, sums[l] += (d_w d_a) * float(lane l), and (Q4_K, Q5_K) total -= (dmin_w
// d_a) * float(min sum); at the end total + sums[0] + ... + sums[7]. (Row by row, each row's
// lanes in one vector and scalar scales, ran 20% slower on an AMD EPYC Zen 5.)
template <bool kMins>
struct KRowSums {
  __m256 sums[8];
  __m256 total;

  TEMPRA_X86_PACK void clear() {
    for (__m256& s : sums) s = _mm256_setzero_ps();
    total = _mm256_setzero_ps();
  }

  // lanes[r]: row r's eight lane sums; min_terms[r] (Q4_K, Q5_K): eight int32 that add up to
  // row r's mins term (both transposed in place, the terms then added: a horizontal sum per row
  // cost twice the instructions); d_bits, dmin_bits: the rows' f16 scales; da: the activation
  // block's scale.
  TEMPRA_X86_PACK void add(__m256i lanes[8], __m256i min_terms[8], const uint16_t* d_bits, const uint16_t* dmin_bits,
                           float da) {
    transpose8(lanes);  // lanes[l]: lane l of the eight rows
    const __m256 a_scale = _mm256_set1_ps(da);
    const __m256 d = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d_bits))), a_scale);
    for (int l = 0; l < 8; ++l) sums[l] = _mm256_add_ps(sums[l], _mm256_mul_ps(d, _mm256_cvtepi32_ps(lanes[l])));
    if constexpr (kMins) {
      transpose8(min_terms);
      __m256i min_sum = min_terms[0];
      for (int i = 1; i < 8; ++i) min_sum = _mm256_add_epi32(min_sum, min_terms[i]);
      const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dmin_bits)));
      total = _mm256_sub_ps(total, _mm256_mul_ps(_mm256_mul_ps(dmin, a_scale), _mm256_cvtepi32_ps(min_sum)));
    }
  }

  // The first `rows` results to c.
  TEMPRA_X86_PACK void store(float* c, int rows) {
    __m256 result = total;
    for (const __m256& s : sums) result = _mm256_add_ps(result, s);
    _mm256_maskstore_ps(c, first_lanes(rows), result);
  }
};

// Rows up to this many super-blocks long (8192 columns) are read by k_gemv_rows one after another.
inline constexpr int64_t kMaxStreamedSuperBlocks = 32;

// An arm's eight-row K-quant GEMV step (k_gemv_tasks' rows), around its kernel lanes(block,
// ordered activations, block sums, min_terms), which returns a super-block's eight lane sums:
// eight weight rows from j0 (rows past the last repeat it) against one activation row, its Q8_K
// blocks and its quad-ordered codes. Rows of at most kMaxStreamedSuperBlocks super-blocks are read
// one after another, as one stream requested kRowStreamPrefetchBytes ahead (prefetch.h; an AMD
// EPYC Zen 5 decoded Qwen3-0.6B Q4_K_M 1.15-1.25x faster so than with the rows side by side,
// docs/BENCHMARK.md, session 28): their integer sums wait in memory until the float steps take
// the eight rows super-block by super-block. Longer rows are read side by side, a super-block of
// each in turn, the next group's rows prefetched as these are read. Either way the same integer
// sums meet the same float steps in the same order. Inlined into each arm's wrapper, which
// carries its target attribute.
template <KWeights W, class Vector, auto lanes>
TEMPRA_X86_PACK __attribute__((always_inline)) inline void k_gemv_rows(const uint8_t* w, size_t w_row, int64_t j0,
                                                                       int rows, int64_t nb, const quant::BlockQ8_K* a,
                                                                       const Vector* a_ordered, int vectors, float* c) {
  constexpr bool kMins = W != KWeights::q6_k;
  const KBlock<W>* row[8];
  for (int r = 0; r < 8; ++r)
    row[r] = reinterpret_cast<const KBlock<W>*>(w + size_t(j0 + std::min(r, rows - 1)) * w_row);
  KRowSums<kMins> sums;
  sums.clear();
  if (nb <= kMaxStreamedSuperBlocks) {
    __m256i lane_sums[kMaxStreamedSuperBlocks][8], min_terms[kMaxStreamedSuperBlocks][8];
    uint16_t d[kMaxStreamedSuperBlocks][8], dmin[kMaxStreamedSuperBlocks][8];
    for (int r = 0; r < 8; ++r)
      for (int64_t b = 0; b < nb; ++b) {
        for (size_t offset = 0; offset < sizeof(KBlock<W>); offset += 64)
          __builtin_prefetch(
              reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(row[r] + b) + offset + kRowStreamPrefetchBytes),
              0, 3);
        min_terms[b][r] = _mm256_setzero_si256();
        lane_sums[b][r] = lanes(row[r][b], a_ordered + b * vectors, a[b].bsums, min_terms[b][r]);
        d[b][r] = row[r][b].d.bits;
        dmin[b][r] = dmin_bits(row[r][b]);
      }
    for (int64_t b = 0; b < nb; ++b) sums.add(lane_sums[b], min_terms[b], d[b], dmin[b], a[b].d);
  } else {
    const size_t ahead = 8 * w_row;  // the same super-block of the next group's rows
    for (int64_t b = 0; b < nb; ++b) {
      __m256i lane_sums[8], min_terms[8];
      uint16_t d[8], dmin[8];
      for (int r = 0; r < 8; ++r) {
        for (size_t offset = 0; offset < sizeof(KBlock<W>); offset += 64)
          prefetch_weights(reinterpret_cast<const char*>(row[r] + b) + ahead + offset);
        min_terms[r] = _mm256_setzero_si256();
        lane_sums[r] = lanes(row[r][b], a_ordered + b * vectors, a[b].bsums, min_terms[r]);
        d[r] = row[r][b].d.bits;
        dmin[r] = dmin_bits(row[r][b]);
      }
      sums.add(lane_sums, min_terms, d, dmin, a[b].d);
    }
  }
  sums.store(c, rows);
}

// The K-quant decode GEMV around an arm's kernels (quant_gemv_k_avx2.cpp, _avx512.cpp), which
// carry its target attribute: each activation row put in the weights' order once, `vectors`
// Vectors per super-block, by order(row, nb, out) on the calling thread's scratch (slot 0, read
// by every task); then tasks of eight weight rows, rows(w, w_row, j0, count, nb, activation row,
// its ordered vectors, c) for each activation row. (The eight rows' step is k_gemv_rows, wrapped
// by each arm so that it carries the arm's target and inlines the arm's lane sums.)
template <KWeights W, class Vector, class Order, class Rows>
void k_gemv_tasks(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc,
                  ThreadPool& pool, int vectors, Order order, Rows rows_of) {
  const int64_t nb = k / quant::kSuperBlock;
  const size_t w_row = size_t(nb) * sizeof(KBlock<W>);
  const auto* rows = static_cast<const quant::BlockQ8_K*>(a);
  const auto* wp = static_cast<const uint8_t*>(w);
  const int64_t row_vectors = nb * vectors;
  auto* ordered =
      reinterpret_cast<Vector*>(thread_scratch(0).floats(size_t(m * row_vectors) * sizeof(Vector) / sizeof(float)));
  for (int64_t i = 0; i < m; ++i) order(rows + i * nb, nb, ordered + i * row_vectors);
  pool.parallel_for((n + 7) / 8, 8, [&](int64_t first, int64_t last) {
    for (int64_t g = first; g < last; ++g) {
      const int count = int(std::min<int64_t>(8, n - 8 * g));
      for (int64_t i = 0; i < m; ++i)
        rows_of(wp, w_row, 8 * g, count, nb, rows + i * nb, ordered + i * row_vectors, c + i * ldc + 8 * g);
    }
  });
}

// Packs lanes lane0 .. lane0 + 7 of a group whose lane c holds column j0 + min(c, cols - 1) (so
// lanes past the real columns repeat the last), every super-block: each column's scale pairs
// (int32 t: sub-block t's two int16 scales; Q4_K/Q5_K: s_t twice, Q6_K: its two scales of 16)
// and quads of sub-block t, then the eight columns transposed at once. The lane starts are
// summed from the transposed quads.
template <KWeights W, int kCols>
TEMPRA_X86_PACK void pack_k_lanes(const uint8_t* w, size_t w_row, int64_t j0, int cols, int lane0, int64_t blocks,
                                  PackedKSuperBlock<kCols>* out) {
  const KBlock<W>* column[8];
  for (int c = 0; c < 8; ++c)
    column[c] = reinterpret_cast<const KBlock<W>*>(w + size_t(j0 + std::min(lane0 + c, cols - 1)) * w_row);
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < blocks; ++b) {
    PackedKSuperBlock<kCols>& p = out[b];
    __m256i scale_pairs[8], min_pairs[8];
    for (int c = 0; c < 8; ++c) {
      const KBlock<W>& x = column[c][b];
      prefetch_ahead<sizeof(x)>(&x);  // eight row streams from memory: pp32 +13%
      if constexpr (W == KWeights::q6_k) {
        scale_pairs[c] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales)));
      } else {
        __m128i scales, mins;
        unpack_scales_mins_k4(x.scales, scales, mins);
        scale_pairs[c] = each_twice(scales);
        min_pairs[c] = each_twice(mins);
        p.dmin[lane0 + c] = _cvtsh_ss(x.dmin.bits);
      }
      p.d[lane0 + c] = _cvtsh_ss(x.d.bits);
    }
    transpose8(scale_pairs);
    for (int t = 0; t < 8; ++t) _mm256_storeu_si256(reinterpret_cast<__m256i*>(&p.scales[t][lane0]), scale_pairs[t]);
    if constexpr (W != KWeights::q6_k) {
      transpose8(min_pairs);
      for (int i = 0; i < 8; ++i) _mm256_storeu_si256(reinterpret_cast<__m256i*>(&p.mins[i][lane0]), min_pairs[i]);
    }
    __m256i start[8];  // lane l's starts of the eight columns
    for (int l = 0; l < 8; ++l) start[l] = _mm256_setzero_si256();
    for (int t = 0; t < 8; ++t) {
      __m256i v[8];
      for (int c = 0; c < 8; ++c) v[c] = lane_quads(signed_codes<W>(column[c][b], t));
      transpose8(v);
      for (int l = 0; l < 8; ++l) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(p.quads[8 * l + t][lane0]), v[l]);
        const __m256i code_sums = _mm256_madd_epi16(_mm256_maddubs_epi16(ones, v[l]), scale_pairs[t]);
        start[l] = _mm256_sub_epi32(start[l], _mm256_slli_epi32(code_sums, 7));
      }
    }
    for (int l = 0; l < 8; ++l) _mm256_storeu_si256(reinterpret_cast<__m256i*>(&p.start[l][lane0]), start[l]);
  }
}

// One activation row's super-blocks as unsigned quads (a + 128) in the weights' order: 64 int32
// per super-block, quad 8 l + t.
TEMPRA_X86_PACK inline void pack_k_row(const quant::BlockQ8_K* row, int64_t blocks, int32_t* out) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < blocks; ++b) {
    __m256i v[8];
    for (int t = 0; t < 8; ++t) v[t] = lane_quads(_mm256_xor_si256(load256(row[b].qs + 32 * t), flip));
    transpose8(v);
    for (int l = 0; l < 8; ++l) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b * 64 + 8 * l), v[l]);
  }
}

// A row tile's operands for a K-quant micro-kernel: `rows` activation rows (their quads and
// their Q8_K blocks), the task's two groups of packed columns (cols real columns in all), the
// output tile.
template <int kCols>
struct KTile {
  int rows;
  const int32_t* const* a_quads;
  const quant::BlockQ8_K* const* a_rows;
  int64_t nb;
  const PackedKSuperBlock<kCols>* g0;
  const PackedKSuperBlock<kCols>* g1;
  float* c;
  int64_t ldc;
  int cols;
};

// The K-quant GEMM around an arm's micro-kernel: the activation rows regrouped in quads once, on
// the calling thread's scratch (slot 0, read by every task); then tasks of two groups of kCols
// columns, packed on each thread's own scratch (slot 1), and tile(KTile) for each row tile of at
// most kRows rows. No depth gives the dot's zeros (the micro-kernels' sums start with a
// super-block).
template <KWeights W, int kCols, int kRows, class Tile>
void k_gemm_tasks(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc,
                  ThreadPool& pool, Tile tile) {
  using Packed = PackedKSuperBlock<kCols>;
  constexpr int64_t kTaskCols = 2 * kCols;
  const int64_t nb = k / quant::kSuperBlock;
  if (nb == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    return;
  }
  const size_t w_row = size_t(nb) * sizeof(KBlock<W>);
  const auto* rows = static_cast<const quant::BlockQ8_K*>(a);
  const auto* wp = static_cast<const uint8_t*>(w);
  auto* packed_a = reinterpret_cast<int32_t*>(thread_scratch(0).floats(size_t(m * nb * 64)));
  pool.parallel_for(m, 1 + 16384 / (k + 1), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) pack_k_row(rows + i * nb, nb, packed_a + i * nb * 64);
  });
  const int64_t tasks = (n + kTaskCols - 1) / kTaskCols;
  pool.parallel_for(tasks, 1, [&](int64_t first, int64_t last) {
    auto* packed = reinterpret_cast<Packed*>(thread_scratch(1).floats(size_t(2 * nb) * sizeof(Packed) / sizeof(float)));
    for (int64_t task = first; task < last; ++task) {
      const int64_t j0 = task * kTaskCols;
      const int cols = int(std::min<int64_t>(kTaskCols, n - j0));
      Packed* g0 = packed;
      Packed* g1 = packed + nb;
      for (int lane0 = 0; lane0 < kCols; lane0 += 8)
        pack_k_lanes<W>(wp, w_row, j0, std::min(cols, kCols), lane0, nb, g0);
      if (cols > kCols)
        for (int lane0 = 0; lane0 < kCols; lane0 += 8)
          pack_k_lanes<W>(wp, w_row, j0 + kCols, cols - kCols, lane0, nb, g1);
      else
        g1 = g0;  // computed, never stored
      for (int64_t i0 = 0; i0 < m; i0 += kRows) {
        const int count = int(std::min<int64_t>(kRows, m - i0));
        const int32_t* a_quads[kRows];
        const quant::BlockQ8_K* a_rows[kRows];
        for (int r = 0; r < count; ++r) {
          a_quads[r] = packed_a + (i0 + r) * nb * 64;
          a_rows[r] = rows + (i0 + r) * nb;
        }
        tile(KTile<kCols>{count, a_quads, a_rows, nb, g0, g1, c + i0 * ldc + j0, ldc, cols});
      }
    }
  });
}

#undef TEMPRA_X86_PACK

}  // namespace
}  // namespace tempra::native::x86
