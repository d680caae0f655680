// tests/ag/torch_golden_test.cpp: tempra's autograd against PyTorch's on whole models. The
// goldens (tests/goldens/grad_*.safetensors, written by tools/gen_grad_goldens.py with torch
// 1.13 in f64) hold seeded inputs and parameters, the loss and every parameter's gradient; the
// same model written with tempra's ops must match the loss and each gradient within 1e-5
// relative. Two models: a 2-layer MLP, and a pre-norm transformer block (rms_norm, q/k/v
// projections, rope in the NeoX layout, causal grouped-query attention, output projection and
// residual, rms_norm, SwiGLU MLP and residual).
#include "ag/torch_golden.h"

#include "tempra/ag/backward.h"

namespace tempra {
namespace {

// Each model runs on both backends: the scalar kernels and the native (SIMD) ones.
class TorchGolden : public ::testing::TestWithParam<Backend> {};

TEST_P(TorchGolden, two_layer_mlp_loss_and_every_gradient) {
  ExecContext ctx(ExecOptions{.backend = GetParam()});
  testing::GoldenModel m = testing::load_model(ctx, "grad_mlp", {"x", "target"});
  auto& t = m.tensors;
  const Array h = tanh(ctx, add(ctx, linear(ctx, t.at("x"), t.at("w1")), t.at("b1")));
  const Array y = add(ctx, linear(ctx, h, t.at("w2")), t.at("b2"));
  const Array loss = mean_all(ctx, square(ctx, sub(ctx, y, t.at("target"))));
  ag::backward(ctx, loss);
  testing::expect_gradients_match(ctx, m, loss, 1e-5);
}

TEST_P(TorchGolden, transformer_block_loss_and_every_gradient) {
  ExecContext ctx(ExecOptions{.backend = GetParam()});
  testing::GoldenModel m = testing::load_model(ctx, "grad_block", {"x", "target", "positions"});
  auto& t = m.tensors;
  const auto& cfg = m.spec.params;
  const int64_t batch = cfg.at("batch"), seq = cfg.at("seq"), q_heads = cfg.at("q_heads"),
                kv_heads = cfg.at("kv_heads"), head_dim = cfg.at("head_dim");
  const double eps = cfg.at("eps");
  RopeParams rope_params;
  rope_params.mode = RopeMode::neox;
  rope_params.n_dims = head_dim;
  rope_params.freq_base = cfg.at("freq_base");

  const Array& x = t.at("x");
  const Array h = rms_norm(ctx, x, t.at("attn_norm"), eps);
  const Array q =
      rope(ctx, linear(ctx, h, t.at("wq")).reshape({batch, seq, q_heads, head_dim}), t.at("positions"), rope_params);
  const Array k =
      rope(ctx, linear(ctx, h, t.at("wk")).reshape({batch, seq, kv_heads, head_dim}), t.at("positions"), rope_params);
  const Array v = linear(ctx, h, t.at("wv")).reshape({batch, seq, kv_heads, head_dim});
  const Array o = attention(ctx, q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), {.causal = true});
  const Array heads = contiguous(ctx, o.transpose(1, 2)).reshape({batch, seq, q_heads * head_dim});
  const Array x1 = add(ctx, x, linear(ctx, heads, t.at("wo")));
  const Array h2 = rms_norm(ctx, x1, t.at("ffn_norm"), eps);
  const Array gated = mul(ctx, silu(ctx, linear(ctx, h2, t.at("w_gate"))), linear(ctx, h2, t.at("w_up")));
  const Array x2 = add(ctx, x1, linear(ctx, gated, t.at("w_down")));
  const Array loss = mean_all(ctx, square(ctx, sub(ctx, x2, t.at("target"))));
  ag::backward(ctx, loss);
  testing::expect_gradients_match(ctx, m, loss, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Backends, TorchGolden, ::testing::Values(Backend::scalar, Backend::native),
                         [](const auto& info) { return info.param == Backend::scalar ? "scalar" : "native"; });

}  // namespace
}  // namespace tempra
