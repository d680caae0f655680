// tempra/backend/native/quant_dot_neon.cpp: NEON arms of the hot quantized dots (aarch64).
//
// As the x86 arms (quant_dot_avx512.cpp, quant_dot_avx2.cpp): each computes the scalar kernel's
// integer sums exactly, then adds the float terms block by block in exactly the scalar order,
// so the result is bit-identical to the scalar arm for any block bytes
// (tests/backend/quant_dot_native_test.cpp), not merely close.
//
// - Q8_0, Q4_0, TQ2_0 need one integer sum per block: with dotprod (__ARM_FEATURE_DOTPROD, e.g.
//   -march=armv8.2-a+dotprod) sdot sums groups of four byte products into int32 lanes, exact
//   for any int8; baseline NEON takes smull (int8 x int8 -> int16, exact: |p| <= 2^14) and
//   sadalp (adjacent int16 pairs added into int32). Q4_0's codes become c - 8 and TQ2_0's c - 1
//   as int8 first, so no offset term is needed. IQ4_NL and IQ4_XS look their grid values up
//   with tbl and take the same per-block sums of 32.
// - Q4_K, Q5_K, Q6_K must reproduce the scalar kernel's eight per-lane integer sums (lane =
//   element index mod 8; see scalar/k_quant_lanes.h). smull / smlal on eight bytes give int16
//   word k = element 8 i + k, i.e. lane k, so a sub-block's products are added word-wise
//   (Q4_K/Q5_K: 32 elements, 4 products per word, |sum| <= 4 * 31 * 128; Q6_K: 16 elements,
//   2 per word, <= 2 * 32 * 128, both below 2^15) and smlal by the sub-block scale widens them
//   into the int32 lane sums. This path is used with and without dotprod: sdot's groups of four
//   adjacent bytes span four lanes, so it would first need both operands reordered (a
//   two-register tbl each per 32 elements), and Q6_K's 16-element sub-blocks hold only two
//   elements of a lane.
//
// Compiled with -ffp-contract=off (aarch64 g++ fuses multiply-adds by default).
#include <arm_neon.h>

#include <span>

#include "tempra/backend/native/prefetch.h"
#include "tempra/backend/quant_dot.h"
#include "tempra/backend/scalar/k_quant_lanes.h"
#include "tempra/quant/blocks.h"
#include "tempra/quant/formats.h"

namespace tempra::native {
namespace {

using namespace tempra::quant;

// acc + sums of 16 int8 products (w[i] * a[i]), any values, exact; which int32 lane gets which
// product differs between the two paths, only the total is meant.
inline int32x4_t dot16(int32x4_t acc, int8x16_t w, int8x16_t a) {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, w, a);
#else
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w), vget_low_s8(a)));
  return vpadalq_s16(acc, vmull_high_s8(w, a));
#endif
}

float dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    int32x4_t acc = dot16(vdupq_n_s32(0), vld1q_s8(x[b].qs), vld1q_s8(y[b].qs));
    acc = dot16(acc, vld1q_s8(x[b].qs + 16), vld1q_s8(y[b].qs + 16));
    const int s = vaddvq_s32(acc);
    sum += static_cast<float>(s) * (to_f32(x[b].d) * to_f32(y[b].d));
  }
  return sum;
}

float dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  const uint8x16_t nibble = vdupq_n_u8(0x0F);
  const int8x16_t eight = vdupq_n_s8(8);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    // Low nibbles are elements 0..15, high nibbles 16..31; values c - 8 in -8..7.
    const uint8x16_t packed = vld1q_u8(x[b].qs);
    const int8x16_t low = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(packed, nibble)), eight);
    const int8x16_t high = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(packed, 4)), eight);
    int32x4_t acc = dot16(vdupq_n_s32(0), low, vld1q_s8(y[b].qs));
    acc = dot16(acc, high, vld1q_s8(y[b].qs + 16));
    const int s = vaddvq_s32(acc);
    sum += static_cast<float>(s) * to_f32(x[b].d) * to_f32(y[b].d);
  }
  return sum;
}

// ---- K-quants ----

// acc + codes[i] * q8[i] word-wise over 16 elements: word k gets elements k and k + 8 (lane k).
inline int16x8_t lane_products(int16x8_t acc, int8x16_t codes, int8x16_t q8) {
  acc = vmlal_s8(acc, vget_low_s8(codes), vget_low_s8(q8));
  return vmlal_high_s8(acc, codes, q8);
}

// lanes (0..3 in low, 4..7 in high) += scale * products.
inline void add_scaled(int32x4_t& low, int32x4_t& high, int16x8_t products, int16_t scale) {
  low = vmlal_n_s16(low, vget_low_s16(products), scale);
  high = vmlal_high_n_s16(high, products, scale);
}

// sum_j bsums[j] * mins[j / 2] over the 16 sums of 16 activations, exact in int32.
inline int mins_dot_bsums(const int16_t* mins, const int16_t* bsums) {
  const int16x8_t m = vld1q_s16(mins);
  const int16x8_t sums0 = vld1q_s16(bsums), sums1 = vld1q_s16(bsums + 8);
  int32x4_t acc = vmull_s16(vget_low_s16(sums0), vget_low_s16(vzip1q_s16(m, m)));
  acc = vmlal_high_s16(acc, sums0, vzip1q_s16(m, m));
  acc = vmlal_s16(acc, vget_low_s16(sums1), vget_low_s16(vzip2q_s16(m, m)));
  acc = vmlal_high_s16(acc, sums1, vzip2q_s16(m, m));
  return vaddvq_s32(acc);
}

// Q4_K and Q5_K: sub-block s is 32 elements with scale s; qs[32 (s / 2) + l] holds element l
// in its low nibble (s even) or high nibble (s odd); Q5_K adds bit s of qh[l] as the fifth bit.
template <bool kFifthBit, class Block>
float dot_q45_k(int64_t n, const Block* x, const BlockQ8_K* y) {
  const uint8x16_t nibble = vdupq_n_u8(0x0F), sixteen = vdupq_n_u8(16);
  detail::KQuantLaneSums acc;  // the scalar arm's float accumulation
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    int16_t scales[8], mins[8];
    detail::unpack_scales_mins_k4(x[b].scales, scales, mins);
    const int min_sum = mins_dot_bsums(mins, y[b].bsums);
    uint8x16_t fifth_bits[2] = {vdupq_n_u8(0), vdupq_n_u8(0)};
    if constexpr (kFifthBit) fifth_bits[0] = vld1q_u8(x[b].qh), fifth_bits[1] = vld1q_u8(x[b].qh + 16);
    int32x4_t lanes_low = vdupq_n_s32(0), lanes_high = vdupq_n_s32(0);
    for (int s = 0; s < 8; ++s) {
      const uint8_t* q = x[b].qs + 32 * (s / 2);
      const int8_t* q8 = y[b].qs + 32 * s;
      int16x8_t products = vdupq_n_s16(0);
      for (int half = 0; half < 2; ++half) {
        const uint8x16_t packed = vld1q_u8(q + 16 * half);
        uint8x16_t codes = s % 2 ? vshrq_n_u8(packed, 4) : vandq_u8(packed, nibble);
        if constexpr (kFifthBit)
          codes = vorrq_u8(codes, vandq_u8(vtstq_u8(fifth_bits[half], vdupq_n_u8(static_cast<uint8_t>(1u << s))), sixteen));
        products = lane_products(products, vreinterpretq_s8_u8(codes), vld1q_s8(q8 + 16 * half));
      }
      add_scaled(lanes_low, lanes_high, products, scales[s]);
    }
    int32_t lane_sums[8];
    vst1q_s32(lane_sums, lanes_low);
    vst1q_s32(lane_sums + 4, lanes_high);
    acc.add_super_block(to_f32(x[b].d) * y[b].d, lane_sums);
    acc.total -= to_f32(x[b].dmin) * y[b].d * static_cast<float>(min_sum);
  }
  return acc.finish();
}

float dot_q4_k(int64_t n, const void* w, const void* a) {
  return dot_q45_k<false>(n, static_cast<const BlockQ4_K*>(w), static_cast<const BlockQ8_K*>(a));
}
float dot_q5_k(int64_t n, const void* w, const void* a) {
  return dot_q45_k<true>(n, static_cast<const BlockQ5_K*>(w), static_cast<const BlockQ8_K*>(a));
}

// Q6_K: element 128 h + 32 p + l has low bits in ql[64 h + l + 32 (p % 2)] (low nibble for
// p < 2, high for p >= 2) and high bits (qh[32 h + l] >> 2 p) & 3; code = that - 32, with a
// signed scale per 16 elements (scale 8 h + 2 p + k for l in 16 k .. 16 k + 15).
float dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const uint8x16_t nibble = vdupq_n_u8(0x0F), two_bits = vdupq_n_u8(0x03);
  const int8x16_t thirty_two = vdupq_n_s8(32);
  detail::KQuantLaneSums acc;  // the scalar arm's float accumulation
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    int32x4_t lanes_low = vdupq_n_s32(0), lanes_high = vdupq_n_s32(0);
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 2; ++k) {  // l in 16 k .. 16 k + 15
        const uint8x16_t ql0 = vld1q_u8(x[b].ql + 64 * h + 16 * k);
        const uint8x16_t ql1 = vld1q_u8(x[b].ql + 64 * h + 32 + 16 * k);
        const uint8x16_t qh = vld1q_u8(x[b].qh + 32 * h + 16 * k);
        uint8x16_t plane[4];
        plane[0] = vorrq_u8(vandq_u8(ql0, nibble), vshlq_n_u8(vandq_u8(qh, two_bits), 4));
        plane[1] = vorrq_u8(vandq_u8(ql1, nibble), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), two_bits), 4));
        plane[2] = vorrq_u8(vshrq_n_u8(ql0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), two_bits), 4));
        plane[3] = vorrq_u8(vshrq_n_u8(ql1, 4), vshlq_n_u8(vshrq_n_u8(qh, 6), 4));
        for (int p = 0; p < 4; ++p) {
          const int8x16_t codes = vsubq_s8(vreinterpretq_s8_u8(plane[p]), thirty_two);
          const int8x16_t q8 = vld1q_s8(y[b].qs + 128 * h + 32 * p + 16 * k);
          const int16x8_t products = lane_products(vdupq_n_s16(0), codes, q8);
          add_scaled(lanes_low, lanes_high, products, x[b].scales[8 * h + 2 * p + k]);
        }
      }
    }
    int32_t lane_sums[8];
    vst1q_s32(lane_sums, lanes_low);
    vst1q_s32(lane_sums + 4, lanes_high);
    acc.add_super_block(to_f32(x[b].d) * y[b].d, lane_sums);
  }
  return acc.finish();
}

// ---- IQ4_NL, IQ4_XS ----

// One block of 32 IQ4 codes (packed as Q4_0's) against 32 activations: the grid values looked up
// by tbl, then dot16 (exact for any int8).
inline int iq4_block_sum(const uint8_t* qs, const int8_t* a) {
  const int8x16_t grid = vld1q_s8(kIq4nlGrid);
  const uint8x16_t packed = vld1q_u8(qs);
  const int8x16_t low = vqtbl1q_s8(grid, vandq_u8(packed, vdupq_n_u8(0x0F)));  // elements 0..15
  const int8x16_t high = vqtbl1q_s8(grid, vshrq_n_u8(packed, 4));             // elements 16..31
  return vaddvq_s32(dot16(dot16(vdupq_n_s32(0), low, vld1q_s8(a)), high, vld1q_s8(a + 16)));
}

float dot_iq4_nl(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_NL*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    const float d = to_f32(y[b].d) * to_f32(x[b].d);
    sum += d * static_cast<float>(iq4_block_sum(x[b].qs, y[b].qs));
  }
  return sum;
}

float dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_XS*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    const float d = to_f32(x[b].d) * y[b].d;
    for (int s = 0; s < kSuperBlock / kBlock32; ++s) {
      const float sub_d = d * static_cast<float>(iq4_xs_scale(x[b], s));
      sum += sub_d * static_cast<float>(iq4_block_sum(x[b].qs + 16 * s, y[b].qs + kBlock32 * s));
    }
  }
  return sum;
}

// ---- Ternary ----

// TQ2_0: byte m of 32-byte group g holds elements 128 g + 32 p + m in bits 2p, 2p + 1 (code c,
// value c - 1 in -1..2); one integer sum per super-block as in the scalar arm.
float dot_tq2_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockTQ2_0*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const uint8x16_t two_bits = vdupq_n_u8(3);
  const int8x16_t one = vdupq_n_s8(1);
  float sum = 0;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    prefetch_ahead<sizeof(x[b])>(x + b);
    int32x4_t acc = vdupq_n_s32(0);
    for (int g = 0; g < 2; ++g) {
      for (int half = 0; half < 2; ++half) {
        uint8x16_t packed = vld1q_u8(x[b].qs + 32 * g + 16 * half);
        for (int p = 0; p < 4; ++p, packed = vshrq_n_u8(packed, 2)) {
          const int8x16_t values = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(packed, two_bits)), one);
          acc = dot16(acc, values, vld1q_s8(y[b].qs + 128 * g + 32 * p + 16 * half));
        }
      }
    }
    const int s = vaddvq_s32(acc);
    sum += static_cast<float>(s) * (y[b].d * to_f32(x[b].d));
  }
  return sum;
}

}  // namespace

// This arm's dots: NEON is part of the aarch64 baseline (scalar/quant_dot.cpp lists the arms).
std::span<const QuantDot> quant_dots_neon() {
  static const auto table = hot_format_dots({.q8_0 = &dot_q8_0,
                                             .q4_0 = &dot_q4_0,
                                             .q4_k = &dot_q4_k,
                                             .q5_k = &dot_q5_k,
                                             .q6_k = &dot_q6_k,
                                             .tq2_0 = &dot_tq2_0,
                                             .iq4_nl = &dot_iq4_nl,
                                             .iq4_xs = &dot_iq4_xs});
  return table;
}

}  // namespace tempra::native
