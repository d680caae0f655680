// tests/ag/gradcheck_elementwise_test.cpp: every unary and binary op's VJP, the reductions with
// VJPs, casts and the views, against central finite differences in f64 (tempra/ag/gradcheck.h),
// on random shapes including broadcasting and non-contiguous inputs.
#include <gtest/gtest.h>

#include <cstdio>

#include "tempra/ag/backward.h"
#include "ag/gradcheck_support.h"
#include "tempra/ag/gradcheck.h"
#include "tempra/ops/ops.h"

namespace tempra::ag {
namespace {

// Inputs in a range every op is smooth on (log, sqrt, rsqrt, pow need positive bases).
Array positive(ExecContext& ctx, const Dims& shape, uint64_t seed) {
  return cast(ctx, uniform(ctx, shape, 0.5, 2.0, seed), DType::f64);
}
class UnaryGradcheck : public ::testing::TestWithParam<UnaryOp> {};

TEST_P(UnaryGradcheck, MatchesFiniteDifferences) {
  ExecContext ctx;
  const UnaryOp op = GetParam();
  const bool needs_positive = op == UnaryOp::log || op == UnaryOp::sqrt || op == UnaryOp::rsqrt;
  // relu and abs are not differentiable at 0: uniform draws never land within eps of it.
  Array x = needs_positive ? positive(ctx, {3, 5}, 11) : anywhere(ctx, {3, 5}, 11);
  auto r = gradcheck(ctx, [op](ExecContext& c, const std::vector<Array>& in) { return unary(c, op, in[0]); }, {x});
  expect_ok(r, op_name(op));
  // And through a non-contiguous (transposed) input.
  auto rt = gradcheck(
      ctx, [op](ExecContext& c, const std::vector<Array>& in) { return unary(c, op, in[0].transpose(0, 1)); }, {x});
  expect_ok(rt, std::string(op_name(op)) + "_transposed");
}

INSTANTIATE_TEST_SUITE_P(AllUnaryOps, UnaryGradcheck,
                         ::testing::Values(UnaryOp::neg, UnaryOp::abs, UnaryOp::exp, UnaryOp::log, UnaryOp::sqrt,
                                           UnaryOp::rsqrt, UnaryOp::square, UnaryOp::tanh, UnaryOp::sigmoid,
                                           UnaryOp::relu, UnaryOp::gelu_tanh, UnaryOp::gelu_erf, UnaryOp::silu,
                                           UnaryOp::softplus, UnaryOp::sin, UnaryOp::cos),
                         [](const auto& info) { return std::string(op_name(info.param)); });

class BinaryGradcheck : public ::testing::TestWithParam<BinaryOp> {};

TEST_P(BinaryGradcheck, MatchesFiniteDifferencesWithBroadcasting) {
  ExecContext ctx;
  const BinaryOp op = GetParam();
  // [4, 1, 3] op [2, 3]: both operands broadcast, so both gradients are sums.
  Array a = positive(ctx, {4, 1, 3}, 21), b = positive(ctx, {2, 3}, 22);
  auto r = gradcheck(ctx, [op](ExecContext& c, const std::vector<Array>& in) { return binary(c, op, in[0], in[1]); },
                     {a, b});
  expect_ok(r, op_name(op));
  auto rs = gradcheck(ctx, [op](ExecContext& c, const std::vector<Array>& in) { return binary(c, op, in[0], 1.3); },
                      {a});
  expect_ok(rs, std::string(op_name(op)) + "_scalar");
}

INSTANTIATE_TEST_SUITE_P(AllBinaryOps, BinaryGradcheck,
                         ::testing::Values(BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div, BinaryOp::pow,
                                           BinaryOp::maximum, BinaryOp::minimum),
                         [](const auto& info) { return std::string(op_name(info.param)); });

TEST(Gradcheck, SumAndMeanOverEveryAxis) {
  ExecContext ctx;
  Array x = anywhere(ctx, {2, 3, 4}, 31);
  for (int axis = -3; axis < 3; ++axis)
    for (bool keepdim : {false, true}) {
      const std::string tag = "axis " + std::to_string(axis) + (keepdim ? " keepdim" : "");
      expect_ok(gradcheck(ctx, [&](ExecContext& c, const std::vector<Array>& in) { return sum(c, in[0], axis, keepdim); }, {x}),
                "sum " + tag);
      expect_ok(gradcheck(ctx, [&](ExecContext& c, const std::vector<Array>& in) { return mean(c, in[0], axis, keepdim); }, {x}),
                "mean " + tag);
    }
  expect_ok(gradcheck(ctx, [](ExecContext& c, const std::vector<Array>& in) { return sum_all(c, in[0].transpose(0, 2)); }, {x}),
            "sum_all");
  expect_ok(gradcheck(ctx, [](ExecContext& c, const std::vector<Array>& in) { return mean_all(c, in[0]); }, {x}), "mean_all");
}

TEST(Gradcheck, ViewsAndCasts) {
  ExecContext ctx;
  Array x = anywhere(ctx, {3, 4}, 41);
  auto check_fn = [&](const char* what, GradFn fn) { expect_ok(gradcheck(ctx, fn, {x}), what); };
  check_fn("slice_step", [](ExecContext& c, const std::vector<Array>& in) { return in[0].slice(1, 0, 4, 2); });
  check_fn("select", [](ExecContext& c, const std::vector<Array>& in) { return in[0].select(0, 1); });
  check_fn("permute", [](ExecContext& c, const std::vector<Array>& in) { return in[0].permute({1, 0}); });
  check_fn("reshape", [](ExecContext& c, const std::vector<Array>& in) { return in[0].reshape({2, 6}); });
  check_fn("broadcast", [](ExecContext& c, const std::vector<Array>& in) {
    return in[0].unsqueeze(0).broadcast_to({2, 3, 4});
  });
  check_fn("squeeze", [](ExecContext& c, const std::vector<Array>& in) { return in[0].unsqueeze(1).squeeze(1); });
  check_fn("contiguous", [](ExecContext& c, const std::vector<Array>& in) {
    return contiguous(c, in[0].transpose(0, 1));
  });
  check_fn("copy", [](ExecContext& c, const std::vector<Array>& in) { return copy(c, in[0]); });
}

// A cast's VJP is the cast back (f32 rounding makes finite differences through it meaningless at
// eps = 1e-6, so this checks the gradient directly: d sum(3 * f64(f32(x))) / dx = 3 exactly).
TEST(Gradcheck, CastPassesTheGradientBackInTheInputsDtype) {
  ExecContext ctx;
  Array x = anywhere(ctx, {2, 3}, 43);
  x.set_requires_grad();
  Array y = sum_all(ctx, mul(ctx, cast(ctx, cast(ctx, x, DType::f32), DType::f64), 3.0));
  backward(ctx, y);
  ASSERT_EQ(x.grad().dtype(), DType::f64);
  for (double g : to_vector<double>(ctx, x.grad())) EXPECT_EQ(g, 3.0);
}

}  // namespace
}  // namespace tempra::ag
