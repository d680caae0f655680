// tempra/backend/native/quant_dot_x86.h: helpers the x86 quantized-dot arms share
// (quant_dot_avx512.cpp, quant_dot_avx2.cpp).
//
// They use AVX2 at most and carry target("avx2"), so they inline into both the AVX-512 VNNI
// and the AVX2 functions (whose target sets include AVX2) whatever the translation unit's own
// -march; internal linkage, so no out-of-line copy is shared between translation units built
// for different targets. Include only from translation units compiled with -ffp-contract=off.
#pragma once

#include <cpuid.h>
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "tempra/quant/blocks.h"

namespace tempra::native::x86 {
namespace {

#define TEMPRA_X86_AVX2_HELPER __attribute__((target("avx2"), always_inline)) inline

// Horizontal sum of eight int32 lanes.
TEMPRA_X86_AVX2_HELPER int hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// The pshufb order that puts each 16-byte lane (elements 16 k .. 16 k + 15) as
// e0 e8 e1 e9 ... e7 e15, so that vpmaddubsw's adjacent pairs share a K-quant lane (index mod 8).
TEMPRA_X86_AVX2_HELPER __m128i lane_pairs_order_128() {
  return _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
}

// The pshufb order of a 4 x 4 byte transpose (dword i, byte j <- dword j, byte i): with a dword
// permute, the K-quant GEMVs' quad order (quant_gemm_x86.h's quad_order).
TEMPRA_X86_AVX2_HELPER __m128i quad_transpose_128() {
  return _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
}

// Q4_K/Q5_K's packed 6-bit scales and mins (detail::unpack_scales_mins_k4's unpacking) four
// bytes at a time, straight into registers (eight int16 each): building them in memory with
// scalar stores and loading them as a vector stalled store forwarding (~3x slower Q4_K arm).
TEMPRA_X86_AVX2_HELPER void unpack_scales_mins_k4(const uint8_t* q, __m128i& scales, __m128i& mins) {
  uint32_t word[3];
  std::memcpy(word, q, sizeof word);
  const uint32_t six = 0x3F3F3F3F, four = 0x0F0F0F0F, two = 0x03030303;
  const uint32_t scales_low = word[0] & six;                                           // scales 0..3
  const uint32_t scales_high = (word[2] & four) | (((word[0] >> 6) & two) << 4);       // scales 4..7
  const uint32_t mins_low = word[1] & six;                                             // mins 0..3
  const uint32_t mins_high = ((word[2] >> 4) & four) | (((word[1] >> 6) & two) << 4);  // mins 4..7
  scales = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(scales_low | uint64_t{scales_high} << 32)));
  mins = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(mins_low | uint64_t{mins_high} << 32)));
}

// The same unpacking in vector registers alone, straight to the int32 pairs (s_t, s_t) and
// (min_t, min_t), t = 0..7 (each_twice of the above), which the decode GEMVs scale by. Reads 16
// bytes at q (the 12 bytes of scales and 4 after them: in a Q4_K/Q5_K block, its codes).
TEMPRA_X86_AVX2_HELPER void scale_min_pairs_k4(const uint8_t* q, __m256i& scale_pairs, __m256i& min_pairs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  // Bytes s0..s3, s4..s7, m0..m7's low bits (q0..3, q8..11, q4..7, q8..11 >> 4) and the top two
  // bits of s4..s7, m4..m7 (q0..3, q4..7 >> 6).
  const __m128i low = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  const __m128i top = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
  const __m128i low_bits = _mm_and_si128(_mm_blend_epi32(low, _mm_srli_epi16(low, 4), 0x8),
                                         _mm_setr_epi32(0x3F3F3F3F, 0x0F0F0F0F, 0x3F3F3F3F, 0x0F0F0F0F));
  const __m128i top_bits = _mm_and_si128(_mm_srli_epi16(top, 2), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
  const __m256i both = _mm256_broadcastsi128_si256(_mm_or_si128(low_bits, top_bits));  // s0..s7, m0..m7
  scale_pairs = _mm256_shuffle_epi8(both, _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1,  //
                                                          4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1));
  min_pairs = _mm256_shuffle_epi8(both, _mm256_setr_epi8(8, -1, 8, -1, 9, -1, 9, -1, 10, -1, 10, -1, 11, -1, 11, -1,  //
                                                         12, -1, 12, -1, 13, -1, 13, -1, 14, -1, 14, -1, 15, -1, 15, -1));
}

// Eight int16 values v0..v7 as the int32 pairs (v_t, v_t), t = 0..7.
TEMPRA_X86_AVX2_HELPER __m256i each_twice(__m128i v) {
  return _mm256_set_m128i(_mm_unpackhi_epi16(v, v), _mm_unpacklo_epi16(v, v));
}

// sum_j bsums[j] * mins[j / 2] over the 16 sums of 16 activations, exact in int32
// (|bsum| <= 2^15, min < 64), as eight int32 terms (min_pairs: the int32 pairs (min_t, min_t))
// or their sum.
TEMPRA_X86_AVX2_HELPER __m256i mins_terms(__m256i min_pairs, const int16_t* bsums) {
  return _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums)), min_pairs);
}
TEMPRA_X86_AVX2_HELPER int mins_dot_bsums(__m128i mins, const int16_t* bsums) {
  return hsum(mins_terms(each_twice(mins), bsums));
}

// Lanes 0..3 of `low`'s two 128-bit halves added, then lanes 4..7 of `high`'s: one vector, int32
// l = lane l (the last step of a transposing sum of eight vectors, or of the K-quants' lane pairs).
TEMPRA_X86_AVX2_HELPER __m256i add_halves(__m256i low, __m256i high) {
  return _mm256_add_epi32(_mm256_permute2x128_si256(low, high, 0x20), _mm256_permute2x128_si256(low, high, 0x31));
}

// The first `count` of eight int32 lanes set: a mask for vmaskmov of a partial group.
TEMPRA_X86_AVX2_HELPER __m256i first_lanes(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

TEMPRA_X86_AVX2_HELPER __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// The 32 codes of a block packed as Q4_0 (16 bytes: element j in the low nibble of byte j, element
// j + 16 in the high one), in element order, one byte each.
TEMPRA_X86_AVX2_HELPER __m256i nibbles(const uint8_t* qs) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i low_mask = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low_mask), _mm_and_si128(packed, low_mask));
}

// The IQ4 formats' 16 values (quant::kIq4nlGrid, -127..113) as a vpshufb table; with offset, each
// value + 128 (1..241) as an unsigned byte, vpdpbusd's operand, the dot then taking back
// 128 * sum(a).
TEMPRA_X86_AVX2_HELPER __m128i iq4_values_128(bool offset) {
  const __m128i values = _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIq4nlGrid));
  return offset ? _mm_xor_si128(values, _mm_set1_epi8(static_cast<char>(0x80))) : values;
}

#undef TEMPRA_X86_AVX2_HELPER

// CPUID leaf 1, ECX bit 29. Asked of the CPU directly: clang 14's __builtin_cpu_supports does not
// know the "f16c" feature name (it refuses to compile it), g++ 12's does.
inline bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

}  // namespace
}  // namespace tempra::native::x86
