// tempra/quant/reference_k.cpp: the K-quant decoders and the Q8_K encoder.
//
// Layouts (ggml-common.h): a super-block of 256 values carries an f16 scale d (and, for the
// affine formats, dmin) plus per-sub-block scales quantized to 4, 6 or 8 bits. The decoders walk
// the bit planes in ggml's element order and evaluate each value with ggml's float operations in
// ggml's order (e.g. Q6_K: (d * scale) * q), so the floats are bit-identical. Compiled with
// -ffp-contract=off, like reference.cpp.
#include <cmath>
#include <cstring>

#include "tempra/quant/reference.h"

namespace tempra::quant {
namespace {

// Sub-block j's 6-bit scale and min of Q4_K/Q5_K: j < 4 keep them in the low six bits of bytes
// j and j + 4; j >= 4 split them into a nibble of byte j + 4 and the top two bits of bytes j - 4
// (scale) and j (min).
void scale_min_k4(int j, const uint8_t* q, float& scale, float& min) {
  if (j < 4) {
    scale = static_cast<float>(q[j] & 63);
    min = static_cast<float>(q[j + 4] & 63);
  } else {
    scale = static_cast<float>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    min = static_cast<float>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Q3_K's sixteen 6-bit scales: low nibbles in bytes 0..7, top two bits packed in bytes 8..11.
void scales_q3_k(const uint8_t* packed, int* scales) {
  for (int s = 0; s < 16; ++s) {
    const int low = s < 8 ? packed[s] & 0xF : packed[s - 8] >> 4;
    const int high = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
    scales[s] = (low | (high << 4)) - 32;
  }
}

// Round half away from... as ggml's nearest_int: the float's own round-to-nearest-even via the
// 1.5 * 2^23 trick, valid for |x| < 2^22.
int nearest_int(float x) {
  const float shifted = x + 12582912.0f;
  int bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace

void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b, x += kSuperBlock) {
    float amax = 0, max = 0;
    for (int j = 0; j < kSuperBlock; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    if (amax == 0) {  // an all-zero block: zero scale, quants and sums
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    const float iscale = -127.0f / max;  // the extreme maps to -127 (ggml keeps it symmetric)
    for (int j = 0; j < kSuperBlock; ++j) y[b].qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    for (int g = 0; g < kSuperBlock / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[b].qs[g * 16 + j];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
    y[b].d = 1 / iscale;
  }
}

void dequantize_row_q8_k(const BlockQ8_K* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b, x += kSuperBlock)
    for (int j = 0; j < kSuperBlock; ++j) x[j] = y[b].d * static_cast<float>(y[b].qs[j]);
}

void dequantize_row_q2_k(const BlockQ2_K* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    const float d = to_f32(y[b].d), dmin = to_f32(y[b].dmin);
    // Element e of the super-block: 128-element half h, bit plane p (2 bits each), 32-byte lane l.
    for (int e = 0; e < kSuperBlock; ++e) {
      const int half = e / 128, plane = (e % 128) / 32, lane = e % 32;
      const uint8_t sc = y[b].scales[e / 16];
      const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
      const int q = (y[b].qs[half * 32 + lane] >> (2 * plane)) & 3;
      *x++ = dl * static_cast<float>(q) - ml;
    }
  }
}

void dequantize_row_q3_k(const BlockQ3_K* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    const float d = to_f32(y[b].d);
    int scales[16];
    scales_q3_k(y[b].scales, scales);
    for (int e = 0; e < kSuperBlock; ++e) {
      const int half = e / 128, plane = (e % 128) / 32, lane = e % 32;
      const float dl = d * static_cast<float>(scales[e / 16]);
      const int low = (y[b].qs[half * 32 + lane] >> (2 * plane)) & 3;
      const bool high = y[b].hmask[lane] & (1u << (half * 4 + plane));
      *x++ = dl * static_cast<float>(low - (high ? 0 : 4));
    }
  }
}

void dequantize_row_q4_k(const BlockQ4_K* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    const float d = to_f32(y[b].d), dmin = to_f32(y[b].dmin);
    // Sub-block s (32 values) reads the low nibbles (even s) or high nibbles (odd s) of qs[32 * (s / 2) ...].
    for (int s = 0; s < 8; ++s) {
      float scale, min;
      scale_min_k4(s, y[b].scales, scale, min);
      const float ds = d * scale, ms = dmin * min;
      const uint8_t* q = y[b].qs + 32 * (s / 2);
      for (int l = 0; l < 32; ++l) *x++ = ds * static_cast<float>(s % 2 ? q[l] >> 4 : q[l] & 0xF) - ms;
    }
  }
}

void dequantize_row_q5_k(const BlockQ5_K* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    const float d = to_f32(y[b].d), dmin = to_f32(y[b].dmin);
    for (int s = 0; s < 8; ++s) {
      float scale, min;
      scale_min_k4(s, y[b].scales, scale, min);
      const float ds = d * scale, ms = dmin * min;
      const uint8_t* q = y[b].qs + 32 * (s / 2);
      for (int l = 0; l < 32; ++l) {
        const int low = s % 2 ? q[l] >> 4 : q[l] & 0xF;
        const int high = (y[b].qh[l] >> s) & 1;  // sub-block s keeps its fifth bits in bit s of qh
        *x++ = ds * static_cast<float>(low + 16 * high) - ms;
      }
    }
  }
}

void dequantize_row_q6_k(const BlockQ6_K* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    const float d = to_f32(y[b].d);
    // Element e: 128-element half h, quarter p of that half, lane l: low nibble of
    // ql[64h + l + 32 (p % 2)] (high nibble for p >= 2), top bits (qh[32h + l] >> 2p) & 3.
    for (int e = 0; e < kSuperBlock; ++e) {
      const int half = e / 128, quarter = (e % 128) / 32, lane = e % 32;
      const uint8_t ql = y[b].ql[64 * half + lane + 32 * (quarter % 2)];
      const int low = quarter < 2 ? ql & 0xF : ql >> 4;
      const int high = (y[b].qh[32 * half + lane] >> (2 * quarter)) & 3;
      const int q = (low | (high << 4)) - 32;
      *x++ = d * static_cast<float>(y[b].scales[e / 16]) * static_cast<float>(q);
    }
  }
}

}  // namespace tempra::quant
