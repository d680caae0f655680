// tempra/backend/native/activations.h: vector forms of the transcendental activations.
//
// Each follows the scalar kernel's formula (scalar/elementwise.cpp) with simd::exp in place of
// std::exp, so each differs from scalar by the exp's few ulp plus one or two roundings:
// tests/backend/native_elementwise_parity_test.cpp bounds them by 1e-6 relative (~8 ulp).
#pragma once

#include "tempra/backend/native/simd.h"

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native {

inline simd::V sigmoid(simd::V x) {
  using namespace simd;
  return div(set1(1.0f), add(set1(1.0f), exp(neg(x))));
}

inline simd::V silu(simd::V x) {
  using namespace simd;
  return div(x, add(set1(1.0f), exp(neg(x))));
}

// x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3): 0.5 x (1 + tanh u) without cancellation.
inline simd::V gelu_tanh(simd::V x) {
  using namespace simd;
  const V u = mul(set1(0.7978845608028654f), add(x, mul(mul(mul(set1(0.044715f), x), x), x)));
  return div(x, add(set1(1.0f), exp(mul(set1(-2.0f), u))));
}

// tanh: Cephes tanhf. Below |x| = 0.625 an odd polynomial (1 - 2 / (e^2x + 1) would cancel);
// above it that identity, with the sign put back. NaN propagates through the exp branch.
inline simd::V tanh(simd::V x) {
  using namespace simd;
  const V a = abs(x);
  const V z = mul(x, x);
  V p = set1(-5.70498872745e-3f);
  p = fma(p, z, set1(2.06390887954e-2f));
  p = fma(p, z, set1(-5.37397155531e-2f));
  p = fma(p, z, set1(1.33314422036e-1f));
  p = fma(p, z, set1(-3.33332819422e-1f));
  const V small = fma(mul(p, z), x, x);
  const V large = copysign(sub(set1(1.0f), div(set1(2.0f), add(exp(add(a, a)), set1(1.0f)))), x);
  return select(less(a, set1(0.625f)), small, large);
}

}  // namespace tempra::native
#endif
