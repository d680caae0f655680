// tempra/quant/reference.cpp: the scalar encoders and decoders of the 32-element formats.
//
// The arithmetic follows ggml's reference quantizers (ggml-quants.c) operation for operation,
// because byte-identical output is the contract: scales are computed in f32 and rounded to f16
// once, and a quant is the f32 product x * (1 / d) offset and truncated exactly as ggml does
// (Q4/Q5: (int8)(v + offset + 0.5) clamped; Q8: roundf). This file is compiled with
// -ffp-contract=off so that no multiply-add is fused, as in ggml's generic build.
#include "tempra/quant/reference.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tempra::quant {
namespace {

constexpr int kHalf = kBlock32 / 2;

// The element of largest magnitude, with its sign (the first one on ties).
float signed_absmax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kBlock32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

float absmax(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kBlock32; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

void min_max(const float* x, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < kBlock32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
}

float inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// ggml's encoders narrow floats with a plain C cast, (int8_t)(x * id + 8.5f), which C leaves
// undefined outside the target's range: an all-infinite or NaN block reaches it. x86 compilers
// emit cvttss2si, which truncates toward zero and gives INT32_MIN for anything outside int32
// (NaN included), and the narrowing keeps the low byte. The cast is spelled out here so the
// bytes match ggml's x86 build with no undefined behaviour (UBSan's float-cast-overflow).
int8_t narrow_as_x86(float v) {
  return static_cast<int8_t>(v >= -2147483648.0f && v < 2147483648.0f ? static_cast<int32_t>(v) : INT32_MIN);
}

// Fifth bits of the 32 quants, bit j for element j.
uint32_t high_bits(const uint8_t* q) {
  uint32_t qh = 0;
  for (int j = 0; j < kBlock32; ++j) qh |= static_cast<uint32_t>((q[j] & 0x10u) >> 4) << j;
  return qh;
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < kHalf; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kHalf] & 0x0F) << 4));
}

// Unpacks element j's 4 (or, with qh, 5) bit code: low nibble for j < 16, high nibble after.
int code_at(const uint8_t* qs, uint32_t qh, int j) {
  const int nibble = j < kHalf ? (qs[j] & 0x0F) : (qs[j - kHalf] >> 4);
  return nibble | static_cast<int>(((qh >> j) & 1u) << 4);
}

}  // namespace

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = signed_absmax(x) / -8;  // the extreme maps to code 0, its sign flipped
    const float id = inverse(d);
    uint8_t q[kBlock32];
    for (int j = 0; j < kBlock32; ++j) q[j] = static_cast<uint8_t>(std::min<int8_t>(15, narrow_as_x86(x[j] * id + 8.5f)));
    y[b].d = to_f16(d);
    pack_nibbles(q, y[b].qs);
  }
}

void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    float min, max;
    min_max(x, min, max);
    const float d = (max - min) / 15;
    const float id = inverse(d);
    uint8_t q[kBlock32];
    for (int j = 0; j < kBlock32; ++j)
      q[j] = static_cast<uint8_t>(std::min<int8_t>(15, narrow_as_x86((x[j] - min) * id + 0.5f)));
    y[b].d = to_f16(d);
    y[b].m = to_f16(min);
    pack_nibbles(q, y[b].qs);
  }
}

void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = signed_absmax(x) / -16;
    const float id = inverse(d);
    uint8_t q[kBlock32];
    for (int j = 0; j < kBlock32; ++j) q[j] = static_cast<uint8_t>(std::min<int8_t>(31, narrow_as_x86(x[j] * id + 16.5f)));
    y[b].d = to_f16(d);
    const uint32_t qh = high_bits(q);
    std::memcpy(y[b].qh, &qh, sizeof qh);
    pack_nibbles(q, y[b].qs);
  }
}

void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    float min, max;
    min_max(x, min, max);
    const float d = (max - min) / 31;
    const float id = inverse(d);
    uint8_t q[kBlock32];
    for (int j = 0; j < kBlock32; ++j) q[j] = static_cast<uint8_t>(narrow_as_x86((x[j] - min) * id + 0.5f));
    y[b].d = to_f16(d);
    y[b].m = to_f16(min);
    const uint32_t qh = high_bits(q);
    std::memcpy(y[b].qh, &qh, sizeof qh);
    pack_nibbles(q, y[b].qs);
  }
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = absmax(x) / 127;
    const float id = inverse(d);
    y[b].d = to_f16(d);
    for (int j = 0; j < kBlock32; ++j) y[b].qs[j] = narrow_as_x86(std::round(x[j] * id));
  }
}

void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = absmax(x) / 127;
    const float id = inverse(d);
    int sum = 0;
    for (int j = 0; j < kBlock32; ++j) {
      y[b].qs[j] = narrow_as_x86(std::round(x[j] * id));
      sum += y[b].qs[j];
    }
    y[b].d = to_f16(d);
    y[b].s = to_f16(static_cast<float>(sum) * d);
  }
}

void dequantize_row_q4_0(const BlockQ4_0* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = to_f32(y[b].d);
    for (int j = 0; j < kBlock32; ++j) x[j] = static_cast<float>(code_at(y[b].qs, 0, j) - 8) * d;
  }
}

void dequantize_row_q4_1(const BlockQ4_1* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = to_f32(y[b].d), m = to_f32(y[b].m);
    for (int j = 0; j < kBlock32; ++j) x[j] = static_cast<float>(code_at(y[b].qs, 0, j)) * d + m;
  }
}

void dequantize_row_q5_0(const BlockQ5_0* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = to_f32(y[b].d);
    uint32_t qh;
    std::memcpy(&qh, y[b].qh, sizeof qh);
    for (int j = 0; j < kBlock32; ++j) x[j] = static_cast<float>(code_at(y[b].qs, qh, j) - 16) * d;
  }
}

void dequantize_row_q5_1(const BlockQ5_1* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = to_f32(y[b].d), m = to_f32(y[b].m);
    uint32_t qh;
    std::memcpy(&qh, y[b].qh, sizeof qh);
    for (int j = 0; j < kBlock32; ++j) x[j] = static_cast<float>(code_at(y[b].qs, qh, j)) * d + m;
  }
}

void dequantize_row_q8_0(const BlockQ8_0* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = to_f32(y[b].d);
    for (int j = 0; j < kBlock32; ++j) x[j] = static_cast<float>(y[b].qs[j]) * d;
  }
}

void dequantize_row_q8_1(const BlockQ8_1* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = to_f32(y[b].d);
    for (int j = 0; j < kBlock32; ++j) x[j] = static_cast<float>(y[b].qs[j]) * d;
  }
}

}  // namespace tempra::quant
