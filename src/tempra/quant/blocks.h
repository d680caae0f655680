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

// Element e of a run of Q8_0 blocks: code * scale, dequantize_row_q8_0's one rounding (the KV
// cache's attention reads single elements this way).
inline float q8_0_element(const BlockQ8_0* blocks, int64_t e) {
  const BlockQ8_0& block = blocks[e / kBlock32];
  return static_cast<float>(block.qs[e % kBlock32]) * to_f32(block.d);
}

struct BlockQ8_1 {
  f16_t d;                    // scale: value = d * q
  f16_t s;                    // d * sum(qs): lets a dot with a Q4_1/Q5_1 row fold in the minimum
  int8_t qs[kBlock32];
};
static_assert(sizeof(BlockQ8_1) == 36, "Q8_1 block must be 36 bytes");

// ---- K-quants: super-blocks of 256 elements ----

inline constexpr int kSuperBlock = 256;
inline constexpr int kScaleBytesK = 12;  // 8 six-bit scales and 8 six-bit mins, packed

// 16 sub-blocks of 16: value = d * scale_s * q - dmin * min_s, 2-bit q, 4-bit scale and min.
struct BlockQ2_K {
  uint8_t scales[kSuperBlock / 16];  // low nibble: scale, high nibble: min
  uint8_t qs[kSuperBlock / 4];
  f16_t d;
  f16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84, "Q2_K block must be 84 bytes");

// 16 sub-blocks of 16: value = d * (scale_s - 32) * (q - 4 * !high_bit), 6-bit scales.
struct BlockQ3_K {
  uint8_t hmask[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 4];
  uint8_t scales[kScaleBytesK];
  f16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110, "Q3_K block must be 110 bytes");

// 8 sub-blocks of 32: value = d * scale_s * q - dmin * min_s, 4-bit q, 6-bit scale and min.
struct BlockQ4_K {
  f16_t d;
  f16_t dmin;
  uint8_t scales[kScaleBytesK];
  uint8_t qs[kSuperBlock / 2];
};
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block must be 144 bytes");

// As Q4_K with a fifth bit per quant in qh.
struct BlockQ5_K {
  f16_t d;
  f16_t dmin;
  uint8_t scales[kScaleBytesK];
  uint8_t qh[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 2];
};
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K block must be 176 bytes");

// 16 sub-blocks of 16: value = d * scale_s * (q - 32), 6-bit q (4 low in ql, 2 high in qh).
struct BlockQ6_K {
  uint8_t ql[kSuperBlock / 2];
  uint8_t qh[kSuperBlock / 4];
  int8_t scales[kSuperBlock / 16];
  f16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block must be 210 bytes");

// The activation partner of the K-quants: f32 scale, 8-bit quants, sums of each 16 quants.
struct BlockQ8_K {
  float d;
  int8_t qs[kSuperBlock];
  int16_t bsums[kSuperBlock / 16];
};
static_assert(sizeof(BlockQ8_K) == 292, "Q8_K block must be 292 bytes");

// ---- Ternary formats (BitNet b1.58, TriLMs): super-blocks of 256 values in {-1, 0, 1} * d ----

// value = d * (t - 1), t a trit in {0, 1, 2}: five trits per qs byte and four per qh byte, each
// byte holding ceil(256 * base3 / 243) so that a trit is read back as the top of a multiply by 3.
struct BlockTQ1_0 {
  uint8_t qs[(kSuperBlock - 4 * kSuperBlock / 64) / 5];  // 240 values, 5 per byte
  uint8_t qh[kSuperBlock / 64];                          // 16 values, 4 per byte
  f16_t d;
};
static_assert(sizeof(BlockTQ1_0) == 54, "TQ1_0 block must be 54 bytes");

// value = d * (q - 1), 2-bit q in {0, 1, 2}: byte m of each 32-byte group holds the group's
// elements m, m + 32, m + 64, m + 96 in bits 0-1, 2-3, 4-5, 6-7.
struct BlockTQ2_0 {
  uint8_t qs[kSuperBlock / 4];
  f16_t d;
};
static_assert(sizeof(BlockTQ2_0) == 66, "TQ2_0 block must be 66 bytes");

// ---- Non-linear 4-bit formats: codes index the 16-value grid kIq4nlGrid ----

// ggml's kvalues_iq4nl: a grid denser near zero, fitted to the distribution of LLM weights.
inline constexpr int8_t kIq4nlGrid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// value = d * kIq4nlGrid[q], 4-bit q packed as in Q4_0.
struct BlockIQ4_NL {
  f16_t d;
  uint8_t qs[kBlock32 / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18, "IQ4_NL block must be 18 bytes");

// 8 sub-blocks of 32: value = d * (scale_s - 32) * kIq4nlGrid[q], 6-bit scale_s (low nibble in
// scales_l, two high bits in scales_h), each sub-block's codes packed as in IQ4_NL.
struct BlockIQ4_XS {
  f16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kSuperBlock / 64];
  uint8_t qs[kSuperBlock / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136, "IQ4_XS block must be 136 bytes");

// Sub-block s's scale minus 32 (-32..31): scale_s's low four bits from scales_l, high two from
// scales_h.
inline int iq4_xs_scale(const BlockIQ4_XS& x, int s) {
  const int low = (x.scales_l[s / 2] >> (4 * (s % 2))) & 0xF;
  const int high = (x.scales_h >> (2 * s)) & 3;
  return (low | (high << 4)) - 32;
}

}  // namespace tempra::quant
