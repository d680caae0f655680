// tempra/quant/reference_ternary.cpp: the ternary formats TQ1_0 and TQ2_0 (BitNet b1.58, TriLMs).
//
// A super-block of 256 values keeps one f16 scale d = the block's largest magnitude and one trit
// t = lround(x / d) + 1 in {0, 1, 2} per value (ggml-quants.c, quantize_row_tq{1,2}_0_ref and
// dequantize_row_tq{1,2}_0). TQ2_0 stores each trit in two bits. TQ1_0 packs five trits into a
// byte as the base-3 number t0 t1 t2 t3 t4 scaled to ceil(256 * n / 243), so that multiplying
// the byte by 3^i (mod 256) brings trit i to the top and a multiply by 3 >> 8 reads it off.
// Element order within a block follows ggml's loops exactly, so bytes and floats are identical.
// Compiled with -ffp-contract=off, like reference.cpp.
#include <cmath>

#include "tempra/quant/reference.h"

namespace tempra::quant {
namespace {

constexpr int kTq1Bytes5 = sizeof(BlockTQ1_0::qs);      // 48 bytes of five trits
constexpr int kTq1Wide = kTq1Bytes5 - kTq1Bytes5 % 32;  // the first 32 span 32 columns, the rest 16
constexpr int kTq1Bytes4 = sizeof(BlockTQ1_0::qh);      // 4 bytes of four trits
constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};

// ggml's MAX(amax, |x|), which keeps a NaN from x (std::max would keep amax).
float absmax(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kSuperBlock; ++j) {
    const float a = std::fabs(x[j]);
    amax = amax > a ? amax : a;
  }
  return amax;
}

// -1, 0, 1 -> 0, 1, 2, with lroundf as ggml calls it (its out-of-range result wraps the same way).
int trit(float x, float id) { return static_cast<int>(std::lround(x * id) + 1); }

// The base-3 number of n trits x[0], x[stride], ..., most significant first, padded with
// `shift` zero trits below and mapped onto a byte by ceiling division (3^5 = 243).
uint8_t pack_trits(const float* x, int stride, int n, bool shift, float id) {
  uint8_t q = 0;
  for (int i = 0; i < n; ++i) {
    q = static_cast<uint8_t>(q * 3);
    q = static_cast<uint8_t>(q + trit(x[i * stride], id));
  }
  if (shift) q = static_cast<uint8_t>(q * 3);
  return static_cast<uint8_t>((static_cast<uint16_t>(q) * 256 + (243 - 1)) / 243);
}

// Trit i (0 = most significant) of a packed byte, as a value in {-1, 0, 1} times d.
float unpack_trit(uint8_t byte, int i, float d) {
  const uint8_t q = static_cast<uint8_t>(byte * kPow3[i]);
  const int16_t t = static_cast<int16_t>((static_cast<uint16_t>(q) * 3) >> 8);
  return static_cast<float>(t - 1) * d;
}

float inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

}  // namespace

void quantize_row_tq1_0(const float* x, BlockTQ1_0* y, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    const float d = absmax(x);
    const float id = inverse(d);
    y[b].d = to_f16(d);
    // qs[0..31]: elements m + 32 n of the first 160; qs[32..47]: m + 16 n of the next 80.
    for (int m = 0; m < 32; ++m) y[b].qs[m] = pack_trits(x + m, 32, 5, false, id);
    x += 5 * 32;
    for (int m = 0; m < kTq1Bytes5 - kTq1Wide; ++m) y[b].qs[kTq1Wide + m] = pack_trits(x + m, 16, 5, false, id);
    x += 5 * 16;
    // qh: elements j + 4 m of the last 16, four trits shifted up by one.
    for (int j = 0; j < kTq1Bytes4; ++j) y[b].qh[j] = pack_trits(x + j, kTq1Bytes4, 4, true, id);
    x += 4 * kTq1Bytes4;
  }
}

void quantize_row_tq2_0(const float* x, BlockTQ2_0* y, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    const float d = absmax(x);
    const float id = inverse(d);
    y[b].d = to_f16(d);
    for (int g = 0; g < kSuperBlock / 128; ++g, x += 128) {
      for (int m = 0; m < 32; ++m) {
        uint8_t q = 0;
        for (int n = 0; n < 4; ++n) q = static_cast<uint8_t>(q + ((trit(x[m + n * 32], id) & 3) << (2 * n)));
        y[b].qs[g * 32 + m] = q;
      }
    }
  }
}

void dequantize_row_tq1_0(const BlockTQ1_0* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    const float d = to_f32(y[b].d);
    for (int n = 0; n < 5; ++n)
      for (int m = 0; m < kTq1Wide; ++m) *x++ = unpack_trit(y[b].qs[m], n, d);
    for (int n = 0; n < 5; ++n)
      for (int m = kTq1Wide; m < kTq1Bytes5; ++m) *x++ = unpack_trit(y[b].qs[m], n, d);
    for (int n = 0; n < 4; ++n)
      for (int j = 0; j < kTq1Bytes4; ++j) *x++ = unpack_trit(y[b].qh[j], n, d);
  }
}

void dequantize_row_tq2_0(const BlockTQ2_0* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    const float d = to_f32(y[b].d);
    for (int g = 0; g < kSuperBlock / 128; ++g)
      for (int n = 0; n < 4; ++n)
        for (int m = 0; m < 32; ++m) *x++ = static_cast<float>(((y[b].qs[g * 32 + m] >> (2 * n)) & 3) - 1) * d;
  }
}

}  // namespace tempra::quant
