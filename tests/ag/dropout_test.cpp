// tests/ag/dropout_test.cpp: dropout's mask is a pure function of (seed, step, element): the
// same step replays bit for bit (any thread count), another step draws another mask, the kept
// fraction is 1 - p, kept values are scaled by 1 / (1 - p), and the VJP regenerates exactly the
// forward's mask (checked element by element and by finite differences).
#include <gtest/gtest.h>

#include <cstdio>

#include "support/errors.h"
#include "tempra/ag/backward.h"
#include "tempra/ag/gradcheck.h"
#include "tempra/ops/ops.h"

namespace tempra {
namespace {

std::vector<float> values(ExecContext& ctx, const Array& a) {
  return to_vector<float>(ctx, a);
}

// Nonzero inputs, so a zero output always means a dropped element.
Array nonzero(ExecContext& ctx, const Dims& shape, uint64_t seed) {
  return uniform(ctx, shape, 0.5, 1.5, seed);
}

TEST(Dropout, replay_of_a_step_is_bitwise_for_any_thread_count) {
  ExecContext one(ExecOptions{.threads = 1}), many(ExecOptions{.threads = 4});
  const Array x1 = nonzero(one, {300, 257}, 1), x4 = nonzero(many, {300, 257}, 1);
  const auto first = values(one, dropout(one, x1, 0.3, 42, 7));
  EXPECT_EQ(values(one, dropout(one, x1, 0.3, 42, 7)), first);
  EXPECT_EQ(values(many, dropout(many, x4, 0.3, 42, 7)), first);
  // A non-contiguous view of the same values gives the same mask: elements are indexed in the
  // logical row-major order, not by memory position.
  const Array xt = contiguous(one, x1.transpose(0, 1));
  EXPECT_EQ(values(one, dropout(one, xt.transpose(0, 1), 0.3, 42, 7)), first);
  EXPECT_NE(values(one, dropout(one, x1, 0.3, 42, 8)), first);
  EXPECT_NE(values(one, dropout(one, x1, 0.3, 43, 7)), first);
}

TEST(Dropout, keeps_one_minus_p_and_scales_the_kept) {
  ExecContext ctx;
  const double p = 0.3;
  const Array x = nonzero(ctx, {100000}, 2);
  const auto in = values(ctx, x), out = values(ctx, dropout(ctx, x, p, 5, 0));
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  int64_t kept = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (out[i] == 0.0f) continue;
    ++kept;
    ASSERT_EQ(out[i], in[i] * scale) << i;
  }
  // Binomial(100000, 0.7): standard deviation 145; 5 sigma.
  EXPECT_NEAR(static_cast<double>(kept), 70000.0, 725.0);
  EXPECT_EQ(values(ctx, dropout(ctx, x, 0.0, 5, 0)), in);
  for (float v : values(ctx, dropout(ctx, x, 1.0, 5, 0))) ASSERT_EQ(v, 0.0f);
}

TEST(Dropout, vjp_regenerates_the_forward_mask) {
  ExecContext ctx;
  const double p = 0.4;
  Array x = nonzero(ctx, {33, 65}, 3);
  x.set_requires_grad();
  const Array cotangent = nonzero(ctx, {33, 65}, 4);
  const Array y = dropout(ctx, x, p, 11, 3);
  ag::backward(ctx, sum_all(ctx, mul(ctx, y, cotangent)));
  const auto ys = values(ctx, y), gs = values(ctx, cotangent), gx = values(ctx, x.grad());
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  for (size_t i = 0; i < ys.size(); ++i) ASSERT_EQ(gx[i], ys[i] == 0.0f ? 0.0f : gs[i] * scale) << i;

  const auto r = ag::gradcheck(
      ctx, [](ExecContext& c, const std::vector<Array>& in) { return dropout(c, in[0].transpose(0, 1), 0.5, 9, 1); },
      {cast(ctx, nonzero(ctx, {4, 6}, 5), DType::f64)});
  EXPECT_TRUE(r.ok) << r.worst;
  std::printf("gradcheck %-28s max error %.3g over %lld elements\n", "dropout", r.max_error,
              static_cast<long long>(r.checked));
}

TEST(Dropout, rejects_a_probability_outside_zero_one_and_integer_input) {
  ExecContext ctx;
  const Array x = nonzero(ctx, {4}, 6);
  EXPECT_NE(testing::error_message([&] { dropout(ctx, x, 1.5, 1, 0); }).find("[0, 1]"), std::string::npos);
  EXPECT_NE(testing::error_message([&] { dropout(ctx, x, -0.1, 1, 0); }).find("dropout"), std::string::npos);
  EXPECT_NE(testing::error_message([&] { dropout(ctx, arange(ctx, 4, DType::i32), 0.5, 1, 0); }).find("dropout"),
            std::string::npos);
}

}  // namespace
}  // namespace tempra
