// tests/ops/linear_test.cpp: y = x . w^T for every weight storage a model file uses.
//
// f32 and f64 weights are matmul with a transposed view (bitwise the same call); f16/bf16
// weights must equal a float64 reference on the widened weights within the f32 GEMM's rounding
// bound, on both backends and on both GEMM paths (skinny rows and packed); quantized weights are
// matmul_quantized exactly. Bad shapes and dtype mixes are errors that name what was wrong.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "support/errors.h"
#include "tempra/ops/ops.h"
#include "tempra/quant/formats.h"

namespace tempra {
namespace {

void expect_matches_widened_reference(ExecContext& ctx, const Array& x, const Array& w_half) {
  const Array y = linear(ctx, x, w_half);
  const int64_t k = x.dim(-1), n = w_half.dim(0), rows = x.numel() / k;
  ASSERT_EQ(y.dim(-1), n);
  ASSERT_EQ(y.dtype(), DType::f32);
  const auto xs = to_vector<float>(ctx, contiguous(ctx, x).reshape({rows, k}));
  const auto ws = to_vector<float>(ctx, cast(ctx, w_half, DType::f32));
  const auto ys = to_vector<float>(ctx, y.reshape({rows, n}));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        exact += double(xs[i * k + p]) * ws[j * k + p];
        magnitude += std::abs(double(xs[i * k + p]) * ws[j * k + p]);
      }
      ASSERT_LE(std::abs(ys[i * n + j] - exact), 2.0 * k * FLT_EPSILON * magnitude + 1e-30)
          << w_half.dtype().name() << " row " << i << " col " << j;
    }
}

TEST(Linear, HalfWeightsMatchAWidenedFloat64Reference) {
  for (Backend backend : {Backend::scalar, Backend::native}) {
    ExecContext ctx(ExecOptions{.threads = 2, .backend = backend});
    const Array w = normal(ctx, {70, 300});
    for (DType half : {DType::f16, DType::bf16}) {
      const Array wh = cast(ctx, w, half);
      expect_matches_widened_reference(ctx, normal(ctx, {1, 300}), wh);      // decode
      expect_matches_widened_reference(ctx, normal(ctx, {2, 3, 300}), wh);   // batch axes
      expect_matches_widened_reference(ctx, normal(ctx, {65, 300}), wh);     // past the skinny path
      expect_matches_widened_reference(ctx, normal(ctx, {300, 40}).transpose(0, 1), wh);  // strided input
    }
  }
}

TEST(Linear, FloatWeightsAreMatmulWithTheTransposedView) {
  ExecContext ctx;
  const Array x = normal(ctx, {5, 64}), w = normal(ctx, {9, 64});
  EXPECT_EQ(to_vector<float>(ctx, linear(ctx, x, w)), to_vector<float>(ctx, matmul(ctx, x, w.transpose(0, 1))));
  const Array xd = cast(ctx, x, DType::f64), wd = cast(ctx, w, DType::f64);
  EXPECT_EQ(linear(ctx, xd, wd).dtype(), DType::f64);
}

TEST(Linear, QuantizedWeightsAreMatmulQuantized) {
  ExecContext ctx;
  const Array x = normal(ctx, {3, 256}), w = quantize(ctx, normal(ctx, {6, 256}), quant::find_format("q4_k")->dtype);
  EXPECT_EQ(to_vector<float>(ctx, linear(ctx, x, w)), to_vector<float>(ctx, matmul_quantized(ctx, x, w)));
}

TEST(Linear, BadShapesAndDtypesNameTheProblem) {
  ExecContext ctx;
  const Array x = normal(ctx, {2, 8}), w = cast(ctx, normal(ctx, {4, 8}), DType::f16);
  EXPECT_NE(testing::error_message([&] { linear(ctx, normal(ctx, {2, 7}), w); }).find("does not match weights"),
            std::string::npos);
  EXPECT_NE(testing::error_message([&] { linear(ctx, x, normal(ctx, {8})); }).find("weights must be [n, k]"),
            std::string::npos);
  EXPECT_NE(testing::error_message([&] { linear(ctx, cast(ctx, x, DType::f64), w); }).find("f64 input"),
            std::string::npos);
  EXPECT_NE(testing::error_message([&] { linear(ctx, x, cast(ctx, normal(ctx, {4, 8}), DType::i32)); })
                .find("weights must be floating"),
            std::string::npos);
}

}  // namespace
}  // namespace tempra
