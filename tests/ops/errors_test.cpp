// tests/ops/errors_test.cpp: bad input is an exception naming the op and the shapes, never a crash.
#include <gtest/gtest.h>

#include <functional>

#include "support/errors.h"
#include "tempra/ops/ops.h"

namespace tempra {
namespace {

// Runs `call`, expects tempra::Error, and checks each fragment appears in its message.
void expect_error(const std::function<void()>& call, std::initializer_list<const char*> fragments) {
  const std::string message = testing::error_message(call);
  for (const char* f : fragments) EXPECT_NE(message.find(f), std::string::npos) << message;
}

class OpErrors : public ::testing::Test {
 protected:
  ExecContext ctx;
  Array m23 = full(ctx, {2, 3}, 1.0);
  Array m45 = full(ctx, {4, 5}, 1.0);
  Array ints = full(ctx, {2, 3}, 1.0, DType::i32);
};

TEST_F(OpErrors, binary_shape_mismatch_names_op_and_shapes) {
  expect_error([&] { add(ctx, m23, m45); }, {"[add]", "[2, 3]", "[4, 5]"});
}

TEST_F(OpErrors, binary_dtype_mismatch_names_both_dtypes) {
  const Array d = full(ctx, {2, 3}, 1.0, DType::f64);
  expect_error([&] { mul(ctx, m23, d); }, {"[mul]", "f32", "f64"});
}

TEST_F(OpErrors, integer_input_to_float_op_is_rejected) {
  expect_error([&] { exp(ctx, ints); }, {"[exp]", "i32", "[2, 3]"});
}

TEST_F(OpErrors, matmul_inner_dimension_mismatch) {
  expect_error([&] { matmul(ctx, m23, m45); }, {"[matmul]", "inner dimensions", "[2, 3]", "[4, 5]"});
}

TEST_F(OpErrors, reduce_axis_out_of_range) {
  expect_error([&] { sum(ctx, m23, 2); }, {"[sum]", "axis 2", "rank 2"});
}

TEST_F(OpErrors, gather_index_out_of_range_names_the_index) {
  const Array idx = Array::from_values<int64_t>(ctx, {2, 1}, {0, 7});
  expect_error([&] { gather(ctx, m23, 1, idx); }, {"[gather]", "index 7", "[2, 3]"});
}

TEST_F(OpErrors, embedding_negative_id) {
  const Array ids = Array::from_values<int32_t>(ctx, {2}, {1, -1});
  expect_error([&] { embedding(ctx, m45, ids); }, {"[index_select]", "index -1", "[4, 5]"});
}

TEST_F(OpErrors, cross_entropy_target_out_of_range) {
  const Array t = Array::from_values<int64_t>(ctx, {2}, {0, 3});
  expect_error([&] { cross_entropy(ctx, m23, t); }, {"[cross_entropy]", "target 3", "[2, 3]"});
}

TEST_F(OpErrors, attention_heads_must_divide) {
  const Array q = full(ctx, {1, 3, 2, 4}, 0.5), kv = full(ctx, {1, 2, 2, 4}, 0.5);
  expect_error([&] { attention(ctx, q, kv, kv); }, {"[attention]", "query heads 3", "key/value heads 2"});
}

TEST_F(OpErrors, conv1d_channel_mismatch) {
  const Array x = full(ctx, {1, 3, 8}, 1.0), w = full(ctx, {2, 2, 3}, 1.0);
  expect_error([&] { conv1d(ctx, x, w); }, {"[conv1d]", "[1, 3, 8]", "[2, 2, 3]"});
}

TEST_F(OpErrors, rope_positions_must_match_sequence) {
  const Array x = full(ctx, {4, 2, 8}, 1.0);
  const Array pos = Array::from_values<int32_t>(ctx, {3}, {0, 1, 2});
  expect_error([&] { rope(ctx, x, pos, RopeParams{}); }, {"[rope]", "i32 [4]", "[4, 2, 8]"});
}

TEST_F(OpErrors, rms_norm_weight_shape) {
  const Array w = full(ctx, {4}, 1.0);
  expect_error([&] { rms_norm(ctx, m23, w); }, {"[rms_norm]", "weight must have shape [3]", "[4]"});
}

TEST_F(OpErrors, concat_shapes_differ_off_axis) {
  expect_error([&] { concat(ctx, {m23, m45}, 0); }, {"[concat]", "[2, 3]", "[4, 5]"});
}

TEST_F(OpErrors, split_sizes_must_cover_the_axis) {
  expect_error([&] { split(m23, 1, {1, 1}); }, {"[split]", "add up to 2", "[2, 3]"});
}

TEST_F(OpErrors, pad_needs_a_pair_per_axis) {
  expect_error([&] { pad(ctx, m23, {{1, 1}}); }, {"[pad]", "one (before, after) pair per axis", "[2, 3]"});
}

TEST_F(OpErrors, where_condition_must_be_bool) {
  expect_error([&] { where(ctx, m23, m23, m23); }, {"[where]", "bool", "f32"});
}

TEST_F(OpErrors, einsum_label_only_in_one_operand_must_be_kept) {
  expect_error([&] { einsum(ctx, "ij,jk->i", m23, full(ctx, {3, 4}, 1.0)); }, {"[einsum]", "label 'k'"});
}

TEST_F(OpErrors, softmax_causal_needs_last_axis) {
  expect_error([&] { softmax(ctx, m23, 0, SoftmaxOptions{.causal = true}); }, {"[softmax]", "causal", "[2, 3]"});
}

TEST_F(OpErrors, view_errors_name_the_view) {
  expect_error([&] { (void)m23.slice(1, 2, 5); }, {"[slice]", "[2, 3]"});
  expect_error([&] { (void)m23.transpose(0, 1).reshape({6}); }, {"[reshape]", "contiguous"});
  expect_error([&] { (void)m23.broadcast_to({4, 3}); }, {"[broadcast_to]", "[2, 3]", "[4, 3]"});
}

TEST_F(OpErrors, empty_array_is_rejected_not_dereferenced) {
  expect_error([&] { tanh(ctx, Array{}); }, {"[tanh]", "empty"});
  expect_error([&] { matmul(ctx, Array{}, m23); }, {"[matmul]", "empty"});
}

}  // namespace
}  // namespace tempra
