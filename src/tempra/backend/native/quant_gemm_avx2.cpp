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

// ---- Blocks of 32: Q8_0, Q4_0, IQ4_NL, IQ4_XS, TQ2_0 ----

using x86::a_block_offset;
using x86::Block;
using x86::block_codes;
using x86::kSubBlocks;
using x86::kSumBlocks;
using x86::kSuper;
using x86::Partner;
using x86::Weights;

// The formats whose values take any int8 (Q8_0) or reach +-127 (IQ4's grid): vpmaddubsw's pairs
// could saturate, so they go as int16 pairs through vpmaddwd against widened activations. The
// others (Q4_0, TQ2_0) are unsigned codes below 16 for vpmaddubsw, their offset taken back by
// the accumulator's start.
template <Weights W>
constexpr bool kWide = W == Weights::q8_0 || W == Weights::iq4_nl || W == Weights::iq4_xs;

// What the unsigned codes add to each element's value (Q4_0: value code - 8; TQ2_0: code - 1).
template <Weights W>
constexpr int kOffset = W == Weights::q4_0 ? 8 : 1;

// One block of 32 of one 8-column group as its micro-kernel reads it: codes as 8 quads, or values
// as 16 int16 pairs; then the columns' scales (IQ4_XS: the sub-block's, ls - 32; TQ2_0: unused).
struct alignas(32) PackedQuads {
  uint8_t quads[kQuads][kLanes][4];  // quad q of column c: codes of elements 4q .. 4q + 3
  float scale[kLanes];
};
struct alignas(32) PackedPairs {
  int16_t pairs[kPairs][kLanes][2];  // pair p of column c: elements 2p, 2p + 1
  float scale[kLanes];
};
// A task's second group starts nb blocks after the first: still aligned for vector loads.
static_assert(sizeof(PackedQuads) % 32 == 0 && sizeof(PackedPairs) % 32 == 0);
template <Weights W>
using PackedBlock = std::conditional_t<kWide<W>, PackedPairs, PackedQuads>;

// An 8-column group's packed blocks and, for the super-block formats, each super-block's d.
template <Weights W>
struct Panel {
  const PackedBlock<W>* blocks;
  const float* super_d;  // 8 floats per super-block
};

// Packs columns j0 .. j0 + cols - 1 (cols <= 8; the last is repeated to fill the group) of the
// weight rows, every block of 32: each column's block unpacked into a vector per quad or pair
// row, eight columns transposed at once; the scales (super-block formats: d into super_d).
template <Weights W>
TEMPRA_AVX2 void pack_group(const uint8_t* w, size_t w_row, int64_t j0, int cols, int64_t blocks, PackedBlock<W>* out,
                            float* super_d) {
  const Block<W>* column[kLanes];
  for (int c = 0; c < kLanes; ++c)
    column[c] = reinterpret_cast<const Block<W>*>(w + size_t(j0 + std::min(c, cols - 1)) * w_row);
  for (int64_t b = 0; b < blocks; ++b) {
    if constexpr (kSuper<W>)
      for (int c = 0; c < kLanes; ++c) super_d[b * kLanes + c] = _cvtsh_ss(column[c][b].d.bits);
    for (int s = 0; s < kSubBlocks<W>; ++s) {
      PackedBlock<W>& p = out[b * kSubBlocks<W> + s];
      if constexpr (W == Weights::iq4_xs)
        for (int c = 0; c < kLanes; ++c) p.scale[c] = float(quant::iq4_xs_scale(column[c][b], s));
      else if constexpr (!kSuper<W>)
        for (int c = 0; c < kLanes; ++c) p.scale[c] = _cvtsh_ss(column[c][b].d.bits);
      __m256i v[kLanes];
      for (int c = 0; c < kLanes; ++c) v[c] = block_codes<W, false>(column[c][b], s);
      if constexpr (kWide<W>) {
        // Two passes of 16 elements: int32 i of a widened half is pair i of that half.
        for (int half = 0; half < 2; ++half) {
          __m256i wide[kLanes];
          for (int c = 0; c < kLanes; ++c)
            wide[c] = _mm256_cvtepi8_epi16(half ? _mm256_extracti128_si256(v[c], 1) : _mm256_castsi256_si128(v[c]));
          transpose8(wide);
          for (int i = 0; i < kLanes; ++i) _mm256_store_si256(reinterpret_cast<__m256i*>(p.pairs[8 * half + i]), wide[i]);
        }
      } else {
        // 32 codes in order, whose int32 q is quad q.
        transpose8(v);
        for (int q = 0; q < kQuads; ++q) _mm256_store_si256(reinterpret_cast<__m256i*>(p.quads[q]), v[q]);
      }
    }
  }
}

// Per row and block of 32 of the activations: the scale as f32 (Q8_K rows: the super-block's)
// and, for the code formats, -offset * sum(a) (the accumulator's start); for the wide formats
// the row widened to int16 (pairs read as int32 broadcasts).
struct RowTables {
  float* scale;
  int32_t* start;  // code formats only
  int16_t* wide;   // wide formats only: k int16 per row
};

template <Weights W>
TEMPRA_AVX2 RowTables row_tables(const uint8_t* ap, int64_t m, int64_t nb, ThreadPool& pool) {
  // The scales, then the starts or the widened rows.
  const size_t second = kWide<W> ? size_t(m * nb * kBlock32) / 2 : size_t(m * nb);
  float* tables = thread_scratch(0).floats(size_t(m * nb) + second);
  const RowTables t{tables, reinterpret_cast<int32_t*>(tables + m * nb), reinterpret_cast<int16_t*>(tables + m * nb)};
  const size_t a_row = size_t(nb / kSubBlocks<W>) * sizeof(Partner<W>);
  pool.parallel_for(m, 1 + 512 / (nb + 1), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const uint8_t* row = ap + size_t(i) * a_row;
      for (int64_t b = 0; b < nb; ++b) {
        const auto& block = reinterpret_cast<const Partner<W>*>(row)[b / kSubBlocks<W>];
        if constexpr (kSuper<W>)
          t.scale[i * nb + b] = block.d;
        else
          t.scale[i * nb + b] = _cvtsh_ss(block.d.bits);
        const auto* qs = reinterpret_cast<const int8_t*>(row + a_block_offset<W>(b));
        if constexpr (kWide<W>) {
          int16_t* out = t.wide + (i * nb + b) * kBlock32;
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                              _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs))));
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16),
                              _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 16))));
        } else {
          int sum = 0;
          for (int e = 0; e < kBlock32; ++e) sum += qs[e];
          t.start[i * nb + b] = -kOffset<W> * sum;
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

// The dot's float step for a block's exact sums s (TQ2_0: the super-block's), dw the weight's
// scale (super-block formats: d, with ls IQ4_XS's sub-block scale), da the activation's:
// Q8_0, IQ4_NL, TQ2_0 acc + s (d_w d_a); Q4_0 acc + (s d_w) d_a; IQ4_XS acc + ((d_w d_a) ls) s.
template <Weights W>
TEMPRA_AVX2 inline __m256 add_block(__m256 acc, __m256i s, __m256 dw, __m256 da, __m256 ls) {
  if constexpr (W == Weights::q4_0)
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(s), dw), da));
  else if constexpr (W == Weights::iq4_xs)
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(dw, da), ls), _mm256_cvtepi32_ps(s)));
  else
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, da)));
}

// R rows x the two groups, every block of 32: the exact int32 sum of each block (added over
// TQ2_0's super-block), then add_block.
template <int R, Weights W>
TEMPRA_AVX2 void micro_tile(const uint8_t* const* a_rows, const RowTables& t, int64_t nb, int64_t first_row, Panel<W> g0,
                            Panel<W> g1, float* c, int64_t ldc, int cols) {
  __m256 acc[R][kGroups];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  __m256i s[R][kGroups];
  for (int64_t b = 0; b < nb; ++b) {
    __m256i block[R][kGroups];
    if constexpr (!kWide<W>) {
      __m256i pairs[R][kGroups];
      for (int r = 0; r < R; ++r) pairs[r][0] = pairs[r][1] = _mm256_setzero_si256();
      const size_t a_offset = a_block_offset<W>(b);
      for (int q = 0; q < kQuads; ++q) {
        const __m256i w0 = load_shared(g0.blocks[b].quads[q]);
        const __m256i w1 = load_shared(g1.blocks[b].quads[q]);
        for (int r = 0; r < R; ++r) {
          const __m256i av = broadcast32(a_rows[r] + a_offset + 4 * q);
          pairs[r][0] = _mm256_add_epi16(pairs[r][0], _mm256_maddubs_epi16(w0, av));
          pairs[r][1] = _mm256_add_epi16(pairs[r][1], _mm256_maddubs_epi16(w1, av));
        }
      }
      const __m256i ones = _mm256_set1_epi16(1);
      for (int r = 0; r < R; ++r) {
        const __m256i start = _mm256_set1_epi32(t.start[(first_row + r) * nb + b]);
        block[r][0] = _mm256_add_epi32(start, _mm256_madd_epi16(pairs[r][0], ones));
        block[r][1] = _mm256_add_epi32(start, _mm256_madd_epi16(pairs[r][1], ones));
      }
    } else {
      for (int r = 0; r < R; ++r) block[r][0] = block[r][1] = _mm256_setzero_si256();
      for (int p = 0; p < kPairs; ++p) {
        const __m256i w0 = load_shared(g0.blocks[b].pairs[p]);
        const __m256i w1 = load_shared(g1.blocks[b].pairs[p]);
        for (int r = 0; r < R; ++r) {
          const __m256i av = broadcast32(t.wide + ((first_row + r) * nb + b) * kBlock32 + 2 * p);
          block[r][0] = _mm256_add_epi32(block[r][0], _mm256_madd_epi16(w0, av));
          block[r][1] = _mm256_add_epi32(block[r][1], _mm256_madd_epi16(w1, av));
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int g = 0; g < kGroups; ++g) s[r][g] = b % kSumBlocks<W> == 0 ? block[r][g] : _mm256_add_epi32(s[r][g], block[r][g]);
    if (b % kSumBlocks<W> != kSumBlocks<W> - 1) continue;  // TQ2_0: the super-block's sum goes on
    // The packed block's scale (IQ4_XS: its ls; TQ2_0 packs none) and the weight's d (the
    // super-block's, or that same scale).
    const __m256 ls0 = W == Weights::tq2_0 ? _mm256_setzero_ps() : _mm256_load_ps(g0.blocks[b].scale);
    const __m256 ls1 = W == Weights::tq2_0 ? _mm256_setzero_ps() : _mm256_load_ps(g1.blocks[b].scale);
    const __m256 d0 = kSuper<W> ? _mm256_load_ps(g0.super_d + b / kSubBlocks<W> * kLanes) : ls0;
    const __m256 d1 = kSuper<W> ? _mm256_load_ps(g1.super_d + b / kSubBlocks<W> * kLanes) : ls1;
    for (int r = 0; r < R; ++r) {
      const __m256 da = _mm256_set1_ps(t.scale[(first_row + r) * nb + b]);
      acc[r][0] = add_block<W>(acc[r][0], s[r][0], d0, da, ls0);
      acc[r][1] = add_block<W>(acc[r][1], s[r][1], d1, da, ls1);
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
  const int64_t nb = k / kBlock32, weight_blocks = nb / kSubBlocks<W>;
  const size_t a_row = size_t(weight_blocks) * sizeof(Partner<W>), w_row = size_t(weight_blocks) * sizeof(Block<W>);
  const auto* ap = static_cast<const uint8_t*>(a);
  const auto* wp = static_cast<const uint8_t*>(w);
  const RowTables t = row_tables<W>(ap, m, nb, pool);
  const int64_t tasks = (n + kTaskCols - 1) / kTaskCols;
  pool.parallel_for(tasks, 1, [&](int64_t first, int64_t last) {
    // Both groups' blocks, then (super-block formats) both groups' d's.
    const size_t block_floats = size_t(kGroups * nb) * sizeof(PackedBlock<W>) / sizeof(float);
    const size_t super_floats = kSuper<W> ? size_t(kGroups * weight_blocks * kLanes) : 0;
    float* scratch = thread_scratch(1).floats(block_floats + super_floats);
    auto* packed = reinterpret_cast<PackedBlock<W>*>(scratch);
    float* super_d = scratch + block_floats;
    for (int64_t task = first; task < last; ++task) {
      const int64_t j0 = task * kTaskCols;
      const int cols = int(std::min<int64_t>(kTaskCols, n - j0));
      Panel<W> g0{packed, super_d};
      Panel<W> g1{packed + nb, super_d + weight_blocks * kLanes};
      pack_group<W>(wp, w_row, j0, std::min(cols, kLanes), weight_blocks, packed, super_d);
      if (cols > kLanes)
        pack_group<W>(wp, w_row, j0 + kLanes, cols - kLanes, weight_blocks, packed + nb, super_d + weight_blocks * kLanes);
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
// Eight weight rows at a time, block of 32 by block: each row's block against the activation
// block as eight int32 partial sums (codes: vpmaddubsw then vpmaddwd by ones; values: both
// widened to int16, vpmaddwd), the eight rows' partials added by a transposing tree of vphaddd
// (exact in int32; TQ2_0 adds its super-block's blocks first), the offset term added, and the
// dot's float step for the eight rows as one vector. The next group's rows are prefetched as
// these are read (prefetch.h says why).

// The int32 sums of the 8 lanes of each of v[0..7], as one vector in row order.
TEMPRA_AVX2 inline __m256i row_sums_8(const __m256i* v) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
  // Rows 0-3 in each half of one, 4-7 in each half of the other.
  return x86::add_halves(_mm256_hadd_epi32(h01, h23), _mm256_hadd_epi32(h45, h67));
}

// IQ4_XS: sub-block s's scales (ls - 32) of eight rows, from each row's words at offset 0 (d,
// scales_h) and 4 (scales_l).
TEMPRA_AVX2 inline __m256 iq4_xs_scales(__m256i d_and_high, __m256i low_bits, int s) {
  const __m256i low = _mm256_and_si256(_mm256_srli_epi32(low_bits, 4 * s), _mm256_set1_epi32(0xF));
  const __m256i high = _mm256_and_si256(_mm256_srli_epi32(d_and_high, 16 + 2 * s), _mm256_set1_epi32(3));
  return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32)));
}

template <Weights W>
TEMPRA_AVX2 void gemv_rows(const uint8_t* w, size_t w_row, int64_t j0, int rows, int64_t weight_blocks,
                           const uint8_t* a, const RowTables& t, int64_t row_index, float* c) {
  const Block<W>* row[kLanes];
  for (int r = 0; r < kLanes; ++r)
    row[r] = reinterpret_cast<const Block<W>*>(w + size_t(j0 + std::min(r, rows - 1)) * w_row);
  const int64_t nb = weight_blocks * kSubBlocks<W>;
  const size_t ahead = kLanes * w_row;  // the same block of the next group's rows
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < weight_blocks; ++b) {
    const __m256 dw = _mm256_cvtph_ps(_mm_setr_epi16(short(row[0][b].d.bits), short(row[1][b].d.bits), short(row[2][b].d.bits),
                                                     short(row[3][b].d.bits), short(row[4][b].d.bits), short(row[5][b].d.bits),
                                                     short(row[6][b].d.bits), short(row[7][b].d.bits)));
    __m256i d_and_high = _mm256_setzero_si256(), low_bits = _mm256_setzero_si256();
    if constexpr (W == Weights::iq4_xs) {
      int32_t words[2][kLanes];
      for (int r = 0; r < kLanes; ++r) {
        std::memcpy(&words[0][r], &row[r][b], 4);
        std::memcpy(&words[1][r], row[r][b].scales_l, 4);
      }
      d_and_high = load256(words[0]);
      low_bits = load256(words[1]);
    }
    __m256i partial[kLanes];
    int32_t block_start = 0;
    for (int s = 0; s < kSubBlocks<W>; ++s) {
      const int64_t block = b * kSubBlocks<W> + s;
      if (s % kSumBlocks<W> == 0) {
        for (__m256i& p : partial) p = _mm256_setzero_si256();
        block_start = 0;
      }
      if constexpr (kWide<W>) {
        const int16_t* wide = t.wide + (row_index * nb + block) * kBlock32;
        const __m256i a0 = load256(wide), a1 = load256(wide + 16);
        for (int r = 0; r < kLanes; ++r) {
          const __m256i values = block_codes<W, false>(row[r][b], s);
          partial[r] = _mm256_add_epi32(
              partial[r], _mm256_add_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(values)), a0),
                                           _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(values, 1)), a1)));
        }
      } else {
        block_start += t.start[row_index * nb + block];
        const __m256i av = load256(a + a_block_offset<W>(block));
        for (int r = 0; r < kLanes; ++r)
          partial[r] = _mm256_add_epi32(partial[r], _mm256_madd_epi16(_mm256_maddubs_epi16(block_codes<W, false>(row[r][b], s), av), ones));
      }
      if (s % 2 == 0 && 32 * s < int(sizeof(Block<W>)))  // every line of the block, once
        for (int r = 0; r < kLanes; ++r) prefetch_weights(reinterpret_cast<const char*>(row[r] + b) + 32 * s + ahead);
      if (s % kSumBlocks<W> != kSumBlocks<W> - 1) continue;  // TQ2_0: the super-block's sums go on
      const __m256i sums = _mm256_add_epi32(row_sums_8(partial), _mm256_set1_epi32(block_start));
      const __m256 ls = W == Weights::iq4_xs ? iq4_xs_scales(d_and_high, low_bits, s) : dw;
      acc = add_block<W>(acc, sums, dw, _mm256_set1_ps(t.scale[row_index * nb + block]), ls);
    }
  }
  _mm256_maskstore_ps(c, store_mask(rows, 0), acc);
}

template <Weights W>
TEMPRA_AVX2 void gemv(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc,
                      ThreadPool& pool) {
  const int64_t nb = k / kBlock32, weight_blocks = nb / kSubBlocks<W>;
  const size_t a_row = size_t(weight_blocks) * sizeof(Partner<W>), w_row = size_t(weight_blocks) * sizeof(Block<W>);
  const auto* ap = static_cast<const uint8_t*>(a);
  const auto* wp = static_cast<const uint8_t*>(w);
  const RowTables t = row_tables<W>(ap, m, nb, pool);
  const int64_t groups = (n + kLanes - 1) / kLanes;
  pool.parallel_for(groups, 8, [&](int64_t first, int64_t last) {
    for (int64_t g = first; g < last; ++g) {
      const int64_t j0 = g * kLanes;
      const int rows = int(std::min<int64_t>(kLanes, n - j0));
      for (int64_t i = 0; i < m; ++i)
        gemv_rows<W>(wp, w_row, j0, rows, weight_blocks, ap + size_t(i) * a_row, t, i, c + i * ldc + j0);
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
  dots.iq4_nl_gemm = &gemm<Weights::iq4_nl>;
  dots.iq4_xs_gemm = &gemm<Weights::iq4_xs>;
  dots.tq2_0_gemm = &gemm<Weights::tq2_0>;
  dots.iq4_nl_gemv = &gemv<Weights::iq4_nl>;
  dots.iq4_xs_gemv = &gemv<Weights::iq4_xs>;
  dots.tq2_0_gemv = &gemv<Weights::tq2_0>;
  dots.q4_k_gemm = &k_gemm<KWeights::q4_k>;
  dots.q5_k_gemm = &k_gemm<KWeights::q5_k>;
  dots.q6_k_gemm = &k_gemm<KWeights::q6_k>;
}

}  // namespace tempra::native
