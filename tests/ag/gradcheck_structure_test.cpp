// tests/ag/gradcheck_structure_test.cpp: the VJPs of concat, stack, split (views), gather,
// index_select, embedding, pad, tril/triu and where, against central finite differences in f64
// (tempra/ag/gradcheck.h), including repeated indices (gradients that must add up), broadcast
// operands and non-contiguous inputs.
#include <gtest/gtest.h>

#include <cstdio>

#include "tempra/ag/backward.h"
#include "ag/gradcheck_support.h"
#include "tempra/ag/gradcheck.h"
#include "tempra/ops/ops.h"

namespace tempra::ag {
namespace {

TEST(GradcheckStructure, ConcatStackAndSplit) {
  ExecContext ctx;
  const Array a = anywhere(ctx, {2, 3}, 1), b = anywhere(ctx, {2, 4}, 2), c = anywhere(ctx, {3, 2}, 3);
  expect_ok(gradcheck(ctx,
                      [](ExecContext& x, const std::vector<Array>& in) {
                        return concat(x, {in[0], in[1], in[2].transpose(0, 1)}, 1);
                      },
                      {a, b, c}),
            "concat");
  // The same input twice: its two slices' gradients add.
  expect_ok(gradcheck(ctx,
                      [](ExecContext& x, const std::vector<Array>& in) {
                        return concat(x, {in[0], in[0]}, 0);
                      },
                      {a}),
            "concat repeated input");
  for (int axis : {0, 1, 2})
    expect_ok(gradcheck(ctx,
                        [axis](ExecContext& x, const std::vector<Array>& in) {
                          return stack(x, {in[0], in[1].slice(1, 0, 6, 2)}, axis);
                        },
                        {a, anywhere(ctx, {2, 6}, 5)}),
              "stack axis " + std::to_string(axis));
  // split's pieces are views; use two of the three so the third's gradient is zero.
  expect_ok(gradcheck(ctx,
                      [](ExecContext& x, const std::vector<Array>& in) {
                        const std::vector<Array> parts = split(in[0], 1, {1, 3, 2});
                        return add(x, mul(x, parts[0], 2.0), parts[2].slice(1, 0, 1));
                      },
                      {anywhere(ctx, {4, 6}, 6)}),
            "split");
}

TEST(GradcheckStructure, GatherIndexSelectAndEmbeddingScatterAdd) {
  ExecContext ctx;
  const Array x = anywhere(ctx, {4, 5}, 11);
  // Repeated indices: their contributions must be summed.
  const Array index = Array::from_values<int64_t>(ctx, {3, 2}, {0, 4, 4, 1, 2, 2});
  expect_ok(
      gradcheck(ctx, [index](ExecContext& c, const std::vector<Array>& in) { return gather(c, in[0], 1, index); }, {x}),
      "gather axis 1");
  const Array index0 = Array::from_values<int32_t>(ctx, {2, 5}, {3, 0, 3, 1, 2, 3, 3, 0, 0, 1});
  expect_ok(gradcheck(ctx,
                      [index0](ExecContext& c, const std::vector<Array>& in) {
                        return gather(c, in[0].transpose(0, 1), 0, index0.transpose(0, 1));
                      },
                      {anywhere(ctx, {5, 4}, 12)}),
            "gather transposed");
  const Array rows = Array::from_values<int64_t>(ctx, {5}, {2, 0, 2, 3, 2});
  for (int axis : {0, 1, 2})
    expect_ok(gradcheck(ctx,
                        [rows, axis](ExecContext& c, const std::vector<Array>& in) {
                          return index_select(c, in[0], axis, rows);
                        },
                        {anywhere(ctx, {4, 4, 4}, 13)}),
              "index_select axis " + std::to_string(axis));
  const Array ids = Array::from_values<int32_t>(ctx, {2, 3}, {1, 5, 1, 0, 5, 5});
  expect_ok(gradcheck(ctx, [ids](ExecContext& c, const std::vector<Array>& in) { return embedding(c, in[0], ids); },
                      {anywhere(ctx, {6, 4}, 14)}),
            "embedding");
}

TEST(GradcheckStructure, PadTriangleAndWhere) {
  ExecContext ctx;
  expect_ok(gradcheck(ctx,
                      [](ExecContext& c, const std::vector<Array>& in) {
                        return pad(c, in[0].transpose(0, 1), {{1, 2}, {0, 3}}, 0.5);
                      },
                      {anywhere(ctx, {3, 2}, 21)}),
            "pad");
  for (int64_t diagonal : {-1, 0, 2}) {
    expect_ok(
        gradcheck(ctx, [diagonal](ExecContext& c, const std::vector<Array>& in) { return tril(c, in[0], diagonal); },
                  {anywhere(ctx, {2, 4, 5}, 22)}),
        "tril diagonal " + std::to_string(diagonal));
    expect_ok(
        gradcheck(ctx, [diagonal](ExecContext& c, const std::vector<Array>& in) { return triu(c, in[0], diagonal); },
                  {anywhere(ctx, {2, 4, 5}, 23)}),
        "triu diagonal " + std::to_string(diagonal));
  }
  // a [1, 4] broadcasts against cond and b [3, 4]: a's gradient sums over rows.
  const Array cond = cast(ctx, relu(ctx, anywhere(ctx, {3, 4}, 24)), DType::boolean);  // x > 0
  expect_ok(
      gradcheck(ctx, [cond](ExecContext& c, const std::vector<Array>& in) { return where(c, cond, in[0], in[1]); },
                {anywhere(ctx, {1, 4}, 25), anywhere(ctx, {3, 4}, 26)}),
      "where broadcast");
  // cond [3, 1] broadcasts against a transposed a [3, 4] and b [4].
  const Array cond_row = cond.slice(1, 0, 1);
  expect_ok(gradcheck(ctx,
                      [cond_row](ExecContext& c, const std::vector<Array>& in) {
                        return where(c, cond_row, in[0].transpose(0, 1), in[1]);
                      },
                      {anywhere(ctx, {4, 3}, 27), anywhere(ctx, {4}, 28)}),
            "where transposed");
}

// The scatter-adds sum repeated indices in index order whatever the chunking, so the table's
// gradient is the same bits for 1 and 4 threads (f32, where the order would show).
TEST(GradcheckStructure, EmbeddingAndGatherGradientsAreBitwiseForAnyThreadCount) {
  auto gradients = [](int threads) {
    ExecContext ctx(ExecOptions{.threads = threads});
    Array table = normal(ctx, {50, 96}, 0.0, 1.0, 1), x = normal(ctx, {64, 40}, 0.0, 1.0, 2);
    table.set_requires_grad();
    x.set_requires_grad();
    std::vector<int64_t> id_values(4096), index_values(64 * 300);
    for (size_t i = 0; i < id_values.size(); ++i) id_values[i] = static_cast<int64_t>((i * 7919) % 50);
    for (size_t i = 0; i < index_values.size(); ++i) index_values[i] = static_cast<int64_t>((i * 104729) % 40);
    const Array ids = Array::from_values<int64_t>(ctx, {64, 64}, id_values);
    const Array index = Array::from_values<int64_t>(ctx, {64, 300}, index_values);
    const Array loss =
        add(ctx, sum_all(ctx, mul(ctx, embedding(ctx, table, ids), normal(ctx, {64, 64, 96}, 0.0, 1.0, 3))),
            sum_all(ctx, mul(ctx, gather(ctx, x, 1, index), normal(ctx, {64, 300}, 0.0, 1.0, 4))));
    backward(ctx, loss);
    return std::make_pair(to_vector<float>(ctx, table.grad()), to_vector<float>(ctx, x.grad()));
  };
  const auto one = gradients(1), four = gradients(4);
  EXPECT_EQ(one.first, four.first);
  EXPECT_EQ(one.second, four.second);
}

}  // namespace
}  // namespace tempra::ag
