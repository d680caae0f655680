// tests/backend/gemm_provider.h: how a parity test holds its 2-thread result, given who computes
// the f32 GEMMs (native::gemm_provider).
//
// tempra's own GEMM gives the same bits for any thread count, so there the 2-thread result must
// equal the 1-thread one bitwise. An OpenBLAS build (-DTEMPRA_BLAS=openblas) promises that for a
// fixed thread count only (native.h), so there the 2-thread result is held to the reference
// within the test's tolerance, as the 1-thread one is.
#pragma once

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "backend/parity.h"
#include "tempra/backend/native/native.h"

namespace tempra::parity {

// got2 (2 threads) equals got1 (1 thread) bitwise, or, when the GEMM goes to OpenBLAS, is within
// bound of want.
inline ::testing::AssertionResult same_for_two_threads(const std::vector<float>& got2, const std::vector<float>& got1,
                                                       const std::vector<float>& want,
                                                       const std::vector<double>& bound) {
  if (std::string_view(native::gemm_provider()) == "tempra") return bitwise_equal(got2, got1) << " (1 vs 2 threads)";
  return within(got2, want, bound) << " (2 threads, provider " << native::gemm_provider() << ")";
}

}  // namespace tempra::parity
