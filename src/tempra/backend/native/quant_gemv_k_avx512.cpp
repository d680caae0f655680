// tempra/backend/native/quant_gemv_k_avx512.cpp: the AVX-512 VNNI arm's decode GEMVs for the
// K-quants: Q4_K, Q5_K and Q6_K weights against a few Q8_K rows (QuantDot::gemv).
//
// Each output is exactly the scalar dot's float: per super-block the eight integer lane sums
// (lane = element index mod 8, scalar/k_quant_lanes.h), then the float steps of
// quant_gemm_x86.h's KRowSums, eight weight rows at a time (quant_gemv_k_avx2.cpp is the same on
// 256-bit vectors). The integer sums take fewer instructions than the dots' way to them: a
// decode step reads each weight once, and one thread was bound by the instructions that unpack
// it, not by memory (docs/BENCHMARK.md, session 26).
//
// The codes are taken in "quad order": in every 32 bytes of packed codes, a dword permute and a
// byte shuffle (quad_order, before the nibbles are split) put elements l, l + 8, l + 16 and
// l + 24 of the 32 side by side in dword l. A quad lies in one lane and one sub-block of 32, and
// in one scale's half of it for each of its two pairs. vpmaddubsw takes a quad's two pairs
// (codes unsigned, below 64: within 2 * 63 * 128, no saturation); Q6_K's pairs take back 32
// times their activations (codes are value + 32; the pair is then within 2 * 32 * 128); and
// vpdpwssd adds the pairs times their scales into the quad's lane: (s, s) for Q4_K and Q5_K's
// sub-block, Q6_K's two scales of 16. Each vector holds two sub-blocks, one per 256-bit half, so
// the two halves' sums are added at the end. The activations are put in quad order once per call.
//
// Compiled with -ffp-contract=off. The translation unit is compiled without AVX-512: these
// functions opt in with a target attribute, and quant_dot_avx512.cpp lists them only after its
// CPUID check.
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

#define TEMPRA_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c")))

// Vectors of 64 codes per super-block.
constexpr int kVectors = kSuperBlock / 64;

// Each 32 bytes of v in quad order (quant_gemm_x86.h's quad_order, on both halves at once).
TEMPRA_VNNI inline __m512i quad_order(__m512i v) {
  const __m512i dwords =
      _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15), v);
  return _mm512_shuffle_epi8(dwords, _mm512_broadcast_i32x4(x86::quad_transpose_128()));
}

// The sub-blocks of 32 in code vector v's two halves, as k_lanes decodes them: Q4_K and Q5_K
// read 64 packed bytes (two groups of 32, each holding two sub-blocks in its nibbles) and take
// low then high nibbles; Q6_K's half h gives planes 0 and 1, then 2 and 3.
template <KWeights W>
constexpr int sub_block_of(int v, int half) {
  if constexpr (W == KWeights::q6_k)
    return 4 * (v / 2) + 2 * (v % 2) + half;
  else
    return 4 * (v / 2) + v % 2 + 2 * half;
}

// The scale pairs of code vector v: dword t of `pairs` (sub-block t's) spread over its half.
template <KWeights W>
TEMPRA_VNNI inline __m512i scales_of(__m256i pairs, int v) {
  const __m512i index =
      _mm512_inserti64x4(_mm512_set1_epi32(sub_block_of<W>(v, 0)), _mm256_set1_epi32(sub_block_of<W>(v, 1)), 1);
  return _mm512_permutexvar_epi32(index, _mm512_castsi256_si512(pairs));
}

// One activation row in quad order, the codes' vectors' order: kVectors vectors per
// super-block, and for Q6_K after them 32 times each quad's pairs (vpmaddubsw of 32).
template <KWeights W>
constexpr int kActivationVectors = W == KWeights::q6_k ? 2 * kVectors : kVectors;

template <KWeights W>
TEMPRA_VNNI void order_activations(const BlockQ8_K* row, int64_t nb, __m512i* out) {
  for (int64_t b = 0; b < nb; ++b) {
    __m512i* v = out + b * kActivationVectors<W>;
    for (int i = 0; i < kVectors; ++i) {
      const __m256i first = x86::load256(row[b].qs + 32 * sub_block_of<W>(i, 0));
      const __m256i second = x86::load256(row[b].qs + 32 * sub_block_of<W>(i, 1));
      v[i] = quad_order(_mm512_inserti64x4(_mm512_castsi256_si512(first), second, 1));
      if constexpr (W == KWeights::q6_k) v[kVectors + i] = _mm512_maddubs_epi16(_mm512_set1_epi8(32), v[i]);
    }
  }
}

// Code vector v of a super-block (64 codes in quad order, unsigned).
template <KWeights W>
TEMPRA_VNNI inline __m512i codes_of(const KBlock<W>& x, int v) {
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  if constexpr (W == KWeights::q6_k) {
    // Half 0: ql[64 h + l]'s nibbles (planes 0, 2), half 1: ql[64 h + 32 + l]'s (planes 1, 3);
    // plane p's high bits are bits 2p, 2p + 1 of qh[32 h + l]: bits 0-1 and 4-5 of qh (half 0)
    // and of qh >> 2 (half 1). (a & nibble) | (b & ~nibble) is vpternlogd's 0xE4.
    const int h = v / 2;
    const __m512i ql = quad_order(_mm512_loadu_si512(x.ql + 64 * h));
    const __m256i qh = x86::load256(x.qh + 32 * h);
    const __m512i high =
        _mm512_and_si512(quad_order(_mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1)),
                         _mm512_set1_epi8(0x33));
    return v % 2 == 0 ? _mm512_ternarylogic_epi32(ql, _mm512_slli_epi16(high, 4), nibble, 0xE4)
                      : _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), high, nibble, 0xE4);
  } else {
    const __m512i packed = quad_order(_mm512_loadu_si512(x.qs + 64 * (v / 2)));
    __m512i codes = _mm512_and_si512(v % 2 ? _mm512_srli_epi16(packed, 4) : packed, nibble);
    if constexpr (W == KWeights::q5_k) {
      // Bit t of qh[l] is element l of sub-block t's fifth bit.
      const __m512i qh = quad_order(_mm512_broadcast_i64x4(x86::load256(x.qh)));
      const __m512i bits = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << sub_block_of<W>(v, 0))),
                                              _mm256_set1_epi8(static_cast<char>(1 << sub_block_of<W>(v, 1))), 1);
      codes = _mm512_mask_add_epi8(codes, _mm512_test_epi8_mask(qh, bits), codes, _mm512_set1_epi8(16));
    }
    return codes;
  }
}

// One super-block's eight lane sums (int32 l = lane l) against activations `a` in quad order;
// Q4_K/Q5_K's mins term as eight int32 to add into min_terms.
template <KWeights W>
TEMPRA_VNNI inline __m256i k_lanes(const KBlock<W>& x, const __m512i* a, const int16_t* bsums, __m256i& min_terms) {
  const __m256i pairs = x86::scale_pairs_k<W>(x, bsums, min_terms);  // dword t: sub-block t's pair
  __m512i sums[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v) {
    __m512i products = _mm512_maddubs_epi16(codes_of<W>(x, v), a[v]);
    if constexpr (W == KWeights::q6_k) products = _mm512_sub_epi16(products, a[kVectors + v]);
    sums[v % 2] = _mm512_dpwssd_epi32(sums[v % 2], products, scales_of<W>(pairs, v));
  }
  const __m512i both = _mm512_add_epi32(sums[0], sums[1]);
  return _mm256_add_epi32(_mm512_castsi512_si256(both), _mm512_extracti64x4_epi64(both, 1));
}

// Eight weight rows against one activation row (quant_gemm_x86.h's k_gemv_rows, with this
// arm's k_lanes and target).
template <KWeights W>
TEMPRA_VNNI __attribute__((flatten)) void gemv_rows(const uint8_t* w, size_t w_row, int64_t j0, int rows, int64_t nb,
                                                    const BlockQ8_K* a, const __m512i* a_ordered, float* c) {
  x86::k_gemv_rows<W, __m512i, &k_lanes<W>>(w, w_row, j0, rows, nb, a, a_ordered, kActivationVectors<W>, c);
}

template <KWeights W>
void gemv(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc, ThreadPool& pool) {
  x86::k_gemv_tasks<W, __m512i>(m, n, k, a, w, c, ldc, pool, kActivationVectors<W>, &order_activations<W>,
                                &gemv_rows<W>);
}

}  // namespace

void add_vnni_k_gemvs(HotFormatDots& dots) {
  dots.q4_k_gemv = &gemv<KWeights::q4_k>;
  dots.q5_k_gemv = &gemv<KWeights::q5_k>;
  dots.q6_k_gemv = &gemv<KWeights::q6_k>;
}

}  // namespace tempra::native
