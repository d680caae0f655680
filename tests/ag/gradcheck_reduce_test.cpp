// tests/ag/gradcheck_reduce_test.cpp: the VJPs of max/min, variance, logsumexp, softmax and
// log_softmax (plain, scaled, causal, masked), cross_entropy and mse, against central finite
// differences in f64 (tempra/ag/gradcheck.h), on every axis, with broadcast masks and
// non-contiguous inputs; plus the cases finite differences cannot see: ties of max/min, keys a
// causal mask hides, rows cross_entropy ignores.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "tempra/ag/backward.h"
#include "ag/gradcheck_support.h"
#include "tempra/ag/gradcheck.h"
#include "tempra/ops/ops.h"

namespace tempra::ag {
namespace {

GradcheckResult check1(ExecContext& ctx, const Array& x, const std::function<Array(ExecContext&, const Array&)>& f) {
  return gradcheck(ctx, [&](ExecContext& c, const std::vector<Array>& in) { return f(c, in[0]); }, {x});
}

TEST(GradcheckReduce, MaxMinVarianceLogsumexpOverEveryAxis) {
  ExecContext ctx;
  const Array x = anywhere(ctx, {3, 4, 5}, 101);  // uniform draws: no ties
  for (int axis = -3; axis < 3; ++axis)
    for (bool keepdim : {false, true}) {
      const std::string tag = " axis " + std::to_string(axis) + (keepdim ? " keepdim" : "");
      expect_ok(check1(ctx, x, [&](ExecContext& c, const Array& a) { return max(c, a, axis, keepdim); }), "max" + tag);
      expect_ok(check1(ctx, x, [&](ExecContext& c, const Array& a) { return min(c, a, axis, keepdim); }), "min" + tag);
      expect_ok(check1(ctx, x, [&](ExecContext& c, const Array& a) { return logsumexp(c, a, axis, keepdim); }),
                "logsumexp" + tag);
      for (int64_t correction : {0, 1, 2})
        expect_ok(
            check1(ctx, x, [&](ExecContext& c, const Array& a) { return variance(c, a, axis, correction, keepdim); }),
            "variance c" + std::to_string(correction) + tag);
    }
  // Non-contiguous input.
  expect_ok(check1(ctx, x, [](ExecContext& c, const Array& a) { return max(c, a.transpose(0, 2), 1); }),
            "max transposed");
  expect_ok(check1(ctx, x, [](ExecContext& c, const Array& a) { return variance(c, a.transpose(1, 2), 0, 1); }),
            "variance transposed");
}

// Shapes and axes drawn from a seeded generator: reductions and softmax over a random axis of a
// random rank-1..4 shape, read through a permuted view; the softmax mask broadcast from a random
// subset of the axes.
TEST(GradcheckReduce, RandomShapesAndAxes) {
  ExecContext ctx;
  std::mt19937_64 rng(77);
  auto draw = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 8; ++trial) {
    const int rank = static_cast<int>(draw(1, 4));
    Dims shape;
    for (int i = 0; i < rank; ++i) shape.push_back(draw(1, 4));
    const int axis = static_cast<int>(draw(-rank, rank - 1));
    const bool keepdim = draw(0, 1);
    const int64_t correction = std::min<int64_t>(draw(0, 2), shape[(axis + rank) % rank] - 1);
    // The input is stored reversed and read through the reversing permutation (non-contiguous).
    Dims reversed, order;
    for (int i = rank - 1; i >= 0; --i) reversed.push_back(shape[i]), order.push_back(i);
    const Array x = anywhere(ctx, reversed, 160 + trial);
    Dims mask_shape = shape;
    for (int i = 0; i < rank; ++i)
      if (draw(0, 1)) mask_shape[i] = 1;
    const Array mask = anywhere(ctx, mask_shape, 170 + trial, -1.0, 0.0);
    const std::string tag = " " + to_string(shape) + " axis " + std::to_string(axis) + (keepdim ? " keepdim" : "");
    auto view = [order](const Array& a) { return a.permute(order); };
    for (ReduceOp op : {ReduceOp::max, ReduceOp::min, ReduceOp::variance, ReduceOp::logsumexp}) {
      const char* name = op == ReduceOp::max        ? "max"
                         : op == ReduceOp::min      ? "min"
                         : op == ReduceOp::variance ? "variance"
                                                    : "logsumexp";
      expect_ok(check1(ctx, x,
                       [&](ExecContext& c, const Array& a) {
                         return reduce(c, op, view(a), axis, keepdim, op == ReduceOp::variance ? correction : 0);
                       }),
                name + tag);
    }
    for (bool log : {false, true})
      expect_ok(gradcheck(ctx,
                          [&](ExecContext& c, const std::vector<Array>& in) {
                            SoftmaxOptions o;
                            o.scale = 1.3;
                            o.mask = in[1];
                            return log ? log_softmax(c, view(in[0]), axis, o) : softmax(c, view(in[0]), axis, o);
                          },
                          {x, mask}),
                (log ? "log_softmax" : "softmax") + tag + " mask " + to_string(mask_shape));
  }
}

// At a tie max is not differentiable; the VJP follows torch's amax: the gradient is split
// evenly among the maxima (and NaN for a NaN result).
TEST(GradcheckReduce, MaxAndMinSplitTheGradientEvenlyAmongTies) {
  ExecContext ctx;
  Array x = Array::from_values<double>(ctx, {2, 4}, {1.0, 3.0, 3.0, 3.0, -1.0, -1.0, 0.5, 2.0});
  x.set_requires_grad();
  backward(ctx, sum_all(ctx, mul(ctx, max(ctx, x, 1), 6.0)));
  EXPECT_EQ(to_vector<double>(ctx, x.grad()), (std::vector<double>{0, 2, 2, 2, 0, 0, 0, 6}));
  Array y = Array::from_values<double>(ctx, {2, 4}, {1.0, 3.0, 3.0, 3.0, -1.0, -1.0, 0.5, 2.0});
  y.set_requires_grad();
  backward(ctx, sum_all(ctx, min(ctx, y, 1)));
  EXPECT_EQ(to_vector<double>(ctx, y.grad()), (std::vector<double>{1, 0, 0, 0, 0.5, 0.5, 0, 0}));
  Array z = Array::from_values<double>(ctx, {3}, {1.0, std::numeric_limits<double>::quiet_NaN(), 2.0});
  z.set_requires_grad();
  backward(ctx, sum_all(ctx, max(ctx, z, 0)));
  for (double g : to_vector<double>(ctx, z.grad())) EXPECT_TRUE(std::isnan(g));
}

TEST(GradcheckSoftmax, PlainScaledAndOnEveryAxis) {
  ExecContext ctx;
  const Array x = anywhere(ctx, {3, 4, 5}, 111);
  for (bool log : {false, true}) {
    const std::string name = log ? "log_softmax" : "softmax";
    auto op = [log](ExecContext& c, const Array& a, int axis, const SoftmaxOptions& o) {
      return log ? log_softmax(c, a, axis, o) : softmax(c, a, axis, o);
    };
    for (int axis = -3; axis < 3; ++axis)
      expect_ok(check1(ctx, x, [&](ExecContext& c, const Array& a) { return op(c, a, axis, {}); }),
                name + " axis " + std::to_string(axis));
    SoftmaxOptions scaled;
    scaled.scale = 0.37;
    expect_ok(check1(ctx, x, [&](ExecContext& c, const Array& a) { return op(c, a, -1, scaled); }), name + " scaled");
    expect_ok(check1(ctx, x, [&](ExecContext& c, const Array& a) { return op(c, a.transpose(0, 2), -1, scaled); }),
              name + " transposed");
  }
}

TEST(GradcheckSoftmax, CausalAndMaskedWithTheMasksGradient) {
  ExecContext ctx;
  const Array x = anywhere(ctx, {2, 4, 6}, 121);  // 4 queries over 6 keys
  const Array mask_qk = anywhere(ctx, {4, 6}, 122, -3.0, 0.0);
  const Array mask_row = anywhere(ctx, {2, 1, 6}, 123, -3.0, 0.0);
  for (bool log : {false, true}) {
    const std::string name = log ? "log_softmax" : "softmax";
    for (bool causal : {false, true}) {
      for (const Array* mask : {&mask_qk, &mask_row}) {
        const std::string tag = name + (causal ? " causal" : "") + " mask " + to_string(mask->shape());
        auto fn = [&](ExecContext& c, const std::vector<Array>& in) {
          SoftmaxOptions o;
          o.scale = 0.8;
          o.causal = causal;
          o.mask = in[1];
          const Array y = log ? log_softmax(c, in[0], -1, o) : softmax(c, in[0], -1, o);
          // A causal log_softmax is -inf at hidden keys; exp keeps the check finite there.
          return log && causal ? exp(c, y) : y;
        };
        expect_ok(gradcheck(ctx, fn, {x, *mask}), tag);
      }
    }
  }
  // The mask broadcast along a non-last softmax axis.
  expect_ok(gradcheck(ctx,
                      [](ExecContext& c, const std::vector<Array>& in) {
                        SoftmaxOptions o;
                        o.mask = in[1];
                        return softmax(c, in[0], 1, o);
                      },
                      {x, mask_row}),
            "softmax axis 1 mask [2, 1, 6]");
  // -inf in the mask: those keys get probability 0 and no gradient, from x or from the mask.
  Array hard = copy(ctx, mask_qk);
  hard.data<double>()[1] = -std::numeric_limits<double>::infinity();
  hard.data<double>()[8] = -std::numeric_limits<double>::infinity();
  expect_ok(gradcheck(ctx,
                      [](ExecContext& c, const std::vector<Array>& in) {
                        SoftmaxOptions o;
                        o.mask = in[1];
                        return softmax(c, in[0], -1, o);
                      },
                      {x, hard}),
            "softmax mask with -inf");
}

// Keys a causal mask hides never reach the output, so their logits get exactly zero gradient,
// even from log_softmax, whose output there is a constant -inf; the visible keys get the gradient
// of log_softmax over the row's visible prefix.
TEST(GradcheckSoftmax, CausalLogSoftmaxMatchesTheVisiblePrefix) {
  ExecContext ctx;
  const int64_t q = 3, k = 5;
  Array x = anywhere(ctx, {q, k}, 131);
  x.set_requires_grad();
  const Array seed = anywhere(ctx, {q, k}, 132);
  SoftmaxOptions o;
  o.causal = true;
  backward(ctx, log_softmax(ctx, x, -1, o), seed);
  for (int64_t i = 0; i < q; ++i) {
    const int64_t visible = i + (k - q) + 1;
    Array row = copy(ctx, x.detach().select(0, i).narrow(0, 0, visible));
    row.set_requires_grad();
    backward(ctx, log_softmax(ctx, row, -1), copy(ctx, seed.select(0, i).narrow(0, 0, visible)));
    for (int64_t j = 0; j < k; ++j)
      EXPECT_NEAR(x.grad().at({i, j}), j < visible ? row.grad().at({j}) : 0.0, 1e-15) << i << ", " << j;
  }
}

TEST(GradcheckLoss, CrossEntropyEveryReductionWithIgnoredRows) {
  ExecContext ctx;
  const Array logits = anywhere(ctx, {6, 5}, 141, -3.0, 3.0);
  const Array targets = Array::from_values<int64_t>(ctx, {6}, {0, 4, -100, 2, 2, 1});
  const Array targets_i32 = Array::from_values<int32_t>(ctx, {6}, {3, 7, 1, 0, 7, 4});  // ignore_index 7
  for (Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
    const std::string tag = reduction == Reduction::none ? "none" : reduction == Reduction::sum ? "sum" : "mean";
    expect_ok(check1(ctx, logits,
                     [&](ExecContext& c, const Array& a) {
                       return cross_entropy(c, a, targets, {.ignore_index = -100, .reduction = reduction});
                     }),
              "cross_entropy " + tag);
    expect_ok(check1(ctx, logits,
                     [&](ExecContext& c, const Array& a) {
                       return cross_entropy(c, a.transpose(0, 1).transpose(0, 1), targets_i32,
                                            {.ignore_index = 7, .reduction = reduction});
                     }),
              "cross_entropy ignore 7 " + tag);
  }
  // Ignored rows get exactly zero, and the mean divides by the kept rows only (as torch).
  Array x = copy(ctx, logits);
  x.set_requires_grad();
  backward(ctx, cross_entropy(ctx, x, targets));
  for (int64_t c = 0; c < 5; ++c) EXPECT_EQ(x.grad().at({2, c}), 0.0);
  double row_sum = 0;
  for (int64_t c = 0; c < 5; ++c) row_sum += x.grad().at({0, c});
  EXPECT_NEAR(row_sum, 0.0, 1e-15);
  EXPECT_NEAR(x.grad().at({0, 0}), (std::exp(logits.at({0, 0}) - logsumexp(ctx, logits, 1).at({0})) - 1.0) / 5.0,
              1e-15);
}

TEST(GradcheckLoss, MseEveryReductionBothInputs) {
  ExecContext ctx;
  const Array prediction = anywhere(ctx, {4, 3}, 151), target = anywhere(ctx, {4, 3}, 152);
  for (Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean})
    expect_ok(gradcheck(ctx,
                        [reduction](ExecContext& c, const std::vector<Array>& in) {
                          return mse(c, in[0].transpose(0, 1), in[1].transpose(0, 1), reduction);
                        },
                        {prediction, target}),
              std::string("mse ") + (reduction == Reduction::none  ? "none"
                                     : reduction == Reduction::sum ? "sum"
                                                                   : "mean"));
}

}  // namespace
}  // namespace tempra::ag
