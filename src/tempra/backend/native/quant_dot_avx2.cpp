// tempra/backend/native/quant_dot_avx2.cpp: AVX2 arms of the hot quantized dots.
//
// As the AVX-512 VNNI arms (quant_dot_avx512.cpp): each computes the scalar kernel's integer
// sums exactly, then adds the float terms block by block in exactly the scalar order, so the
// result is bit-identical to the scalar arm for any block bytes (tests/backend/
// quant_dot_native_test.cpp, quant_dot_test.cpp), not merely close. The products come from
// vpmaddubsw (unsigned x signed bytes, adjacent pairs added into int16 with saturation) and
// vpmaddwd (int16 x int16, pairs added into int32, exact for any operands but -2^15 * -2^15
// twice). Every vpmaddubsw below is kept away from saturation by its operands' ranges:
//
// - Q8_0 x Q8_0: both operands take any int8, including -128; vpmaddubsw cannot hold them (with
//   an offset weight, (w + 128) * a pairs reach 2 * 255 * 128; with ggml's |w| * sign(w) a, a
//   = -128 wraps). Both are sign-extended to int16 instead and vpmaddwd multiplies them: pairs
//   of at most 2 * 128 * 128 = 2^15, exact in int32.
// - Q4_0: codes 0..15, so sum((c - 8) a) = sum(c a) - 8 sum(a) is taken pairwise in int16:
//   vpmaddubsw(c, a) - vpmaddubsw(8, a), each pair within 2 * 15 * 128, the difference within
//   2 * 8 * 128; vpmaddwd by ones widens it to int32.
// - Q4_K, Q5_K, Q6_K: the scalar kernel's eight per-lane integer sums (lane = element index
//   mod 8; see scalar/k_quant_lanes.h), by the AVX-512 arms' method: bytes reordered within each
//   16-byte lane so that vpmaddubsw's pairs are elements e and e + 8 (one lane; codes below 64,
//   pairs within 2 * 63 * 128), two such vectors A and B of different sub-blocks interleaved word
//   by word, and vpmaddwd by their sub-block scales (sA, sB) gives int32 lane sums. Q6_K's signed
//   codes run as code + 32 and subtract vpmaddubsw(32, q8).
// - TQ2_0: codes 0..3 (value c - 1), one integer sum per super-block: vpmaddubsw(c, a) -
//   vpmaddubsw(1, a), summed over the eight 32-byte planes in int16 (within 8 * 2 * 2 * 128).
// - IQ4_NL, IQ4_XS: grid values -127..113 (vpshufb of the codes) against any int8: as Q8_0,
//   sign-extended to int16 and vpmaddwd, one exact sum per block of 32.
//
// The K-quants' decode GEMVs are quant_gemv_k_avx2.cpp's.
//
// The translation unit may be compiled for a baseline x86-64; these functions opt in to AVX2
// with a target attribute and are only called after a CPUID check.
#include <immintrin.h>

#include <algorithm>
#include <span>
#include <type_traits>

#include "tempra/backend/native/quant_dot_x86.h"
#include "tempra/backend/native/prefetch.h"
#include "tempra/backend/quant_dot.h"
#include "tempra/backend/scalar/k_quant_lanes.h"
#include "tempra/quant/blocks.h"
#include "tempra/quant/formats.h"

namespace tempra::native {
namespace {

using namespace tempra::quant;
using x86::hsum;
using x86::load256;
using x86::mins_dot_bsums;
using x86::unpack_scales_mins_k4;

#define TEMPRA_AVX2 __attribute__((target("avx2,fma,f16c")))

// f16 -> f32 by vcvtph2ps: exact, and what tempra/core/half.h's to_f32 returns bit for bit (NaNs
// included, quieted alike); cheaper than its bit manipulation in the 32-element formats' loops.
TEMPRA_AVX2 inline float f16c_to_f32(f16_t h) { return _cvtsh_ss(h.bits); }


// sum_j w[j] * a[j] over 32 signed bytes each, any values: sign-extended, vpmaddwd, exact.
TEMPRA_AVX2 inline int dot_i8x32(const int8_t* w, const int8_t* a) {
  const __m128i* w128 = reinterpret_cast<const __m128i*>(w);
  const __m128i* a128 = reinterpret_cast<const __m128i*>(a);
  const __m256i low = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(w128)),
                                        _mm256_cvtepi8_epi16(_mm_loadu_si128(a128)));
  const __m256i high = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(w128 + 1)),
                                         _mm256_cvtepi8_epi16(_mm_loadu_si128(a128 + 1)));
  return hsum(_mm256_add_epi32(low, high));
}

TEMPRA_AVX2 float dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    const int s = dot_i8x32(x[b].qs, y[b].qs);
    sum += static_cast<float>(s) * (f16c_to_f32(x[b].d) * f16c_to_f32(y[b].d));
  }
  return sum;
}

TEMPRA_AVX2 float dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  const __m128i low_mask = _mm_set1_epi8(0x0F);
  const __m256i eight = _mm256_set1_epi8(8);
  const __m256i ones16 = _mm256_set1_epi16(1);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    // Codes 0..15: low nibbles are elements 0..15, high nibbles 16..31.
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs));
    const __m256i codes =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low_mask), _mm_and_si128(packed, low_mask));
    const __m256i av = load256(y[b].qs);
    const __m256i pairs = _mm256_sub_epi16(_mm256_maddubs_epi16(codes, av), _mm256_maddubs_epi16(eight, av));
    const int s = hsum(_mm256_madd_epi16(pairs, ones16));
    sum += static_cast<float>(s) * f16c_to_f32(x[b].d) * f16c_to_f32(y[b].d);
  }
  return sum;
}

// ---- K-quants ----

// Word l of each 128-bit lane: codes[l] * q8[l] + codes[l + 8] * q8[l + 8] for that lane's 16
// elements, codes unsigned below 64 (no saturation: |pair| <= 2 * 63 * 128 < 2^15).
TEMPRA_AVX2 inline __m256i lane_pair_sums(__m256i codes, __m256i q8) {
  const __m256i order = _mm256_broadcastsi128_si256(x86::lane_pairs_order_128());
  return _mm256_maddubs_epi16(_mm256_shuffle_epi8(codes, order), _mm256_shuffle_epi8(q8, order));
}

// Adds scale_pairs-weighted (A, B) lane pair sums: int32 i of `low` gets lane i % 4, of `high`
// lane 4 + i % 4; scale_pairs holds sA | sB << 16 per int32 (each 128-bit lane its own).
TEMPRA_AVX2 inline void add_lane_pairs(__m256i& low, __m256i& high, __m256i a, __m256i b, __m256i scale_pairs) {
  low = _mm256_add_epi32(low, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), scale_pairs));
  high = _mm256_add_epi32(high, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), scale_pairs));
}

// int32 `first` of `pairs` in the low 128-bit lane, int32 `second` in the high one.
TEMPRA_AVX2 inline __m256i spread_pairs(__m128i pairs, int first, int second) {
  const __m256i index = _mm256_setr_epi32(first, first, first, first, second, second, second, second);
  return _mm256_permutevar8x32_epi32(_mm256_broadcastsi128_si256(pairs), index);
}

// Q4_K and Q5_K: sub-block s is 32 elements with scale s; qs[32 (s / 2) + l] holds element l
// in its low nibble (s even) or high nibble (s odd); Q5_K adds bit s of qh[l] as the fifth bit.
// One super-block's eight lane sums (int32 l = lane l) and its mins term.
template <bool kFifthBit, class Block>
TEMPRA_AVX2 inline __m256i q45_k_lanes(const Block& x, const BlockQ8_K& y, int& min_sum) {
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i sixteen = _mm256_set1_epi8(16);
  // Eight int16 each; int32 j of scale_pairs is (scale_2j, scale_2j+1), the (A, B) pair below.
  __m128i scale_pairs, mins;
  unpack_scales_mins_k4(x.scales, scale_pairs, mins);
  min_sum = mins_dot_bsums(mins, y.bsums);
  const __m256i scales_both = _mm256_broadcastsi128_si256(scale_pairs);
  __m256i fifth_bits = _mm256_setzero_si256();
  if constexpr (kFifthBit) fifth_bits = load256(x.qh);
  __m256i lanes_low = _mm256_setzero_si256(), lanes_high = _mm256_setzero_si256();
  for (int j = 0; j < 4; ++j) {
    // 32 bytes: sub-block 2j in the low nibbles, 2j + 1 in the high ones.
    const __m256i packed = load256(x.qs + 32 * j);
    __m256i even = _mm256_and_si256(packed, nibble);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
    if constexpr (kFifthBit) {
      const __m256i even_bit = _mm256_set1_epi8(static_cast<char>(1 << (2 * j)));
      const __m256i odd_bit = _mm256_set1_epi8(static_cast<char>(1 << (2 * j + 1)));
      even = _mm256_or_si256(
          even, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(fifth_bits, even_bit), even_bit), sixteen));
      odd = _mm256_or_si256(
          odd, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(fifth_bits, odd_bit), odd_bit), sixteen));
    }
    const int8_t* q8 = y.qs + 64 * j;
    const __m256i a_sums = lane_pair_sums(even, load256(q8));
    const __m256i b_sums = lane_pair_sums(odd, load256(q8 + 32));
    const __m256i pair = _mm256_permutevar8x32_epi32(scales_both, _mm256_set1_epi32(j));
    add_lane_pairs(lanes_low, lanes_high, a_sums, b_sums, pair);
  }
  return x86::add_halves(lanes_low, lanes_high);
}

// Q6_K: element 128 h + 32 p + l has low bits in ql[64 h + l + 32 (p % 2)] (low nibble for
// p < 2, high for p >= 2) and high bits (qh[32 h + l] >> 2 p) & 3; code = that - 32, with a
// signed scale per 16 elements (so 128-bit lane k of plane p's vector has scale 8 h + 2 p + k).
// One super-block's eight lane sums (int32 l = lane l); min_sum is left alone (Q6_K has none).
TEMPRA_AVX2 inline __m256i q6_k_lanes(const BlockQ6_K& x, const BlockQ8_K& y, int& /*min_sum*/) {
  const __m256i nibble = _mm256_set1_epi8(0x0F), two_bits = _mm256_set1_epi8(0x03);
  const __m256i thirty_two = _mm256_set1_epi8(32);
  __m256i lanes_low = _mm256_setzero_si256(), lanes_high = _mm256_setzero_si256();
  for (int h = 0; h < 2; ++h) {
    const __m256i ql0 = load256(x.ql + 64 * h), ql1 = load256(x.ql + 64 * h + 32);
    const __m256i qh = load256(x.qh + 32 * h);
    // Planes 0..3 as codes + 32 (0..63).
    __m256i plane[4];
    plane[0] = _mm256_or_si256(_mm256_and_si256(ql0, nibble), _mm256_slli_epi16(_mm256_and_si256(qh, two_bits), 4));
    plane[1] = _mm256_or_si256(_mm256_and_si256(ql1, nibble),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), two_bits), 4));
    plane[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), nibble),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), two_bits), 4));
    plane[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), nibble),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), two_bits), 4));
    __m256i sums[4];
    for (int p = 0; p < 4; ++p) {
      const __m256i q8 = load256(y.qs + 128 * h + 32 * p);
      sums[p] = _mm256_sub_epi16(lane_pair_sums(plane[p], q8), lane_pair_sums(thirty_two, q8));
    }
    // Scales s0..s7 of this half as int16; int32s (s0, s2), (s1, s3) pair planes 0 and 1,
    // (s4, s6), (s5, s7) planes 2 and 3.
    const __m128i s = _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x.scales + 8 * h)));
    const __m128i shifted = _mm_srli_si128(s, 4);
    add_lane_pairs(lanes_low, lanes_high, sums[0], sums[1], spread_pairs(_mm_unpacklo_epi16(s, shifted), 0, 1));
    add_lane_pairs(lanes_low, lanes_high, sums[2], sums[3], spread_pairs(_mm_unpackhi_epi16(s, shifted), 0, 1));
  }
  return x86::add_halves(lanes_low, lanes_high);
}

// The K-quants' super-block lane functions, by weight block type.
template <class Block>
TEMPRA_AVX2 inline __m256i k_lanes(const Block& x, const BlockQ8_K& y, int& min_sum) {
  if constexpr (std::is_same_v<Block, BlockQ6_K>)
    return q6_k_lanes(x, y, min_sum);
  else
    return q45_k_lanes<std::is_same_v<Block, BlockQ5_K>>(x, y, min_sum);
}

template <class Block>
TEMPRA_AVX2 float dot_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  detail::KQuantLaneSums acc;  // the scalar arm's float accumulation
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    int min_sum = 0;
    alignas(32) int32_t lane_sums[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lane_sums), k_lanes(x[b], y[b], min_sum));
    acc.add_super_block(to_f32(x[b].d) * y[b].d, lane_sums);
    if constexpr (!std::is_same_v<Block, BlockQ6_K>) acc.total -= to_f32(x[b].dmin) * y[b].d * static_cast<float>(min_sum);
  }
  return acc.finish();
}

// ---- IQ4_NL, IQ4_XS ----

// One block of 32 IQ4 codes against 32 activations, exact for any activation bytes: the grid
// values (-127..113) looked up by vpshufb, both operands sign-extended to int16, vpmaddwd.
TEMPRA_AVX2 inline int iq4_block_sum(const uint8_t* qs, const int8_t* a) {
  const __m256i values = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(x86::iq4_values_128(false)), x86::nibbles(qs));
  const __m256i av = load256(a);
  const __m256i low = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(values)),
                                        _mm256_cvtepi8_epi16(_mm256_castsi256_si128(av)));
  const __m256i high = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(values, 1)),
                                         _mm256_cvtepi8_epi16(_mm256_extracti128_si256(av, 1)));
  return hsum(_mm256_add_epi32(low, high));
}

TEMPRA_AVX2 float dot_iq4_nl(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_NL*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    const float d = f16c_to_f32(y[b].d) * f16c_to_f32(x[b].d);
    sum += d * static_cast<float>(iq4_block_sum(x[b].qs, y[b].qs));
  }
  return sum;
}

TEMPRA_AVX2 float dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_XS*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    const float d = f16c_to_f32(x[b].d) * y[b].d;
    for (int s = 0; s < kSuperBlock / kBlock32; ++s) {
      const float sub_d = d * static_cast<float>(iq4_xs_scale(x[b], s));
      sum += sub_d * static_cast<float>(iq4_block_sum(x[b].qs + 16 * s, y[b].qs + kBlock32 * s));
    }
  }
  return sum;
}

// ---- Ternary ----

// TQ2_0: byte m of 32-byte group g holds elements 128 g + 32 p + m in bits 2p, 2p + 1 (code c,
// value c - 1); one integer sum per super-block as in the scalar arm.
TEMPRA_AVX2 float dot_tq2_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockTQ2_0*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i two_bits = _mm256_set1_epi8(3), ones = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  float sum = 0;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    __m256i pairs = _mm256_setzero_si256();  // int16, each within 8 * 2 * 2 * 128
    for (int g = 0; g < 2; ++g) {
      const __m256i packed = load256(x[b].qs + 32 * g);
      for (int p = 0; p < 4; ++p) {
        const __m256i codes = _mm256_and_si256(_mm256_srli_epi16(packed, 2 * p), two_bits);
        const __m256i q8 = load256(y[b].qs + 128 * g + 32 * p);
        pairs = _mm256_add_epi16(pairs, _mm256_sub_epi16(_mm256_maddubs_epi16(codes, q8), _mm256_maddubs_epi16(ones, q8)));
      }
    }
    const int s = hsum(_mm256_madd_epi16(pairs, ones16));
    sum += static_cast<float>(s) * (y[b].d * to_f32(x[b].d));
  }
  return sum;
}

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && x86::cpu_has_f16c();
}

}  // namespace

// quantize_rows_x86.cpp: the partners' encoders.
void quantize_row_q8_0_avx2(const float* x, void* out, int64_t k);
void quantize_row_q8_k_avx2(const float* x, void* out, int64_t k);
// quant_gemm_avx2.cpp: sets the integer GEMMs of the dots above.
void add_avx2_gemms(HotFormatDots& dots);
// quant_gemv_k_avx2.cpp: the K-quants' decode GEMVs.
void add_avx2_k_gemvs(HotFormatDots& dots);

// This arm's dots, or none when the CPU lacks AVX2 (scalar/quant_dot.cpp lists the arms).
std::span<const QuantDot> quant_dots_avx2() {
  static const bool available = cpu_has_avx2();
  if (!available) return {};
  static const auto table = [] {
    HotFormatDots dots{.q8_0 = &dot_q8_0,
                       .q4_0 = &dot_q4_0,
                       .q4_k = &dot_k<BlockQ4_K>,
                       .q5_k = &dot_k<BlockQ5_K>,
                       .q6_k = &dot_k<BlockQ6_K>,
                       .tq2_0 = &dot_tq2_0,
                       .iq4_nl = &dot_iq4_nl,
                       .iq4_xs = &dot_iq4_xs,
                       .q8_0_rows = &quantize_row_q8_0_avx2,
                       .q8_k_rows = &quantize_row_q8_k_avx2};
    add_avx2_gemms(dots);
    add_avx2_k_gemvs(dots);
    return hot_format_dots(dots);
  }();
  return table;
}

}  // namespace tempra::native
