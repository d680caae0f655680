// tempra/backend/native/quantize_rows_x86.cpp: the partner formats' row quantizers (Q8_0, Q8_K)
// in AVX-512 and AVX2, for the activations of every quantized matrix product.
//
// Each returns the reference encoder's bytes (quant/reference.cpp, reference_k.cpp) for finite
// inputs: the block maximum is exact in any order, the scale is computed by the same scalar
// expression, each product x * id is one multiply as there, and the roundings are spelled out:
// Q8_0 rounds half away from zero (std::round), Q8_K to nearest even (ggml's nearest_int, which
// vcvtps2dq does in the default rounding mode). tests/backend/quant_dot_test.cpp compares them.
// The reference loops were a fifth of a Q8_0 prefill (std::round per element).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "tempra/core/half.h"
#include "tempra/quant/blocks.h"

namespace tempra::native {
namespace {

using namespace tempra::quant;

#define TEMPRA_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define TEMPRA_AVX2 __attribute__((target("avx2,fma")))

float inverse(float d) {
  return d != 0.0f ? 1.0f / d : 0.0f;
}

// round(v) half away from zero: trunc(v) plus the sign of v where the dropped part is >= 1/2
// (v - trunc(v) is exact).
TEMPRA_AVX512 inline __m512i round_away(__m512 v) {
  // AVX-512 F only (the float and/or/andnot are AVX-512 DQ): |v - t| by vandps' integer twin.
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(int(0x80000000u)));
  const __m512 one = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(_mm512_set1_ps(1.0f)), sign));
  return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, one));
}

TEMPRA_AVX2 inline __m256i round_away(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 up = _mm256_cmp_ps(_mm256_andnot_ps(sign_bit, _mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, sign_bit));
  return _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, one)));
}

TEMPRA_AVX2 inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Eight int32 lanes (each in -127..127) to bytes, in order.
TEMPRA_AVX2 inline void store_bytes(__m256i v, int8_t* out) {
  // The low byte of each lane, as the AVX-512 encoder's vpmovdb and the reference's cast keep it
  // (a saturating pack would differ where a lane is INT_MIN: x * id overflowed).
  const __m256i low_bytes =
      _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                                              -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
  const __m128i packed = _mm_unpacklo_epi32(_mm256_castsi256_si128(low_bytes), _mm256_extracti128_si256(low_bytes, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), packed);
}

TEMPRA_AVX2 inline int hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// The first of the 256 elements whose magnitude is `amax` (the reference keeps the first).
float first_with_magnitude(const float* x, float amax) {
  for (int j = 0; j < kSuperBlock; ++j)
    if (std::abs(x[j]) == amax) return x[j];
  return amax;
}

}  // namespace

TEMPRA_AVX512 void quantize_row_q8_0_avx512(const float* x, void* out, int64_t k) {
  auto* y = static_cast<BlockQ8_0*>(out);
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const __m512 lo = _mm512_loadu_ps(x), hi = _mm512_loadu_ps(x + 16);
    const float d = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi))) / 127;
    const __m512 id = _mm512_set1_ps(inverse(d));
    y[b].d = to_f16(d);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs), _mm512_cvtepi32_epi8(round_away(_mm512_mul_ps(lo, id))));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16), _mm512_cvtepi32_epi8(round_away(_mm512_mul_ps(hi, id))));
  }
}

TEMPRA_AVX2 void quantize_row_q8_0_avx2(const float* x, void* out, int64_t k) {
  auto* y = static_cast<BlockQ8_0*>(out);
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    __m256 v[4], amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(x + 8 * i);
      amax = _mm256_max_ps(amax, _mm256_and_ps(v[i], magnitude));
    }
    const float d = hmax(amax) / 127;
    const __m256 id = _mm256_set1_ps(inverse(d));
    y[b].d = to_f16(d);
    for (int i = 0; i < 4; ++i) store_bytes(round_away(_mm256_mul_ps(v[i], id)), y[b].qs + 8 * i);
  }
}

TEMPRA_AVX512 void quantize_row_q8_k_avx512(const float* x, void* out, int64_t k) {
  auto* y = static_cast<BlockQ8_K*>(out);
  for (int64_t b = 0; b < k / kSuperBlock; ++b, x += kSuperBlock) {
    __m512 amax_v = _mm512_setzero_ps();
    for (int g = 0; g < kSuperBlock / 16; ++g)
      amax_v = _mm512_max_ps(amax_v, _mm512_abs_ps(_mm512_loadu_ps(x + 16 * g)));
    const float amax = _mm512_reduce_max_ps(amax_v);
    if (amax == 0) {  // an all-zero block: zero scale, quants and sums
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    const float iscale = -127.0f / first_with_magnitude(x, amax);
    const __m512 scale = _mm512_set1_ps(iscale);
    for (int g = 0; g < kSuperBlock / 16; ++g) {
      const __m512i q = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(scale, _mm512_loadu_ps(x + 16 * g))),
                                         _mm512_set1_epi32(127));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16 * g), _mm512_cvtepi32_epi8(q));
      y[b].bsums[g] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    y[b].d = 1 / iscale;
  }
}

TEMPRA_AVX2 void quantize_row_q8_k_avx2(const float* x, void* out, int64_t k) {
  auto* y = static_cast<BlockQ8_K*>(out);
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (int64_t b = 0; b < k / kSuperBlock; ++b, x += kSuperBlock) {
    __m256 amax_v = _mm256_setzero_ps();
    for (int g = 0; g < kSuperBlock / 8; ++g)
      amax_v = _mm256_max_ps(amax_v, _mm256_and_ps(_mm256_loadu_ps(x + 8 * g), magnitude));
    const float amax = hmax(amax_v);
    if (amax == 0) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    const float iscale = -127.0f / first_with_magnitude(x, amax);
    const __m256 scale = _mm256_set1_ps(iscale);
    for (int g = 0; g < kSuperBlock / 16; ++g) {
      const __m256i q0 = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(scale, _mm256_loadu_ps(x + 16 * g))),
                                          _mm256_set1_epi32(127));
      const __m256i q1 = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(scale, _mm256_loadu_ps(x + 16 * g + 8))),
                                          _mm256_set1_epi32(127));
      store_bytes(q0, y[b].qs + 16 * g);
      store_bytes(q1, y[b].qs + 16 * g + 8);
      y[b].bsums[g] = static_cast<int16_t>(hsum(_mm256_add_epi32(q0, q1)));
    }
    y[b].d = 1 / iscale;
  }
}

}  // namespace tempra::native
