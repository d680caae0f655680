// tests/backend/native_elementwise_parity_test.cpp: native unary, binary, reductions, softmax
// and cross-entropy against scalar, at every size of the parity list.
//
// Tolerances, by kernel class (each is what the arithmetic allows, written down once here):
// - bitwise: neg, abs, square, relu, sqrt, rsqrt; add, sub, mul, div, maximum, minimum; and
//   reductions whose lanes run scalar's own order (inner > 1: sum, mean, max, min, variance);
//   max/min of contiguous rows (exact in any order);
// - 1e-6 relative (+1e-37 absolute for results in the subnormal range, which native flushes
//   towards 0): exp, tanh, sigmoid, silu, gelu_tanh (native uses a polynomial exp);
// - derivatives: bitwise where they read the output (exp, tanh, sigmoid), silu's within 2e-6 of
//   the size of its terms;
// - reassociated sums (contiguous rows): |d| <= 2 n eps sum|x| (and the same relative to the
//   mean's and variance's magnitudes); softmax and cross-entropy: 1e-5 relative + 1e-7 abs.
// Every case also runs on 1 and 2 threads, which must agree bitwise.
#include <bit>
#include <cfloat>
#include <limits>

#include "backend/parity.h"

namespace tempra {
namespace {

using parity::sizes;

struct Case {
  int64_t rows, n;
};

// Row counts paired with each length so that both many-rows and long-row shapes appear.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (int64_t n : sizes()) out.push_back({n <= 64 ? 37 : 3, n});
  return out;
}

TensorRef<const float> input(const std::vector<float>& v, Dims shape, Dims strides) {
  return {v.data(), std::move(shape), std::move(strides)};
}
TensorRef<float> view(std::vector<float>& v, Dims shape, Dims strides) {
  return {v.data(), std::move(shape), std::move(strides)};
}

// Special values every elementwise row includes: signed zeros, infinities, NaN, huge, tiny.
void plant_specials(std::vector<float>& x) {
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 1e-30f, 100.0f, -100.0f, 0.5f};
  for (size_t i = 0; i < x.size() && i < std::size(specials); ++i) x[i * 7 % x.size()] = specials[i];
}

void check_unary(UnaryOp op, bool exact, float lo, float hi) {
  for (auto [rows, n] : cases()) {
    SCOPED_TRACE("op " + std::to_string(int(op)) + " rows " + std::to_string(rows) + " n " + std::to_string(n));
    auto x = parity::random_floats(rows * n, 11 * n + int(op), lo, hi);
    plant_specials(x);
    std::vector<float> want(rows * n), got(rows * n), got2(rows * n);
    ThreadPool one(1), two(2);
    const Dims shape{rows, n}, strides{n, 1};
    parity::scalar_f32().unary(op, input(x, shape, strides), view(want, shape, strides), one);
    parity::native_f32().unary(op, input(x, shape, strides), view(got, shape, strides), one);
    parity::native_f32().unary(op, input(x, shape, strides), view(got2, shape, strides), two);
    if (exact) EXPECT_TRUE(parity::bitwise_equal(got, want));
    else EXPECT_TRUE(parity::within(got, want, parity::relative_bound(want, 1e-6, 1e-37)));
    EXPECT_TRUE(parity::bitwise_equal(got2, got));
  }
}

TEST(NativeUnaryParity, ExactOpsAreBitwise) {
  for (UnaryOp op : {UnaryOp::neg, UnaryOp::abs, UnaryOp::square, UnaryOp::relu, UnaryOp::sqrt, UnaryOp::rsqrt})
    check_unary(op, true, -4, 4);
}

TEST(NativeUnaryParity, TranscendentalsWithinOneMillionth) {
  for (UnaryOp op : {UnaryOp::exp, UnaryOp::tanh, UnaryOp::sigmoid, UnaryOp::silu, UnaryOp::gelu_tanh}) {
    check_unary(op, false, -4, 4);
    check_unary(op, false, -90, 90);  // the tails: overflow, underflow, saturation
  }
}

// Derivatives (unary_grad): from the output y, bitwise (exp, tanh, sigmoid: the same operations);
// silu's from x within 2e-6 of |g| (1 + |x|), the size of its terms (s, and x s (1 - s)), since
// its sigmoid carries simd::exp's error; a row with inner stride 2 runs scalar's kernel.
TEST(NativeUnaryGradParity, DerivativesFromTheOutputAreBitwiseSilusWithinItsTerms) {
  for (UnaryOp op : {UnaryOp::exp, UnaryOp::tanh, UnaryOp::sigmoid, UnaryOp::silu, UnaryOp::log}) {
    for (float range : {4.0f, 90.0f}) {
      for (auto [rows, n] : cases()) {
        SCOPED_TRACE("op " + std::to_string(int(op)) + " range " + std::to_string(range) + " n " + std::to_string(n));
        const auto x = parity::random_floats(rows * n, 5 * n + int(op), op == UnaryOp::log ? 0.01f : -range, range);
        const auto g = parity::random_floats(rows * n, 9 * n + int(op), -2, 2);
        const Dims shape{rows, n}, strides{n, 1};
        std::vector<float> y(rows * n), want(rows * n), got(rows * n), got2(rows * n);
        ThreadPool one(1), two(2);
        parity::scalar_f32().unary(op, input(x, shape, strides), view(y, shape, strides), one);
        const auto grad = [&](const FloatKernels<float>& k, std::vector<float>& out, ThreadPool& pool) {
          k.unary_grad(op, input(x, shape, strides), input(y, shape, strides), input(g, shape, strides),
                       view(out, shape, strides), pool);
        };
        grad(parity::scalar_f32(), want, one);
        grad(parity::native_f32(), got, one);
        grad(parity::native_f32(), got2, two);
        if (op == UnaryOp::silu) {
          std::vector<double> bound(x.size());
          for (size_t i = 0; i < x.size(); ++i) bound[i] = 2e-6 * std::abs(g[i]) * (1.0 + std::abs(x[i])) + 1e-37;
          EXPECT_TRUE(parity::within(got, want, bound));
        } else {
          EXPECT_TRUE(parity::bitwise_equal(got, want));
        }
        EXPECT_TRUE(parity::bitwise_equal(got2, got));
      }
    }
  }
  // Inner stride 2 (every other column of a [rows, 2n] buffer): the scalar kernel, bitwise.
  const int64_t rows = 5, n = 37;
  const auto x = parity::random_floats(rows * 2 * n, 3, -4, 4), g = parity::random_floats(rows * 2 * n, 4, -2, 2);
  std::vector<float> want(rows * 2 * n), got(rows * 2 * n);
  ThreadPool one(1);
  const Dims shape{rows, n}, strides{2 * n, 2};
  parity::scalar_f32().unary_grad(UnaryOp::silu, input(x, shape, strides), input(x, shape, strides),
                                  input(g, shape, strides), view(want, shape, strides), one);
  parity::native_f32().unary_grad(UnaryOp::silu, input(x, shape, strides), input(x, shape, strides),
                                  input(g, shape, strides), view(got, shape, strides), one);
  EXPECT_TRUE(parity::bitwise_equal(got, want));
}

TEST(NativeUnaryParity, ExpOverTheWholeFloatRange) {
  // Every 997th float in [-104, 89] (by bit pattern, so tiny magnitudes are as dense as large
  // ones): where exp's error is measured, not sampled.
  std::vector<float> x;
  for (uint32_t bits = 0; bits <= std::bit_cast<uint32_t>(104.0f); bits += 997) {
    x.push_back(-std::bit_cast<float>(bits));
    if (bits <= std::bit_cast<uint32_t>(89.0f)) x.push_back(std::bit_cast<float>(bits));
  }
  std::vector<float> want(x.size()), got(x.size());
  ThreadPool one(1);
  const Dims shape{int64_t(x.size())}, strides{1};
  parity::scalar_f32().unary(UnaryOp::exp, input(x, shape, strides), view(want, shape, strides), one);
  parity::native_f32().unary(UnaryOp::exp, input(x, shape, strides), view(got, shape, strides), one);
  // 2 ulp for normal results (2.4e-7 relative), subnormal results within 1.2e-38 absolute.
  EXPECT_TRUE(parity::within(got, want, parity::relative_bound(want, 2.4e-7, 1.2e-38)));
}

TEST(NativeUnaryParity, StridedRowsTakeTheScalarPath) {
  const int64_t rows = 5, n = 33;
  auto x = parity::random_floats(rows * n * 2, 3);
  std::vector<float> want(rows * n), got(rows * n);
  ThreadPool one(1);
  parity::scalar_f32().unary(UnaryOp::tanh, input(x, {rows, n}, {2 * n, 2}), view(want, {rows, n}, {n, 1}), one);
  parity::native_f32().unary(UnaryOp::tanh, input(x, {rows, n}, {2 * n, 2}), view(got, {rows, n}, {n, 1}), one);
  EXPECT_TRUE(parity::bitwise_equal(got, want));
}

TEST(NativeBinaryParity, BitwiseIncludingBroadcastAndNaN) {
  for (BinaryOp op : {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div, BinaryOp::maximum,
                      BinaryOp::minimum, BinaryOp::pow}) {
    for (auto [rows, n] : cases()) {
      SCOPED_TRACE("op " + std::to_string(int(op)) + " n " + std::to_string(n));
      auto a = parity::random_floats(rows * n, n), b = parity::random_floats(n, n + 1);
      plant_specials(a);
      plant_specials(b);
      std::vector<float> want(rows * n), got(rows * n), got2(rows * n);
      ThreadPool one(1), two(2);
      const Dims shape{rows, n}, strides{n, 1};
      // b broadcast over rows (stride 0), and a scalar broadcast along the row (stride 0, 0).
      for (const Dims& b_strides : {Dims{0, 1}, Dims{0, 0}}) {
        parity::scalar_f32().binary(op, input(a, shape, strides), input(b, shape, b_strides), view(want, shape, strides),
                                    one);
        parity::native_f32().binary(op, input(a, shape, strides), input(b, shape, b_strides), view(got, shape, strides),
                                    one);
        parity::native_f32().binary(op, input(a, shape, strides), input(b, shape, b_strides),
                                    view(got2, shape, strides), two);
        EXPECT_TRUE(parity::bitwise_equal(got, want));
        EXPECT_TRUE(parity::bitwise_equal(got2, got));
      }
    }
  }
}

// Bound for a reassociated sum of the row: 2 n eps sum |x| (scaled for mean and variance).
std::vector<double> sum_bound(ReduceOp op, const std::vector<float>& x, int64_t outer, int64_t n,
                              const std::vector<float>& want) {
  std::vector<double> bound(outer);
  for (int64_t r = 0; r < outer; ++r) {
    double magnitude = 0;
    for (int64_t j = 0; j < n; ++j) magnitude += std::abs(double(x[r * n + j]));
    double b = 2.0 * n * FLT_EPSILON * magnitude;
    if (op == ReduceOp::mean) b /= n;
    if (op == ReduceOp::variance || op == ReduceOp::logsumexp) b = 4.0 * n * FLT_EPSILON * std::abs(want[r]) + 1e-6;
    bound[r] = b + 1e-30;
  }
  return bound;
}

TEST(NativeReduceParity, EveryOpBothLayouts) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::max, ReduceOp::min, ReduceOp::variance,
                      ReduceOp::logsumexp}) {
    for (int64_t n : sizes()) {
      SCOPED_TRACE("op " + std::to_string(int(op)) + " n " + std::to_string(n));
      ThreadPool one(1), two(2);
      // Contiguous rows: [outer, n, 1].
      {
        const int64_t outer = 9;
        const auto x = parity::random_floats(outer * n, n + 5, -2, 3);
        std::vector<float> want(outer), got(outer), got2(outer);
        parity::scalar_f32().reduce(op, x.data(), outer, n, 1, 1, want.data(), one);
        parity::native_f32().reduce(op, x.data(), outer, n, 1, 1, got.data(), one);
        parity::native_f32().reduce(op, x.data(), outer, n, 1, 1, got2.data(), two);
        if (op == ReduceOp::max || op == ReduceOp::min) EXPECT_TRUE(parity::bitwise_equal(got, want));
        else EXPECT_TRUE(parity::within(got, want, sum_bound(op, x, outer, n, want)));
        EXPECT_TRUE(parity::bitwise_equal(got2, got));
      }
      // Lanes across the inner axis: [3, n, inner] with a ragged inner extent.
      for (int64_t inner : {int64_t{5}, int64_t{37}}) {
        const int64_t outer = 3;
        auto x = parity::random_floats(outer * n * inner, n * inner, -2, 3);
        if (n > 2) x[inner + 1] = NAN, x[2 * inner + 3] = -0.0f;
        std::vector<float> want(outer * inner), got(outer * inner), got2(outer * inner);
        parity::scalar_f32().reduce(op, x.data(), outer, n, inner, 1, want.data(), one);
        parity::native_f32().reduce(op, x.data(), outer, n, inner, 1, got.data(), one);
        parity::native_f32().reduce(op, x.data(), outer, n, inner, 1, got2.data(), two);
        if (op == ReduceOp::logsumexp)
          EXPECT_TRUE(parity::within(got, want, parity::relative_bound(want, 1e-6, 1e-6)));
        else EXPECT_TRUE(parity::bitwise_equal(got, want));
        EXPECT_TRUE(parity::bitwise_equal(got2, got));
      }
    }
  }
}

TEST(NativeReduceParity, MaxAndMinFollowScalarOnNaNAndSignedZero) {
  ThreadPool one(1);
  const std::vector<std::vector<float>> rows = {
      {-0.0f, 0.0f, -1.0f}, {0.0f, -0.0f, -3.0f}, {1.0f, NAN, 5.0f}, {-INFINITY, -INFINITY}, {2, 1, 0, -0.0f, 0.0f}};
  for (const auto& x : rows)
    for (ReduceOp op : {ReduceOp::max, ReduceOp::min}) {
      std::vector<float> want(1), got(1);
      parity::scalar_f32().reduce(op, x.data(), 1, int64_t(x.size()), 1, 0, want.data(), one);
      parity::native_f32().reduce(op, x.data(), 1, int64_t(x.size()), 1, 0, got.data(), one);
      EXPECT_TRUE(parity::bitwise_equal(got, want));
    }
}

TEST(NativeSoftmaxParity, PlainLogCausalAndMasked) {
  for (int64_t n : sizes()) {
    for (int variant = 0; variant < 4; ++variant) {
      SCOPED_TRACE("n " + std::to_string(n) + " variant " + std::to_string(variant));
      const int64_t rows = 6;
      const auto x = parity::random_floats(rows * n, 3 * n + variant, -8, 8);
      const auto mask = parity::random_floats(n, 5 * n, -2, 0);
      SoftmaxArgs<float> args;
      args.scale = 0.37;
      args.log = variant == 1;
      args.causal = variant >= 2;
      args.q_len = rows;
      if (variant == 3) args.mask = {mask.data(), {rows, n}, {0, 1}};
      std::vector<float> want(rows * n), got(rows * n), got2(rows * n);
      ThreadPool one(1), two(2);
      const TensorRef<const float> in{x.data(), {rows, n}, {n, 1}};
      parity::scalar_f32().softmax(in, args, want.data(), one);
      parity::native_f32().softmax(in, args, got.data(), one);
      parity::native_f32().softmax(in, args, got2.data(), two);
      EXPECT_TRUE(parity::within(got, want, parity::relative_bound(want, 1e-5, 1e-7)));
      EXPECT_TRUE(parity::bitwise_equal(got2, got));
    }
  }
}

TEST(NativeCrossEntropyParity, RowsWithIgnoredTargets) {
  for (int64_t classes : sizes()) {
    const int64_t rows = 7;
    const auto logits = parity::random_floats(rows * classes, classes, -6, 6);
    std::vector<int64_t> targets(rows);
    for (int64_t i = 0; i < rows; ++i) targets[i] = (i * 31) % classes;
    targets[3] = -100;
    std::vector<float> want(rows), got(rows), got2(rows);
    ThreadPool one(1), two(2);
    parity::scalar_f32().cross_entropy(logits.data(), rows, classes, targets.data(), -100, want.data(), one);
    parity::native_f32().cross_entropy(logits.data(), rows, classes, targets.data(), -100, got.data(), one);
    parity::native_f32().cross_entropy(logits.data(), rows, classes, targets.data(), -100, got2.data(), two);
    EXPECT_TRUE(parity::within(got, want, parity::relative_bound(want, 1e-5, 1e-6))) << "classes " << classes;
    EXPECT_TRUE(parity::bitwise_equal(got2, got));
  }
}

}  // namespace
}  // namespace tempra
