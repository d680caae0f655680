// tempra/backend/native/quant_gemm_avx512.cpp: the AVX-512 VNNI integer GEMM behind
// QuantDot::gemm for Q8_0 and Q4_0 weights against Q8_0 activations (prefill, verify passes).
//
// It returns, for every output, exactly the float the dot of quant_dot_avx512.cpp (and the
// scalar spec) returns: per 32-element block the same exact integer sum, then the same float
// operations in the same order, block after block. Only where the work happens changes:
//   - Weights are packed per call, one task's 32 columns at a time, into the layout vpdpbusd
//     wants: for each block, 8 groups of 4 consecutive elements ("quads"), each 16 columns x 4
//     bytes (64 bytes), as unsigned codes (Q8_0: w + 128; Q4_0: its 4-bit codes), then the 16
//     columns' scales as f32. A panel of 32 columns is at most a few hundred KiB and stays in L2
//     while every row of the activations streams past it.
//   - Activations are read in place (Q8_0 rows): vpdpbusd takes each quad of a row broadcast to
//     the 16 lanes, so lane c accumulates row x column c. The unsigned weights add a known term,
//     sum((w + o) a) = sum(w a) + o sum(a) with o = 128 (Q8_0) or 8 (Q4_0, whose value is
//     code - 8), which each block's accumulator starts out subtracting: -o * sum(a), per row and
//     block, tabled once per call with the rows' scales as f32.
//   - A micro-tile is 6 rows x 32 columns: 12 int32 and 12 float accumulators. Per block and row
//     the float step is the dot's: Q8_0 acc += float(s) * (d_w * d_a); Q4_0 acc += float(s) *
//     d_w * d_a, multiplied left to right. Compiled with -ffp-contract=off, so nothing fuses.
// The translation unit is compiled without VNNI (cmake/int8_dot_probe.cpp): these functions opt
// in with a target attribute and quant_dot_avx512.cpp lists them only after its CPUID check.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "tempra/backend/native/scratch.h"
#include "tempra/backend/quant_dot.h"
#include "tempra/core/half.h"
#include "tempra/core/thread_pool.h"
#include "tempra/quant/blocks.h"

namespace tempra::native {
namespace {

using namespace tempra::quant;

#define TEMPRA_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c")))

constexpr int kLanes = 16;      // columns per group: one zmm of int32 / f32
constexpr int kGroups = 2;      // groups per micro-tile and per task
constexpr int kTileRows = 6;    // rows per micro-tile
constexpr int kQuads = kBlock32 / 4;

// One block of one 16-column group, as the micro-kernel reads it.
struct alignas(64) PackedBlock {
  uint8_t codes[kQuads][kLanes][4];  // quad q of column c: elements 4q .. 4q + 3
  float scale[kLanes];
};
static_assert(sizeof(PackedBlock) == 576);

enum class Weights { q8_0, q4_0 };

template <Weights W>
using Block = std::conditional_t<W == Weights::q8_0, BlockQ8_0, BlockQ4_0>;

// What the unsigned codes add to each element's value: sum(code * a) = s + kOffset * sum(a).
template <Weights W>
constexpr int kOffset = W == Weights::q8_0 ? 128 : 8;

// Packs columns j0 .. j0 + cols - 1 (cols <= 16; the last is repeated to fill the group) of the
// weight rows, every block.
template <Weights W>
void pack_group(const uint8_t* w, size_t w_row, int64_t j0, int cols, int64_t blocks, PackedBlock* out) {
  for (int c = 0; c < kLanes; ++c) {
    const auto* row = reinterpret_cast<const Block<W>*>(w + size_t(j0 + std::min(c, cols - 1)) * w_row);
    for (int64_t b = 0; b < blocks; ++b) {
      PackedBlock& p = out[b];
      p.scale[c] = f16_bits_to_f32(row[b].d.bits);
      for (int q = 0; q < kQuads; ++q) {
        uint32_t quad;
        if constexpr (W == Weights::q8_0) {
          std::memcpy(&quad, row[b].qs + 4 * q, 4);
          quad ^= 0x80808080u;  // w + 128, as unsigned bytes
        } else {
          // Elements 0..15 are the low nibbles of qs[0..15], 16..31 the high ones.
          std::memcpy(&quad, row[b].qs + 4 * (q % 4), 4);
          quad = (q < 4 ? quad : quad >> 4) & 0x0F0F0F0Fu;
        }
        std::memcpy(p.codes[q][c], &quad, 4);
      }
    }
  }
}

// Per row and block of a: -offset * sum(a) (the accumulator's start) and the scale as f32.
struct RowTables {
  int32_t* start;
  float* scale;
};

// int32 -> f32 (exact below 2^24), in the full-mask form: the plain intrinsic seeds its
// pass-through with _mm512_undefined_ps(), which g++ 12 flags as uninitialized (GCC PR 105593).
TEMPRA_VNNI inline __m512 to_float(__m512i v) { return _mm512_maskz_cvtepi32_ps(0xFFFF, v); }

template <int R, Weights W>
TEMPRA_VNNI void micro_tile(const uint8_t* const* a_rows, const RowTables& t, int64_t nb, int64_t first_row,
                            const PackedBlock* g0, const PackedBlock* g1, float* c, int64_t ldc, __mmask16 m0,
                            __mmask16 m1) {
  __m512 acc[R][kGroups];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m512i s[R][kGroups];
    for (int r = 0; r < R; ++r) s[r][0] = s[r][1] = _mm512_set1_epi32(t.start[(first_row + r) * nb + b]);
    for (int q = 0; q < kQuads; ++q) {
      const __m512i w0 = _mm512_load_si512(g0[b].codes[q]);
      const __m512i w1 = _mm512_load_si512(g1[b].codes[q]);
      for (int r = 0; r < R; ++r) {
        int32_t quad;
        std::memcpy(&quad, a_rows[r] + b * sizeof(BlockQ8_0) + offsetof(BlockQ8_0, qs) + 4 * q, 4);
        const __m512i av = _mm512_set1_epi32(quad);
        s[r][0] = _mm512_dpbusd_epi32(s[r][0], w0, av);
        s[r][1] = _mm512_dpbusd_epi32(s[r][1], w1, av);
      }
    }
    const __m512 d0 = _mm512_load_ps(g0[b].scale), d1 = _mm512_load_ps(g1[b].scale);
    for (int r = 0; r < R; ++r) {
      const __m512 da = _mm512_set1_ps(t.scale[(first_row + r) * nb + b]);
      if constexpr (W == Weights::q8_0) {
        acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_mul_ps(to_float(s[r][0]), _mm512_mul_ps(d0, da)));
        acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_mul_ps(to_float(s[r][1]), _mm512_mul_ps(d1, da)));
      } else {
        acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_mul_ps(_mm512_mul_ps(to_float(s[r][0]), d0), da));
        acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_mul_ps(_mm512_mul_ps(to_float(s[r][1]), d1), da));
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, m0, acc[r][0]);
    _mm512_mask_storeu_ps(c + r * ldc + kLanes, m1, acc[r][1]);
  }
}

template <Weights W>
void gemm(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc,
                      ThreadPool& pool) {
  const int64_t nb = k / kBlock32;
  const size_t a_row = size_t(nb) * sizeof(BlockQ8_0), w_row = size_t(nb) * sizeof(Block<W>);
  const auto* ap = static_cast<const uint8_t*>(a);
  const auto* wp = static_cast<const uint8_t*>(w);
  // The rows' tables, on this thread's scratch (read by every task).
  float* tables = thread_scratch(0).floats(size_t(2 * m * nb));
  const RowTables t{reinterpret_cast<int32_t*>(tables), tables + m * nb};
  pool.parallel_for(m, 1 + 16384 / (k + 1), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const auto* row = reinterpret_cast<const BlockQ8_0*>(ap + size_t(i) * a_row);
      for (int64_t b = 0; b < nb; ++b) {
        int sum = 0;
        for (int e = 0; e < kBlock32; ++e) sum += row[b].qs[e];
        t.start[i * nb + b] = -kOffset<W> * sum;
        t.scale[i * nb + b] = f16_bits_to_f32(row[b].d.bits);
      }
    }
  });
  constexpr int64_t kTaskCols = kLanes * kGroups;
  const int64_t tasks = (n + kTaskCols - 1) / kTaskCols;
  pool.parallel_for(tasks, 1, [&](int64_t first, int64_t last) {
    auto* packed = reinterpret_cast<PackedBlock*>(
        thread_scratch(1).floats(size_t(kGroups * nb) * sizeof(PackedBlock) / sizeof(float)));
    for (int64_t task = first; task < last; ++task) {
      const int64_t j0 = task * kTaskCols;
      const int cols0 = int(std::min<int64_t>(kLanes, n - j0));
      const int cols1 = int(std::clamp<int64_t>(n - j0 - kLanes, 0, kLanes));
      PackedBlock* g0 = packed;
      PackedBlock* g1 = packed + nb;
      pack_group<W>(wp, w_row, j0, cols0, nb, g0);
      if (cols1 > 0) pack_group<W>(wp, w_row, j0 + kLanes, cols1, nb, g1);
      else g1 = g0;  // computed, never stored
      const __mmask16 m0 = __mmask16((1u << cols0) - 1), m1 = __mmask16((1u << cols1) - 1);
      for (int64_t i0 = 0; i0 < m; i0 += kTileRows) {
        const int rows = int(std::min<int64_t>(kTileRows, m - i0));
        const uint8_t* a_rows[kTileRows];
        for (int r = 0; r < rows; ++r) a_rows[r] = ap + size_t(i0 + r) * a_row;
        float* ct = c + i0 * ldc + j0;
        switch (rows) {
          case 1: micro_tile<1, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1); break;
          case 2: micro_tile<2, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1); break;
          case 3: micro_tile<3, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1); break;
          case 4: micro_tile<4, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1); break;
          case 5: micro_tile<5, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1); break;
          default: micro_tile<kTileRows, W>(a_rows, t, nb, i0, g0, g1, ct, ldc, m0, m1); break;
        }
      }
    }
  });
}

}  // namespace

void gemm_q8_0_vnni(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc,
                    ThreadPool& pool) {
  gemm<Weights::q8_0>(m, n, k, a, w, c, ldc, pool);
}

void gemm_q4_0_vnni(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc,
                    ThreadPool& pool) {
  gemm<Weights::q4_0>(m, n, k, a, w, c, ldc, pool);
}

}  // namespace tempra::native
