// tempra/core/half.h: IEEE binary16 (f16) and bfloat16 (bf16) <-> f32 conversions.
//
// Contract: f16/bf16 -> f32 is exact (every 16-bit value is an f32). f32 -> f16/bf16 rounds to
// nearest, ties to even, like the hardware instructions (F16C vcvtps2ph with imm 0, AVX512-BF16
// vcvtneps2bf16 without its denormal flush): overflow goes to infinity, subnormals are produced
// and consumed, NaN stays NaN (quieted, sign and top payload bits kept). Tested over all 65536
// 16-bit patterns and against an independent nearest-value search (tests/core/half_test.cpp).
#pragma once

#include <bit>
#include <cstdint>

namespace tempra {

// Storage types: a 16-bit pattern with no arithmetic, so no implicit conversion can hide a
// rounding step. Compute happens in f32.
struct f16_t {
  uint16_t bits;
};
struct bf16_t {
  uint16_t bits;
};

inline float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    // Inf keeps a zero mantissa; NaN keeps its payload and is quieted, as vcvtph2ps does.
    bits = sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x00400000u : 0u);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 -> 127
  } else if (mantissa == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal: value = mantissa * 2^-24. Normalize so the leading one becomes implicit.
    int shift = std::countl_zero(mantissa) - 21;  // bring bit 10 to the top of the 10-bit field
    mantissa = (mantissa << shift) & 0x3ffu;
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t f32_to_f16_bits(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));  // NaN
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  const uint32_t exponent = x >> 23;
  if (exponent < 113) {
    // Result is an f16 subnormal (or zero): value / 2^-24, rounded to an integer.
    if (exponent < 102) return sign;  // below 2^-25: rounds to zero
    const uint32_t mantissa = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24
    uint32_t q = mantissa >> shift;
    const uint32_t rem = mantissa & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias and round the 13 dropped bits; a carry rolls into the exponent, as it should.
  uint32_t v = ((exponent - 112) << 10) | ((x >> 13) & 0x3ffu);
  const uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) ++v;
  return static_cast<uint16_t>(sign | v);
}

inline float bf16_bits_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t f32_to_bf16_bits(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);  // ties to even
  return static_cast<uint16_t>((x + rounding) >> 16);
}

inline float to_f32(f16_t h) { return f16_bits_to_f32(h.bits); }
inline float to_f32(bf16_t h) { return bf16_bits_to_f32(h.bits); }
inline f16_t to_f16(float v) { return {f32_to_f16_bits(v)}; }
inline bf16_t to_bf16(float v) { return {f32_to_bf16_bits(v)}; }

}  // namespace tempra
