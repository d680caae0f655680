// tempra/backend/scalar/k_quant_lanes.h: the K-quant pieces the scalar and native dots share.
//
// ggml's generic Q3_K..Q6_K kernels keep eight float accumulators, one per lane (element index
// mod 8), and unpack Q4_K/Q5_K's packed 6-bit scales the same way; a native arm that reuses
// these returns the scalar arm's float as long as its integer lane sums agree. Include only
// from translation units compiled with -ffp-contract=off (backend/CMakeLists.txt).
#pragma once

#include <cstdint>

namespace tempra::detail {

// sums[lane] += d * lane_sum per super-block, a mins term subtracted from total per super-block
// (Q4_K, Q5_K), and the eight lanes added to total last.
struct KQuantLaneSums {
  float sums[8] = {};
  float total = 0;
  void add_super_block(float d, const int32_t* lanes) {
    for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(lanes[l]);
  }
  float finish() {
    for (int l = 0; l < 8; ++l) total += sums[l];
    return total;
  }
};

// Q4_K/Q5_K's eight 6-bit scales and mins from their 12 packed bytes (the decoder's unpacking).
inline void unpack_scales_mins_k4(const uint8_t* q, int16_t* scales, int16_t* mins) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = static_cast<int16_t>(q[j] & 63);
      mins[j] = static_cast<int16_t>(q[j + 4] & 63);
    } else {
      scales[j] = static_cast<int16_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
      mins[j] = static_cast<int16_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
  }
}

}  // namespace tempra::detail
