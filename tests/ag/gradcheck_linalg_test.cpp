// tests/ag/gradcheck_linalg_test.cpp: the VJPs of matmul (batched, broadcasting, vectors),
// linear (float weights; frozen half and quantized weights), bmm and einsum, against central
// finite differences in f64 (tempra/ag/gradcheck.h), on random shapes including broadcast
// batch axes and non-contiguous (transposed, strided) operands.
#include <gtest/gtest.h>

#include <cstdio>

#include "tempra/ag/backward.h"
#include "ag/gradcheck_support.h"
#include "tempra/ag/gradcheck.h"
#include "tempra/ops/ops.h"
#include "tempra/quant/formats.h"

namespace tempra::ag {
namespace {

GradcheckResult check2(ExecContext& ctx, const Array& a, const Array& b,
                       std::function<Array(ExecContext&, const Array&, const Array&)> f) {
  return gradcheck(ctx, [f](ExecContext& c, const std::vector<Array>& in) { return f(c, in[0], in[1]); }, {a, b});
}

TEST(GradcheckLinalg, MatmulPlainBatchedBroadcastAndVectors) {
  ExecContext ctx;
  auto mm = [](ExecContext& c, const Array& a, const Array& b) { return matmul(c, a, b); };
  expect_ok(check2(ctx, anywhere(ctx, {3, 4}, 1), anywhere(ctx, {4, 5}, 2), mm), "matmul 2d");
  // Batch axes broadcast both ways: [2, 1, 3, 4] . [5, 4, 2] -> [2, 5, 3, 2].
  expect_ok(check2(ctx, anywhere(ctx, {2, 1, 3, 4}, 3), anywhere(ctx, {5, 4, 2}, 4), mm), "matmul broadcast batch");
  // A batched left operand with a plain matrix on the right (the weight of a layer).
  expect_ok(check2(ctx, anywhere(ctx, {2, 3, 4}, 5), anywhere(ctx, {4, 3}, 6), mm), "matmul batched x matrix");
  expect_ok(check2(ctx, anywhere(ctx, {4}, 7), anywhere(ctx, {2, 4, 3}, 8), mm), "matmul vector x batched");
  expect_ok(check2(ctx, anywhere(ctx, {2, 3, 4}, 9), anywhere(ctx, {4}, 10), mm), "matmul batched x vector");
  expect_ok(check2(ctx, anywhere(ctx, {4}, 11), anywhere(ctx, {4}, 12), mm), "matmul vector x vector");
  // Non-contiguous operands: a transposed left, a strided right.
  expect_ok(check2(ctx, anywhere(ctx, {4, 3}, 13), anywhere(ctx, {4, 10}, 14),
                   [](ExecContext& c, const Array& a, const Array& b) {
                     return matmul(c, a.transpose(0, 1), b.slice(1, 0, 10, 2));
                   }),
            "matmul transposed strided");
}

TEST(GradcheckLinalg, BmmAndLinear) {
  ExecContext ctx;
  expect_ok(check2(ctx, anywhere(ctx, {2, 3, 4}, 21), anywhere(ctx, {2, 4, 5}, 22),
                   [](ExecContext& c, const Array& a, const Array& b) { return bmm(c, a, b); }),
            "bmm");
  expect_ok(check2(ctx, anywhere(ctx, {2, 3, 4}, 23), anywhere(ctx, {5, 4}, 24),
                   [](ExecContext& c, const Array& x, const Array& w) { return linear(c, x, w); }),
            "linear");
  expect_ok(check2(ctx, anywhere(ctx, {4, 3}, 25), anywhere(ctx, {4, 5}, 26),
                   [](ExecContext& c, const Array& x, const Array& w) {
                     return linear(c, x.transpose(0, 1), w.transpose(0, 1));
                   }),
            "linear transposed");
}

TEST(GradcheckLinalg, EinsumContractionsBatchAxesAndPermutedOutputs) {
  ExecContext ctx;
  const struct {
    const char* equation;
    Dims a, b;
  } cases[] = {
      {"ik,kj->ij", {3, 4}, {4, 5}},
      {"bik,bkj->bij", {2, 3, 4}, {2, 4, 5}},
      {"bhqd,bhkd->bhqk", {2, 2, 3, 4}, {2, 2, 5, 4}},  // attention scores
      {"ij,kj->ki", {3, 4}, {5, 4}},                    // permuted output
      {"abc,cd->dba", {2, 3, 4}, {4, 2}},
      {"i,j->ij", {3}, {4}},             // outer product: nothing contracted
      {"ijk,jk->i", {2, 3, 4}, {3, 4}},  // two contracted axes
  };
  for (const auto& tc : cases) {
    const std::string eq = tc.equation;
    expect_ok(check2(ctx, anywhere(ctx, tc.a, 31), anywhere(ctx, tc.b, 32),
                     [eq](ExecContext& c, const Array& a, const Array& b) { return einsum(c, eq, a, b); }),
              "einsum " + eq);
  }
  // A non-contiguous operand that as_3d must copy.
  expect_ok(check2(ctx, anywhere(ctx, {4, 2, 3}, 33), anywhere(ctx, {2, 4, 5}, 34),
                   [](ExecContext& c, const Array& a, const Array& b) {
                     return einsum(c, "bik,bkj->bij", a.permute({1, 2, 0}), b);
                   }),
            "einsum permuted operand");
}

// Half and quantized weights are frozen: the VJP gives x the gradient of x . dequant(w)^T, which
// is exactly matmul's VJP against the widened weights (the same GEMM on the same numbers).
TEST(GradcheckLinalg, LinearWithFrozenHalfOrQuantizedWeightsPassesTheInputGradient) {
  ExecContext ctx;
  const Array w32 = normal(ctx, {6, 64});
  const Array weights[] = {cast(ctx, w32, DType::f16), cast(ctx, w32, DType::bf16),
                           quantize(ctx, w32, quant::find_format("q8_0")->dtype)};
  for (const Array& w : weights) {
    Array x = normal(ctx, {2, 3, 64});
    x.set_requires_grad();
    const Array cotangent = normal(ctx, {2, 3, 6});
    backward(ctx, sum_all(ctx, mul(ctx, linear(ctx, x, w), cotangent)));
    const Array widened = w.dtype().is_block_quantized() ? dequantize(ctx, w) : cast(ctx, w, DType::f32);
    const Array expected = matmul(ctx, cotangent, widened);
    ASSERT_TRUE(x.grad().defined()) << w.dtype().name();
    EXPECT_EQ(to_vector<float>(ctx, x.grad()), to_vector<float>(ctx, expected)) << w.dtype().name();
  }
}

}  // namespace
}  // namespace tempra::ag
