// tempra/backend/native/quant_gemm_avx512.cpp: the AVX-512 VNNI integer GEMMs behind
// QuantDot::gemm (prompts, verify passes): Q8_0, Q4_0 and IQ4_NL weights against Q8_0
// activations, Q4_K, Q5_K, Q6_K and IQ4_XS against Q8_K; and the GEMVs of the 32-element ones.
//
// Each returns, for every output, exactly the float the dot of quant_dot_avx512.cpp (and the
// scalar spec) returns: the same exact integer sums, then the same float operations in the same
// order, block after block. Only where the work happens changes. Weights are packed per call,
// one task's columns at a time, into the layout of the micro-kernel (a panel stays in L2 while
// every activation row streams past it), with each column of a group in one int32 lane.
//
// 32-element formats (vpdpbusd): a block is 8 groups of 4 consecutive elements ("quads"), each
// 16 columns x 4 bytes (64 bytes), as unsigned codes (Q8_0: w + 128; Q4_0: its 4-bit codes;
// IQ4_NL, IQ4_XS: the grid value + 128, looked up by vpshufb), then the 16 columns' scales as
// f32. IQ4_XS is eight such blocks per super-block, each with its sub-block scale (ls - 32), and
// the super-block's d beside them; its activations are Q8_K rows read a block of 32 at a time.
// Activations are read in place (Q8_0 rows): vpdpbusd takes each quad of a row broadcast to the
// 16 lanes. The unsigned weights add a known term, sum((w + o) a) = sum(w a) + o sum(a) with
// o = 128 (Q8_0) or 8 (Q4_0, whose value is code - 8), which each block's accumulator starts out
// subtracting: -o * sum(a), per row and block, tabled once per call with the rows' scales as f32.
// A micro-tile is 6 rows x 32 columns; per block and row the float step is the dot's: Q8_0,
// IQ4_NL acc += float(s) * (d_w * d_a); Q4_0 acc += float(s) * d_w * d_a, multiplied left to
// right; IQ4_XS acc += ((d_w * d_a) * ls) * float(s).
//
// K-quants (vpmaddubsw, vpdpwssd): quant_gemm_x86.h's layout, shared with the AVX2 GEMM. Each
// quad of a column holds four elements of one of the scalar dot's eight lane sums (lane = element
// index mod 8) in one sub-block, signed codes against the activations + 128; vpmaddubsw gives the
// quad's two pairs (no saturation), and vpdpwssd adds them times their sub-block scales into the
// lane's int32 sum, exactly, from a start that takes back the + 128. Q4_K/Q5_K's mins term is
// another small integer dot (the Q8_K block sums against each sub-block's min, in pairs). Then
// the dot's float steps per super-block: sums[l] += (d_w d_a) * float(lane l), total -= (dmin_w
// d_a) * float(min sum), and at the end total + sums[0] + ... + sums[7] in that order. A
// micro-tile is 6 rows x 32 columns, lane after lane (12 int32 sums in registers); the float sums
// wait in memory.
//
// Compiled with -ffp-contract=off, so nothing fuses. The translation unit is compiled without
// VNNI (cmake/int8_dot_probe.cpp): these functions opt in with a target attribute and
// quant_dot_avx512.cpp lists them only after its CPUID check.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tempra/backend/native/prefetch.h"
#include "tempra/backend/native/quant_gemm_x86.h"
#include "tempra/backend/native/scratch.h"
#include "tempra/backend/native/transpose_avx512.h"
#include "tempra/backend/quant_dot.h"
#include "tempra/core/half.h"
#include "tempra/core/thread_pool.h"
#include "tempra/quant/blocks.h"

namespace tempra::native {
namespace {

using namespace tempra::quant;

#define TEMPRA_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c")))

constexpr int kLanes = 16;    // columns per group: one zmm of int32 / f32
constexpr int kGroups = 2;    // groups per micro-tile and per task
constexpr int kTileRows = 6;  // rows per micro-tile
constexpr int kQuads = kBlock32 / 4;

// One block of 32 of one 16-column group, as the micro-kernel reads it.
struct alignas(64) PackedBlock {
  uint8_t codes[kQuads][kLanes][4];  // quad q of column c: elements 4q .. 4q + 3
  float scale[kLanes];               // the block's scale (IQ4_XS: its sub-block scale, ls - 32)
};
static_assert(sizeof(PackedBlock) == 576);

// A 16-column group's packed blocks and, for IQ4_XS, each super-block's d (16 floats apiece).
struct Panel {
  const PackedBlock* blocks;
  const float* super_d;
};

using x86::a_block_offset;
using x86::Block;
using x86::kSubBlocks;
using x86::kSumBlocks;
using x86::kSuper;
using x86::Partner;
using x86::Weights;

// What the unsigned codes add to each element's value: sum(code * a) = s + kOffset * sum(a)
// (Q8_0: w + 128; Q4_0: its codes, value code - 8; IQ4: the grid value + 128, looked up; TQ2_0:
// its codes, value code - 1).
template <Weights W>
constexpr int kOffset = W == Weights::q4_0    ? 8
                        : W == Weights::tq2_0 ? 1
                                              : 128;

// int32 -> f32 (exact below 2^24), in the full-mask form: the plain intrinsic seeds its
// pass-through with _mm512_undefined_ps(), which g++ 12 flags as uninitialized (GCC PR 105593).
TEMPRA_VNNI inline __m512 to_float(__m512i v) {
  return _mm512_maskz_cvtepi32_ps(0xFFFF, v);
}

// Sixteen columns' 16 bytes at `at` (column c's at column[c] + at), as four vectors: int32 c of
// quads[q] is column c's bytes 4q .. 4q + 3. Sixteen loads into four vectors (vector i holds
// columns i, 4 + i, 8 + i, 12 + i in its 128-bit lanes) and a 4 x 4 transpose of int32 within
// each 128-bit lane, in place of four 16-lane gathers: on an AMD EPYC Zen 5 the packing by
// gathers took three times the micro-kernel's samples at 32 rows (perf, Qwen3-0.6B Q4_0 pp32).
TEMPRA_VNNI inline void load_quads(const uint8_t* const* column, size_t at, __m512i quads[4]) {
  __m512i v[4];
  for (int i = 0; i < 4; ++i) {
    const auto lane = [&](int c) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(column[c] + at)); };
    const __m256i low = _mm256_inserti128_si256(_mm256_castsi128_si256(lane(i)), lane(4 + i), 1);
    const __m256i high = _mm256_inserti128_si256(_mm256_castsi128_si256(lane(8 + i)), lane(12 + i), 1);
    v[i] = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
  }
  const __m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]), t1 = _mm512_unpackhi_epi32(v[0], v[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(v[2], v[3]), t3 = _mm512_unpackhi_epi32(v[2], v[3]);
  quads[0] = _mm512_unpacklo_epi64(t0, t2);
  quads[1] = _mm512_unpackhi_epi64(t0, t2);
  quads[2] = _mm512_unpacklo_epi64(t1, t3);
  quads[3] = _mm512_unpackhi_epi64(t1, t3);
}

// The codes of one block of 32 packed as Q4_0 (16 bytes of nibbles at `at` in each column),
// quad by quad: elements 0..15 are the low nibbles of the bytes, 16..31 the high ones; IQ4's are
// looked up as grid value + 128.
template <Weights W>
TEMPRA_VNNI void pack_nibbles(const uint8_t* const* column, size_t at, PackedBlock& p) {
  const __m512i table = _mm512_broadcast_i32x4(x86::iq4_values_128(true));
  const __m512i low_nibbles = _mm512_set1_epi32(0x0F0F0F0F);
  __m512i bytes[4];
  load_quads(column, at, bytes);
  for (int q = 0; q < kQuads / 2; ++q) {
    __m512i low = _mm512_and_si512(bytes[q], low_nibbles);
    __m512i high = _mm512_and_si512(_mm512_srli_epi32(bytes[q], 4), low_nibbles);
    if constexpr (W != Weights::q4_0) {
      low = _mm512_shuffle_epi8(table, low);
      high = _mm512_shuffle_epi8(table, high);
    }
    _mm512_store_si512(p.codes[q], low);
    _mm512_store_si512(p.codes[q + kQuads / 2], high);
  }
}

// IQ4_XS's eight sub-block scales (ls - 32) of 16 columns, from the 32-bit words at offset 0
// (d, scales_h) and 4 (scales_l) of each column's block.
TEMPRA_VNNI inline __m512 iq4_xs_scale(__m512i d_and_high, __m512i low_bits, int s) {
  const __m512i low = _mm512_and_si512(_mm512_srli_epi32(low_bits, 4 * s), _mm512_set1_epi32(0xF));
  const __m512i high = _mm512_and_si512(_mm512_srli_epi32(d_and_high, 16 + 2 * s), _mm512_set1_epi32(3));
  return to_float(_mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 4)), _mm512_set1_epi32(32)));
}

// The 32-bit words around each of 16 blocks' f16 d (the block at `block`, the others `offsets`
// bytes on), d in the low half: the block's first word (IQ4_XS: scales_h in the high half); TQ2_0
// keeps d last, so its word is read ending there, never past the block.
template <Weights W>
TEMPRA_VNNI inline __m512i d_words(__m512i offsets, const Block<W>* block) {
  if constexpr (W == Weights::tq2_0)
    return _mm512_srli_epi32(_mm512_i32gather_epi32(offsets, reinterpret_cast<const char*>(&block->d) - 2, 1), 16);
  else
    return _mm512_i32gather_epi32(offsets, static_cast<const void*>(block), 1);
}

// Lane r: the byte offset of row min(r, rows - 1) of rows w_row bytes apart, for a gather from
// 16 rows whose last ones, past the group's `rows`, repeat its last.
TEMPRA_VNNI inline __m512i clamped_row_offsets(int rows, size_t w_row) {
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return _mm512_mullo_epi32(_mm512_min_epi32(lanes, _mm512_set1_epi32(rows - 1)), _mm512_set1_epi32(int(w_row)));
}

// Packs columns j0 .. j0 + cols - 1 (cols <= 16; the last is repeated to fill the group) of the
// weight rows, every block: the codes by load_quads (the transpose); the scales by plain loads
// (Q8_0, Q4_0, IQ4_NL), or per super-block by a 32-bit gather of the f16 fields (IQ4_XS: d into
// super_d, the sub-block scales into the blocks; TQ2_0: d into super_d).
template <Weights W>
TEMPRA_VNNI void pack_group(const uint8_t* w, size_t w_row, int64_t j0, int cols, int64_t blocks, PackedBlock* out,
                            float* super_d) {
  const __m512i offsets = clamped_row_offsets(cols, w_row);
  const uint8_t* column[kLanes];
  for (int c = 0; c < kLanes; ++c) column[c] = w + size_t(j0 + std::min(c, cols - 1)) * w_row;
  const auto* first = reinterpret_cast<const Block<W>*>(column[0]);
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t at = size_t(b) * sizeof(Block<W>) + offsetof(Block<W>, qs);
    if (b % 2 == 0)  // a line every other block: each line of Q4_0's 18-byte blocks (measured there)
      for (int c = 0; c < kLanes; ++c) prefetch_for_packing(column[c] + at);
    if constexpr (!kSuper<W>) {
      // The f16 scales as they lie, into the first half of the block's scale (widened below):
      // sixteen plain loads, where a gather held up the whole loop on an AMD EPYC Zen 5 (the
      // instruction after it took a third of the packing's samples).
      PackedBlock& p = out[b];
      uint16_t halves[kLanes];
      for (int c = 0; c < kLanes; ++c)
        std::memcpy(&halves[c], column[c] + size_t(b) * sizeof(Block<W>) + offsetof(Block<W>, d), 2);
      std::memcpy(p.scale, halves, sizeof halves);
      if constexpr (W == Weights::q8_0) {
        __m512i bytes[kQuads];
        load_quads(column, at, bytes);
        load_quads(column, at + 16, bytes + 4);
        for (int q = 0; q < kQuads; ++q)  // w + 128, as unsigned bytes
          _mm512_store_si512(p.codes[q], _mm512_xor_si512(bytes[q], _mm512_set1_epi32(int(0x80808080u))));
      } else {
        pack_nibbles<W>(column, at, p);
      }
    } else {
      const __m512i d_bits = d_words<W>(offsets, first + b);
      const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d_bits));
      if constexpr (W == Weights::tq2_0) {
        _mm512_store_ps(super_d + b * kLanes, d);
        // Sub-block s = 4 g + p is bit pair p of the 32 bytes of group g.
        for (int g = 0; g < 2; ++g) {
          __m512i bytes[kQuads];
          load_quads(column, at + 32 * g, bytes);
          load_quads(column, at + 32 * g + 16, bytes + 4);
          for (int pair = 0; pair < 4; ++pair) {
            PackedBlock& p = out[b * kSubBlocks<W> + 4 * g + pair];
            for (int q = 0; q < kQuads; ++q)
              _mm512_store_si512(
                  p.codes[q], _mm512_and_si512(_mm512_srli_epi32(bytes[q], 2 * pair), _mm512_set1_epi32(0x03030303)));
          }
        }
      } else {
        _mm512_store_ps(super_d + b * kLanes, d);
        const __m512i low_bits = _mm512_i32gather_epi32(offsets, static_cast<const void*>(first[b].scales_l), 1);
        for (int s = 0; s < kSubBlocks<W>; ++s) {
          PackedBlock& p = out[b * kSubBlocks<W> + s];
          _mm512_store_ps(p.scale, iq4_xs_scale(d_bits, low_bits, s));
          pack_nibbles<W>(column, at + kBlock32 / 2 * s, p);
        }
      }
    }
  }
  if constexpr (!kSuper<W>)  // the scales widened, now that their stores are long done
    for (int64_t b = 0; b < blocks; ++b)
      _mm512_store_ps(out[b].scale,
                      _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(out[b].scale))));
}

// Per row and block of 32 of a: -offset * sum(a) (the accumulator's start) and the activation
// scale as f32 (Q8_K rows: the super-block's, for each of its eight).
struct RowTables {
  int32_t* start;
  float* scale;
};

// A weight vector every row of a micro-tile multiplies, loaded once into a register: g++ would
// otherwise fold the load into each row's multiply, and the tile would wait on loads, not math.
TEMPRA_VNNI inline __m512i load_shared(const void* p) {
  __m512i v = _mm512_load_si512(p);
  asm("" : "+v"(v));
  return v;
}

// The dot's float step for one block of 32: s its exact integer sum, dw the weight's scale (IQ4_XS:
// the super-block's d, with ls the sub-block's scale; TQ2_0: s the super-block's, dw its d), da
// the activation's. Q8_0, IQ4_NL, TQ2_0: acc + s (d_w d_a); Q4_0: acc + (s d_w) d_a; IQ4_XS:
// acc + ((d_w d_a) ls) s.
template <Weights W>
TEMPRA_VNNI inline __m512 block_term(__m512i s, __m512 dw, __m512 da, __m512 ls) {
  if constexpr (W == Weights::q4_0)
    return _mm512_mul_ps(_mm512_mul_ps(to_float(s), dw), da);
  else if constexpr (W == Weights::iq4_xs)
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(dw, da), ls), to_float(s));
  else
    return _mm512_mul_ps(to_float(s), _mm512_mul_ps(dw, da));
}
template <Weights W>
TEMPRA_VNNI inline __m512 add_block(__m512 acc, __m512i s, __m512 dw, __m512 da, __m512 ls) {
  return _mm512_add_ps(acc, block_term<W>(s, dw, da, ls));
}

template <int R, Weights W>
TEMPRA_VNNI void micro_tile(const uint8_t* const* a_rows, const RowTables& t, int64_t nb, int64_t first_row, Panel g0,
                            Panel g1, float* c, int64_t ldc, __mmask16 m0, __mmask16 m1) {
  __m512 acc[R][kGroups];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  __m512i s[R][kGroups];
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < R; ++r) {
      const __m512i start = _mm512_set1_epi32(t.start[(first_row + r) * nb + b]);
      for (int g = 0; g < kGroups; ++g) s[r][g] = b % kSumBlocks<W> == 0 ? start : _mm512_add_epi32(s[r][g], start);
    }
    const size_t a_offset = a_block_offset<W>(b);
    for (int q = 0; q < kQuads; ++q) {
      const __m512i w0 = _mm512_load_si512(g0.blocks[b].codes[q]);
      const __m512i w1 = _mm512_load_si512(g1.blocks[b].codes[q]);
      for (int r = 0; r < R; ++r) {
        int32_t quad;
        std::memcpy(&quad, a_rows[r] + a_offset + 4 * q, 4);
        const __m512i av = _mm512_set1_epi32(quad);
        s[r][0] = _mm512_dpbusd_epi32(s[r][0], w0, av);
        s[r][1] = _mm512_dpbusd_epi32(s[r][1], w1, av);
      }
    }
    if (b % kSumBlocks<W> != kSumBlocks<W> - 1) continue;  // TQ2_0: the super-block's sum goes on
    // The packed block's scale (IQ4_XS: its ls; TQ2_0 packs none) and the weight's d (the
    // super-block's, or that same scale).
    const __m512 ls0 = W == Weights::tq2_0 ? _mm512_setzero_ps() : _mm512_load_ps(g0.blocks[b].scale);
    const __m512 ls1 = W == Weights::tq2_0 ? _mm512_setzero_ps() : _mm512_load_ps(g1.blocks[b].scale);
    const __m512 d0 = kSuper<W> ? _mm512_load_ps(g0.super_d + b / kSubBlocks<W> * kLanes) : ls0;
    const __m512 d1 = kSuper<W> ? _mm512_load_ps(g1.super_d + b / kSubBlocks<W> * kLanes) : ls1;
    for (int r = 0; r < R; ++r) {
      const __m512 da = _mm512_set1_ps(t.scale[(first_row + r) * nb + b]);
      acc[r][0] = add_block<W>(acc[r][0], s[r][0], d0, da, ls0);
      acc[r][1] = add_block<W>(acc[r][1], s[r][1], d1, da, ls1);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, m0, acc[r][0]);
    _mm512_mask_storeu_ps(c + r * ldc + kLanes, m1, acc[r][1]);
  }
}

// The tables of m activation rows (nb blocks of 32 each), on the calling thread's scratch (read
// by every task): the GEMM's and the GEMV's alike.
template <Weights W>
RowTables row_tables(const uint8_t* ap, int64_t m, int64_t nb, ThreadPool& pool) {
  float* tables = thread_scratch(0).floats(size_t(2 * m * nb));
  const RowTables t{reinterpret_cast<int32_t*>(tables), tables + m * nb};
  const size_t a_row = size_t(nb / kSubBlocks<W>) * sizeof(Partner<W>);
  pool.parallel_for(m, 1 + 512 / (nb + 1), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const uint8_t* row = ap + size_t(i) * a_row;
      for (int64_t b = 0; b < nb; ++b) {
        const auto* qs = reinterpret_cast<const int8_t*>(row + a_block_offset<W>(b));
        int sum = 0;
        for (int e = 0; e < kBlock32; ++e) sum += qs[e];
        t.start[i * nb + b] = -kOffset<W> * sum;
        const auto& block = reinterpret_cast<const Partner<W>*>(row)[b / kSubBlocks<W>];
        if constexpr (kSuper<W>)
          t.scale[i * nb + b] = block.d;
        else
          t.scale[i * nb + b] = f16_bits_to_f32(block.d.bits);
      }
    }
  });
  return t;
}

template <Weights W>
void gemm(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc, ThreadPool& pool) {
  const int64_t nb = k / kBlock32, weight_blocks = nb / kSubBlocks<W>;
  const size_t a_row = size_t(weight_blocks) * sizeof(Partner<W>), w_row = size_t(weight_blocks) * sizeof(Block<W>);
  const auto* ap = static_cast<const uint8_t*>(a);
  const auto* wp = static_cast<const uint8_t*>(w);
  const RowTables t = row_tables<W>(ap, m, nb, pool);
  constexpr int64_t kTaskCols = kLanes * kGroups;
  const int64_t tasks = (n + kTaskCols - 1) / kTaskCols;
  pool.parallel_for(tasks, 1, [&](int64_t first, int64_t last) {
    // Both groups' blocks, then (IQ4_XS, TQ2_0) both groups' super-block d's.
    const size_t block_floats = size_t(kGroups * nb) * sizeof(PackedBlock) / sizeof(float);
    const size_t super_floats = kSuper<W> ? size_t(kGroups * weight_blocks * kLanes) : 0;
    float* scratch = thread_scratch(1).floats(block_floats + super_floats);
    auto* packed = reinterpret_cast<PackedBlock*>(scratch);
    float* super_d = scratch + block_floats;
    for (int64_t task = first; task < last; ++task) {
      const int64_t j0 = task * kTaskCols;
      const int cols0 = int(std::min<int64_t>(kLanes, n - j0));
      const int cols1 = int(std::clamp<int64_t>(n - j0 - kLanes, 0, kLanes));
      Panel g0{packed, super_d};
      Panel g1{packed + nb, super_d + weight_blocks * kLanes};
      pack_group<W>(wp, w_row, j0, cols0, weight_blocks, packed, super_d);
      if (cols1 > 0)
        pack_group<W>(wp, w_row, j0 + kLanes, cols1, weight_blocks, packed + nb, super_d + weight_blocks * kLanes);
      else
        g1 = g0;  // computed, never stored
      const __mmask16 m0 = __mmask16((1u << cols0) - 1), m1 = __mmask16((1u << cols1) - 1);
      for (int64_t i0 = 0; i0 < m; i0 += kTileRows) {
        const int rows = int(std::min<int64_t>(kTileRows, m - i0));
        const uint8_t* a_rows[kTileRows];
        for (int r = 0; r < rows; ++r) a_rows[r] = ap + size_t(i0 + r) * a_row;
        float* ct = c + i0 * ldc + j0;
        switch (rows) {
          case 1:
            micro_tile<1, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1);
            break;
          case 2:
            micro_tile<2, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1);
            break;
          case 3:
            micro_tile<3, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1);
            break;
          case 4:
            micro_tile<4, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1);
            break;
          case 5:
            micro_tile<5, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1);
            break;
          default:
            micro_tile<kTileRows, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1);
            break;
        }
      }
    }
  });
}

// ---- Decode steps: a few activation rows, the weights read in place ----
//
// Sixteen weight rows at a time, block of 32 by block: vpdpbusd of each row's block (rows r and
// r + 8 share a zmm) against the activation block, the eight lane sums of each row added by a
// transposing tree (exact in int32), the offset term subtracted, and the dot's float step for the
// sixteen rows as one vector. The next group's rows are prefetched as these are read
// (prefetch.h says why). Where rows are whole chunks of sixteen blocks (Qwen3's 1024, 2048 and
// 3072 columns), Q8_0, Q4_0 and IQ4_NL read the group's rows one after another instead
// (gemv_rows_streamed): one stream, which this CPU's prefetchers follow, where sixteen side by
// side were not (an AMD EPYC Zen 5, 2026-12-07, tempra bench -p 0 -n 64 -r 3 alternated: Qwen3-0.6B
// Q8_0 decode 39.1-40.0 -> 45.0-46.3 tok/s on one thread, 48.1 -> 51.6-54.7 on two; Q4_0 on two
// 67.3-71.6 -> 76.4-82.5). TQ2_0 likewise for rows of up to 16 super-blocks
// (gemv_rows_streamed_tq2; same machine, session 29: 58.4-58.7 -> 66.5-67.1 tok/s on one thread,
// 82-90 -> 98-101 on two). The K-quants' GEMVs are quant_gemv_k_avx512.cpp's.

// The int32 sums of v[0..7]'s lanes by row, as one vector in row order: 128-bit lanes 0, 1 of
// v[r] hold row r and 2, 3 row r + 8; with kInterleaved, lanes 0, 2 row r and 1, 3 row r + 8.
template <bool kInterleaved = false>
TEMPRA_VNNI inline __m512i row_sums_16(const __m512i* v) {
  __m512i pairs[4];
  for (int i = 0; i < 4; ++i)
    pairs[i] =
        _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]));
  // 128-bit lane j of quads[h] holds rows 4h .. 4h + 3 (lanes 0, 1: first half; 2, 3: second).
  __m512i quads[2];
  for (int h = 0; h < 2; ++h)
    quads[h] = _mm512_add_epi32(_mm512_unpacklo_epi64(pairs[2 * h], pairs[2 * h + 1]),
                                _mm512_unpackhi_epi64(pairs[2 * h], pairs[2 * h + 1]));
  // Lanes (0 + 1) and (2 + 3) of each (interleaved: (0 + 2) and (1 + 3)): rows 0..3, 8..11 from
  // quads[0]; 4..7, 12..15 from quads[1].
  const __m512i first = kInterleaved ? _mm512_shuffle_i32x4(quads[0], quads[1], 0x44)    // q0 l0, q0 l1, q1 l0, q1 l1
                                     : _mm512_shuffle_i32x4(quads[0], quads[1], 0x88);   // q0 l0, q0 l2, q1 l0, q1 l2
  const __m512i second = kInterleaved ? _mm512_shuffle_i32x4(quads[0], quads[1], 0xEE)   // q0 l2, q0 l3, q1 l2, q1 l3
                                      : _mm512_shuffle_i32x4(quads[0], quads[1], 0xDD);  // q0 l1, q0 l3, q1 l1, q1 l3
  const __m512i sums = _mm512_add_epi32(first, second);  // rows 0..3, 8..11, 4..7, 12..15
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15), sums);
}

// The 4-bit formats, whose blocks of 32 are 16 bytes of nibbles.
template <Weights W>
constexpr bool kNibbles = W == Weights::q4_0 || W == Weights::iq4_nl || W == Weights::iq4_xs;

// Rows r and r + 8's codes of one block of 32 (16 bytes of nibbles each, at p and q) for
// vpdpbusd, 128-bit lanes interleaved: low nibbles of r, of r + 8, high nibbles of r, of r + 8
// (elements 0..15, 0..15, 16..31, 16..31), looked up + 128 for IQ4. Five instructions for the
// pair (six with the lookup), where block_codes takes five (six) a row and an insert joins the
// two: the decode GEMVs were bound by instructions, not memory (docs/BENCHMARK.md, session 23).
template <Weights W>
TEMPRA_VNNI inline __m512i nibble_pair(const uint8_t* p, const uint8_t* q) {
  const __m256i both =
      _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)), 1);
  const __m512i codes = _mm512_and_si512(
      _mm512_inserti64x4(_mm512_castsi256_si512(both), _mm256_srli_epi16(both, 4), 1), _mm512_set1_epi8(0x0F));
  if constexpr (W == Weights::q4_0)
    return codes;
  else
    return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(x86::iq4_values_128(true)), codes);
}

template <Weights W>
TEMPRA_VNNI void gemv_rows(const uint8_t* w, size_t w_row, int64_t j0, int rows, int64_t weight_blocks,
                           const uint8_t* a, const int32_t* start, const float* scale, float* c) {
  const Block<W>* row[kLanes];
  for (int r = 0; r < kLanes; ++r)
    row[r] = reinterpret_cast<const Block<W>*>(w + size_t(j0 + std::min(r, rows - 1)) * w_row);
  // Row r's block at row[0] + r * w_row (rows past the last repeat it, as row[] does).
  const __m512i d_offsets = clamped_row_offsets(rows, w_row);
  const size_t ahead = kLanes * w_row;  // the same block of the next group's rows
  // Q4_0 and IQ4_NL: each block's sixteen f16 scales by plain loads, one block ahead, into
  // halves[] (a block later their stores are done and one load takes them). A gather held up
  // the loop on an AMD EPYC Zen 5, as in pack_group: `BM_gemv` of Q4_0 on one thread ran 22 GB/s
  // with it and 28-30 without. Q8_0 keeps the gather: without it, the same bench fell from 38 to
  // 30 GB/s on weights in DRAM (and rose from 44 to 49 in the L3).
  constexpr bool kLoadedScales = W == Weights::q4_0 || W == Weights::iq4_nl;
  alignas(32) uint16_t halves[2][kLanes];
  const auto load_halves = [&](int64_t b) {
    for (int r = 0; r < kLanes; ++r) std::memcpy(&halves[b % 2][r], &row[r][b].d, 2);
  };
  if (kLoadedScales && weight_blocks > 0) load_halves(0);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < weight_blocks; ++b) {
    // The rows' scales; else the f16 in the low half of a 32-bit gather at each row's block
    // (IQ4_XS: scales_h in its high half, and scales_l the next word).
    __m512i d_bits = _mm512_setzero_si512();
    __m512 dw;
    if constexpr (!kLoadedScales) {
      d_bits = d_words<W>(d_offsets, row[0] + b);
      dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d_bits));
    } else {
      dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(halves[b % 2])));
      if (b + 1 < weight_blocks) load_halves(b + 1);
    }
    __m512i low_bits = _mm512_setzero_si512();
    if constexpr (W == Weights::iq4_xs)
      low_bits = _mm512_i32gather_epi32(d_offsets, reinterpret_cast<const void*>(row[0][b].scales_l), 1);
    __m512i dots[8];
    int32_t block_start = 0;
    for (int s = 0; s < kSubBlocks<W>; ++s) {
      const int64_t block = b * kSubBlocks<W> + s;
      // The activations as the codes lie: the block's 32 bytes in both 256-bit halves, or, for
      // nibble_pair's interleaved lanes, elements 0..15 in lanes 0 and 1, 16..31 in 2 and 3.
      const __m512i a32 = _mm512_broadcast_i64x4(x86::load256(a + a_block_offset<W>(block)));
      const __m512i av = kNibbles<W> ? _mm512_shuffle_i64x2(a32, a32, 0x50) : a32;
      if (s % kSumBlocks<W> == 0) {
        for (__m512i& d : dots) d = _mm512_setzero_si512();
        block_start = 0;
      }
      block_start += start[block];
      for (int r = 0; r < 8; ++r) {
        __m512i codes;
        if constexpr (kNibbles<W>)
          codes = nibble_pair<W>(x86::nibbles_of<W>(row[r][b], s), x86::nibbles_of<W>(row[r + 8][b], s));
        else {
          // Named first: clang's _mm512_inserti64x4 is a macro, and a template's comma splits it.
          const __m256i low = x86::block_codes<W, true>(row[r][b], s),
                        high = x86::block_codes<W, true>(row[r + 8][b], s);
          codes = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
        }
        if (s % 2 == 0 && 32 * s < int(sizeof(Block<W>))) {  // every line of the block, once
          prefetch_weights(reinterpret_cast<const char*>(row[r] + b) + 32 * s + ahead);
          prefetch_weights(reinterpret_cast<const char*>(row[r + 8] + b) + 32 * s + ahead);
        }
        dots[r] = _mm512_dpbusd_epi32(dots[r], codes, av);
      }
      if (s % kSumBlocks<W> != kSumBlocks<W> - 1) continue;  // TQ2_0: the super-block's sums go on
      const __m512i sums = _mm512_add_epi32(row_sums_16<kNibbles<W>>(dots), _mm512_set1_epi32(block_start));
      const __m512 ls = W == Weights::iq4_xs ? iq4_xs_scale(d_bits, low_bits, s) : dw;
      acc = add_block<W>(acc, sums, dw, _mm512_set1_ps(scale[block]), ls);
    }
  }
  _mm512_mask_storeu_ps(c, __mmask16((1u << rows) - 1), acc);
}

// The most blocks of 32 a row may have for gemv_rows_streamed (its terms stay in 16 KiB).
constexpr int64_t kMaxStreamedBlocks = 256;

// gemv_rows for the one-block formats (Q8_0, Q4_0, IQ4_NL) with whole chunks of sixteen blocks,
// reading the sixteen rows one after another: one stream through the weights, requested
// kRowStreamPrefetchBytes ahead. Each row's blocks go sixteen at a time through the same
// vpdpbusd and transposing tree as gemv_rows (two blocks a zmm where it has two rows), and their
// float terms wait in terms[]; then the rows' sums are formed as gemv_rows forms them, block
// after block, from the terms transposed sixteen by sixteen: the same operations in the same
// order, so the same bits.
template <Weights W>
TEMPRA_VNNI void gemv_rows_streamed(const uint8_t* w, size_t w_row, int64_t j0, int rows, int64_t nb, const uint8_t* a,
                                    const int32_t* start, const float* scale, float* c) {
  static_assert(kSubBlocks<W> == 1);
  alignas(64) float terms[kLanes][kMaxStreamedBlocks];
  // The activations of blocks i and i + 8 of each chunk as one zmm, where the codes lie
  // (nibble_pair's lanes interleave the two blocks' halves): made once for the sixteen rows.
  alignas(64) __m512i pairs[kMaxStreamedBlocks / 2];
  for (int64_t c0 = 0; c0 < nb; c0 += kLanes)
    for (int i = 0; i < 8; ++i) {
      const __m512i a2 = _mm512_inserti64x4(_mm512_castsi256_si512(x86::load256(a + a_block_offset<W>(c0 + i))),
                                            x86::load256(a + a_block_offset<W>(c0 + i + 8)), 1);
      pairs[c0 / 2 + i] = kNibbles<W> ? _mm512_shuffle_i64x2(a2, a2, 0xD8) : a2;
    }
  const __m512i d_offsets = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                               _mm512_set1_epi32(int(sizeof(Block<W>))));
  constexpr size_t kChunkBytes = kLanes * sizeof(Block<W>);
  for (int r = rows; r < kLanes; ++r) std::fill_n(terms[r], nb, 0.0f);  // lanes the store leaves out
  for (int r = 0; r < rows; ++r) {
    const Block<W>* row = reinterpret_cast<const Block<W>*>(w + size_t(j0 + r) * w_row);
    for (int64_t c0 = 0; c0 < nb; c0 += kLanes) {
      const Block<W>* blocks = row + c0;
      for (size_t offset = 0; offset < kChunkBytes; offset += 64)
        __builtin_prefetch(
            reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(blocks) + offset + kRowStreamPrefetchBytes), 0,
            3);
      __m512i dots[8];
      for (int i = 0; i < 8; ++i) {
        __m512i codes;  // blocks i and i + 8
        if constexpr (kNibbles<W>) {
          codes = nibble_pair<W>(x86::nibbles_of<W>(blocks[i], 0), x86::nibbles_of<W>(blocks[i + 8], 0));
        } else {
          const __m256i low = x86::block_codes<W, true>(blocks[i], 0),
                        high = x86::block_codes<W, true>(blocks[i + 8], 0);
          codes = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
        }
        dots[i] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes, pairs[c0 / 2 + i]);
      }
      const __m512i sums = _mm512_add_epi32(row_sums_16<kNibbles<W>>(dots), _mm512_loadu_si512(start + c0));
      const __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d_words<W>(d_offsets, blocks)));
      const __m512 da = _mm512_loadu_ps(scale + c0);
      _mm512_store_ps(terms[r] + c0, block_term<W>(sums, dw, da, dw));
    }
  }
  __m512 acc = _mm512_setzero_ps();
  for (int64_t c0 = 0; c0 < nb; c0 += kLanes) {
    __m512i columns[kLanes];  // row r's terms, then (transposed) block b's of the sixteen rows
    for (int r = 0; r < kLanes; ++r) columns[r] = _mm512_load_si512(terms[r] + c0);
    transpose16(columns);
    for (int b = 0; b < kLanes; ++b) acc = _mm512_add_ps(acc, _mm512_castsi512_ps(columns[b]));
  }
  _mm512_mask_storeu_ps(c, __mmask16((1u << rows) - 1), acc);
}

// The sums of v's two 256-bit halves, lane by lane (exact in int32 for the GEMVs' partial sums).
TEMPRA_VNNI inline __m256i fold_to_256(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

// The most super-blocks a row may have for gemv_rows_streamed_tq2 (its partial sums stay in 16 KiB).
constexpr int64_t kMaxStreamedTq2SuperBlocks = 16;

// gemv_rows for TQ2_0 with the group's rows read one after another, as gemv_rows_streamed reads
// the one-block formats. A super-block's 64 bytes of codes hold its blocks s and s + 4 in bit
// pair s of the two 32-byte groups, so one load, shifted and masked, gives both to one vpdpbusd
// against their activations side by side; the four products of a super-block add up (exact in
// int32) into the row's partial sums, which wait in partial[][]. Then, super-block after
// super-block, each row's vector is folded to 256 bits, rows r and r + 8 paired, and
// row_sums_16 gives the sixteen rows' sums: the integer sums gemv_rows forms, the same float
// step after them in the same order, so the same bits.
TEMPRA_VNNI void gemv_rows_streamed_tq2(const uint8_t* w, size_t w_row, int64_t j0, int rows, int64_t super_blocks,
                                        const uint8_t* a, const int32_t* start, const float* scale, float* c) {
  constexpr Weights W = Weights::tq2_0;
  alignas(64) __m512i partial[kLanes][kMaxStreamedTq2SuperBlocks];
  // Blocks s and s + 4 of each super-block's activations as one zmm: made once for the rows.
  alignas(64) __m512i pairs[kMaxStreamedTq2SuperBlocks][4];
  for (int64_t b = 0; b < super_blocks; ++b)
    for (int s = 0; s < 4; ++s)
      pairs[b][s] = _mm512_inserti64x4(_mm512_castsi256_si512(x86::load256(a + a_block_offset<W>(8 * b + s))),
                                       x86::load256(a + a_block_offset<W>(8 * b + s + 4)), 1);
  for (int r = rows; r < kLanes; ++r)
    for (int64_t b = 0; b < super_blocks; ++b) partial[r][b] = _mm512_setzero_si512();
  for (int r = 0; r < rows; ++r) {
    const uint8_t* row = w + size_t(j0 + r) * w_row;
    for (size_t offset = 0; offset < w_row; offset += 64)
      __builtin_prefetch(
          reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(row) + offset + kRowStreamPrefetchBytes), 0, 3);
    const auto* blocks = reinterpret_cast<const Block<W>*>(row);
    for (int64_t b = 0; b < super_blocks; ++b) {
      const __m512i groups = _mm512_loadu_si512(blocks[b].qs);
      __m512i sum = _mm512_setzero_si512();
      for (int s = 0; s < 4; ++s) {
        const __m512i codes = _mm512_and_si512(_mm512_srli_epi16(groups, 2 * s), _mm512_set1_epi8(3));
        sum = _mm512_dpbusd_epi32(sum, codes, pairs[b][s]);
      }
      partial[r][b] = sum;
    }
  }
  // Row r's d at row 0's block + r * w_row (rows past the last repeat it, as gemv_rows does).
  const __m512i d_offsets = clamped_row_offsets(rows, w_row);
  const auto* first = reinterpret_cast<const Block<W>*>(w + size_t(j0) * w_row);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < super_blocks; ++b) {
    __m512i halves[8];  // rows r and r + 8, each folded to 256 bits
    for (int r = 0; r < 8; ++r)
      halves[r] =
          _mm512_inserti64x4(_mm512_castsi256_si512(fold_to_256(partial[r][b])), fold_to_256(partial[r + 8][b]), 1);
    int32_t block_start = 0;
    for (int s = 0; s < 8; ++s) block_start += start[8 * b + s];
    const __m512i sums = _mm512_add_epi32(row_sums_16(halves), _mm512_set1_epi32(block_start));
    const __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d_words<W>(d_offsets, first + b)));
    acc = add_block<W>(acc, sums, dw, _mm512_set1_ps(scale[8 * b + 7]), dw);
  }
  _mm512_mask_storeu_ps(c, __mmask16((1u << rows) - 1), acc);
}

template <Weights W>
void gemv(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc, ThreadPool& pool) {
  const int64_t nb = k / kBlock32, weight_blocks = nb / kSubBlocks<W>;
  const size_t a_row = size_t(weight_blocks) * sizeof(Partner<W>), w_row = size_t(weight_blocks) * sizeof(Block<W>);
  const auto* ap = static_cast<const uint8_t*>(a);
  const auto* wp = static_cast<const uint8_t*>(w);
  const RowTables t = row_tables<W>(ap, m, nb, pool);
  const int64_t groups = (n + kLanes - 1) / kLanes;
  bool streamed = false;
  if constexpr (kSubBlocks<W> == 1) streamed = nb % kLanes == 0 && nb <= kMaxStreamedBlocks;
  if constexpr (W == Weights::tq2_0) streamed = weight_blocks <= kMaxStreamedTq2SuperBlocks;
  pool.parallel_for(groups, 4, [&](int64_t first, int64_t last) {
    for (int64_t g = first; g < last; ++g) {
      const int64_t j0 = g * kLanes;
      const int rows = int(std::min<int64_t>(kLanes, n - j0));
      for (int64_t i = 0; i < m; ++i) {
        if constexpr (W == Weights::tq2_0) {
          if (streamed) {
            gemv_rows_streamed_tq2(wp, w_row, j0, rows, weight_blocks, ap + size_t(i) * a_row, t.start + i * nb,
                                   t.scale + i * nb, c + i * ldc + j0);
            continue;
          }
        }
        if constexpr (kSubBlocks<W> == 1) {
          if (streamed) {
            gemv_rows_streamed<W>(wp, w_row, j0, rows, weight_blocks, ap + size_t(i) * a_row, t.start + i * nb,
                                  t.scale + i * nb, c + i * ldc + j0);
            continue;
          }
        }
        gemv_rows<W>(wp, w_row, j0, rows, weight_blocks, ap + size_t(i) * a_row, t.start + i * nb, t.scale + i * nb,
                     c + i * ldc + j0);
      }
    }
  });
}

// ---- K-quants (quant_gemm_x86.h: the packed layout, here in groups of 16 columns) ----

using KPacked = x86::PackedKSuperBlock<kLanes>;
using x86::KWeights;

// R rows x the two groups, every super-block, lane after lane: each quad's pairs by vpmaddubsw,
// then vpdpwssd adds them times their scales into the lane's sum (2 R sums in registers, kept
// as chains: g++ would regroup the adds into trees that spill); the float sums, touched once per
// lane and super-block, wait in memory.
template <int R, bool kMins>
TEMPRA_VNNI void k_micro_tile(const int32_t* const* a_quads, const BlockQ8_K* const* a_rows, int64_t nb,
                              const KPacked* g0, const KPacked* g1, float* c, int64_t ldc, __mmask16 m0, __mmask16 m1) {
  const KPacked* groups[kGroups] = {g0, g1};
  // The float sums start at zero with the first super-block (0 + x, as the dot adds it: -0 becomes
  // +0), not with a clearing of the whole array, which cost as much as the math for short k.
  alignas(64) float sums[R][kGroups][8][kLanes], total[R][kGroups][kLanes];
  for (int64_t b = 0; b < nb; ++b) {
    const int32_t* quads[R];
    for (int r = 0; r < R; ++r) quads[r] = a_quads[r] + b * 64;
    for (int l = 0; l < 8; ++l) {
      __m512i lane[R][kGroups];
      const __m512i start0 = _mm512_load_si512(g0[b].start[l]), start1 = _mm512_load_si512(g1[b].start[l]);
      for (int r = 0; r < R; ++r) {
        lane[r][0] = start0;
        lane[r][1] = start1;
      }
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) {
        const __m512i w0 = load_shared(g0[b].quads[8 * l + t]), w1 = load_shared(g1[b].quads[8 * l + t]);
        const __m512i s0 = load_shared(g0[b].scales[t]), s1 = load_shared(g1[b].scales[t]);
        for (int r = 0; r < R; ++r) {
          const __m512i av = _mm512_set1_epi32(quads[r][8 * l + t]);
          lane[r][0] = _mm512_dpwssd_epi32(lane[r][0], _mm512_maddubs_epi16(av, w0), s0);
          lane[r][1] = _mm512_dpwssd_epi32(lane[r][1], _mm512_maddubs_epi16(av, w1), s1);
          asm("" : "+v"(lane[r][0]), "+v"(lane[r][1]));
        }
      }
      for (int r = 0; r < R; ++r)
        for (int q = 0; q < kGroups; ++q) {
          const __m512 d = _mm512_mul_ps(_mm512_load_ps(groups[q][b].d), _mm512_set1_ps(a_rows[r][b].d));
          float* sum = sums[r][q][l];
          _mm512_store_ps(sum, _mm512_add_ps(b == 0 ? _mm512_setzero_ps() : _mm512_load_ps(sum),
                                             _mm512_mul_ps(d, to_float(lane[r][q]))));
        }
    }
    if constexpr (kMins) {
      for (int r = 0; r < R; ++r) {
        const __m512 da = _mm512_set1_ps(a_rows[r][b].d);
        int32_t bsum_pairs[8];
        std::memcpy(bsum_pairs, a_rows[r][b].bsums, sizeof bsum_pairs);
        for (int q = 0; q < kGroups; ++q) {
          __m512i min_sum = _mm512_setzero_si512();
          for (int j = 0; j < 8; ++j)
            min_sum =
                _mm512_dpwssd_epi32(min_sum, _mm512_set1_epi32(bsum_pairs[j]), _mm512_load_si512(groups[q][b].mins[j]));
          const __m512 term = _mm512_mul_ps(_mm512_mul_ps(_mm512_load_ps(groups[q][b].dmin), da), to_float(min_sum));
          _mm512_store_ps(total[r][q], _mm512_sub_ps(b == 0 ? _mm512_setzero_ps() : _mm512_load_ps(total[r][q]), term));
        }
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < kGroups; ++q) {
      __m512 result = kMins ? _mm512_load_ps(total[r][q]) : _mm512_setzero_ps();
      for (int l = 0; l < 8; ++l) result = _mm512_add_ps(result, _mm512_load_ps(sums[r][q][l]));
      _mm512_mask_storeu_ps(c + r * ldc + q * kLanes, q == 0 ? m0 : m1, result);
    }
}

// Row tiles of up to 6 rows (12 int32 sums in zmm registers).
template <KWeights W>
void k_gemm(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc, ThreadPool& pool) {
  constexpr bool kMins = W != KWeights::q6_k;
  x86::k_gemm_tasks<W, kLanes, 6>(m, n, k, a, w, c, ldc, pool, [](const x86::KTile<kLanes>& t) {
    const __mmask16 m0 = __mmask16((1u << std::min(t.cols, kLanes)) - 1);
    const __mmask16 m1 = __mmask16((1u << std::clamp(t.cols - kLanes, 0, kLanes)) - 1);
    switch (t.rows) {
      case 1:
        return k_micro_tile<1, kMins>(t.a_quads, t.a_rows, t.nb, t.g0, t.g1, t.c, t.ldc, m0, m1);
      case 2:
        return k_micro_tile<2, kMins>(t.a_quads, t.a_rows, t.nb, t.g0, t.g1, t.c, t.ldc, m0, m1);
      case 3:
        return k_micro_tile<3, kMins>(t.a_quads, t.a_rows, t.nb, t.g0, t.g1, t.c, t.ldc, m0, m1);
      case 4:
        return k_micro_tile<4, kMins>(t.a_quads, t.a_rows, t.nb, t.g0, t.g1, t.c, t.ldc, m0, m1);
      case 5:
        return k_micro_tile<5, kMins>(t.a_quads, t.a_rows, t.nb, t.g0, t.g1, t.c, t.ldc, m0, m1);
      default:
        return k_micro_tile<6, kMins>(t.a_quads, t.a_rows, t.nb, t.g0, t.g1, t.c, t.ldc, m0, m1);
    }
  });
}

}  // namespace

void add_vnni_gemms(HotFormatDots& dots) {
  dots.q8_0_gemm = &gemm<Weights::q8_0>;
  dots.q4_0_gemm = &gemm<Weights::q4_0>;
  dots.q4_k_gemm = &k_gemm<KWeights::q4_k>;
  dots.q5_k_gemm = &k_gemm<KWeights::q5_k>;
  dots.q6_k_gemm = &k_gemm<KWeights::q6_k>;
  dots.q8_0_gemv = &gemv<Weights::q8_0>;
  dots.q4_0_gemv = &gemv<Weights::q4_0>;
  dots.iq4_nl_gemm = &gemm<Weights::iq4_nl>;
  dots.iq4_xs_gemm = &gemm<Weights::iq4_xs>;
  dots.iq4_nl_gemv = &gemv<Weights::iq4_nl>;
  dots.iq4_xs_gemv = &gemv<Weights::iq4_xs>;
  dots.tq2_0_gemm = &gemm<Weights::tq2_0>;
  dots.tq2_0_gemv = &gemv<Weights::tq2_0>;
}

}  // namespace tempra::native
