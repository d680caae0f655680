// tests/backend/native_grad_parity_test.cpp: the native backward kernels (softmax_grad,
// cross_entropy_grad, rms_norm_grad, layer_norm_grad, attention_grad) against scalar.
//
// Tolerances, from what the native kernels change (native/reduce_grad.cpp, neural_grad.cpp):
// row sums are reassociated (and their multiply-adds fused) and exp is simd::exp (2 ulp), so an
// element's error is bounded by ~1e-5 times the magnitude of what it sums, not of its value (a
// gradient can be a small difference of large terms). Each bound below is 1e-5 (2e-5 for
// attention, whose GEMMs reassociate sums of Tk or group * Tq products) times that magnitude,
// computed in double from the inputs, plus 1e-6 absolute. 1 and 2 threads: bitwise (with
// OpenBLAS GEMMs: both within the tolerance, backend/gemm_provider.h).
#include <algorithm>

#include "backend/gemm_provider.h"
#include "backend/parity.h"

namespace tempra {
namespace {

using parity::sizes;

// bound[i] = rel * magnitude[i] + abs.
std::vector<double> scaled_bound(const std::vector<double>& magnitude, double rel, double abs = 1e-6) {
  std::vector<double> b(magnitude.size());
  for (size_t i = 0; i < b.size(); ++i) b[i] = rel * magnitude[i] + abs;
  return b;
}

TEST(NativeGradParity, SoftmaxAndLogSoftmaxEverySizePlainScaledCausal) {
  for (int64_t n : sizes()) {
    for (bool log : {false, true}) {
      for (bool causal : {false, true}) {
        SCOPED_TRACE("n " + std::to_string(n) + (log ? " log" : "") + (causal ? " causal" : ""));
        const int64_t rows = 6, q_len = causal ? std::min<int64_t>(3, n) : 1;
        SoftmaxArgs<float> args;
        args.log = log;
        args.causal = causal;
        args.q_len = q_len;
        args.mask.strides = Dims::filled(2, 0);
        // y: the forward's output on random logits.
        const auto x = parity::random_floats(rows * n, n, -4, 4), g = parity::random_floats(rows * n, n + 7);
        std::vector<float> y(rows * n);
        ThreadPool one(1), two(2);
        parity::scalar_f32().softmax({x.data(), {rows, n}, {n, 1}}, args, y.data(), one);
        for (double grad_scale : {1.0, 0.125}) {
          std::vector<float> want(rows * n), got(rows * n), got2(rows * n);
          parity::scalar_f32().softmax_grad(y.data(), g.data(), rows, n, args, grad_scale, want.data(), one);
          parity::native_f32().softmax_grad(y.data(), g.data(), rows, n, args, grad_scale, got.data(), one);
          parity::native_f32().softmax_grad(y.data(), g.data(), rows, n, args, grad_scale, got2.data(), two);
          // Magnitude: softmax y (|g| + sum |g y|); log_softmax |g| + exp(y) sum |g|.
          std::vector<double> magnitude(rows * n);
          for (int64_t r = 0; r < rows; ++r) {
            double sum_g = 0, sum_gy = 0;
            for (int64_t j = 0; j < n; ++j) {
              sum_g += std::abs(g[r * n + j]);
              sum_gy += std::abs(double(g[r * n + j]) * y[r * n + j]);
            }
            for (int64_t j = 0; j < n; ++j) {
              const double yj = y[r * n + j], gj = std::abs(g[r * n + j]);
              magnitude[r * n + j] = grad_scale * (log ? gj + std::exp(yj) * sum_g : std::abs(yj) * (gj + sum_gy));
            }
          }
          EXPECT_TRUE(parity::within(got, want, scaled_bound(magnitude, 1e-5)));
          EXPECT_TRUE(parity::bitwise_equal(got2, got));
        }
      }
    }
  }
}

TEST(NativeGradParity, CrossEntropyEveryClassCountWithAnIgnoredRow) {
  for (int64_t classes : sizes()) {
    SCOPED_TRACE("classes " + std::to_string(classes));
    const int64_t rows = 4;
    const auto logits = parity::random_floats(rows * classes, classes, -5, 5), g = parity::random_floats(rows, 3);
    const std::vector<int64_t> targets{0, classes - 1, -100, classes / 2};
    std::vector<float> want(rows * classes), got(rows * classes), got2(rows * classes);
    ThreadPool one(1), two(2);
    parity::scalar_f32().cross_entropy_grad(logits.data(), rows, classes, targets.data(), -100, g.data(), want.data(),
                                            one);
    parity::native_f32().cross_entropy_grad(logits.data(), rows, classes, targets.data(), -100, g.data(), got.data(),
                                            one);
    parity::native_f32().cross_entropy_grad(logits.data(), rows, classes, targets.data(), -100, g.data(), got2.data(),
                                            two);
    std::vector<double> magnitude(rows * classes);
    for (int64_t i = 0; i < rows * classes; ++i) magnitude[i] = std::abs(g[i / classes]);
    EXPECT_TRUE(parity::within(got, want, scaled_bound(magnitude, 1e-5, 0)));
    EXPECT_TRUE(parity::bitwise_equal(got2, got));
    for (int64_t c = 0; c < classes; ++c) EXPECT_EQ(got[2 * classes + c], 0.0f);  // the ignored row
  }
}

TEST(NativeGradParity, RmsAndLayerNormEverySizeEveryParameter) {
  for (int64_t n : sizes()) {
    const int64_t rows = 7;
    const auto x = parity::random_floats(rows * n, n, -3, 3), g = parity::random_floats(rows * n, n + 3);
    const auto w = parity::random_floats(n, n + 1, 0.5f, 1.5f);
    for (int variant = 0; variant < 4; ++variant) {
      SCOPED_TRACE("n " + std::to_string(n) + " variant " + std::to_string(variant));
      const bool rms = variant < 2;
      const float* weight = variant % 2 ? w.data() : nullptr;
      std::vector<float> want_x(rows * n), got_x(rows * n), got2_x(rows * n), scratch(2 * rows);
      std::vector<float> want_w(n), got_w(n), got2_w(n), want_b(n), got_b(n), got2_b(n);
      ThreadPool one(1), two(2);
      auto run = [&](const FloatKernels<float>& k, ThreadPool& pool, std::vector<float>& gx, std::vector<float>& gw,
                     std::vector<float>& gb) {
        if (rms) {
          k.rms_norm_grad(x.data(), weight, g.data(), rows, n, 1e-6, gx.data(), gw.data(), scratch.data(), pool);
        } else {
          k.layer_norm_grad(x.data(), weight, g.data(), rows, n, 1e-5, gx.data(), gw.data(), gb.data(), scratch.data(),
                            pool);
        }
      };
      run(parity::scalar_f32(), one, want_x, want_w, want_b);
      run(parity::native_f32(), one, got_x, got_w, got_b);
      run(parity::native_f32(), two, got2_x, got2_w, got2_b);
      // Magnitudes, in double: gx sums |u| and |u xhat| over the row (xhat = normalized x, |xhat| ~ 1);
      // gw and gb sum |g xhat| and |g| over the rows.
      std::vector<double> mag_x(rows * n), mag_w(n, 0.0), mag_b(n, 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        double mean = 0, squares = 0;
        if (!rms) {
          for (int64_t j = 0; j < n; ++j) mean += x[r * n + j];
          mean /= double(n);
        }
        for (int64_t j = 0; j < n; ++j) squares += (x[r * n + j] - mean) * (x[r * n + j] - mean);
        const double s = 1.0 / std::sqrt(squares / double(n) + 1e-5);
        double row = 0;
        for (int64_t j = 0; j < n; ++j) {
          const double u = std::abs(g[r * n + j] * (weight ? weight[j] : 1.0f));
          const double xhat = std::abs(x[r * n + j] - mean) * s;
          row += u * (1 + xhat);
          mag_w[j] += std::abs(g[r * n + j]) * xhat;
          mag_b[j] += std::abs(g[r * n + j]);
        }
        for (int64_t j = 0; j < n; ++j)
          mag_x[r * n + j] = s * (std::abs(g[r * n + j] * (weight ? weight[j] : 1.0f)) +
                                  (1 + std::abs(x[r * n + j] - mean) * s) * row / double(n));
      }
      EXPECT_TRUE(parity::within(got_x, want_x, scaled_bound(mag_x, 1e-5)));
      EXPECT_TRUE(parity::within(got_w, want_w, scaled_bound(mag_w, 1e-5)));
      EXPECT_TRUE(parity::bitwise_equal(got2_x, got_x));
      EXPECT_TRUE(parity::bitwise_equal(got2_w, got_w));
      if (!rms) {
        EXPECT_TRUE(parity::within(got_b, want_b, scaled_bound(mag_b, 1e-5)));
        EXPECT_TRUE(parity::bitwise_equal(got2_b, got_b));
      }
    }
  }
}

void check_attention_grad(AttentionShape s, bool causal, bool with_mask) {
  SCOPED_TRACE("B " + std::to_string(s.batch) + " Hq " + std::to_string(s.q_heads) + " Hkv " +
               std::to_string(s.kv_heads) + " Tq " + std::to_string(s.q_len) + " Tk " + std::to_string(s.kv_len) +
               " D " + std::to_string(s.head_dim) + " Dv " + std::to_string(s.value_dim) + (causal ? " causal" : "") +
               (with_mask ? " mask" : ""));
  const int64_t q_rows = s.batch * s.q_heads * s.q_len, kv_rows = s.batch * s.kv_heads * s.kv_len;
  const auto q = parity::random_floats(q_rows * s.head_dim, 11, -2, 2);
  const auto k = parity::random_floats(kv_rows * s.head_dim, 12, -2, 2);
  const auto v = parity::random_floats(kv_rows * s.value_dim, 13);
  const auto g = parity::random_floats(q_rows * s.value_dim, 14);
  auto mask = parity::random_floats(s.q_len * s.kv_len, 15, -3, 0);
  for (size_t i = 1; i < mask.size(); i += 5) mask[i] = -INFINITY;  // never key 0: no row fully masked
  TensorRef<const float> mask_ref;
  mask_ref.strides = Dims::filled(4, 0);
  if (with_mask) mask_ref = {mask.data(), {s.batch, s.q_heads, s.q_len, s.kv_len}, {0, 0, s.kv_len, 1}};
  const double scale = 1.0 / std::sqrt(double(s.head_dim));
  ThreadPool one(1), two(2);
  // The forward's output, from scalar.
  std::vector<float> out(q_rows * s.value_dim), forward_scores(q_rows * s.kv_len);
  parity::scalar_f32().attention(q.data(), k.data(), v.data(), s, mask_ref, causal, scale, forward_scores.data(),
                                 out.data(), one);
  struct Grads {
    std::vector<float> q, k, v, scores;
  };
  auto run = [&](const FloatKernels<float>& kernels, ThreadPool& pool) {
    Grads r{std::vector<float>(q.size()), std::vector<float>(k.size()), std::vector<float>(v.size()),
            std::vector<float>(2 * q_rows * s.kv_len)};
    kernels.attention_grad(q.data(), k.data(), v.data(), out.data(), g.data(), s, mask_ref, causal, scale,
                           r.scores.data(), r.q.data(), r.k.data(), r.v.data(), pool);
    r.scores.resize(q_rows * s.kv_len);  // the scores' gradient; the rest is scratch
    return r;
  };
  const Grads want = run(parity::scalar_f32(), one), got = run(parity::native_f32(), one),
              got2 = run(parity::native_f32(), two);
  // Magnitude of every element: the largest of its array (the gradients are sums of terms of
  // both signs over Tk or group * Tq products; their own values can be near zero).
  auto bound = [](const std::vector<float>& want_values) {
    double peak = 0;
    for (float x : want_values) peak = std::max(peak, std::abs(double(x)));
    return std::vector<double>(want_values.size(), 2e-5 * peak + 1e-6);
  };
  EXPECT_TRUE(parity::within(got.q, want.q, bound(want.q))) << "gq";
  EXPECT_TRUE(parity::within(got.k, want.k, bound(want.k))) << "gk";
  EXPECT_TRUE(parity::within(got.v, want.v, bound(want.v))) << "gv";
  EXPECT_TRUE(parity::within(got.scores, want.scores, bound(want.scores))) << "scores' gradient";
  // The backward's five GEMMs go through the GEMM provider.
  EXPECT_TRUE(parity::same_for_two_threads(got2.q, got.q, want.q, bound(want.q))) << "gq";
  EXPECT_TRUE(parity::same_for_two_threads(got2.k, got.k, want.k, bound(want.k))) << "gk";
  EXPECT_TRUE(parity::same_for_two_threads(got2.v, got.v, want.v, bound(want.v))) << "gv";
  EXPECT_TRUE(parity::same_for_two_threads(got2.scores, got.scores, want.scores, bound(want.scores)))
      << "scores' gradient";
}

TEST(NativeGradParity, AttentionEveryKeyLength) {
  for (int64_t kv_len : sizes()) {
    check_attention_grad({1, 4, 2, 3, kv_len, 64, 64}, false, false);
    check_attention_grad({2, 2, 2, std::min<int64_t>(kv_len, 33), kv_len, 16, 16}, true, false);
  }
}

TEST(NativeGradParity, AttentionEveryHeadDim) {
  for (int64_t d : sizes())
    if (d <= 129) check_attention_grad({1, 2, 1, 5, 40, d, d}, true, false);
}

TEST(NativeGradParity, AttentionGroupedCausalMaskedTrainingShapes) {
  check_attention_grad({2, 4, 2, 128, 128, 64, 64}, true, false);  // the benchmark's transformer block
  check_attention_grad({1, 6, 2, 17, 65, 32, 24}, true, true);     // value_dim != head_dim, -inf in mask
  check_attention_grad({2, 4, 4, 7, 7, 8, 8}, false, true);
  check_attention_grad({1, 8, 1, 1, 300, 16, 16}, true, false);  // one query, many keys (MQA)
}

}  // namespace
}  // namespace tempra
