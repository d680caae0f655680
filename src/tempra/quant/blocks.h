// tempra/quant/blocks.h: ggml's block-quantization wire formats, as C++ structs.
//
// Each struct is byte-for-byte the layout ggml writes into GGUF files (ggml-common.h), checked
// by a static_assert on its size. Scales are IEEE f16 bit patterns (tempra::f16_t). Values
// within a block are stored as ggml stores them: the 4-bit formats put element j in the low
// nibble of qs[j] and element j + 16 in its high nibble; the 5-bit formats keep the fifth bits
// in a 32-bit little-endian mask qh, bit j for element j.
#pragma once

#include <cstdint>

#include "tempra/core/half.h"

namespace tempra::quant {

inline constexpr int kBlock32 = 32;  // elements per block of the Q4_0 ... Q8_1 formats

struct BlockQ4_0 {
  f16_t d;                    // scale: value = d * (q - 8)
  uint8_t qs[kBlock32 / 2];   // 4-bit quants
};
static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block must be 18 bytes");

struct BlockQ4_1 {
  f16_t d;                    // scale: value = d * q + m
  f16_t m;                    // minimum
  uint8_t qs[kBlock32 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block must be 20 bytes");

struct BlockQ5_0 {
  f16_t d;                    // scale: value = d * (q - 16)
  uint8_t qh[4];              // fifth bits
  uint8_t qs[kBlock32 / 2];   // low four bits
};
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block must be 22 bytes");

struct BlockQ5_1 {
  f16_t d;                    // scale: value = d * q + m
  f16_t m;
  uint8_t qh[4];
  uint8_t qs[kBlock32 / 2];
};
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block must be 24 bytes");

struct BlockQ8_0 {
  f16_t d;                    // scale: value = d * q
  int8_t qs[kBlock32];
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block must be 34 bytes");

struct BlockQ8_1 {
  f16_t d;                    // scale: value = d * q
  f16_t s;                    // d * sum(qs): lets a dot with a Q4_1/Q5_1 row fold in the minimum
  int8_t qs[kBlock32];
};
static_assert(sizeof(BlockQ8_1) == 36, "Q8_1 block must be 36 bytes");

}  // namespace tempra::quant
