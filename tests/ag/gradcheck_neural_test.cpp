// tests/ag/gradcheck_neural_test.cpp: the VJPs of rms_norm and layer_norm (input, weight, bias),
// rope (both layouts, partial rotation), attention (q, k, v and the additive mask; GQA, causal,
// custom scale) and conv1d (input, weight, bias; stride, padding, dilation, groups, causal),
// against central finite differences in f64 (tempra/ag/gradcheck.h), with non-contiguous
// inputs; plus gradients bitwise equal for 1 and 2 threads and on the scalar backend for f32.
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

TEST(GradcheckNorm, RmsNormInputAndWeight) {
  ExecContext ctx;
  const Array x = anywhere(ctx, {4, 3, 6}, 201), w = anywhere(ctx, {6}, 202, 0.5, 1.5);
  expect_ok(
      gradcheck(ctx, [](ExecContext& c, const std::vector<Array>& in) { return rms_norm(c, in[0], in[1]); }, {x, w}),
      "rms_norm");
  expect_ok(gradcheck(ctx,
                      [](ExecContext& c, const std::vector<Array>& in) {
                        return rms_norm(c, in[0].transpose(0, 1), in[1], 1e-2);
                      },
                      {x, w}),
            "rms_norm transposed eps 1e-2");
  expect_ok(gradcheck(ctx, [](ExecContext& c, const std::vector<Array>& in) { return rms_norm(c, in[0], {}); }, {x}),
            "rms_norm no weight");
}

TEST(GradcheckNorm, LayerNormInputWeightAndBias) {
  ExecContext ctx;
  const Array x = anywhere(ctx, {4, 3, 6}, 211), w = anywhere(ctx, {6}, 212, 0.5, 1.5), b = anywhere(ctx, {6}, 213);
  expect_ok(
      gradcheck(ctx, [](ExecContext& c, const std::vector<Array>& in) { return layer_norm(c, in[0], in[1], in[2]); },
                {x, w, b}),
      "layer_norm");
  expect_ok(gradcheck(ctx,
                      [](ExecContext& c, const std::vector<Array>& in) {
                        return layer_norm(c, in[0].transpose(0, 1), in[1], in[2], 1e-2);
                      },
                      {x, w, b}),
            "layer_norm transposed eps 1e-2");
  expect_ok(
      gradcheck(ctx, [](ExecContext& c, const std::vector<Array>& in) { return layer_norm(c, in[0], {}, {}); }, {x}),
      "layer_norm no weight or bias");
  expect_ok(gradcheck(ctx, [](ExecContext& c, const std::vector<Array>& in) { return layer_norm(c, in[0], {}, in[1]); },
                      {x, b}),
            "layer_norm bias only");
}

TEST(GradcheckRope, BothLayoutsFullAndPartialRotation) {
  ExecContext ctx;
  const Array x = anywhere(ctx, {2, 5, 3, 8}, 221);  // [batch, seq, heads, head_dim]
  const Array positions = Array::from_values<int32_t>(ctx, {5}, {0, 1, 7, 300, 4096});
  for (RopeMode mode : {RopeMode::neox, RopeMode::normal})
    for (int64_t n_dims : {8, 4}) {
      RopeParams p;
      p.mode = mode;
      p.n_dims = n_dims;
      p.freq_base = 1e4;
      p.freq_scale = 0.5;
      expect_ok(
          gradcheck(ctx, [&](ExecContext& c, const std::vector<Array>& in) { return rope(c, in[0], positions, p); },
                    {x}),
          std::string("rope ") + (mode == RopeMode::neox ? "neox" : "normal") + " n_dims " + std::to_string(n_dims));
    }
  // A non-contiguous input: heads and seq stored the other way round.
  const Array xt = anywhere(ctx, {2, 3, 5, 8}, 222);
  expect_ok(gradcheck(ctx,
                      [&](ExecContext& c, const std::vector<Array>& in) {
                        return rope(c, in[0].transpose(1, 2), positions, {});
                      },
                      {xt}),
            "rope transposed");
}

struct AttentionCase {
  const char* name;
  int64_t batch, q_heads, kv_heads, q_len, kv_len, head_dim, value_dim;
  bool causal;
  int mask;      // 0 none, 1 [Tq, Tk] finite, 2 [B, 1, 1, Tk] with -inf entries, 3 full and needing a gradient
  double scale;  // 0: the default 1 / sqrt(D)
};

class AttentionGradcheck : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionGradcheck, QueriesKeysValuesAndMask) {
  ExecContext ctx;
  const AttentionCase p = GetParam();
  const Array q = anywhere(ctx, {p.batch, p.q_heads, p.q_len, p.head_dim}, 231);
  const Array k = anywhere(ctx, {p.batch, p.kv_heads, p.kv_len, p.head_dim}, 232);
  const Array v = anywhere(ctx, {p.batch, p.kv_heads, p.kv_len, p.value_dim}, 233);
  Array mask;
  if (p.mask == 1) mask = anywhere(ctx, {p.q_len, p.kv_len}, 234, -2.0, 0.0);
  if (p.mask == 2) {
    mask = anywhere(ctx, {p.batch, 1, 1, p.kv_len}, 235, -1.0, 0.0);
    for (int64_t b = 0; b < p.batch; ++b)
      mask.data<double>()[b * p.kv_len + 1 + b] = -std::numeric_limits<double>::infinity();
  }
  if (p.mask == 3) mask = anywhere(ctx, {p.batch, p.q_heads, p.q_len, p.kv_len}, 236, -2.0, 0.0);
  std::vector<Array> inputs{q, k, v};
  if (p.mask == 3) inputs.push_back(mask);
  auto fn = [&](ExecContext& c, const std::vector<Array>& in) {
    AttentionOptions o;
    o.causal = p.causal;
    if (p.scale != 0) o.scale = p.scale;
    o.mask = p.mask == 3 ? in[3] : mask;
    return attention(c, in[0], in[1], in[2], o);
  };
  expect_ok(gradcheck(ctx, fn, inputs), std::string("attention ") + p.name);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionGradcheck,
                         ::testing::Values(AttentionCase{"mha", 2, 2, 2, 3, 3, 4, 4, false, 0, 0},
                                           AttentionCase{"gqa", 2, 4, 2, 3, 5, 4, 3, false, 0, 0},
                                           AttentionCase{"mqa_causal", 1, 3, 1, 4, 6, 5, 2, true, 0, 0},
                                           AttentionCase{"gqa_causal_square", 2, 4, 2, 4, 4, 3, 3, true, 0, 0.7},
                                           AttentionCase{"mask_broadcast", 1, 2, 1, 3, 5, 4, 4, false, 1, 0},
                                           AttentionCase{"mask_neg_inf_causal", 2, 2, 2, 3, 4, 4, 4, true, 2, 0},
                                           AttentionCase{"mask_gradient", 1, 4, 2, 2, 3, 3, 2, false, 3, 0.5},
                                           AttentionCase{"mask_gradient_causal", 2, 2, 1, 3, 3, 2, 2, true, 3, 0}),
                         [](const auto& info) { return std::string(info.param.name); });

// Projections produce q, k, v token-major ([B, T, H, D]); attention reads them through a
// transpose, so the VJP must see the same non-contiguous views.
TEST(GradcheckAttention, TransposedInputs) {
  ExecContext ctx;
  const Array q = anywhere(ctx, {1, 4, 4, 3}, 241), k = anywhere(ctx, {1, 5, 2, 3}, 242),
              v = anywhere(ctx, {1, 5, 2, 2}, 243);
  expect_ok(gradcheck(ctx,
                      [](ExecContext& c, const std::vector<Array>& in) {
                        AttentionOptions o;
                        o.causal = true;
                        return attention(c, in[0].transpose(1, 2), in[1].transpose(1, 2), in[2].transpose(1, 2), o);
                      },
                      {q, k, v}),
            "attention transposed causal gqa");
}

struct ConvCase {
  const char* name;
  int64_t batch, in_channels, in_len, out_channels, kernel;
  Conv1dOptions options;
  bool bias;
};

class Conv1dGradcheck : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv1dGradcheck, InputWeightAndBias) {
  ExecContext ctx;
  const ConvCase p = GetParam();
  const Array x = anywhere(ctx, {p.batch, p.in_channels, p.in_len}, 251);
  const Array w = anywhere(ctx, {p.out_channels, p.in_channels / p.options.groups, p.kernel}, 252);
  const Array b = anywhere(ctx, {p.out_channels}, 253);
  std::vector<Array> inputs{x, w};
  if (p.bias) inputs.push_back(b);
  expect_ok(gradcheck(
                ctx,
                [&](ExecContext& c, const std::vector<Array>& in) {
                  return conv1d(c, in[0], in[1], p.bias ? in[2] : Array{}, p.options);
                },
                inputs),
            std::string("conv1d ") + p.name);
}

INSTANTIATE_TEST_SUITE_P(
    Options, Conv1dGradcheck,
    ::testing::Values(ConvCase{"plain", 2, 3, 7, 4, 3, {}, true},
                      ConvCase{"stride2_pad1", 2, 2, 9, 3, 3, {.stride = 2, .padding = 1}, true},
                      ConvCase{"dilation2_pad2", 1, 2, 8, 2, 3, {.padding = 2, .dilation = 2}, false},
                      ConvCase{"groups2", 2, 4, 6, 6, 2, {.groups = 2}, true},
                      ConvCase{"depthwise_stride3", 1, 3, 10, 3, 4, {.stride = 3, .padding = 1, .groups = 3}, true},
                      ConvCase{"causal_dilation3", 2, 2, 9, 2, 3, {.dilation = 3, .causal = true}, true}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(GradcheckConv1d, TransposedInput) {
  ExecContext ctx;
  const Array x = anywhere(ctx, {2, 7, 3}, 261), w = anywhere(ctx, {4, 3, 2}, 262);
  expect_ok(gradcheck(ctx,
                      [](ExecContext& c, const std::vector<Array>& in) {
                        return conv1d(c, in[0].transpose(1, 2), in[1], {}, {.padding = 1});
                      },
                      {x, w}),
            "conv1d transposed input");
}

// Shapes drawn from a seeded generator rather than picked: extents of 1, odd extents, GQA groups,
// causal masks with more keys than queries, every conv1d option together, and inputs read
// through transposed views and broadcasts.
TEST(GradcheckRandomShapes, NormsRopeAttentionConv1d) {
  ExecContext ctx;
  std::mt19937_64 rng(2024);
  auto draw = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 6; ++trial) {
    const uint64_t seed = 400 + 10 * trial;
    const std::string tag = " random " + std::to_string(trial);
    // Norms over [a, b, n], read as the transpose of a [b, a, n] array.
    const int64_t a = draw(1, 4), b = draw(1, 4), n = draw(1, 9);
    const Array x = anywhere(ctx, {b, a, n}, seed), w = anywhere(ctx, {n}, seed + 1, 0.5, 1.5),
                bias = anywhere(ctx, {n}, seed + 2);
    expect_ok(
        gradcheck(
            ctx, [](ExecContext& c, const std::vector<Array>& in) { return rms_norm(c, in[0].transpose(0, 1), in[1]); },
            {x, w}),
        "rms_norm" + tag + " " + to_string(x.shape()));
    expect_ok(gradcheck(ctx,
                        [](ExecContext& c, const std::vector<Array>& in) {
                          return layer_norm(c, in[0].transpose(0, 1), in[1], in[2]);
                        },
                        {x, w, bias}),
              "layer_norm" + tag + " " + to_string(x.shape()));
    // Rope on [batch, seq, heads, head_dim] with random positions and rotated dims.
    const int64_t seq = draw(1, 5), heads = draw(1, 3), head_dim = 2 * draw(1, 4);
    RopeParams rp;
    rp.mode = draw(0, 1) ? RopeMode::neox : RopeMode::normal;
    rp.n_dims = 2 * draw(1, head_dim / 2);
    std::vector<int32_t> pos(static_cast<size_t>(seq));
    for (auto& p : pos) p = static_cast<int32_t>(draw(0, 5000));
    const Array positions = Array::from_values<int32_t>(ctx, {seq}, pos);
    expect_ok(
        gradcheck(ctx, [&](ExecContext& c, const std::vector<Array>& in) { return rope(c, in[0], positions, rp); },
                  {anywhere(ctx, {draw(1, 2), seq, heads, head_dim}, seed + 3)}),
        "rope" + tag);
    // Attention: random batch, group, lengths, dims; causal or a broadcast mask needing a gradient.
    const int64_t kv_heads = draw(1, 2), group = draw(1, 3), q_len = draw(1, 4), kv_len = q_len + draw(0, 3);
    const int64_t batch = draw(1, 2), d = draw(1, 5), dv = draw(1, 4);
    const bool causal = draw(0, 1);
    std::vector<Array> in{anywhere(ctx, {batch, kv_heads * group, q_len, d}, seed + 4),
                          anywhere(ctx, {batch, kv_heads, kv_len, d}, seed + 5),
                          anywhere(ctx, {batch, kv_heads, kv_len, dv}, seed + 6),
                          anywhere(ctx, {1, kv_heads * group, 1, kv_len}, seed + 7, -1.0, 0.0)};
    expect_ok(gradcheck(
                  ctx,
                  [causal](ExecContext& c, const std::vector<Array>& v) {
                    AttentionOptions o;
                    o.causal = causal;
                    o.mask = v[3];
                    return attention(c, v[0], v[1], v[2], o);
                  },
                  in),
              "attention" + tag + (causal ? " causal" : "") + " " + to_string(in[0].shape()) + " kv " +
                  to_string(in[2].shape()));
    // conv1d with every option drawn.
    Conv1dOptions co;
    co.groups = draw(1, 2);
    co.stride = draw(1, 3);
    co.dilation = draw(1, 2);
    co.causal = draw(0, 2) == 0;
    co.padding = co.causal ? 0 : draw(0, 2);
    const int64_t cin = co.groups * draw(1, 2), cout = co.groups * draw(1, 2), kernel = draw(1, 3);
    const int64_t length = (kernel - 1) * co.dilation + draw(1, 6);
    expect_ok(
        gradcheck(ctx, [co](ExecContext& c, const std::vector<Array>& v) { return conv1d(c, v[0], v[1], v[2], co); },
                  {anywhere(ctx, {draw(1, 2), cin, length}, seed + 8),
                   anywhere(ctx, {cout, cin / co.groups, kernel}, seed + 9), anywhere(ctx, {cout}, seed + 10)}),
        "conv1d" + tag);
  }
}

// The backward kernels give each gradient element one owner and one summation order: the same
// bits for 1 and 2 threads, on sizes large enough to split, on both backends.
TEST(NeuralVjpDeterminism, BitwiseEqualForOneAndTwoThreads) {
  auto run = [](int threads, Backend backend) {
    ExecContext ctx({.threads = threads, .backend = backend});
    Array x = cast(ctx, uniform(ctx, {4, 256, 96}, -1, 1, 301), DType::f32);
    Array w = cast(ctx, uniform(ctx, {96}, 0.5, 1.5, 302), DType::f32);
    Array bias = cast(ctx, uniform(ctx, {96}, -1, 1, 303), DType::f32);
    Array kernel = cast(ctx, uniform(ctx, {8, 64, 3}, -1, 1, 304), DType::f32);
    for (Array* p : {&x, &w, &bias, &kernel}) p->set_requires_grad();
    const Array h = layer_norm(ctx, rms_norm(ctx, x, w), w, bias);                 // [4, 256, 96]
    const Array q = h.reshape({4, 256, 4, 24}).transpose(1, 2);                    // [4, 4, 256, 24]
    const Array kv = h.reshape({4, 256, 2, 48}).narrow(3, 0, 24).transpose(1, 2);  // [4, 2, 256, 24]
    AttentionOptions o;
    o.causal = true;
    const Array a = softmax(ctx, attention(ctx, q, kv, kv, o), -1);  // [4, 4, 256, 24]
    const Array conv = conv1d(ctx, a.reshape({64, 64, 24}), kernel, {}, {.padding = 1});
    const Array logits = h.reshape({1024, 96});
    const Array targets = cast(ctx, mul(ctx, uniform(ctx, {1024}, 0, 1, 305), 95.0), DType::i64);
    Array loss = add(ctx, add(ctx, sum_all(ctx, square(ctx, conv)), sum_all(ctx, logsumexp(ctx, h, -1))),
                     cross_entropy(ctx, logits, targets));
    backward(ctx, loss);
    std::vector<std::vector<float>> grads;
    for (Array* p : {&x, &w, &bias, &kernel}) grads.push_back(to_vector<float>(ctx, p->grad()));
    if (threads > 1) {
      EXPECT_GT(ctx.threads().split_jobs(), 0);
    }
    return grads;
  };
  EXPECT_EQ(run(1, Backend::native), run(2, Backend::native));
  EXPECT_EQ(run(1, Backend::scalar), run(2, Backend::scalar));
}

// Half-precision inputs compute in f32 and hand back gradients in their own dtype (the casts'
// VJPs carry them to the f32 leaves); the result is the f32 gradient to within half rounding.
TEST(NeuralVjpHalf, F16AndBf16InputsGiveGradientsInTheirDtype) {
  for (DType half : {DType::f16, DType::bf16}) {
    ExecContext ctx;
    auto grads = [&](DType dtype) {
      Array x = cast(ctx, uniform(ctx, {2, 2, 4, 8}, -1, 1, 311), DType::f32);
      Array w = cast(ctx, uniform(ctx, {8}, 0.5, 1.5, 312), DType::f32);
      x.set_requires_grad();
      w.set_requires_grad();
      const Array xh = cast(ctx, x, dtype), wh = cast(ctx, w, dtype);
      const Array n = rms_norm(ctx, xh, wh);
      AttentionOptions o;
      o.causal = true;
      const Array a = attention(ctx, n, n, n, o);
      const Array y = log_softmax(ctx, layer_norm(ctx, a, wh, {}), -1);
      backward(ctx, sum_all(ctx, mul(ctx, cast(ctx, y, DType::f32),
                                     cast(ctx, uniform(ctx, {2, 2, 4, 8}, -1, 1, 313), DType::f32))));
      return std::pair{to_vector<float>(ctx, x.grad()), to_vector<float>(ctx, w.grad())};
    };
    const auto [gx, gw] = grads(half);
    const auto [fx, fw] = grads(DType::f32);
    const double tolerance = half == DType::f16 ? 3e-2 : 2e-1;
    for (size_t i = 0; i < fx.size(); ++i) EXPECT_NEAR(gx[i], fx[i], tolerance * (1 + std::abs(fx[i]))) << i;
    for (size_t i = 0; i < fw.size(); ++i) EXPECT_NEAR(gw[i], fw[i], tolerance * (1 + std::abs(fw[i]))) << i;
  }
}

}  // namespace
}  // namespace tempra::ag
