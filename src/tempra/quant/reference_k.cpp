// tempra/quant/reference_k.cpp: the K-quant encoders and decoders.
//
// Layouts (ggml-common.h): a super-block of 256 values carries an f16 scale d (and, for the
// affine formats, dmin) plus per-sub-block scales quantized to 4, 6 or 8 bits. The decoders walk
// the bit planes in ggml's element order and evaluate each value with ggml's float operations in
// ggml's order (e.g. Q6_K: (d * scale) * q), so the floats are bit-identical. The encoders run
// ggml's scale searches (make_qkx2_quants, make_qx_quants, make_q3_quants) with the same float
// operations in the same order, so their bytes are identical too. Compiled with
// -ffp-contract=off, like reference.cpp.
#include <algorithm>
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

// ggml's nearest_int: round to nearest, ties to even, by adding 1.5 * 2^23 and reading the
// mantissa (valid for |x| < 2^22, as in ggml; larger inputs give ggml's same wrapped value).
int nearest_int(float x) {
  const float shifted = x + 12582912.0f;
  int bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// Blocks whose largest magnitude is below this are all-zero (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

float signed_absmax(const float* x, int n) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

// Symmetric codes in [-nmax, nmax) for a group of n values (ggml's make_qx_quants with
// rmse_type 1, the Q6_K case): start from scale max / -nmax, then try 18 nearby scales and keep
// the one with the best x^2-weighted least-squares fit. Codes are returned offset by nmax.
float symmetric_codes_weighted(int n, int nmax, const float* x, int8_t* codes) {
  const float max = signed_absmax(x, n);
  if (std::fabs(max) < kGroupMaxEps) {
    std::memset(codes, 0, static_cast<size_t>(n));
    return 0.0f;
  }
  auto fit = [&](float iscale, float& sumlx, float& suml2, bool store) {
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
      if (store) codes[i] = static_cast<int8_t>(l + nmax);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
  };
  float sumlx, suml2;
  fit(static_cast<float>(-nmax) / max, sumlx, suml2, true);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    fit(iscale, sumlx, suml2, false);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      fit(iscale, sumlx, suml2, true);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Symmetric codes in [-nmax, nmax) for Q3_K (ggml's make_q3_quants with do_rmse): start from
// scale max / -nmax, then up to five passes of coordinate descent moving single codes while the
// x^2-weighted fit improves. Codes are returned offset by nmax.
float symmetric_codes_refined(int n, int nmax, const float* x, int8_t* codes) {
  const float max = signed_absmax(x, n);
  if (std::fabs(max) < kGroupMaxEps) {
    std::memset(codes, 0, static_cast<size_t>(n));
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    codes[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float li = static_cast<float>(codes[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx <= 0) continue;
      float sl2 = suml2 - w * li * li;
      const int candidate = std::max(-nmax, std::min(nmax - 1, nearest_int(x[i] * sl2 / slx)));
      if (candidate == codes[i]) continue;
      slx += w * x[i] * static_cast<float>(candidate);
      sl2 += w * static_cast<float>(candidate) * static_cast<float>(candidate);
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        codes[i] = static_cast<int8_t>(candidate);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (!changed) break;
  }
  for (int i = 0; i < n; ++i) codes[i] = static_cast<int8_t>(codes[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Affine codes in [0, nmax] with value = scale * code - min (ggml's make_qkx2_quants): start
// from the group's range, then try nstep + 1 scales around it, solving the weighted least-
// squares (scale, min) for each code assignment and keeping the lowest weighted error
// (absolute when use_mad, else squared). Returns the scale; *neg_min gets the min (>= 0).
float affine_codes(int n, int nmax, const float* x, const float* weights, uint8_t* codes, float* neg_min,
                   uint8_t* scratch, float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::memset(codes, 0, static_cast<size_t>(n));
    *neg_min = -min;
    return 0.0f;
  }
  auto error_of = [&](float scale, float offset, const uint8_t* l) {
    float error = 0;
    for (int i = 0; i < n; ++i) {
      float diff = scale * static_cast<float>(l[i]) + offset - x[i];
      diff = use_mad ? std::fabs(diff) : diff * diff;
      error += weights[i] * diff;
    }
    return error;
  };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  for (int i = 0; i < n; ++i)
    codes[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min)))));
  float best_error = error_of(scale, min, codes);
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
      scratch[i] = static_cast<uint8_t>(l);
      const float w = weights[i], lf = static_cast<float>(l);
      sum_l += w * lf;
      sum_l2 += w * lf * lf;
      sum_xl += w * lf * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {  // a positive offset is not representable: refit the scale alone
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float error = error_of(this_scale, this_min, scratch);
    if (error < best_error) {
      std::memcpy(codes, scratch, static_cast<size_t>(n));
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *neg_min = -min;
  return scale;
}

// Packs 2-bit codes: byte l of each 32-byte lane holds elements l, l+32, l+64, l+96 of its
// 128-element half, lowest bits first (Q2_K and Q3_K's qs).
void pack_2bit(const uint8_t* codes, uint8_t* qs) {
  for (int half = 0; half < kSuperBlock / 128; ++half)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* c = codes + 128 * half + l;
      qs[32 * half + l] = static_cast<uint8_t>(c[0] | (c[32] << 2) | (c[64] << 4) | (c[96] << 6));
    }
}

// Q4_K/Q5_K: eight 6-bit scales and mins into 12 bytes (the inverse of scale_min_k4).
void pack_scales_k4(const uint8_t* ls, const uint8_t* lm, uint8_t* q) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      q[j] = ls[j];
      q[j + 4] = lm[j];
    } else {
      q[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      q[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      q[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
}

// Shared by Q4_K and Q5_K: fits eight 32-element sub-blocks with affine codes in [0, nmax],
// quantizes their scales and mins to 6 bits against the super-block's d and dmin, then recodes
// every value against the rounded scales. Writes d, dmin, scales; returns the codes in L.
template <class Block>
void fit_k4_super_block(const float* x, Block& y, int nmax, float rmin, float rdelta, int nstep, uint8_t* L) {
  float scales[8], mins[8], weights[32];
  uint8_t scratch[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = affine_codes(32, nmax, xs, weights, L + 32 * j, &mins[j], scratch, rmin, rdelta, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
  }
  pack_scales_k4(ls, lm, y.scales);
  y.d = to_f16(max_scale / 63.f);
  y.dmin = to_f16(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    float sc, m;
    scale_min_k4(j, y.scales, sc, m);
    const float d = to_f32(y.d) * sc;
    if (d == 0) continue;
    const float dm = to_f32(y.dmin) * m;
    for (int l = 0; l < 32; ++l)
      L[32 * j + l] = static_cast<uint8_t>(std::max(0, std::min(nmax, nearest_int((x[32 * j + l] + dm) / d))));
  }
}

}  // namespace

void quantize_row_q2_k(const float* x, BlockQ2_K* y, int64_t k) {
  constexpr float kLevels = 15.f;  // scales and mins are 4-bit multiples of d and dmin
  for (int64_t b = 0; b < k / kSuperBlock; ++b, x += kSuperBlock) {
    uint8_t L[kSuperBlock], scratch[16];
    float weights[16], scales[16], mins[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = affine_codes(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], scratch, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      const float iscale = kLevels / max_scale;
      for (int j = 0; j < 16; ++j) y[b].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      y[b].d = to_f16(max_scale / kLevels);
    } else {
      std::memset(y[b].scales, 0, sizeof y[b].scales);
      y[b].d = to_f16(0.f);
    }
    if (max_min > 0) {
      const float iscale = kLevels / max_min;
      for (int j = 0; j < 16; ++j) y[b].scales[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
      y[b].dmin = to_f16(max_min / kLevels);
    } else {
      y[b].dmin = to_f16(0.f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = to_f32(y[b].d) * static_cast<float>(y[b].scales[j] & 0xF);
      if (d == 0) continue;
      const float dm = to_f32(y[b].dmin) * static_cast<float>(y[b].scales[j] >> 4);
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = static_cast<uint8_t>(std::max(0, std::min(3, nearest_int((x[16 * j + l] + dm) / d))));
    }
    pack_2bit(L, y[b].qs);
  }
}

void quantize_row_q3_k(const float* x, BlockQ3_K* y, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b, x += kSuperBlock) {
    int8_t L[kSuperBlock];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = symmetric_codes_refined(16, 4, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    // Sixteen 6-bit scales (offset by 32): low nibbles in bytes 0..7, top two bits in 8..11.
    std::memset(y[b].scales, 0, sizeof y[b].scales);
    if (max_scale != 0) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l = std::max(-32, std::min(31, static_cast<int>(static_cast<int8_t>(nearest_int(iscale * scales[j]))))) + 32;
        if (j < 8) y[b].scales[j] = static_cast<uint8_t>(l & 0xF);
        else y[b].scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
        y[b].scales[8 + j % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
      }
      y[b].d = to_f16(1 / iscale);
    } else {
      y[b].d = to_f16(0.f);
    }
    int rounded[16];
    scales_q3_k(y[b].scales, rounded);
    for (int j = 0; j < 16; ++j) {
      const float d = to_f32(y[b].d) * static_cast<float>(rounded[j]);
      if (d == 0) continue;
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = static_cast<int8_t>(std::max(-4, std::min(3, nearest_int(x[16 * j + l] / d))) + 4);
    }
    // Codes 4..7 keep their third bit in hmask: element e sets bit e / 32 of byte e % 32.
    std::memset(y[b].hmask, 0, sizeof y[b].hmask);
    uint8_t low[kSuperBlock];
    for (int e = 0; e < kSuperBlock; ++e) {
      int code = L[e];
      if (code > 3) {
        y[b].hmask[e % 32] |= static_cast<uint8_t>(1u << (e / 32));
        code -= 4;
      }
      low[e] = static_cast<uint8_t>(code);
    }
    pack_2bit(low, y[b].qs);
  }
}

void quantize_row_q4_k(const float* x, BlockQ4_K* y, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b, x += kSuperBlock) {
    uint8_t L[kSuperBlock];
    fit_k4_super_block(x, y[b], 15, -1.f, 0.1f, 20, L);
    // Sub-blocks 2i and 2i + 1 share qs[32 i ...]: low and high nibbles.
    for (int i = 0; i < 4; ++i)
      for (int l = 0; l < 32; ++l)
        y[b].qs[32 * i + l] = static_cast<uint8_t>(L[64 * i + l] | (L[64 * i + l + 32] << 4));
  }
}

void quantize_row_q5_k(const float* x, BlockQ5_K* y, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b, x += kSuperBlock) {
    uint8_t L[kSuperBlock];
    fit_k4_super_block(x, y[b], 31, -0.5f, 0.1f, 15, L);
    // As Q4_K, plus the fifth bit of sub-block s's codes in bit s of qh[lane].
    std::memset(y[b].qh, 0, sizeof y[b].qh);
    for (int i = 0; i < 4; ++i)
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * i + l], hi = L[64 * i + l + 32];
        y[b].qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * i)) | ((hi >> 4) << (2 * i + 1)));
        y[b].qs[32 * i + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      }
  }
}

void quantize_row_q6_k(const float* x, BlockQ6_K* y, int64_t k) {
  for (int64_t b = 0; b < k / kSuperBlock; ++b, x += kSuperBlock) {
    int8_t L[kSuperBlock];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = symmetric_codes_weighted(16, 32, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[b].d = to_f16(1 / iscale);
    for (int j = 0; j < 16; ++j) y[b].scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
    for (int j = 0; j < 16; ++j) {
      const float d = to_f32(y[b].d) * static_cast<float>(y[b].scales[j]);
      if (d == 0) continue;
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = static_cast<int8_t>(std::max(-32, std::min(31, nearest_int(x[16 * j + l] / d))) + 32);
    }
    // The inverse of the decoder's walk: element e = 128 h + 32 p + l.
    for (int e = 0; e < kSuperBlock; ++e) {
      const int half = e / 128, quarter = (e % 128) / 32, lane = e % 32;
      const int code = static_cast<uint8_t>(L[e]);
      uint8_t& ql = y[b].ql[64 * half + lane + 32 * (quarter % 2)];
      if (quarter < 2) ql = static_cast<uint8_t>(code & 0xF);
      else ql |= static_cast<uint8_t>((code & 0xF) << 4);
      uint8_t& qh = y[b].qh[32 * half + lane];
      if (quarter == 0) qh = 0;
      qh |= static_cast<uint8_t>((code >> 4) << (2 * quarter));
    }
  }
}

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
