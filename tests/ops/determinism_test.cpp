// tests/ops/determinism_test.cpp: every op is bitwise identical for 1 and N threads.
//
// Sizes are large enough that parallel_for really splits the work. Each op runs on contexts with
// 1, 2 and 3 threads over the same inputs; the outputs' bytes must be equal.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "tempra/ops/ops.h"
#include "tempra/quant/formats.h"

namespace tempra {
namespace {

using OpUnderTest = std::function<Array(ExecContext&)>;

std::vector<uint8_t> bytes_of(ExecContext& ctx, const Array& a) {
  const Array c = contiguous(ctx, a);
  const auto* p = static_cast<const uint8_t*>(c.raw_data());
  return std::vector<uint8_t>(p, p + c.nbytes());
}

void expect_thread_invariant(const OpUnderTest& op) {
  ExecContext one(ExecOptions{.threads = 1, .seed = 7});
  const auto reference = bytes_of(one, op(one));
  for (int threads : {2, 3}) {
    ExecContext many(ExecOptions{.threads = threads, .seed = 7});
    EXPECT_EQ(bytes_of(many, op(many)), reference) << threads << " threads";
    EXPECT_GT(many.threads().split_jobs(), 0) << "the op never split its work: the check proved nothing";
  }
}

TEST(Determinism, elementwise_and_broadcast) {
  expect_thread_invariant([](ExecContext& ctx) {
    const Array a = normal(ctx, {300, 1000}), b = normal(ctx, {1000});
    return gelu_tanh(ctx, add(ctx, mul(ctx, a, b), a.transpose(0, 0)));
  });
}

TEST(Determinism, reductions) {
  expect_thread_invariant([](ExecContext& ctx) {
    const Array a = normal(ctx, {257, 33, 65});
    return concat(ctx, {sum(ctx, a, 1), variance(ctx, a, 1, 1), logsumexp(ctx, a, 1), mean(ctx, a, 1)}, 0);
  });
}

TEST(Determinism, softmax_with_causal_mask) {
  expect_thread_invariant([](ExecContext& ctx) {
    return softmax(ctx, normal(ctx, {8, 128, 300}), -1, SoftmaxOptions{.scale = 0.3, .causal = true});
  });
}

TEST(Determinism, matmul) {
  expect_thread_invariant([](ExecContext& ctx) { return matmul(ctx, normal(ctx, {130, 257}), normal(ctx, {257, 190})); });
}

TEST(Determinism, attention_gqa_causal) {
  expect_thread_invariant([](ExecContext& ctx) {
    const Array q = normal(ctx, {2, 4, 64, 32}), k = normal(ctx, {2, 2, 80, 32}), v = normal(ctx, {2, 2, 80, 32});
    return attention(ctx, q, k, v, AttentionOptions{.causal = true});
  });
}

TEST(Determinism, norms_rope_conv) {
  expect_thread_invariant([](ExecContext& ctx) {
    const Array x = normal(ctx, {4, 200, 8, 64});
    const Array pos = arange(ctx, 200, DType::i32);
    const Array r = rope(ctx, rms_norm(ctx, x, normal(ctx, {64})), pos, RopeParams{RopeMode::neox, 64});
    const Array c = conv1d(ctx, normal(ctx, {2, 16, 500}), normal(ctx, {32, 16, 3}), normal(ctx, {32}),
                           Conv1dOptions{.dilation = 2, .causal = true});
    return concat(ctx, {r.reshape({-1}), c.reshape({-1})}, 0);
  });
}

TEST(Determinism, cross_entropy_and_random_fills) {
  expect_thread_invariant([](ExecContext& ctx) {
    const Array logits = normal(ctx, {512, 1000});
    const Array targets = cast(ctx, mul(ctx, uniform(ctx, {512}), 999.0), DType::i64);
    return concat(ctx, {cross_entropy(ctx, logits, targets).reshape({1}), uniform(ctx, {100000})}, 0);
  });
}

TEST(Determinism, quantize_rows) {
  expect_thread_invariant([](ExecContext& ctx) { return quantize(ctx, normal(ctx, {512, 256}), quant::q4_1()); });
}

}  // namespace
}  // namespace tempra
