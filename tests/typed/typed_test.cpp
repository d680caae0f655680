// tests/typed/typed_test.cpp: the named-axis layer computes what the untyped ops compute.
#include <gtest/gtest.h>

#include "support/errors.h"
#include "tempra/typed/ops.h"

namespace {

TEMPRA_AXES(batch, in, h1, cls, head, seq);

using tempra::Array;
using tempra::ExecContext;
using tempra::Tensor;
using tempra::testing::error_message;

std::vector<float> values(ExecContext& ctx, const Array& a) { return tempra::to_vector<float>(ctx, a); }

TEST(Typed, tensor_is_a_zero_cost_wrapper) {
  static_assert(sizeof(Tensor<batch, in>) == sizeof(Array));
  static_assert(sizeof(Tensor<batch, in, h1, cls>) == sizeof(Array));
  static_assert(!std::is_same_v<Tensor<batch, in>, Tensor<in, batch>>);
  SUCCEED();
}

TEST(Typed, dot_contracts_by_name_and_matches_matmul) {
  ExecContext ctx;
  const auto x = Tensor<batch, in>::normal(ctx, {5, 7});
  const auto w = Tensor<h1, in>::normal(ctx, {3, 7});
  const Tensor<batch, h1> y = x.dot<in>(ctx, w);
  EXPECT_EQ(y.shape(), (tempra::Dims{5, 3}));
  const Array expected = tempra::matmul(ctx, x.array(), w.array().transpose(0, 1));
  EXPECT_EQ(values(ctx, y.array()), values(ctx, expected));
}

TEST(Typed, dot_keeps_shared_axes_as_batch_axes) {
  ExecContext ctx;
  const auto q = Tensor<head, seq, in>::normal(ctx, {2, 4, 8});
  const auto k = Tensor<head, cls, in>::normal(ctx, {2, 5, 8});
  const Tensor<head, seq, cls> scores = q.dot<in>(ctx, k);
  const Array expected = tempra::matmul(ctx, q.array(), k.array().transpose(1, 2));
  EXPECT_EQ(values(ctx, scores.array()), values(ctx, expected));
}

TEST(Typed, einsum_output_list_chooses_layout) {
  ExecContext ctx;
  const auto x = Tensor<batch, in>::normal(ctx, {4, 6});
  const auto w = Tensor<h1, in>::normal(ctx, {3, 6});
  const Tensor<h1, batch> yt = tempra::einsum<h1, batch>(ctx, x, w);
  const Tensor<batch, h1> y = tempra::einsum<batch, h1>(ctx, x, w);
  EXPECT_EQ(values(ctx, yt.array()), values(ctx, tempra::contiguous(ctx, y.array().transpose(0, 1))));
}

TEST(Typed, add_broadcasts_by_axis_name_not_position) {
  ExecContext ctx;
  const auto a = Tensor<batch, h1>::normal(ctx, {3, 4});
  const auto b = Tensor<batch>::normal(ctx, {3});  // positional broadcasting would align it with h1
  const Tensor<batch, h1> sum = tempra::add(ctx, a, b);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_FLOAT_EQ(static_cast<float>(sum.array().at({i, j})),
                      static_cast<float>(a.array().at({i, j}) + b.array().at({i})));
}

TEST(Typed, binary_result_lists_left_axes_then_new_right_axes) {
  ExecContext ctx;
  const auto a = Tensor<batch>::normal(ctx, {3});
  const auto b = Tensor<h1, batch>::normal(ctx, {2, 3});
  const Tensor<batch, h1> product = tempra::mul(ctx, a, b);
  EXPECT_EQ(product.shape(), (tempra::Dims{3, 2}));
  EXPECT_FLOAT_EQ(static_cast<float>(product.array().at({2, 1})),
                  static_cast<float>(a.array().at({2}) * b.array().at({1, 2})));
}

TEST(Typed, reductions_remove_the_named_axis) {
  ExecContext ctx;
  const auto x = Tensor<batch, cls>::normal(ctx, {4, 5});
  const Tensor<batch> s = tempra::sum<cls>(ctx, x);
  const Tensor<cls> m = tempra::max<batch>(ctx, x);
  EXPECT_EQ(values(ctx, s.array()), values(ctx, tempra::sum(ctx, x.array(), 1)));
  EXPECT_EQ(values(ctx, m.array()), values(ctx, tempra::max(ctx, x.array(), 0)));
  const Tensor<batch> best = tempra::argmax<cls>(ctx, x);
  EXPECT_EQ(best.dtype(), tempra::DType::i64);
}

TEST(Typed, softmax_over_a_named_axis) {
  ExecContext ctx;
  const auto x = Tensor<batch, cls>::normal(ctx, {3, 6});
  const auto p = tempra::softmax<batch>(ctx, x);
  EXPECT_EQ(values(ctx, p.array()), values(ctx, tempra::softmax(ctx, x.array(), 0)));
}

TEST(Typed, permute_reorders_by_name) {
  ExecContext ctx;
  const auto x = Tensor<batch, in>::normal(ctx, {2, 3});
  const Tensor<in, batch> t = x.permute<in, batch>();
  EXPECT_EQ(t.size<in>(), 3);
  EXPECT_EQ(t.array().at({2, 1}), x.array().at({1, 2}));
  EXPECT_TRUE(t.array().shares_storage_with(x.array()));
}

TEST(Typed, from_untyped_checks_rank_with_a_clear_error) {
  ExecContext ctx;
  const Array a = tempra::full(ctx, {2, 3, 4}, 1.0);
  const std::string message = error_message([&] { (void)Tensor<batch, in>::from(a); });
  EXPECT_NE(message.find("Tensor<batch, in> needs rank 2"), std::string::npos) << message;
  EXPECT_NE(message.find("[2, 3, 4]"), std::string::npos) << message;
}

TEST(Typed, runtime_extent_mismatch_names_the_op_and_shapes) {
  ExecContext ctx;
  const auto x = Tensor<batch, in>::normal(ctx, {2, 3});
  const auto w = Tensor<h1, in>::normal(ctx, {4, 5});
  const std::string message = error_message([&] { (void)x.dot<in>(ctx, w); });
  EXPECT_NE(message.find("[einsum] axis in has extent 3 in Tensor<batch, in> but 5 in Tensor<h1, in>"),
            std::string::npos)
      << message;
}

TEST(Typed, broadcast_extent_mismatch_names_the_axis) {
  ExecContext ctx;
  const auto a = Tensor<batch, h1>::normal(ctx, {2, 16});
  const auto b = Tensor<h1>::normal(ctx, {8});
  const std::string message = error_message([&] { (void)tempra::add(ctx, a, b); });
  EXPECT_NE(message.find("[add] axis h1 has extent 16 in Tensor<batch, h1> but 8 in Tensor<h1>"), std::string::npos)
      << message;
}

// The README's forward pass, typed, against the same math written on untyped arrays.
TEST(Typed, readme_mlp_forward_matches_untyped_computation) {
  ExecContext ctx;
  const auto w1 = Tensor<h1, in>::normal(ctx, {8, 2});
  const auto b1 = Tensor<h1>::normal(ctx, {8});
  const auto w2 = Tensor<cls, h1>::normal(ctx, {3, 8});
  const auto b2 = Tensor<cls>::normal(ctx, {3});
  const auto x = Tensor<batch, in>::normal(ctx, {5, 2});
  const auto z1 = x.dot<in>(ctx, w1);
  const auto a1 = tempra::tanh(ctx, tempra::add(ctx, z1, b1));
  const Tensor<batch, cls> logits = tempra::add(ctx, a1.dot<h1>(ctx, w2), b2);

  const Array h = tempra::tanh(ctx, tempra::add(ctx, tempra::matmul(ctx, x.array(), w1.array().transpose(0, 1)),
                                                b1.array()));
  const Array expected = tempra::add(ctx, tempra::matmul(ctx, h, w2.array().transpose(0, 1)), b2.array());
  EXPECT_EQ(values(ctx, logits.array()), values(ctx, expected));
}

}  // namespace
