// tempra/backend/native/quant_gemv_k_avx2.cpp: the AVX2 arm's decode GEMVs for the K-quants:
// Q4_K, Q5_K and Q6_K weights against a few Q8_K rows (QuantDot::gemv).
//
// The VNNI arm's method (quant_gemv_k_avx512.cpp) on 256-bit vectors, a sub-block of 32 codes
// per vector: the codes in quad order (quant_gemm_x86.h's quad_order: dword l holds elements
// l, l + 8, l + 16, l + 24, all of lane l), vpmaddubsw against the activations in the same order
// (Q6_K's pairs less 32 times their activations), then vpmaddwd by the sub-block's scale pair
// gives each lane's sum over the sub-block in its dword, exactly (quant_dot_avx2.cpp's header
// gives the ranges: no saturation), and eight rows' lane sums go through KRowSums's float
// steps, the scalar dot's. The dot's own lane functions, which pair elements e and e + 8 by
// vpshufb and interleave two sub-blocks to scale them, took about 1.5 times the instructions.
//
// Compiled with -ffp-contract=off, for a baseline x86-64: these functions opt in to AVX2 with a
// target attribute, and quant_dot_avx2.cpp lists them only after its CPUID check.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "tempra/backend/native/prefetch.h"
#include "tempra/backend/native/quant_dot_x86.h"
#include "tempra/backend/native/quant_gemm_x86.h"
#include "tempra/backend/quant_dot.h"
#include "tempra/core/thread_pool.h"
#include "tempra/quant/blocks.h"

namespace tempra::native {
namespace {

using namespace tempra::quant;
using x86::KBlock;
using x86::KWeights;
using x86::load256;
using x86::quad_order;

#define TEMPRA_AVX2 __attribute__((target("avx2,fma,f16c")))

constexpr int kSubBlocks = kSuperBlock / 32;

// One activation row in quad order, a sub-block per vector, and for Q6_K after each
// super-block's eight the pairs' offsets: 32 times each quad's two pairs (vpmaddubsw of 32).
template <KWeights W>
constexpr int kActivationVectors = W == KWeights::q6_k ? 2 * kSubBlocks : kSubBlocks;

template <KWeights W>
TEMPRA_AVX2 void order_activations(const BlockQ8_K* row, int64_t nb, __m256i* out) {
  for (int64_t b = 0; b < nb; ++b) {
    __m256i* v = out + b * kActivationVectors<W>;
    for (int t = 0; t < kSubBlocks; ++t) {
      v[t] = quad_order(load256(row[b].qs + 32 * t));
      if constexpr (W == KWeights::q6_k) v[kSubBlocks + t] = _mm256_maddubs_epi16(_mm256_set1_epi8(32), v[t]);
    }
  }
}

// Bits `bit` and `bit` + 1 of each byte of v at bits 4 and 5, the rest cleared (bit <= 6; at 7,
// bit 4 alone is right). The 16-bit shifts carry bits across bytes only into the bits cleared.
TEMPRA_AVX2 inline __m256i bits_to_4_5(__m256i v, int bit) {
  const __m256i moved = bit <= 4 ? _mm256_slli_epi16(v, 4 - bit) : _mm256_srli_epi16(v, bit - 4);
  return _mm256_and_si256(moved, _mm256_set1_epi8(0x30));
}

// One super-block's eight lane sums (int32 l = lane l) against activations `a` in quad order;
// Q4_K/Q5_K's mins term as eight int32 to add into min_terms.
template <KWeights W>
TEMPRA_AVX2 inline __m256i k_lanes(const KBlock<W>& x, const __m256i* a, const int16_t* bsums, __m256i& min_terms) {
  const __m256i pairs = x86::scale_pairs_k<W>(x, bsums, min_terms);  // dword t: sub-block t's pair
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  __m256i codes[kSubBlocks];
  if constexpr (W == KWeights::q6_k) {
    // Sub-block 4 h + p: low bits in ql[64 h + 32 (p % 2) + l] (low nibble for p < 2), high bits
    // 2p, 2p + 1 of qh[32 h + l].
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = quad_order(load256(x.ql + 64 * h)), ql1 = quad_order(load256(x.ql + 64 * h + 32));
      const __m256i qh = quad_order(load256(x.qh + 32 * h));
      codes[4 * h] = _mm256_or_si256(_mm256_and_si256(ql0, nibble), bits_to_4_5(qh, 0));
      codes[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, nibble), bits_to_4_5(qh, 2));
      codes[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), nibble), bits_to_4_5(qh, 4));
      codes[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), nibble), bits_to_4_5(qh, 6));
    }
  } else {
    // Sub-blocks 2j and 2j + 1 in the low and high nibbles of qs[32 j + l]; Q5_K's fifth bit t
    // of qh[l].
    __m256i qh = _mm256_setzero_si256();
    if constexpr (W == KWeights::q5_k) qh = quad_order(load256(x.qh));
    for (int j = 0; j < 4; ++j) {
      const __m256i packed = quad_order(load256(x.qs + 32 * j));
      codes[2 * j] = _mm256_and_si256(packed, nibble);
      codes[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
    }
    if constexpr (W == KWeights::q5_k)
      for (int t = 0; t < kSubBlocks; ++t)
        codes[t] = _mm256_or_si256(codes[t], _mm256_and_si256(bits_to_4_5(qh, t), _mm256_set1_epi8(0x10)));
  }
  __m256i sums[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  for (int t = 0; t < kSubBlocks; ++t) {
    __m256i products = _mm256_maddubs_epi16(codes[t], a[t]);
    if constexpr (W == KWeights::q6_k) products = _mm256_sub_epi16(products, a[kSubBlocks + t]);
    const __m256i scale = _mm256_permutevar8x32_epi32(pairs, _mm256_set1_epi32(t));
    sums[t % 2] = _mm256_add_epi32(sums[t % 2], _mm256_madd_epi16(products, scale));
  }
  return _mm256_add_epi32(sums[0], sums[1]);
}

// Eight weight rows against one activation row (quant_gemm_x86.h's k_gemv_rows, with this
// arm's k_lanes and target).
template <KWeights W>
TEMPRA_AVX2 __attribute__((flatten)) void gemv_rows(const uint8_t* w, size_t w_row, int64_t j0, int rows, int64_t nb,
                                                    const BlockQ8_K* a, const __m256i* a_ordered, float* c) {
  x86::k_gemv_rows<W, __m256i, &k_lanes<W>>(w, w_row, j0, rows, nb, a, a_ordered, kActivationVectors<W>, c);
}

template <KWeights W>
void gemv(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc, ThreadPool& pool) {
  x86::k_gemv_tasks<W, __m256i>(m, n, k, a, w, c, ldc, pool, kActivationVectors<W>, &order_activations<W>,
                                &gemv_rows<W>);
}

}  // namespace

void add_avx2_k_gemvs(HotFormatDots& dots) {
  dots.q4_k_gemv = &gemv<KWeights::q4_k>;
  dots.q5_k_gemv = &gemv<KWeights::q5_k>;
  dots.q6_k_gemv = &gemv<KWeights::q6_k>;
}

}  // namespace tempra::native
