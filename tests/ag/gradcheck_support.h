// tests/ag/gradcheck_support.h: what every gradcheck test shares: f64 inputs in a range, and
// the check that a gradcheck passed, printing its max error for the closing notes.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tempra/ag/gradcheck.h"
#include "tempra/ops/ops.h"

namespace tempra::ag {

// Uniform f64 values in [low, high).
inline Array anywhere(ExecContext& ctx, const Dims& shape, uint64_t seed, double low = -2.0, double high = 2.0) {
  return cast(ctx, uniform(ctx, shape, low, high, seed), DType::f64);
}

inline void expect_ok(const GradcheckResult& r, const std::string& what) {
  EXPECT_TRUE(r.ok) << what << ": max error " << r.max_error << " at " << r.worst;
  EXPECT_GT(r.checked, 0) << what;
  std::printf("gradcheck %-44s max error %.3g over %lld elements\n", what.c_str(), r.max_error,
              static_cast<long long>(r.checked));
}

}  // namespace tempra::ag
