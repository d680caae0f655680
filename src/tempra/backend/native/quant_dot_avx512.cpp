// tempra/backend/native/quant_dot_avx512.cpp: AVX-512 VNNI arms of the hot quantized dots.
//
// Each arm computes the same per-block integer sums as the scalar kernel with vpdpbusd
// (unsigned x signed bytes, summed in groups of four into int32 lanes), then adds the float
// terms block by block in exactly the scalar order, so the result is bit-identical to the scalar
// arm (tests/backend/quant_dot_test.cpp), not merely close. vpdpbusd needs an unsigned operand:
// Q4_0's codes are unsigned 0..15, and sum((c - 8) * a) = sum(c * a) - 8 * sum(a); Q8_0 x Q8_0
// offsets the weight the same way, sum(w * a) = sum((w + 128) * a) - 128 * sum(a).
//
// The K-quant arms (Q4_K, Q5_K, Q6_K) must reproduce the scalar kernel's eight per-lane integer
// sums (lane = element index mod 8; see scalar/quant_dot.cpp). vpdpbusd's groups of four
// adjacent bytes span four lanes, so these arms use vpmaddubsw on bytes reordered within each
// 16-byte lane so that the pairs it adds are elements e and e + 8 (one lane): int16 word l of
// each 128-bit lane is then lane l's partial sum. Two such vectors A and B (different
// sub-blocks) are interleaved word by word and vpmaddwd multiplies them by their sub-block
// scales (sA, sB) and adds the pair, giving int32 lane sums without mixing lanes. TQ2_0 has one
// integer sum per super-block and uses vpdpbusd directly, as IQ4_NL and IQ4_XS do per block of
// 32 (their grid values looked up + 128 by vpshufb).
//
// The translation unit is compiled without VNNI (see cmake/int8_dot_probe.cpp); these functions
// opt in with a target attribute and are only called after a CPUID check.
#include <immintrin.h>

#include <span>

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
using x86::mins_dot_bsums;
using x86::unpack_scales_mins_k4;

#define TEMPRA_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c")))

// f16 -> f32 by vcvtph2ps: exact, and what tempra/core/half.h's to_f32 returns bit for bit;
// the software conversion was a third of the Q8_0 arm's time.
TEMPRA_VNNI inline float f16c_to_f32(f16_t h) { return _cvtsh_ss(h.bits); }

// sum_j w[j] * a[j] over 32 signed bytes each, as sum_j (w[j] + 128) a[j] - 128 sum_j a[j]: the
// weight offset to unsigned. (Moving w's sign onto a instead, |w| * sign(w) a as ggml's AVX2
// kernels do, is ~4% faster but wraps for a = -128 with w < 0: ggml's Q8_0 encoder never writes
// -128, the dot's contract takes any row; tests/backend/quant_dot_test.cpp feeds it one.)
TEMPRA_VNNI inline int dot_i8x32(const int8_t* w, const int8_t* a) {
  const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
  const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  const __m256i w_offset = _mm256_xor_si256(wv, _mm256_set1_epi8(static_cast<char>(0x80)));  // w + 128
  const __m256i offset_dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w_offset, av);
  const __m256i a_sum = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), av);
  return hsum(_mm256_sub_epi32(offset_dot, _mm256_slli_epi32(a_sum, 7)));
}

TEMPRA_VNNI float dot_q8_0(int64_t n, const void* w, const void* a) {
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

TEMPRA_VNNI float dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  const __m128i low_mask = _mm_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi8(1);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    // Codes 0..15: low nibbles are elements 0..15, high nibbles 16..31.
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs));
    const __m256i codes =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low_mask), _mm_and_si128(packed, low_mask));
    const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs));
    const int code_dot = hsum(_mm256_dpbusd_epi32(_mm256_setzero_si256(), codes, av));
    const int a_sum = hsum(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, av));
    const int s = code_dot - 8 * a_sum;
    sum += static_cast<float>(s) * f16c_to_f32(x[b].d) * f16c_to_f32(y[b].d);
  }
  return sum;
}

// ---- IQ4_NL, IQ4_XS ----

// One block of 32 IQ4 codes against 32 activations: sum(v a) over the grid values v, as
// sum((v + 128) a) - 128 sum(a) with the values looked up + 128 (unsigned for vpdpbusd), exact
// for any activation bytes.
TEMPRA_VNNI inline int iq4_block_sum(const uint8_t* qs, const int8_t* a) {
  const __m256i table = _mm256_broadcastsi128_si256(x86::iq4_values_128(true));
  const __m256i values = _mm256_shuffle_epi8(table, x86::nibbles(qs));
  const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  const __m256i offset_dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), values, av);
  const __m256i a_sum = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), av);
  return hsum(_mm256_sub_epi32(offset_dot, _mm256_slli_epi32(a_sum, 7)));
}

TEMPRA_VNNI float dot_iq4_nl(int64_t n, const void* w, const void* a) {
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

TEMPRA_VNNI float dot_iq4_xs(int64_t n, const void* w, const void* a) {
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

// ---- K-quants ----

// Lane-crossing helpers in their full-mask forms: the plain intrinsics seed their pass-through
// operand with _mm512_undefined_epi32(), which g++ 12 flags as uninitialized (GCC PR 105593;
// its _mm512_castsi512_si256 is such an extract too); with an all-ones mask the instruction is
// the same.
TEMPRA_VNNI inline __m512i broadcast_128(__m128i v) {
  return _mm512_maskz_broadcast_i32x4(0xFFFF, v);
}
TEMPRA_VNNI inline __m512i broadcast_256(__m256i v) {
  return _mm512_maskz_broadcast_i64x4(0xFF, v);
}
TEMPRA_VNNI inline __m512i concat_256(__m256i low, __m256i high) {
  return _mm512_maskz_inserti64x4(0xFF, _mm512_castsi256_si512(low), high, 1);
}
TEMPRA_VNNI inline __m256i lower_256(__m512i v) {
  return _mm512_maskz_extracti64x4_epi64(0xFF, v, 0);
}
TEMPRA_VNNI inline __m256i upper_256(__m512i v) {
  return _mm512_maskz_extracti64x4_epi64(0xFF, v, 1);
}
TEMPRA_VNNI inline __m512i permute_int32(__m512i index, __m512i v) {
  return _mm512_maskz_permutexvar_epi32(0xFFFF, index, v);
}

// Reorders each 16-byte lane (elements 16 k .. 16 k + 15) to e0 e8 e1 e9 ... e7 e15, so that
// vpmaddubsw's adjacent pairs share a lane (index mod 8).
TEMPRA_VNNI inline __m512i lane_pairs_order(__m512i v) {
  return _mm512_shuffle_epi8(v, broadcast_128(x86::lane_pairs_order_128()));
}

// Word l of each 128-bit lane: codes[l] * q8[l] + codes[l + 8] * q8[l + 8] for that lane's 16
// elements, codes unsigned. No saturation: |pair| <= 2 * 63 * 128 < 2^15 for codes below 64.
TEMPRA_VNNI inline __m512i lane_pair_sums(__m512i codes, __m512i q8) {
  return _mm512_maddubs_epi16(lane_pairs_order(codes), lane_pairs_order(q8));
}

// The eight int32 lane sums of one super-block, accumulated from pairs of vectors of lane pair
// sums (A, B) with their per-128-bit-lane scales (one int32 per lane: sA | sB << 16). int32 i of
// `low` holds part of lane i % 4, of `high` part of lane 4 + i % 4. (Free functions, not a
// class with vector members: its implicit constructor would lack the target attribute.)
TEMPRA_VNNI inline void add_lane_pairs(__m512i& low, __m512i& high, __m512i a, __m512i b, __m512i scale_pairs) {
  low = _mm512_add_epi32(low, _mm512_madd_epi16(_mm512_unpacklo_epi16(a, b), scale_pairs));
  high = _mm512_add_epi32(high, _mm512_madd_epi16(_mm512_unpackhi_epi16(a, b), scale_pairs));
}
TEMPRA_VNNI inline void store_lanes(__m512i low, __m512i high, int32_t* lanes) {
  const __m256i low2 = _mm256_add_epi32(lower_256(low), upper_256(low));
  const __m256i high2 = _mm256_add_epi32(lower_256(high), upper_256(high));
  const __m128i low1 = _mm_add_epi32(_mm256_castsi256_si128(low2), _mm256_extracti128_si256(low2, 1));
  const __m128i high1 = _mm_add_epi32(_mm256_castsi256_si128(high2), _mm256_extracti128_si256(high2, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), low1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes + 4), high1);
}

// 64 activations: the 32 at p in the low half, the 32 at p + 64 in the high half.
TEMPRA_VNNI inline __m512i load_32_and_32(const int8_t* p) {
  return concat_256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64)));
}

// One int32 per 128-bit lane: lanes 0 and 1 get pairs[first], lanes 2 and 3 pairs[first + 1].
TEMPRA_VNNI inline __m512i spread_pairs_by_halves(__m128i pairs, int first) {
  const __m512i index = _mm512_setr_epi32(first, first, first, first, first, first, first, first, first + 1, first + 1,
                                          first + 1, first + 1, first + 1, first + 1, first + 1, first + 1);
  return permute_int32(index, _mm512_castsi128_si512(pairs));
}

// Q4_K and Q5_K: sub-block s is 32 elements with scale s; qs[32 (s / 2) + l] holds element l
// in its low nibble (s even) or high nibble (s odd); Q5_K adds bit s of qh[l] as the fifth bit.
template <bool kFifthBit, class Block>
TEMPRA_VNNI float dot_q45_k(int64_t n, const Block* x, const BlockQ8_K* y) {
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  detail::KQuantLaneSums acc;  // the scalar arm's float accumulation
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    // Eight int16 each; the scales' words (scale_0, scale_1), (scale_2, scale_3), ... are the
    // (A, B) scale pairs below.
    __m128i scale_pairs, mins;
    unpack_scales_mins_k4(x[b].scales, scale_pairs, mins);
    const int min_sum = mins_dot_bsums(mins, y[b].bsums);
    __m512i fifth_bits = _mm512_setzero_si512();
    if constexpr (kFifthBit) fifth_bits = broadcast_256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qh)));
    __m512i lanes_low = _mm512_setzero_si512(), lanes_high = _mm512_setzero_si512();
    for (int chunk = 0; chunk < 2; ++chunk) {
      // 64 bytes: sub-blocks 4c, 4c + 1 (bytes 0..31) and 4c + 2, 4c + 3 (bytes 32..63).
      const __m512i packed = _mm512_loadu_si512(x[b].qs + 64 * chunk);
      __m512i even = _mm512_and_si512(packed, nibble);                       // sub-blocks 4c, 4c + 2
      __m512i odd = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);  // sub-blocks 4c + 1, 4c + 3
      if constexpr (kFifthBit) {
        const int s = 4 * chunk;
        const __m512i even_bit =
            concat_256(_mm256_set1_epi8(static_cast<char>(1 << s)), _mm256_set1_epi8(static_cast<char>(1 << (s + 2))));
        const __m512i odd_bit = concat_256(_mm256_set1_epi8(static_cast<char>(1 << (s + 1))),
                                           _mm256_set1_epi8(static_cast<char>(1 << (s + 3))));
        const __m512i sixteen = _mm512_set1_epi8(16);
        even = _mm512_or_si512(even, _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(fifth_bits, even_bit), sixteen));
        odd = _mm512_or_si512(odd, _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(fifth_bits, odd_bit), sixteen));
      }
      const int8_t* q8 = y[b].qs + 128 * chunk;
      const __m512i a = lane_pair_sums(even, load_32_and_32(q8));
      const __m512i b_sums = lane_pair_sums(odd, load_32_and_32(q8 + 32));
      add_lane_pairs(lanes_low, lanes_high, a, b_sums, spread_pairs_by_halves(scale_pairs, 2 * chunk));
    }
    alignas(16) int32_t lane_sums[8];
    store_lanes(lanes_low, lanes_high, lane_sums);
    acc.add_super_block(f16c_to_f32(x[b].d) * y[b].d, lane_sums);
    acc.total -= f16c_to_f32(x[b].dmin) * y[b].d * static_cast<float>(min_sum);
  }
  return acc.finish();
}

TEMPRA_VNNI float dot_q4_k(int64_t n, const void* w, const void* a) {
  return dot_q45_k<false>(n, static_cast<const BlockQ4_K*>(w), static_cast<const BlockQ8_K*>(a));
}
TEMPRA_VNNI float dot_q5_k(int64_t n, const void* w, const void* a) {
  return dot_q45_k<true>(n, static_cast<const BlockQ5_K*>(w), static_cast<const BlockQ8_K*>(a));
}

// Q6_K: element 128 h + 32 p + l has low bits in ql[64 h + l + 32 (p % 2)] (low nibble for
// p < 2, high for p >= 2) and high bits (qh[32 h + l] >> 2 p) & 3; code = that - 32, with a
// signed scale per 16 elements. vpmaddubsw needs unsigned codes: it runs on code + 32 and
// subtracts 32 * q8 pairwise, exact in int16 (|pair| <= 2 * 32 * 128).
TEMPRA_VNNI float dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m512i nibble = _mm512_set1_epi8(0x0F), two_bits = _mm512_set1_epi8(0x03);
  const __m512i thirty_two = _mm512_set1_epi8(32);
  // qh shifts per 256-bit half: planes 0 and 1 for the low nibbles (then 2 and 3 for the high).
  const __m512i qh_shift = concat_256(_mm256_setzero_si256(), _mm256_set1_epi16(2));
  // Lane k of the 512-bit vectors takes the (A, B) scale pair k of the half.
  const __m512i lane_of = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  detail::KQuantLaneSums acc;  // the scalar arm's float accumulation
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    __m512i lanes_low = _mm512_setzero_si512(), lanes_high = _mm512_setzero_si512();
    for (int half = 0; half < 2; ++half) {
      const __m512i low_bits = _mm512_loadu_si512(x[b].ql + 64 * half);
      const __m512i high_bits =
          broadcast_256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qh + 32 * half)));
      const __m512i high_low = _mm512_and_si512(_mm512_srlv_epi16(high_bits, qh_shift), two_bits);  // planes 0, 1
      const __m512i high_high = _mm512_and_si512(
          _mm512_srlv_epi16(high_bits, _mm512_add_epi16(qh_shift, _mm512_set1_epi16(4))), two_bits);  // planes 2, 3
      // Elements 128 h + 0..63 and 128 h + 64..127, in order, as codes + 32.
      const __m512i first = _mm512_or_si512(_mm512_and_si512(low_bits, nibble), _mm512_slli_epi16(high_low, 4));
      const __m512i second =
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(low_bits, 4), nibble), _mm512_slli_epi16(high_high, 4));
      const __m512i q8_first = _mm512_loadu_si512(y[b].qs + 128 * half);
      const __m512i q8_second = _mm512_loadu_si512(y[b].qs + 128 * half + 64);
      const __m512i a_sums = _mm512_sub_epi16(lane_pair_sums(first, q8_first), lane_pair_sums(thirty_two, q8_first));
      const __m512i b_sums = _mm512_sub_epi16(lane_pair_sums(second, q8_second), lane_pair_sums(thirty_two, q8_second));
      // 128-bit lane k covers sub-block 8 h + k in `first` and 8 h + 4 + k in `second`.
      const __m128i s = _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x[b].scales + 8 * half)));
      const __m128i pairs = _mm_unpacklo_epi16(s, _mm_srli_si128(s, 8));
      add_lane_pairs(lanes_low, lanes_high, a_sums, b_sums, permute_int32(lane_of, _mm512_castsi128_si512(pairs)));
    }
    alignas(16) int32_t lane_sums[8];
    store_lanes(lanes_low, lanes_high, lane_sums);
    acc.add_super_block(f16c_to_f32(x[b].d) * y[b].d, lane_sums);
  }
  return acc.finish();
}

// ---- Ternary ----

// TQ2_0: byte m of 32-byte group g holds elements 128 g + 32 p + m in bits 2p, 2p + 1 (code c,
// value c - 1); sum((c - 1) * a) = sum(c * a) - sum(a), one integer sum per super-block as in
// the scalar arm.
TEMPRA_VNNI inline int hsum512(__m512i v) {
  return hsum(_mm256_add_epi32(lower_256(v), upper_256(v)));
}

TEMPRA_VNNI float dot_tq2_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockTQ2_0*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m512i two_bits = _mm512_set1_epi8(3), ones = _mm512_set1_epi8(1);
  float sum = 0;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    const __m512i packed = _mm512_loadu_si512(x[b].qs);  // groups 0 and 1
    __m512i code_dot = _mm512_setzero_si512(), a_sum = _mm512_setzero_si512();
    for (int plane = 0; plane < 4; ++plane) {
      const __m512i codes = _mm512_and_si512(_mm512_srli_epi16(packed, 2 * plane), two_bits);
      const int8_t* q8_plane = y[b].qs + 32 * plane;  // elements 32 p .. and 128 + 32 p ..
      const __m512i q8 = concat_256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8_plane)),
                                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8_plane + 128)));
      code_dot = _mm512_dpbusd_epi32(code_dot, codes, q8);
      a_sum = _mm512_dpbusd_epi32(a_sum, ones, q8);
    }
    const int s = hsum512(code_dot) - hsum512(a_sum);
    sum += static_cast<float>(s) * (y[b].d * f16c_to_f32(x[b].d));
  }
  return sum;
}

bool cpu_has_vnni() {
  __builtin_cpu_init();
  // AVX2 and FMA too: the x86 helpers this arm inlines (quant_dot_x86.h) are AVX2's.
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && x86::cpu_has_f16c();
}

}  // namespace

// quantize_rows_x86.cpp: the partners' encoders.
void quantize_row_q8_0_avx512(const float* x, void* out, int64_t k);
void quantize_row_q8_k_avx512(const float* x, void* out, int64_t k);
// quant_gemm_avx512.cpp: sets the integer GEMMs and the Q8_0/Q4_0 GEMVs of the dots above.
void add_vnni_gemms(HotFormatDots& dots);
// quant_gemv_k_avx512.cpp: the K-quants' decode GEMVs.
void add_vnni_k_gemvs(HotFormatDots& dots);

// This arm's dots, or none when the CPU lacks AVX-512 VNNI (scalar/quant_dot.cpp lists the arms).
std::span<const QuantDot> quant_dots_avx512() {
  static const bool available = cpu_has_vnni();
  if (!available) return {};
  static const auto table = [] {
    HotFormatDots dots{.q8_0 = &dot_q8_0,
                       .q4_0 = &dot_q4_0,
                       .q4_k = &dot_q4_k,
                       .q5_k = &dot_q5_k,
                       .q6_k = &dot_q6_k,
                       .tq2_0 = &dot_tq2_0,
                       .iq4_nl = &dot_iq4_nl,
                       .iq4_xs = &dot_iq4_xs,
                       .q8_0_rows = &quantize_row_q8_0_avx512,
                       .q8_k_rows = &quantize_row_q8_k_avx512};
    add_vnni_gemms(dots);
    add_vnni_k_gemvs(dots);
    return hot_format_dots(dots);
  }();
  return table;
}

}  // namespace tempra::native
