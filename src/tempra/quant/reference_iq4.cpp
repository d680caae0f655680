// tempra/quant/reference_iq4.cpp: the non-linear 4-bit formats IQ4_NL and IQ4_XS.
//
// A 4-bit code indexes kIq4nlGrid; value = scale * grid[code] (ggml-quants.c,
// dequantize_row_iq4_{nl,xs}). The encoders are ggml's quantize_row_iq4_nl_impl as its
// importance-free entry points call it, operation for operation, with weights x^2:
//   IQ4_NL (quantize_row_iq4_nl_ref, ntry = -1): start from d = max / grid[0], the signed extreme
//   on the grid's end; pick the nearest grid value for each x / d; the scale is the weighted
//   least-squares fit sum(w q x) / sum(w q q) of those codes.
//   IQ4_NL as ggml_quantize_chunk encodes it (quantize_iq4_nl without an importance matrix,
//   what llama-quantize writes): ntry = 7, the search IQ4_XS does, per 32-element block; then
//   every code is re-picked with the block's final scale (so zero blocks get code 8).
//   IQ4_XS (quantize_row_iq4_xs_ref, ntry = 7): per 32-element sub-block the same start, then 15
//   more candidate scales (grid[0] + t) / max, t in [-7, 7], keeping the fit with the largest
//   sum(w q x)^2 / sum(w q q); the sub-block scales are then quantized to 6 bits against the
//   super-block scale -max_scale / 32 and every code is re-picked with its final scale.
// Compiled with -ffp-contract=off, like reference.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tempra/quant/reference.h"

namespace tempra::quant {
namespace {

constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS: below this a group is all zero
constexpr uint8_t kCodeNearestZero = 8;  // kIq4nlGrid[8] == 1
constexpr int kSubBlocksXs = kSuperBlock / kBlock32;

float grid(int code) { return static_cast<float>(kIq4nlGrid[code]); }

// ggml's best_index_int8 over the grid: binary search, ties to the upper code. The comparisons
// are ggml's, so a NaN lands where ggml puts it (code 15).
uint8_t nearest_code(float x) {
  if (x <= grid(0)) return 0;
  if (x >= grid(15)) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < grid(mid))
      hi = mid;
    else
      lo = mid;
  }
  return static_cast<uint8_t>(x - grid(hi - 1) < grid(hi) - x ? hi - 1 : hi);
}

// ggml's nearest_int: round to nearest even via the 1.5 * 2^23 trick, valid for |x| < 2^22.
int nearest_int(float x) {
  const float shifted = x + 12582912.0f;
  int bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// The element of largest magnitude, with its sign (the first one on ties).
float signed_absmax(const float* x, int n, float& amax) {
  float max = 0.0f;
  amax = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  return max;
}

// sum(w q x) and sum(w q q) over the codes picked for x * id, weights w = x^2, in ggml's order.
void fit(const float* x, float id, uint8_t* codes, float& sumqx, float& sumq2) {
  sumqx = 0.0f;
  sumq2 = 0.0f;
  for (int j = 0; j < kBlock32; ++j) {
    const float al = id * x[j];
    const uint8_t l = nearest_code(al);
    if (codes) codes[j] = l;
    const float q = grid(l);
    const float w = x[j] * x[j];
    sumqx += w * q * x[j];
    sumq2 += w * q * q;
  }
}

// The scale of one 32-element group, codes for it in `codes` (untouched for a zero group, as
// in ggml); `ntry` as ggml's: <= 0 fits once from max / grid[0], > 0 also tries 2 ntry + 1
// scales around -max / grid[0].
float group_scale(const float* x, uint8_t* codes, int ntry) {
  float amax;
  const float max = signed_absmax(x, kBlock32, amax);
  if (amax < kGroupMaxEps) return 0.0f;
  float d = ntry > 0 ? -max / grid(0) : max / grid(0);
  float sumqx, sumq2;
  fit(x, 1 / d, codes, sumqx, sumq2);
  d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int itry = -ntry; itry <= ntry; ++itry) {
    const float id = static_cast<float>(itry + kIq4nlGrid[0]) / max;
    fit(x, id, nullptr, sumqx, sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// Packs 32 codes as Q4_0 does: element j in the low nibble of qs[j], j + 16 in the high one.
void pack_codes(const uint8_t* codes, uint8_t* qs) {
  for (int j = 0; j < kBlock32 / 2; ++j) qs[j] = static_cast<uint8_t>(codes[j] | (codes[j + kBlock32 / 2] << 4));
}

// ggml fills the codes from one array that lives across the row's blocks and is not written
// for an all-zero block, so such a block repeats the previous block's codes; they decode to
// zero whatever they are. Before any block has written it ggml's array is uninitialized: we
// start from the code nearest zero, the one IQ4_XS writes for a zero sub-block.
void encode_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t k, int ntry) {
  uint8_t codes[kBlock32];
  std::memset(codes, kCodeNearestZero, sizeof codes);
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = group_scale(x, codes, ntry);
    if (ntry > 0) {  // ggml re-picks every code with the final (unrounded) scale, zero blocks too
      const float id = d != 0.0f ? 1 / d : 0.0f;
      for (int j = 0; j < kBlock32; ++j) codes[j] = nearest_code(id * x[j]);
    }
    y[b].d = to_f16(d);
    pack_codes(codes, y[b].qs);
  }
}

}  // namespace

void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t k) { encode_iq4_nl(x, y, k, -1); }

void quantize_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t k) { encode_iq4_nl(x, y, k, 7); }

void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b, x += kSuperBlock) {
    float scales[kSubBlocksXs];
    float max_scale = 0.0f, amax_scale = 0.0f;
    for (int s = 0; s < kSubBlocksXs; ++s) {
      uint8_t unused[kBlock32];  // every code is re-picked below with the quantized scale
      scales[s] = group_scale(x + s * kBlock32, unused, 7);
      const float abs_d = std::fabs(scales[s]);
      if (abs_d > amax_scale) {
        amax_scale = abs_d;
        max_scale = scales[s];
      }
    }
    // 6-bit sub-block scales l in [-32, 31]: the largest maps to -32 (ggml keeps it symmetric).
    const float d = -max_scale / 32;
    const float id = d != 0.0f ? 1 / d : 0.0f;
    y[b].d = to_f16(d);
    y[b].scales_h = 0;
    for (int s = 0; s < kSubBlocksXs; ++s) {
      const int l = std::max(-32, std::min(31, nearest_int(id * scales[s])));
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0.0f ? 1 / dl : 0.0f;
      const float* xs = x + s * kBlock32;
      uint8_t codes[kBlock32];
      for (int j = 0; j < kBlock32; ++j) codes[j] = nearest_code(idl * xs[j]);
      pack_codes(codes, y[b].qs + s * kBlock32 / 2);
      const int biased = l + 32;
      if (s % 2 == 0)
        y[b].scales_l[s / 2] = static_cast<uint8_t>(biased & 0xF);
      else
        y[b].scales_l[s / 2] = static_cast<uint8_t>(y[b].scales_l[s / 2] | ((biased & 0xF) << 4));
      y[b].scales_h = static_cast<uint16_t>(y[b].scales_h | ((biased >> 4) << (2 * s)));
    }
  }
}

void dequantize_row_iq4_nl(const BlockIQ4_NL* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kBlock32; ++b, x += kBlock32) {
    const float d = to_f32(y[b].d);
    for (int j = 0; j < kBlock32 / 2; ++j) {
      x[j] = d * grid(y[b].qs[j] & 0xF);
      x[j + kBlock32 / 2] = d * grid(y[b].qs[j] >> 4);
    }
  }
}

void dequantize_row_iq4_xs(const BlockIQ4_XS* y, float* x, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b) {
    const float d = to_f32(y[b].d);
    for (int s = 0; s < kSubBlocksXs; ++s, x += kBlock32) {
      const float dl = d * static_cast<float>(iq4_xs_scale(y[b], s));
      const uint8_t* qs = y[b].qs + s * kBlock32 / 2;
      for (int j = 0; j < kBlock32 / 2; ++j) {
        x[j] = dl * grid(qs[j] & 0xF);
        x[j + kBlock32 / 2] = dl * grid(qs[j] >> 4);
      }
    }
  }
}

}  // namespace tempra::quant
