// tempra/backend/quant_dot.h: dot products of quantized rows, the way ggml computes them.
//
// A quantized matmul never dequantizes its weights: each activation row is quantized to the
// weight format's partner (Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL, Q8_1 for Q4_1/Q5_1, Q8_K for the
// K-quants, IQ4_XS, TQ1_0 and TQ2_0),
// then every block contributes an exact integer dot product scaled by the two blocks' scales.
// The scalar kernels here are the specification: bit-identical to ggml's *_generic vec_dot
// functions (tests/backend/quant_dot_test.cpp checks against them), so the integer sums are
// exact and the float accumulation follows ggml's order. Native arms must match the integer
// sums bitwise.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "tempra/core/dtype.h"
#include "tempra/core/exec_context.h"

namespace tempra {

struct QuantDot {
  DType weight;
  DType activation;  // the partner format activations are quantized to
  // sum over n elements of weight_row * activation_row; n a multiple of the block size.
  float (*dot)(int64_t n, const void* weight_row, const void* activation_row);
};

// The dot for rows of `weight`, or null when the format has none (yet). With Backend::native,
// the first of native::quant_dot_arms() that has the format, else scalar.
const QuantDot* find_quant_dot(DType weight, Backend backend = Backend::scalar);

namespace native {

// A SIMD arm of the quantized dots and the formats it covers, each bit-identical to scalar.
struct QuantDotArm {
  const char* name;
  std::span<const QuantDot> dots;
};

// The formats every native arm covers, one function each; hot_format_dots() pairs them with
// their weight and partner dtypes, so the arms list only their own functions.
struct HotFormatDots {
  using Dot = float (*)(int64_t, const void*, const void*);
  Dot q8_0, q4_0, q4_k, q5_k, q6_k, tq2_0;
};
std::array<QuantDot, 6> hot_format_dots(const HotFormatDots& dots);

// The arms this build has and this CPU runs, best first: x86-64 "avx512vnni" (checked by
// CPUID), then "avx2" (CPUID); aarch64 "neon" (always; sdot when compiled with dotprod). Each
// covers Q8_0, Q4_0, Q4_K, Q5_K, Q6_K and TQ2_0. Empty in builds without native arms
// (TEMPRA_BACKENDS=scalar, other architectures).
std::span<const QuantDotArm> quant_dot_arms();

}  // namespace native

}  // namespace tempra
