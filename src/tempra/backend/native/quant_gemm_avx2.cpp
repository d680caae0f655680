// tempra/backend/native/quant_gemm_avx2.cpp: the AVX2 integer GEMMs behind QuantDot::gemm
// (prompts, verify passes) where the VNNI arm is not there (a CPU without it, or a build with
// TEMPRA_QUANT_AVX512=OFF): Q8_0 and Q4_0 weights against Q8_0 activations, Q4_K, Q5_K and Q6_K
// against Q8_K; and the Q8_0/Q4_0 GEMVs behind QuantDot::gemv (decode steps; the K-quants' are in
// quant_dot_avx2.cpp, beside the dots whose lane sums they share).
//
// The same contract as the VNNI GEMMs (quant_gemm_avx512.cpp): every output is exactly the float
// the AVX2 dot (quant_dot_avx2.cpp) and the scalar spec return, the same exact integer sums then
// the same float operations in the same order, block after block. Weights are packed per call,
// one task's 16 columns at a time, as two groups of 8 columns, each column in one int32 lane of a
// ymm; a micro-tile is R activation rows x those 16 columns, and the activations stream past the
// packed panel (L1/L2) row tile after row tile.
//
// AVX2 has no vpdpbusd, so each format takes the multiply that stays exact for any block bytes:
//
// - Q4_0 (vpmaddubsw): a block is 8 quads (4 consecutive elements) of unsigned codes 0..15 per
//   column, the activation quad broadcast as signed bytes. vpmaddubsw's pairs are within
//   2 * 15 * 128, so the 8 quads of a block add up in int16 (within 8 * 3840 < 2^15) before one
//   vpmaddwd by ones widens them; the accumulator then adds -8 * sum(a) (tabled per row and
//   block), since the value of code c is c - 8.
// - Q8_0 (vpmaddwd): any int8 times any int8 saturates vpmaddubsw's pairs (-128 included), so the
//   weights are packed as int16 pairs of consecutive elements and the activation rows widened to
//   int16 once per call; each vpmaddwd adds a pair's two products into the column's int32 sum.
// - K-quants (vpmaddubsw, vpmaddwd): quant_gemm_x86.h's quads of one K-quant lane, the codes
//   signed against activations + 128, each pair times its sub-block scale into the lane's int32
//   sum; the scalar dot's eight lane sums come out exact.
//
// Compiled with -ffp-contract=off, so nothing fuses; the functions opt in to AVX2 with a target
// attribute and quant_dot_avx2.cpp lists them only after its CPUID check.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "tempra/backend/native/prefetch.h"
#include "tempra/backend/native/quant_gemm_x86.h"
#include "tempra/backend/native/scratch.h"
#include "tempra/backend/quant_dot.h"
#include "tempra/core/half.h"
#include "tempra/core/thread_pool.h"
#include "tempra/quant/blocks.h"

namespace tempra::native {
namespace {

using namespace tempra::quant;
using x86::load256;
using x86::transpose8;

#define TEMPRA_AVX2 __attribute__((target("avx2,fma,f16c")))

constexpr int kLanes = 8;   // columns per group: one ymm of int32 / f32
constexpr int kGroups = 2;  // groups per micro-tile and per task
constexpr int kTaskCols = kLanes * kGroups;
constexpr int kQuads = kBlock32 / 4;
constexpr int kPairs = kBlock32 / 2;

// A weight vector every row of a micro-tile multiplies, loaded once into a register: g++ would
// otherwise fold the load into each row's multiply, and the tile would wait on loads, not math.
TEMPRA_AVX2 inline __m256i load_shared(const void* p) {
  __m256i v = _mm256_load_si256(static_cast<const __m256i*>(p));
  asm("" : "+x"(v));
  return v;
}

// Keeps an accumulator in its register from one step to the next: integer adds associate, and
// g++ would otherwise regroup a tile's chains of adds into trees whose partial sums spill.
TEMPRA_AVX2 inline void in_register(__m256i& v) { asm("" : "+x"(v)); }

// Which of a task's (at most 16) columns are real: lane l of group g stores when 8 g + l < cols.
TEMPRA_AVX2 inline __m256i store_mask(int cols, int group) { return x86::first_lanes(cols - kLanes * group); }

// ---- Q8_0 and Q4_0 ----

enum class Weights { q8_0, q4_0 };

template <Weights W>
using Block = std::conditional_t<W == Weights::q8_0, BlockQ8_0, BlockQ4_0>;

// One block of one 8-column group as its micro-kernel reads it: Q4_0 as 8 quads of codes, Q8_0
// as 16 pairs of int16 values, then the columns' scales.
template <Weights W>
struct alignas(32) PackedBlock;
template <>
struct alignas(32) PackedBlock<Weights::q4_0> {
  uint8_t quads[kQuads][kLanes][4];  // quad q of column c: codes of elements 4q .. 4q + 3
  float scale[kLanes];
};
template <>
struct alignas(32) PackedBlock<Weights::q8_0> {
  int16_t pairs[kPairs][kLanes][2];  // pair p of column c: elements 2p, 2p + 1
  float scale[kLanes];
};
// A task's second group starts nb blocks after the first: still aligned for vector loads.
static_assert(sizeof(PackedBlock<Weights::q4_0>) % 32 == 0 && sizeof(PackedBlock<Weights::q8_0>) % 32 == 0);

// Packs columns j0 .. j0 + cols - 1 (cols <= 8; the last is repeated to fill the group) of the
// weight rows, every block: each column's block unpacked into a vector per quad or pair row,
// eight columns transposed at once.
template <Weights W>
TEMPRA_AVX2 void pack_group(const uint8_t* w, size_t w_row, int64_t j0, int cols, int64_t blocks, PackedBlock<W>* out) {
  const Block<W>* column[kLanes];
  for (int c = 0; c < kLanes; ++c)
    column[c] = reinterpret_cast<const Block<W>*>(w + size_t(j0 + std::min(c, cols - 1)) * w_row);
  for (int64_t b = 0; b < blocks; ++b) {
    PackedBlock<W>& p = out[b];
    for (int c = 0; c < kLanes; ++c) p.scale[c] = _cvtsh_ss(column[c][b].d.bits);
    if constexpr (W == Weights::q4_0) {
      // Elements 0..15 are the low nibbles of qs[0..15], 16..31 the high ones: 32 codes in order,
      // whose int32 q is quad q.
      __m256i v[kLanes];
      const __m128i nibble = _mm_set1_epi8(0x0F);
      for (int c = 0; c < kLanes; ++c) {
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(column[c][b].qs));
        v[c] = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), nibble), _mm_and_si128(packed, nibble));
      }
      transpose8(v);
      for (int q = 0; q < kQuads; ++q) _mm256_store_si256(reinterpret_cast<__m256i*>(p.quads[q]), v[q]);
    } else {
      // Two passes of 16 elements: int32 i of a widened half is pair i of that half.
      for (int half = 0; half < 2; ++half) {
        __m256i v[kLanes];
        for (int c = 0; c < kLanes; ++c)
          v[c] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(column[c][b].qs + 16 * half)));
        transpose8(v);
        for (int i = 0; i < kLanes; ++i) _mm256_store_si256(reinterpret_cast<__m256i*>(p.pairs[8 * half + i]), v[i]);
      }
    }
  }
}

// Per row and block of the activations: the scale as f32 and, for Q4_0, -8 * sum(a) (the
// accumulator's start); for Q8_0 the row widened to int16 (pairs read as int32 broadcasts).
struct RowTables {
  float* scale;
  int32_t* start;  // Q4_0 only
  int16_t* wide;   // Q8_0 only: k int16 per row
};

template <Weights W>
TEMPRA_AVX2 RowTables row_tables(const uint8_t* ap, int64_t m, int64_t nb, ThreadPool& pool) {
  // The scales, then Q4_0's starts or Q8_0's widened rows.
  const size_t second = W == Weights::q4_0 ? size_t(m * nb) : size_t(m * nb * kBlock32) / 2;
  float* tables = thread_scratch(0).floats(size_t(m * nb) + second);
  const RowTables t{tables, reinterpret_cast<int32_t*>(tables + m * nb), reinterpret_cast<int16_t*>(tables + m * nb)};
  pool.parallel_for(m, 1 + 512 / (nb + 1), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const auto* row = reinterpret_cast<const BlockQ8_0*>(ap) + i * nb;
      for (int64_t b = 0; b < nb; ++b) {
        t.scale[i * nb + b] = _cvtsh_ss(row[b].d.bits);
        if constexpr (W == Weights::q4_0) {
          int sum = 0;
          for (int e = 0; e < kBlock32; ++e) sum += row[b].qs[e];
          t.start[i * nb + b] = -8 * sum;
        } else {
          int16_t* out = t.wide + (i * nb + b) * kBlock32;
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                              _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[b].qs))));
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16),
                              _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[b].qs + 16))));
        }
      }
    }
  });
  return t;
}

TEMPRA_AVX2 inline __m256i broadcast32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// The dot's float step for a block's exact sums s: Q8_0 acc + float(s) * (d_w * d_a); Q4_0
// acc + float(s) * d_w * d_a, left to right.
template <Weights W>
TEMPRA_AVX2 inline __m256 add_block(__m256 acc, __m256i s, __m256 dw, __m256 da) {
  if constexpr (W == Weights::q8_0)
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, da)));
  else
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(s), dw), da));
}

// R rows x the two groups, every block: the exact int32 sum of each block, then add_block.
template <int R, Weights W>
TEMPRA_AVX2 void micro_tile(const uint8_t* const* a_rows, const RowTables& t, int64_t nb, int64_t first_row,
                            const PackedBlock<W>* g0, const PackedBlock<W>* g1, float* c, int64_t ldc, int cols) {
  __m256 acc[R][kGroups];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i s[R][kGroups];
    if constexpr (W == Weights::q4_0) {
      __m256i pairs[R][kGroups];
      for (int r = 0; r < R; ++r) pairs[r][0] = pairs[r][1] = _mm256_setzero_si256();
      for (int q = 0; q < kQuads; ++q) {
        const __m256i w0 = load_shared(g0[b].quads[q]);
        const __m256i w1 = load_shared(g1[b].quads[q]);
        for (int r = 0; r < R; ++r) {
          const __m256i av = broadcast32(a_rows[r] + b * sizeof(BlockQ8_0) + offsetof(BlockQ8_0, qs) + 4 * q);
          pairs[r][0] = _mm256_add_epi16(pairs[r][0], _mm256_maddubs_epi16(w0, av));
          pairs[r][1] = _mm256_add_epi16(pairs[r][1], _mm256_maddubs_epi16(w1, av));
        }
      }
      const __m256i ones = _mm256_set1_epi16(1);
      for (int r = 0; r < R; ++r) {
        const __m256i start = _mm256_set1_epi32(t.start[(first_row + r) * nb + b]);
        s[r][0] = _mm256_add_epi32(start, _mm256_madd_epi16(pairs[r][0], ones));
        s[r][1] = _mm256_add_epi32(start, _mm256_madd_epi16(pairs[r][1], ones));
      }
    } else {
      for (int r = 0; r < R; ++r) s[r][0] = s[r][1] = _mm256_setzero_si256();
      for (int p = 0; p < kPairs; ++p) {
        const __m256i w0 = load_shared(g0[b].pairs[p]);
        const __m256i w1 = load_shared(g1[b].pairs[p]);
        for (int r = 0; r < R; ++r) {
          const __m256i av = broadcast32(t.wide + ((first_row + r) * nb + b) * kBlock32 + 2 * p);
          s[r][0] = _mm256_add_epi32(s[r][0], _mm256_madd_epi16(w0, av));
          s[r][1] = _mm256_add_epi32(s[r][1], _mm256_madd_epi16(w1, av));
        }
      }
    }
    const __m256 d0 = _mm256_load_ps(g0[b].scale), d1 = _mm256_load_ps(g1[b].scale);
    for (int r = 0; r < R; ++r) {
      const __m256 da = _mm256_set1_ps(t.scale[(first_row + r) * nb + b]);
      acc[r][0] = add_block<W>(acc[r][0], s[r][0], d0, da);
      acc[r][1] = add_block<W>(acc[r][1], s[r][1], d1, da);
    }
  }
  const __m256i m0 = store_mask(cols, 0), m1 = store_mask(cols, 1);
  for (int r = 0; r < R; ++r) {
    _mm256_maskstore_ps(c + r * ldc, m0, acc[r][0]);
    _mm256_maskstore_ps(c + r * ldc + kLanes, m1, acc[r][1]);
  }
}

constexpr int kTileRows = 3;  // rows per micro-tile: 2 x 3 int32 sums, 2 x 3 f32 sums, 2 weight vectors

template <Weights W>
TEMPRA_AVX2 void gemm(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc,
                      ThreadPool& pool) {
  const int64_t nb = k / kBlock32;
  const size_t a_row = size_t(nb) * sizeof(BlockQ8_0), w_row = size_t(nb) * sizeof(Block<W>);
  const auto* ap = static_cast<const uint8_t*>(a);
  const auto* wp = static_cast<const uint8_t*>(w);
  const RowTables t = row_tables<W>(ap, m, nb, pool);
  const int64_t tasks = (n + kTaskCols - 1) / kTaskCols;
  pool.parallel_for(tasks, 1, [&](int64_t first, int64_t last) {
    auto* packed = reinterpret_cast<PackedBlock<W>*>(
        thread_scratch(1).floats(size_t(kGroups * nb) * sizeof(PackedBlock<W>) / sizeof(float)));
    for (int64_t task = first; task < last; ++task) {
      const int64_t j0 = task * kTaskCols;
      const int cols = int(std::min<int64_t>(kTaskCols, n - j0));
      PackedBlock<W>* g0 = packed;
      PackedBlock<W>* g1 = packed + nb;
      pack_group<W>(wp, w_row, j0, std::min(cols, kLanes), nb, g0);
      if (cols > kLanes)
        pack_group<W>(wp, w_row, j0 + kLanes, cols - kLanes, nb, g1);
      else
        g1 = g0;  // computed, never stored
      for (int64_t i0 = 0; i0 < m; i0 += kTileRows) {
        const int rows = int(std::min<int64_t>(kTileRows, m - i0));
        const uint8_t* a_rows[kTileRows];
        for (int r = 0; r < rows; ++r) a_rows[r] = ap + size_t(i0 + r) * a_row;
        float* ct = c + i0 * ldc + j0;
        if (rows == 1)
          micro_tile<1, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, cols);
        else if (rows == 2)
          micro_tile<2, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, cols);
        else
          micro_tile<kTileRows, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, cols);
      }
    }
  });
}

// ---- Decode steps: a few activation rows, the weights read in place ----
//
// Eight weight rows at a time, block by block: each row's block against the activation block as
// eight int32 partial sums (Q4_0: vpmaddubsw then vpmaddwd by ones; Q8_0: both widened to int16,
// vpmaddwd), the eight rows' partials added by a transposing tree of vphaddd (exact in int32), the
// Q4_0 offset term added, and the dot's float step for the eight rows as one vector. The next
// group's rows are prefetched as these are read (prefetch.h says why).

// The int32 sums of the 8 lanes of each of v[0..7], as one vector in row order.
TEMPRA_AVX2 inline __m256i row_sums_8(const __m256i* v) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
  // Rows 0-3 in each half of one, 4-7 in each half of the other.
  return x86::add_halves(_mm256_hadd_epi32(h01, h23), _mm256_hadd_epi32(h45, h67));
}

template <Weights W>
TEMPRA_AVX2 void gemv_rows(const uint8_t* w, size_t w_row, int64_t j0, int rows, int64_t nb, const BlockQ8_0* a,
                           const RowTables& t, int64_t row_index, float* c) {
  const Block<W>* row[kLanes];
  for (int r = 0; r < kLanes; ++r)
    row[r] = reinterpret_cast<const Block<W>*>(w + size_t(j0 + std::min(r, rows - 1)) * w_row);
  const size_t ahead = kLanes * w_row;  // the same block of the next group's rows
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i partial[kLanes];
    if constexpr (W == Weights::q4_0) {
      const __m256i av = load256(a[b].qs), ones = _mm256_set1_epi16(1);
      const __m128i nibble = _mm_set1_epi8(0x0F);
      for (int r = 0; r < kLanes; ++r) {
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[r][b].qs));
        const __m256i codes = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), nibble), _mm_and_si128(packed, nibble));
        partial[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(codes, av), ones);
        prefetch_weights(reinterpret_cast<const char*>(row[r] + b) + ahead);
      }
    } else {
      const int16_t* wide = t.wide + (row_index * nb + b) * kBlock32;
      const __m256i a0 = load256(wide), a1 = load256(wide + 16);
      for (int r = 0; r < kLanes; ++r) {
        const auto* qs = reinterpret_cast<const __m128i*>(row[r][b].qs);
        partial[r] = _mm256_add_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(qs)), a0),
                                      _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(qs + 1)), a1));
        prefetch_weights(reinterpret_cast<const char*>(row[r] + b) + ahead);
      }
    }
    __m256i s = row_sums_8(partial);
    if constexpr (W == Weights::q4_0) s = _mm256_add_epi32(s, _mm256_set1_epi32(t.start[row_index * nb + b]));
    const __m256 dw = _mm256_cvtph_ps(_mm_setr_epi16(short(row[0][b].d.bits), short(row[1][b].d.bits), short(row[2][b].d.bits),
                                                     short(row[3][b].d.bits), short(row[4][b].d.bits), short(row[5][b].d.bits),
                                                     short(row[6][b].d.bits), short(row[7][b].d.bits)));
    const __m256 da = _mm256_set1_ps(t.scale[row_index * nb + b]);
    acc = add_block<W>(acc, s, dw, da);
  }
  _mm256_maskstore_ps(c, store_mask(rows, 0), acc);
}

template <Weights W>
TEMPRA_AVX2 void gemv(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc,
                      ThreadPool& pool) {
  const int64_t nb = k / kBlock32;
  const size_t a_row = size_t(nb) * sizeof(BlockQ8_0), w_row = size_t(nb) * sizeof(Block<W>);
  const auto* ap = static_cast<const uint8_t*>(a);
  const auto* wp = static_cast<const uint8_t*>(w);
  const RowTables t = row_tables<W>(ap, m, nb, pool);
  const int64_t groups = (n + kLanes - 1) / kLanes;
  pool.parallel_for(groups, 8, [&](int64_t first, int64_t last) {
    for (int64_t g = first; g < last; ++g) {
      const int64_t j0 = g * kLanes;
      const int rows = int(std::min<int64_t>(kLanes, n - j0));
      for (int64_t i = 0; i < m; ++i)
        gemv_rows<W>(wp, w_row, j0, rows, nb, reinterpret_cast<const BlockQ8_0*>(ap + size_t(i) * a_row), t, i,
                     c + i * ldc + j0);
    }
  });
}

// ---- K-quants (quant_gemm_x86.h: the packed layout) ----

using KPacked = x86::PackedKSuperBlock<kLanes>;
using x86::KWeights;

// R rows x the two groups, every super-block, lane after lane: R x 2 integer sums in registers;
// the float sums, touched once per lane and super-block, wait in memory.
template <int R, bool kMins>
TEMPRA_AVX2 void k_micro_tile(const int32_t* const* a_quads, const BlockQ8_K* const* a_rows, int64_t nb,
                              const KPacked* g0, const KPacked* g1, float* c, int64_t ldc, int cols) {
  const KPacked* groups[kGroups] = {g0, g1};
  // The float sums start at zero with the first super-block (0 + x, as the dot adds it: -0 becomes
  // +0), not with a clearing of the whole array, which cost as much as the math for short k.
  alignas(32) float sums[R][kGroups][8][kLanes], total[R][kGroups][kLanes];
  for (int64_t b = 0; b < nb; ++b) {
    const int32_t* quads[R];
    for (int r = 0; r < R; ++r) quads[r] = a_quads[r] + b * 64;
    for (int l = 0; l < 8; ++l) {
      __m256i lane[R][kGroups];
      const __m256i start0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(g0[b].start[l]));
      const __m256i start1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(g1[b].start[l]));
      for (int r = 0; r < R; ++r) {
        lane[r][0] = start0;
        lane[r][1] = start1;
      }
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) {
        const __m256i w0 = load_shared(g0[b].quads[8 * l + t]);
        const __m256i w1 = load_shared(g1[b].quads[8 * l + t]);
        const __m256i s0 = load_shared(g0[b].scales[t]);
        const __m256i s1 = load_shared(g1[b].scales[t]);
        for (int r = 0; r < R; ++r) {
          const __m256i av = _mm256_set1_epi32(quads[r][8 * l + t]);
          lane[r][0] = _mm256_add_epi32(lane[r][0], _mm256_madd_epi16(_mm256_maddubs_epi16(av, w0), s0));
          lane[r][1] = _mm256_add_epi32(lane[r][1], _mm256_madd_epi16(_mm256_maddubs_epi16(av, w1), s1));
          in_register(lane[r][0]);
          in_register(lane[r][1]);
        }
      }
      for (int r = 0; r < R; ++r)
        for (int q = 0; q < kGroups; ++q) {
          const __m256 d = _mm256_mul_ps(_mm256_load_ps(groups[q][b].d), _mm256_set1_ps(a_rows[r][b].d));
          float* sum = sums[r][q][l];
          _mm256_store_ps(sum, _mm256_add_ps(b == 0 ? _mm256_setzero_ps() : _mm256_load_ps(sum), _mm256_mul_ps(d, _mm256_cvtepi32_ps(lane[r][q]))));
        }
    }
    if constexpr (kMins) {
      for (int r = 0; r < R; ++r) {
        const __m256 da = _mm256_set1_ps(a_rows[r][b].d);
        int32_t bsum_pairs[8];
        std::memcpy(bsum_pairs, a_rows[r][b].bsums, sizeof bsum_pairs);
        for (int q = 0; q < kGroups; ++q) {
          __m256i min_sum = _mm256_setzero_si256();
          for (int j = 0; j < 8; ++j)
            min_sum = _mm256_add_epi32(
                min_sum, _mm256_madd_epi16(_mm256_set1_epi32(bsum_pairs[j]),
                                           _mm256_load_si256(reinterpret_cast<const __m256i*>(groups[q][b].mins[j]))));
          const __m256 term =
              _mm256_mul_ps(_mm256_mul_ps(_mm256_load_ps(groups[q][b].dmin), da), _mm256_cvtepi32_ps(min_sum));
          _mm256_store_ps(total[r][q], _mm256_sub_ps(b == 0 ? _mm256_setzero_ps() : _mm256_load_ps(total[r][q]), term));
        }
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < kGroups; ++q) {
      __m256 result = kMins ? _mm256_load_ps(total[r][q]) : _mm256_setzero_ps();
      for (int l = 0; l < 8; ++l) result = _mm256_add_ps(result, _mm256_load_ps(sums[r][q][l]));
      _mm256_maskstore_ps(c + r * ldc + q * kLanes, store_mask(cols, q), result);
    }
}

// Row tiles of up to 4 rows (8 int32 sums, four shared vectors and a broadcast in 16 ymm).
template <KWeights W>
void k_gemm(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc, ThreadPool& pool) {
  constexpr bool kMins = W != KWeights::q6_k;
  x86::k_gemm_tasks<W, kLanes, 4>(m, n, k, a, w, c, ldc, pool, [](const x86::KTile<kLanes>& t) {
    switch (t.rows) {
      case 1:
        return k_micro_tile<1, kMins>(t.a_quads, t.a_rows, t.nb, t.g0, t.g1, t.c, t.ldc, t.cols);
      case 2:
        return k_micro_tile<2, kMins>(t.a_quads, t.a_rows, t.nb, t.g0, t.g1, t.c, t.ldc, t.cols);
      case 3:
        return k_micro_tile<3, kMins>(t.a_quads, t.a_rows, t.nb, t.g0, t.g1, t.c, t.ldc, t.cols);
      default:
        return k_micro_tile<4, kMins>(t.a_quads, t.a_rows, t.nb, t.g0, t.g1, t.c, t.ldc, t.cols);
    }
  });
}

}  // namespace

void add_avx2_gemms(HotFormatDots& dots) {
  dots.q8_0_gemm = &gemm<Weights::q8_0>;
  dots.q4_0_gemm = &gemm<Weights::q4_0>;
  dots.q8_0_gemv = &gemv<Weights::q8_0>;
  dots.q4_0_gemv = &gemv<Weights::q4_0>;
  dots.q4_k_gemm = &k_gemm<KWeights::q4_k>;
  dots.q5_k_gemm = &k_gemm<KWeights::q5_k>;
  dots.q6_k_gemm = &k_gemm<KWeights::q6_k>;
}

}  // namespace tempra::native
