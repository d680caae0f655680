// tests/backend/parity.h: what the native-vs-scalar parity suite shares.
//
// The sizes every kernel is run at (the list: powers of two, one either side, and a
// large odd one), seeded random data, and the comparison that reports the worst element and
// its tolerance instead of a wall of failures.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tempra/backend/kernels.h"

namespace tempra::parity {

inline const std::vector<int64_t>& sizes() {
  static const std::vector<int64_t> s{1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1000};
  return s;
}

inline std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline const FloatKernels<float>& scalar_f32() { return scalar_kernels().f32; }
inline const FloatKernels<float>& native_f32() { return kernels_for(Backend::native).f32; }

// Bitwise equality, NaN equal to NaN; names the first differing index.
inline ::testing::AssertionResult bitwise_equal(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = (got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i])) ||
                      (std::isnan(got[i]) && std::isnan(want[i]));
    if (!same)
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// |got - want| <= bound[i] everywhere (and NaN where want is NaN, inf where want is inf);
// reports the element with the largest error relative to its bound.
inline ::testing::AssertionResult within(const std::vector<float>& got, const std::vector<float>& want,
                                         const std::vector<double>& bound) {
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      if (!(std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i]))
        return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i];
      continue;
    }
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= bound[i]) && (err / bound[i] > worst || std::isnan(err))) {
      worst = std::isnan(err) ? INFINITY : err / bound[i];
      worst_i = i;
    }
  }
  if (worst > 0)
    return ::testing::AssertionFailure() << "element " << worst_i << ": " << got[worst_i] << " vs " << want[worst_i]
                                         << " (error " << std::abs(static_cast<double>(got[worst_i]) - want[worst_i])
                                         << " > bound " << bound[worst_i] << ")";
  return ::testing::AssertionSuccess();
}

// Relative tolerance: bound[i] = rel * |want[i]| + abs.
inline std::vector<double> relative_bound(const std::vector<float>& want, double rel, double abs = 0) {
  std::vector<double> b(want.size());
  for (size_t i = 0; i < want.size(); ++i) b[i] = rel * std::abs(static_cast<double>(want[i])) + abs;
  return b;
}

}  // namespace tempra::parity
