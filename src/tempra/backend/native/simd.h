// tempra/backend/native/simd.h: the small f32 vector vocabulary native kernels are written in.
//
// One arm is chosen at compile time from the target's features (the flags the build passes:
// -march=native by default, explicit -mavx2 -mfma for the AVX2 build, aarch64 for NEON):
//
//   arm       lanes  selected when
//   avx512    16     __AVX512F__ (and BW/VL, which every AVX-512 CPU we target has)
//   avx2      8      __AVX2__, __FMA__ and __F16C__ (every AVX2 CPU since Haswell)
//   neon      4      __aarch64__ (NEON is mandatory there)
//
// Only that arm is compiled: kernels are written once against V, load/store/fma/... and
// reduce to plain loops. A target with none of these (a portable x86-64 build) defines no arm,
// TEMPRA_SIMD_ARM stays undefined, and the native table falls back to the scalar kernels.
//
// Every operation here is exactly rounded (IEEE add/mul/div/sqrt/fma, exact min/max, exact
// bit moves) except exp(), whose accuracy is documented at its definition. Kernels that need
// bitwise agreement with the scalar backend use only the exact ones, in the scalar order.
#pragma once

#include <cstdint>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define TEMPRA_SIMD_ARM "avx512"
#define TEMPRA_SIMD_AVX512 1
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define TEMPRA_SIMD_ARM "avx2"
#define TEMPRA_SIMD_AVX2 1
#include <immintrin.h>
#elif defined(__aarch64__)
#define TEMPRA_SIMD_ARM "neon"
#define TEMPRA_SIMD_NEON 1
#include <arm_neon.h>
#endif

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native::simd {

#if TEMPRA_SIMD_AVX512
using V = __m512;
inline constexpr int kLanes = 16;
inline V zero() { return _mm512_setzero_ps(); }
inline V set1(float x) { return _mm512_set1_ps(x); }
inline V load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, V v) { _mm512_storeu_ps(p, v); }
// The first n (< kLanes) lanes; the rest read as zero and are never written.
inline V load_partial(const float* p, int n) { return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p); }
inline void store_partial(float* p, V v, int n) { _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1), v); }
// kLanes 16-bit floats widened to f32 (exact).
inline V load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline V load_bf16(const uint16_t* p) {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}
// kLanes signed bytes widened to f32 (exact): a Q8_0 block's codes.
inline V load_i8(const int8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
// kLanes f32 narrowed to f16, round to nearest even (exactly tempra/core/half.h's rounding).
inline void store_f16(uint16_t* p, V v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline V add(V a, V b) { return _mm512_add_ps(a, b); }
inline V sub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V mul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V div(V a, V b) { return _mm512_div_ps(a, b); }
inline V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }  // a * b + c, rounded once
inline V sqrt(V a) { return _mm512_sqrt_ps(a); }
inline V abs(V a) { return _mm512_abs_ps(a); }
inline V neg(V a) { return _mm512_xor_ps(a, _mm512_set1_ps(-0.0f)); }
// max/min of a and b with b returned when either is NaN (x86's rule): callers order operands.
inline V max_raw(V a, V b) { return _mm512_max_ps(a, b); }
inline V min_raw(V a, V b) { return _mm512_min_ps(a, b); }
inline V round_nearest(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
// a * 2^n for integral n in [-126, 128].
inline V scale_pow2(V a, V n) { return _mm512_scalef_ps(a, n); }
using Mask = __mmask16;
inline Mask is_nan(V a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
inline Mask less(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
inline Mask greater(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
// |mag| with the sign bit of `sign`.
inline V copysign(V mag, V sign) {
  return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(mag), _mm512_castps_si512(sign),
                                                       _mm512_set1_epi32(0x7fffffff), 0xe4));  // mask ? mag : sign
}
inline V select(Mask m, V if_true, V if_false) { return _mm512_mask_blend_ps(m, if_false, if_true); }
// Lanes 8..15 folded onto 0..7 (a lane shuffle, not an extract: g++ 12 warns on the latter).
inline __m256 fold_halves_add(V v) { return _mm512_castps512_ps256(_mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4e))); }
inline __m256 fold_halves_max(V v) { return _mm512_castps512_ps256(_mm512_max_ps(v, _mm512_shuffle_f32x4(v, v, 0x4e))); }
inline float reduce_add(V v) {
  // A fixed tree: (lanes 0..7 + 8..15), then halves of 4, 2, 1.
  const __m256 s8 = fold_halves_add(v);
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}
// out[i] = the sum of the lanes of the i-th vector, four at once (a fixed tree per arm).
inline void reduce_add4(V a, V b, V c, V d, float* out) {
  const __m256 ab = _mm256_hadd_ps(fold_halves_add(a), fold_halves_add(b));
  const __m256 cd = _mm256_hadd_ps(fold_halves_add(c), fold_halves_add(d));
  const __m256 abcd = _mm256_hadd_ps(ab, cd);
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}
// reduce_add4's tree, for kernels that form the same sums with the lanes in other layouts: first
// lanes tree_leaf(k, 0) + tree_leaf(k, 1) for k < kLanes / 2 (here k and k + 8), then those
// kLanes / 2 sums in adjacent pairs, up to one.
inline constexpr int tree_leaf(int k, int side) { return k + 8 * side; }
inline float reduce_max(V v) {
  const __m256 s8 = fold_halves_max(v);
  __m128 s4 = _mm_max_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s4 = _mm_max_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_max_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}
// r[i] lane l becomes r[l] lane i (a 16 x 16 block): within each 128-bit quarter, two rounds of
// 4 x 4 interleaves, then the quarters exchanged in two rounds of vshuff32x4.
inline void transpose(V (&r)[kLanes]) {
  V t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // u[4g + s], quarter q: rows 4g .. 4g + 3 at column 4q + s.
  for (int g = 0; g < 4; ++g) {
    const V* tg = t + 4 * g;
    u[4 * g + 0] = _mm512_shuffle_ps(tg[0], tg[2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(tg[0], tg[2], 0xEE);
    u[4 * g + 2] = _mm512_shuffle_ps(tg[1], tg[3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(tg[1], tg[3], 0xEE);
  }
  for (int s = 0; s < 4; ++s) {
    const V even_lo = _mm512_shuffle_f32x4(u[s], u[4 + s], 0x88), odd_lo = _mm512_shuffle_f32x4(u[s], u[4 + s], 0xDD);
    const V even_hi = _mm512_shuffle_f32x4(u[8 + s], u[12 + s], 0x88),
            odd_hi = _mm512_shuffle_f32x4(u[8 + s], u[12 + s], 0xDD);
    r[s] = _mm512_shuffle_f32x4(even_lo, even_hi, 0x88);
    r[8 + s] = _mm512_shuffle_f32x4(even_lo, even_hi, 0xDD);
    r[4 + s] = _mm512_shuffle_f32x4(odd_lo, odd_hi, 0x88);
    r[12 + s] = _mm512_shuffle_f32x4(odd_lo, odd_hi, 0xDD);
  }
}

#elif TEMPRA_SIMD_AVX2
using V = __m256;
inline constexpr int kLanes = 8;
inline V zero() { return _mm256_setzero_ps(); }
inline V set1(float x) { return _mm256_set1_ps(x); }
inline V load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, V v) { _mm256_storeu_ps(p, v); }
inline __m256i lane_mask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline V load_partial(const float* p, int n) { return _mm256_maskload_ps(p, lane_mask(n)); }
inline void store_partial(float* p, V v, int n) { _mm256_maskstore_ps(p, lane_mask(n), v); }
inline V load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline V load_bf16(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
inline V load_i8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline void store_f16(uint16_t* p, V v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline V add(V a, V b) { return _mm256_add_ps(a, b); }
inline V sub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V mul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V div(V a, V b) { return _mm256_div_ps(a, b); }
inline V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V sqrt(V a) { return _mm256_sqrt_ps(a); }
inline V abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
inline V neg(V a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
inline V max_raw(V a, V b) { return _mm256_max_ps(a, b); }
inline V min_raw(V a, V b) { return _mm256_min_ps(a, b); }
inline V round_nearest(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline V scale_pow2(V a, V n) {
  // Two factors 2^(n/2) and 2^(n - n/2) so that n = 128 and n = -126 stay representable.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(ni, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const V f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
  const V f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(a, f1), f2);
}
using Mask = __m256;
inline Mask is_nan(V a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
inline Mask less(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
inline Mask greater(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
inline V copysign(V mag, V sign) {
  const V sign_bit = _mm256_set1_ps(-0.0f);
  return _mm256_or_ps(_mm256_andnot_ps(sign_bit, mag), _mm256_and_ps(sign_bit, sign));
}
inline V select(Mask m, V if_true, V if_false) { return _mm256_blendv_ps(if_false, if_true, m); }
inline float reduce_add(V v) {
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}
inline void reduce_add4(V a, V b, V c, V d, float* out) {
  const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}
// reduce_add4's tree: lanes 2k + 2k+1 first, then those sums in adjacent pairs (see avx512's).
inline constexpr int tree_leaf(int k, int side) { return 2 * k + side; }
inline float reduce_max(V v) {
  __m128 s4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s4 = _mm_max_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_max_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}
// r[i] lane l becomes r[l] lane i (an 8 x 8 block).
inline void transpose(V (&r)[kLanes]) {
  V t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int g = 0; g < 2; ++g) {
    const V* tg = t + 4 * g;
    u[4 * g + 0] = _mm256_shuffle_ps(tg[0], tg[2], 0x44);
    u[4 * g + 1] = _mm256_shuffle_ps(tg[0], tg[2], 0xEE);
    u[4 * g + 2] = _mm256_shuffle_ps(tg[1], tg[3], 0x44);
    u[4 * g + 3] = _mm256_shuffle_ps(tg[1], tg[3], 0xEE);
  }
  for (int s = 0; s < 4; ++s) {
    r[s] = _mm256_permute2f128_ps(u[s], u[4 + s], 0x20);
    r[4 + s] = _mm256_permute2f128_ps(u[s], u[4 + s], 0x31);
  }
}

#elif TEMPRA_SIMD_NEON
using V = float32x4_t;
inline constexpr int kLanes = 4;
inline V zero() { return vdupq_n_f32(0.0f); }
inline V set1(float x) { return vdupq_n_f32(x); }
inline V load(const float* p) { return vld1q_f32(p); }
inline void store(float* p, V v) { vst1q_f32(p, v); }
inline V load_partial(const float* p, int n) {
  float lanes[4] = {0, 0, 0, 0};
  for (int i = 0; i < n; ++i) lanes[i] = p[i];
  return vld1q_f32(lanes);
}
inline void store_partial(float* p, V v, int n) {
  float lanes[4];
  vst1q_f32(lanes, v);
  for (int i = 0; i < n; ++i) p[i] = lanes[i];
}
inline V load_f16(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
inline V load_bf16(const uint16_t* p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)); }
// Four bytes read one by one: vld1_s8 would read eight, past the end of the last Q8_0 block's
// codes when p is its last four.
inline V load_i8(const int8_t* p) {
  const int8x8_t bytes = vcreate_s8(uint64_t(uint32_t(p[0] & 0xFF) | uint32_t(p[1] & 0xFF) << 8 |
                                             uint32_t(p[2] & 0xFF) << 16 | uint32_t(p[3] & 0xFF) << 24));
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(bytes))));
}
inline void store_f16(uint16_t* p, V v) { vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v))); }
inline V add(V a, V b) { return vaddq_f32(a, b); }
inline V sub(V a, V b) { return vsubq_f32(a, b); }
inline V mul(V a, V b) { return vmulq_f32(a, b); }
inline V div(V a, V b) { return vdivq_f32(a, b); }
inline V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
inline V sqrt(V a) { return vsqrtq_f32(a); }
inline V abs(V a) { return vabsq_f32(a); }
inline V neg(V a) { return vnegq_f32(a); }
// NEON's fmax/fmin propagate NaN from either side; x86's return b. Match x86's rule so that
// the kernels' operand order means the same on every arm.
inline V max_raw(V a, V b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }
inline V min_raw(V a, V b) { return vbslq_f32(vcltq_f32(a, b), a, b); }
inline V round_nearest(V a) { return vrndnq_f32(a); }
inline V scale_pow2(V a, V n) {
  const int32x4_t ni = vcvtq_s32_f32(n);
  const int32x4_t half = vshrq_n_s32(ni, 1);
  const int32x4_t bias = vdupq_n_s32(127);
  const V f1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(half, bias), 23));
  const V f2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vsubq_s32(ni, half), bias), 23));
  return vmulq_f32(vmulq_f32(a, f1), f2);
}
using Mask = uint32x4_t;
inline Mask is_nan(V a) { return vmvnq_u32(vceqq_f32(a, a)); }
inline Mask less(V a, V b) { return vcltq_f32(a, b); }
inline Mask greater(V a, V b) { return vcgtq_f32(a, b); }
inline V copysign(V mag, V sign) { return vbslq_f32(vdupq_n_u32(0x7fffffff), mag, sign); }
inline V select(Mask m, V if_true, V if_false) { return vbslq_f32(m, if_true, if_false); }
inline float reduce_add(V v) {
  const float32x2_t s2 = vadd_f32(vget_low_f32(v), vget_high_f32(v));
  return vget_lane_f32(s2, 0) + vget_lane_f32(s2, 1);
}
inline void reduce_add4(V a, V b, V c, V d, float* out) { vst1q_f32(out, vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d))); }
// reduce_add4's tree: lanes 2k + 2k+1 first, then those sums in adjacent pairs (see avx512's).
inline constexpr int tree_leaf(int k, int side) { return 2 * k + side; }
inline float reduce_max(V v) { return vmaxvq_f32(v); }
// r[i] lane l becomes r[l] lane i (a 4 x 4 block).
inline void transpose(V (&r)[kLanes]) {
  const float32x4x2_t t01 = vtrnq_f32(r[0], r[1]), t23 = vtrnq_f32(r[2], r[3]);
  r[0] = vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0]));
  r[1] = vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1]));
  r[2] = vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0]));
  r[3] = vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1]));
}
#endif

// exp(x) in f32 (Cephes expf): x = n ln2 + r with |r| <= ln2 / 2, exp(r) by a degree-6
// polynomial, times 2^n. Measured against std::exp over the f32 range: within 2 ulp for normal
// results (tests/backend/native_parity_test.cpp). Overflow gives +inf, results below the
// smallest normal flush towards 0 (absolute error < 1.2e-38), NaN stays NaN.
inline V exp(V x) {
  const V clamped = min_raw(max_raw(x, set1(-104.0f)), set1(88.8f));
  const V n = round_nearest(mul(clamped, set1(1.44269504088896341f)));
  V r = fma(n, set1(-0.693359375f), clamped);  // ln2 split in two so n * ln2_hi is exact
  r = fma(n, set1(2.12194440e-4f), r);
  V p = set1(1.9875691500e-4f);
  p = fma(p, r, set1(1.3981999507e-3f));
  p = fma(p, r, set1(8.3334519073e-3f));
  p = fma(p, r, set1(4.1665795894e-2f));
  p = fma(p, r, set1(1.6666665459e-1f));
  p = fma(p, r, set1(5.0000001201e-1f));
  p = fma(p, mul(r, r), add(r, set1(1.0f)));
  V y = scale_pow2(p, min_raw(n, set1(128.0f)));
  y = select(less(x, set1(-104.0f)), zero(), y);
  return select(is_nan(x), x, y);
}

}  // namespace tempra::native::simd
#endif
