// tests/ag/backward_test.cpp: the contract of the backward engine (tempra/ag/backward.h) and of
// the graph the values hold (tempra/core/grad_node.h): leaves accumulate, grad mode and detach
// stop recording, a graph is used once, views pass gradients through, and gradients are bitwise
// identical for 1 and N threads.
#include "tempra/ag/backward.h"

#include <gtest/gtest.h>

#include <cstring>

#include "support/errors.h"
#include "tempra/ag/ag.h"
#include "tempra/ops/ops.h"

namespace tempra::ag {
namespace {

#define EXPECT_THROW_MSG(statement, text) \
  EXPECT_NE(tempra::testing::error_message([&] { statement; }).find(text), std::string::npos)

Array vec(ExecContext& ctx, std::initializer_list<double> v) {
  return Array::from_values<double>(ctx, {static_cast<int64_t>(v.size())}, v);
}

TEST(Backward, ProductRuleAccumulatesEveryPathIntoTheLeaf) {
  ExecContext ctx;
  Array x = vec(ctx, {1.5, -2.0, 3.0});
  x.set_requires_grad();
  // y = sum(x * x + 3 x): dy/dx = 2x + 3, reached through three edges into x.
  Array y = sum_all(ctx, add(ctx, mul(ctx, x, x), mul(ctx, x, 3.0)));
  backward(ctx, y);
  ASSERT_TRUE(x.grad().defined());
  EXPECT_DOUBLE_EQ(x.grad().at({0}), 2 * 1.5 + 3);
  EXPECT_DOUBLE_EQ(x.grad().at({1}), 2 * -2.0 + 3);
  EXPECT_DOUBLE_EQ(x.grad().at({2}), 2 * 3.0 + 3);
}

TEST(Backward, GradientsAccumulateAcrossPassesUntilZeroed) {
  ExecContext ctx;
  Array x = vec(ctx, {2.0});
  x.set_requires_grad();
  backward(ctx, sum_all(ctx, mul(ctx, x, 5.0)));
  backward(ctx, sum_all(ctx, mul(ctx, x, 5.0)));
  EXPECT_DOUBLE_EQ(x.grad().at({0}), 10.0);
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Backward, NothingIsRecordedWithoutAnInputThatRequiresAGradient) {
  ExecContext ctx;
  Array x = vec(ctx, {1.0, 2.0});
  Array y = exp(ctx, mul(ctx, x, x));
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_node(), nullptr);
}

TEST(Backward, NoGradGuardAndDetachStopRecording) {
  ExecContext ctx;
  Array x = vec(ctx, {1.0, 2.0});
  x.set_requires_grad();
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(mul(ctx, x, x).requires_grad());
    EXPECT_FALSE(x.transpose(0, 0).requires_grad());
  }
  EXPECT_TRUE(mul(ctx, x, x).requires_grad());
  EXPECT_FALSE(mul(ctx, x.detach(), x.detach()).requires_grad());
  EXPECT_TRUE(x.requires_grad());  // detach made a new handle; x itself is untouched
}

TEST(Backward, ASecondBackwardThroughAUsedGraphIsAClearError) {
  ExecContext ctx;
  Array x = vec(ctx, {1.0, 2.0});
  x.set_requires_grad();
  Array y = sum_all(ctx, exp(ctx, x));
  backward(ctx, y);
  EXPECT_THROW_MSG(backward(ctx, y), "already used by a backward pass");
}

TEST(Backward, RootMustBeScalarOrSeeded) {
  ExecContext ctx;
  Array x = vec(ctx, {1.0, 2.0});
  x.set_requires_grad();
  Array y = mul(ctx, x, 2.0);
  EXPECT_THROW_MSG(backward(ctx, y), "give a seed gradient");
  Array seed = vec(ctx, {1.0, 10.0});
  backward(ctx, y, seed);
  EXPECT_DOUBLE_EQ(x.grad().at({1}), 20.0);
  EXPECT_THROW_MSG(backward(ctx, vec(ctx, {1.0})), "does not require a gradient");
}

TEST(Backward, OnlyLeavesCanBeMarkedAndOnlyFloats) {
  ExecContext ctx;
  Array x = vec(ctx, {1.0});
  x.set_requires_grad();
  Array y = mul(ctx, x, 2.0);
  EXPECT_THROW_MSG(y.set_requires_grad(), "already tracks its inputs");
  Array i = Array::from_values<int64_t>(ctx, {1}, {3});
  EXPECT_THROW_MSG(i.set_requires_grad(), "only f32 and f64");
  EXPECT_THROW_MSG(x.set_grad(vec(ctx, {1.0, 2.0})), "does not match the parameter");
}

TEST(Backward, ViewsScatterTheirGradientBackToTheInputsLayout) {
  ExecContext ctx;
  Array w = Array::from_values<double>(ctx, {2, 3}, {1, 2, 3, 4, 5, 6});
  w.set_requires_grad();
  // A transposed slice and a broadcast: each element's gradient is how often it was read,
  // weighted by the cotangent.
  Array t = w.transpose(0, 1).slice(0, 1, 3);               // [2, 2]: columns 1 and 2
  Array b = w.select(0, 0).unsqueeze(0).broadcast_to({4, 3});  // row 0 read 4 times
  backward(ctx, add(ctx, sum_all(ctx, mul(ctx, t, 2.0)), sum_all(ctx, b)));
  const double expected[2][3] = {{4, 6, 6}, {0, 2, 2}};
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_DOUBLE_EQ(w.grad().at({i, j}), expected[i][j]) << i << "," << j;
}

TEST(Backward, GradientsAreBitwiseIdenticalForOneAndManyThreads) {
  auto run = [](int threads) {
    ExecContext ctx(ExecOptions{.threads = threads});
    Array x = normal(ctx, {64, 257}, 0.0, 1.0, 7);
    Array w = normal(ctx, {257}, 0.0, 1.0, 8);
    x.set_requires_grad();
    w.set_requires_grad();
    // Independent branches (fired concurrently) that meet again, and broadcast sums.
    Array a = tanh(ctx, mul(ctx, x, w));
    Array b = sigmoid(ctx, add(ctx, x, w));
    Array loss = mean_all(ctx, add(ctx, mul(ctx, a, b), square(ctx, sub(ctx, a, b))));
    backward(ctx, loss);
    return std::pair{to_vector<float>(ctx, x.grad()), to_vector<float>(ctx, w.grad())};
  };
  const auto one = run(1), many = run(4);
  ASSERT_EQ(one.first.size(), many.first.size());
  EXPECT_EQ(std::memcmp(one.first.data(), many.first.data(), one.first.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(one.second.data(), many.second.data(), one.second.size() * sizeof(float)), 0);
}

TEST(Backward, CustomOpUsesItsOwnVjp) {
  ExecContext ctx;
  Array x = vec(ctx, {1.0, 2.0});
  x.set_requires_grad();
  // A "straight-through" rounding: forward rounds to a multiple of 0.5, backward passes g.
  Array y = custom_op(
      ctx, "round_half", {x},
      [](ExecContext& c, const std::vector<Array>& in) { return mul(c, in[0], 1.0); },
      [](ExecContext& c, const Array& g, const std::vector<bool>&) { return std::vector<Array>{mul(c, g, 3.0)}; });
  EXPECT_EQ(y.grad_node()->name(), "round_half");
  backward(ctx, sum_all(ctx, y));
  EXPECT_DOUBLE_EQ(x.grad().at({0}), 3.0);
}

TEST(Backward, CheckpointedBlockGivesBitwiseTheSameGradients) {
  auto run = [](bool checkpointed) {
    ExecContext ctx;
    Array x = normal(ctx, {8, 33}, 0.0, 1.0, 3);
    Array w = normal(ctx, {33}, 0.0, 1.0, 4);
    x.set_requires_grad();
    w.set_requires_grad();
    auto block = [&w](ExecContext& c, const std::vector<Array>& in) {
      return silu(c, mul(c, exp(c, mul(c, in[0], w)), in[0]));
    };
    Array h = checkpointed ? checkpoint(ctx, block, {x}) : block(ctx, {x});
    backward(ctx, sum_all(ctx, mul(ctx, h, h)));
    return std::pair{to_vector<float>(ctx, x.grad()), to_vector<float>(ctx, w.grad())};
  };
  const auto plain = run(false), ckpt = run(true);
  EXPECT_EQ(std::memcmp(plain.first.data(), ckpt.first.data(), plain.first.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(plain.second.data(), ckpt.second.data(), plain.second.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace tempra::ag
