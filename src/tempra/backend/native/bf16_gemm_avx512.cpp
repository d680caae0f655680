// tempra/backend/native/bf16_gemm_avx512.cpp: Kernels::gemm_bf16_products on AVX-512 BF16.
//
// vdpbf16ps multiplies the two bf16 of each 32-bit pair of its operands and adds both products
// to the f32 lane: 32 multiply-adds per instruction, twice an f32 FMA's. Each product of two
// bf16 is exact in f32; the sums round to nearest even, and subnormal inputs and sums are taken
// as zero (Intel SDM, VDPBF16PS: DAZ and FTZ whatever MXCSR says). Those are the only ways the
// result departs from the scalar kernel's in-order sum: its tolerance is
// tests/backend/native_bf16_gemm_test.cpp's.
//
// The activations are rounded to bf16 once per call with half.h's rounding, in integer
// arithmetic (vcvtneps2bf16 would flush subnormals, which half.h keeps), into rows of the
// calling thread's scratch zero-padded to a multiple of 32 elements. A task takes kNr = 64
// columns of c, transposes their weight rows once into [pair][column] 32-bit pairs (one zmm per
// 16 columns; 16 x 16 transposes of pairs), then runs every kMr-row tile of activations over
// them, whole depth at once: kMr x kNr f32 sums in 24 registers, each step one 32-bit broadcast
// of a row's pair against four zmm of the panel. Lane j of a tile sums the pairs of column j in
// increasing p, whatever the thread count. The packed panel (kNr x k bf16: 384 KiB at k = 3072)
// stays in L2 while the activation rows stream past it, as the integer GEMMs' panels do
// (quant_gemm_avx512.cpp).
//
// Every output has the same bits whatever m is, so the decoder (llm/model/decoder.cpp) takes it
// for every sequence of more than 10 rows, and keeps the f32 dots on the widened weights below
// that: packing costs as much as a product of a few rows, and decode steps, which read every
// weight once, ran slower through vdpbf16ps dot tiles reading the weights in place (commit
// 077045e) than through those f32 dots: 16.5 to 18.6 against 20 to 26 GB/s on one thread of an
// AMD EPYC Zen 4 for Qwen3's 151936 x 1024 head (quant_dot_bench's BM_gemv_half, then named
// BM_gemv_bf16; prefetch distance, L1 prefetch, two lines a step and split accumulators all
// tried), though 1.6x faster from the L3.
//
// The functions opt in with a target attribute; bf16_products_avx512() returns the entry only
// after a CPUID check.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "tempra/backend/native/native.h"
#include "tempra/backend/native/prefetch.h"
#include "tempra/backend/native/scratch.h"
#include "tempra/backend/native/transpose_avx512.h"
#include "tempra/core/thread_pool.h"

namespace tempra::native {
namespace {

#define TEMPRA_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

constexpr int kLanes = 16;
constexpr int kMr = 6, kNv = 4, kNr = kNv * kLanes;  // 24 accumulators of 32 registers
constexpr int64_t kStep = 32;                          // bf16 per zmm

inline int64_t padded_depth(int64_t k) { return (k + kStep - 1) / kStep * kStep; }

TEMPRA_BF16 inline __m512bh as_bf16(__m512i v) { return (__m512bh)v; }

// Rows first .. last - 1 of a (stride lda) rounded to bf16 as half.h's f32_to_bf16_bits does
// (nearest even; NaN quieted; subnormals kept), into rows of kp elements zero past k.
TEMPRA_BF16 void round_rows(const float* a, int64_t lda, int64_t k, int64_t kp, int64_t first, int64_t last,
                            uint16_t* out) {
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff), infinity = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet = _mm512_set1_epi32(0x40);
  for (int64_t i = first; i < last; ++i) {
    const float* x = a + i * lda;
    uint16_t* y = out + i * kp;
    for (int64_t p = 0; p < kp; p += kLanes) {
      const __mmask16 valid = p + kLanes <= k ? __mmask16(0xffff) : p < k ? __mmask16((1u << (k - p)) - 1) : 0;
      const __m512i v = _mm512_maskz_loadu_epi32(valid, x + p);
      const __m512i high = _mm512_srli_epi32(v, 16);
      __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(v, bias), _mm512_and_si512(high, one)), 16);
      const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(v, magnitude), infinity);
      r = _mm512_mask_or_epi32(r, nan, high, quiet);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + p), _mm512_cvtepi32_epi16(r));
    }
  }
}

// Packs weight rows j0 .. j0 + cols - 1 (cols <= kNr) over the padded depth kp into
// panel[pair][column] (kNr 32-bit pairs per pair index), zero past k and past cols.
TEMPRA_BF16 void pack_panel(const uint16_t* w, int64_t ldw, int64_t k, int64_t kp, int64_t j0, int cols,
                            uint32_t* panel) {
  for (int g = 0; g < kNv; ++g)
    for (int64_t p = 0; p < kp; p += kStep) {
      const __mmask32 valid = p + kStep <= k ? ~__mmask32(0) : __mmask32((uint64_t{1} << (k - p)) - 1);
      __m512i block[16];
      for (int i = 0; i < 16; ++i) {
        const int column = g * kLanes + i;
        if (column < cols) prefetch_for_packing(w + (j0 + column) * ldw + p);  // prefetch.h says why
        block[i] = column < cols ? _mm512_maskz_loadu_epi16(valid, w + (j0 + column) * ldw + p) : _mm512_setzero_si512();
      }
      transpose16(block);
      for (int l = 0; l < 16; ++l) _mm512_store_si512(panel + (p / 2 + l) * kNr + g * kLanes, block[l]);
    }
}

// c[rows, kNr] = a rows . panel over `pairs` pairs: the micro-kernel. a[i] is row i's pairs.
TEMPRA_BF16 inline void panel_tile(int64_t pairs, const int32_t* const* a, const uint32_t* panel, float* c,
                                   int64_t ldc, int rows, const __mmask16 (&store)[kNv]) {
  __m512 acc[kMr][kNv];
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kNv; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh b[kNv];
#pragma GCC unroll 4
    for (int v = 0; v < kNv; ++v) b[v] = as_bf16(_mm512_load_si512(panel + p * kNr + v * kLanes));
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i) {
      const __m512bh ai = as_bf16(_mm512_set1_epi32(a[i][p]));
#pragma GCC unroll 4
      for (int v = 0; v < kNv; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], ai, b[v]);
    }
  }
  for (int i = 0; i < rows; ++i)
    for (int v = 0; v < kNv; ++v) _mm512_mask_storeu_ps(c + i * ldc + v * kLanes, store[v], acc[i][v]);
}

// The packed path for column strips first .. last - 1 (kNr columns each).
TEMPRA_BF16 void panel_columns(int64_t first, int64_t last, int64_t m, int64_t n, int64_t k, const uint16_t* a,
                               int64_t kp, const uint16_t* w, int64_t ldw, float* c, int64_t ldc) {
  auto* panel = reinterpret_cast<uint32_t*>(thread_scratch(1).floats(size_t(kp / 2) * kNr));
  for (int64_t s = first; s < last; ++s) {
    const int64_t j0 = s * kNr;
    const int cols = int(std::min<int64_t>(kNr, n - j0));
    pack_panel(w, ldw, k, kp, j0, cols, panel);
    __mmask16 store[kNv];
    for (int v = 0; v < kNv; ++v) {
      const int width = std::clamp(cols - v * kLanes, 0, kLanes);
      store[v] = __mmask16((1u << width) - 1);
    }
    for (int64_t i0 = 0; i0 < m; i0 += kMr) {
      const int rows = int(std::min<int64_t>(kMr, m - i0));
      const int32_t* rows_of_a[kMr];
      for (int i = 0; i < kMr; ++i)  // rows past m repeat the last (computed, never stored)
        rows_of_a[i] = reinterpret_cast<const int32_t*>(a + std::min(i0 + i, m - 1) * kp);
      panel_tile(kp / 2, rows_of_a, panel, c + i0 * ldc + j0, ldc, rows, store);
    }
  }
}

void gemm_bf16_products_avx512(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const bf16_t* w,
                               int64_t ldw, float* c, int64_t ldc, ThreadPool& pool) {
  // m, n, k > 0: gemm.cpp's gemm_bf16_products handles empty products before choosing an arm.
  const int64_t kp = padded_depth(k);
  // Read by every task; slot 4: the tasks' own scratch is slot 1 (gemm.cpp's slots 0 to 3).
  auto* rounded = reinterpret_cast<uint16_t*>(thread_scratch(4).floats(size_t(m * kp + 1) / 2));
  pool.parallel_for(m, std::max<int64_t>(1, 16384 / kp), [&](int64_t first, int64_t last) {
    round_rows(a, lda, k, kp, first, last, rounded);
  });
  const auto* wb = reinterpret_cast<const uint16_t*>(w);
  pool.parallel_for((n + kNr - 1) / kNr, 1, [&](int64_t first, int64_t last) {
    panel_columns(first, last, m, n, k, rounded, kp, wb, ldw, c, ldc);
  });
}

}  // namespace

Bf16ProductGemm bf16_products_avx512() {
  __builtin_cpu_init();
  const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  return supported ? &gemm_bf16_products_avx512 : nullptr;
}

}  // namespace tempra::native
