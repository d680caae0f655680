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
#include <vector>

#include "tempra/core/dtype.h"
#include "tempra/core/exec_context.h"

namespace tempra {

// c[i * ldc + j] = dot(k, row j of w, row i of a) for i < m, j < n: a is m rows of the partner
// format, w n rows of the weight format, both contiguous (bytes_for(k) apart).
using QuantDotGemm = void (*)(int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c, int64_t ldc,
                              ThreadPool& pool);

struct QuantDot {
  DType weight;
  DType activation;  // the partner format activations are quantized to
  // sum over n elements of weight_row * activation_row; n a multiple of the block size.
  float (*dot)(int64_t n, const void* weight_row, const void* activation_row);
  // The same products for many rows at once, bit for bit what `dot` returns for each element
  // (the same integer sums, the same float operations in the same order), from weights packed
  // per call into the layout of an integer micro-kernel; null where the arm has none.
  QuantDotGemm gemm = nullptr;
  // The same for a few rows (decode steps), reading the weights in place; null where none.
  QuantDotGemm gemv = nullptr;
  // The partner format's row encoder, bytes identical to its reference quantize_row
  // (quant/formats.h); null where the arm has none.
  void (*quantize)(const float* in, void* blocks, int64_t k) = nullptr;
};

// The dot for rows of `weight`, or null when the format has none (yet). With Backend::native,
// the first of native::quant_dot_arms() that has the format, else scalar.
const QuantDot* find_quant_dot(DType weight, Backend backend = Backend::scalar);

// The row encoder to `format` (any block format): the first native arm's for that partner
// format where `backend` is native and an arm has one, else the reference quantize_row (null
// where the format has no encoder). The same bytes either way.
using RowEncoder = void (*)(const float* in, void* blocks, int64_t k);
RowEncoder row_encoder(DType format, Backend backend = Backend::scalar);

// c = a w^T through `dot`, bit for bit dot.dot per element whatever m is and however the work
// is split: dot.gemm from kQuantGemmMinRows rows where the arm has one (its weight packing is
// paid once per call), dot.gemv below that, else a block of weight rows at a time against
// every row of a, so m rows read the weights from memory once, not m times.
inline constexpr int64_t kQuantGemmMinRows = 4;
// Rows of activations (rows x k floats, contiguous) to dot.activation's format, row after row
// into `out`: the arm's encoder where it has one, else the reference; the same bytes either way.
void quantize_activations(const QuantDot& dot, const float* x, int64_t rows, int64_t k, void* out, ThreadPool& pool);
void quant_dot_gemm(const QuantDot& dot, int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c,
                    int64_t ldc, ThreadPool& pool);

namespace native {

// A SIMD arm of the quantized dots and the formats it covers, each bit-identical to scalar.
struct QuantDotArm {
  const char* name;
  std::span<const QuantDot> dots;
};

// The formats every native arm covers, one function each (the IQ4 formats where the arm has
// them); hot_format_dots() pairs them with their weight and partner dtypes, so the arms list
// only functions (an arm may take another's: the x86 VNNI arm uses the AVX2 arm's K-quant GEMVs).
struct HotFormatDots {
  using Dot = float (*)(int64_t, const void*, const void*);
  Dot q8_0, q4_0, q4_k, q5_k, q6_k, tq2_0;
  Dot iq4_nl = nullptr, iq4_xs = nullptr;
  QuantDotGemm q8_0_gemm = nullptr, q4_0_gemm = nullptr, q4_k_gemm = nullptr, q5_k_gemm = nullptr,
               q6_k_gemm = nullptr, tq2_0_gemm = nullptr, iq4_nl_gemm = nullptr, iq4_xs_gemm = nullptr;
  QuantDotGemm q8_0_gemv = nullptr, q4_0_gemv = nullptr, q4_k_gemv = nullptr, q5_k_gemv = nullptr,
               q6_k_gemv = nullptr, tq2_0_gemv = nullptr, iq4_nl_gemv = nullptr, iq4_xs_gemv = nullptr;
  using Quantize = void (*)(const float*, void*, int64_t);
  Quantize q8_0_rows = nullptr, q8_k_rows = nullptr;  // the partners' encoders
};
// The formats with a dot, in the order above.
std::vector<QuantDot> hot_format_dots(const HotFormatDots& dots);

// The arms this build has and this CPU runs, best first: x86-64 "avx512vnni" (checked by
// CPUID; built unless TEMPRA_QUANT_AVX512=OFF, as in the avx2 preset), then "avx2" (CPUID);
// aarch64 "neon" (always; sdot when compiled with dotprod). Each covers Q8_0, Q4_0, Q4_K, Q5_K,
// Q6_K, TQ2_0, IQ4_NL and IQ4_XS (the x86 arms with integer GEMMs and decode GEMVs for all
// eight). Empty in builds without native arms (TEMPRA_BACKENDS=scalar, other architectures).
std::span<const QuantDotArm> quant_dot_arms();

}  // namespace native

}  // namespace tempra
