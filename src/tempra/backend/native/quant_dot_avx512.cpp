// tempra/backend/native/quant_dot_avx512.cpp: AVX-512 VNNI arms of the hot quantized dots.
//
// Each arm computes the same per-block integer sums as the scalar kernel with vpdpbusd
// (unsigned x signed bytes, summed in groups of four into int32 lanes), then adds the float
// terms block by block in exactly the scalar order, so the result is bit-identical to the scalar
// arm (tests/backend/quant_dot_test.cpp), not merely close. vpdpbusd needs an unsigned operand:
// Q4_0's codes are unsigned 0..15, and sum((c - 8) * a) = sum(c * a) - 8 * sum(a); Q8_0 x Q8_0
// moves the weight's sign onto the activation (|w| * sign(w) a).
//
// The translation unit is compiled without VNNI (see cmake/int8_dot_probe.cpp); these functions
// opt in with a target attribute and are only called after a CPUID check.
#include <immintrin.h>

#include <cstring>

#include "tempra/backend/quant_dot.h"
#include "tempra/quant/blocks.h"
#include "tempra/quant/formats.h"

namespace tempra::native {
namespace {

using namespace tempra::quant;

#define TEMPRA_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

// Horizontal sum of eight int32 lanes.
TEMPRA_VNNI inline int hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// sum_j w[j] * a[j] over 32 signed bytes each.
TEMPRA_VNNI inline int dot_i8x32(const int8_t* w, const int8_t* a) {
  const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
  const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  const __m256i signed_a = _mm256_sign_epi8(av, wv);  // a * sign(w); zero where w is zero
  return hsum(_mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(wv), signed_a));
}

TEMPRA_VNNI float dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    const int s = dot_i8x32(x[b].qs, y[b].qs);
    sum += static_cast<float>(s) * (to_f32(x[b].d) * to_f32(y[b].d));
  }
  return sum;
}

TEMPRA_VNNI float dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  const __m128i low_mask = _mm_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi8(1);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    // Codes 0..15: low nibbles are elements 0..15, high nibbles 16..31.
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs));
    const __m256i codes = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low_mask),
                                           _mm_and_si128(packed, low_mask));
    const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs));
    const int code_dot = hsum(_mm256_dpbusd_epi32(_mm256_setzero_si256(), codes, av));
    const int a_sum = hsum(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, av));
    const int s = code_dot - 8 * a_sum;
    sum += static_cast<float>(s) * to_f32(x[b].d) * to_f32(y[b].d);
  }
  return sum;
}

bool cpu_has_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

}  // namespace

const QuantDot* find_quant_dot_avx512(DType weight) {
  static const bool available = cpu_has_vnni();
  if (!available) return nullptr;
  static const QuantDot table[] = {
      {q8_0(), q8_0(), &dot_q8_0},
      {q4_0(), q8_0(), &dot_q4_0},
  };
  for (const QuantDot& d : table)
    if (d.weight == weight) return &d;
  return nullptr;
}

}  // namespace tempra::native
