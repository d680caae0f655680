// tests/ag/torch_golden_test.cpp: tempra's autograd against PyTorch's on whole models. The
// goldens (tests/goldens/grad_*.safetensors, written by tools/gen_grad_goldens.py with torch
// 1.13 in f64) hold seeded inputs and parameters, the loss and every parameter's gradient; the
// same model written with tempra's ops must match the loss and each gradient within 1e-5
// relative. The transformer block lives in torch_golden_block_test.cpp.
#include "ag/torch_golden.h"

#include "tempra/ag/backward.h"

namespace tempra {
namespace {

TEST(TorchGolden, two_layer_mlp_loss_and_every_gradient) {
  ExecContext ctx;
  testing::GoldenModel m = testing::load_model(ctx, "grad_mlp", {"x", "target"});
  auto& t = m.tensors;
  const Array h = tanh(ctx, add(ctx, linear(ctx, t.at("x"), t.at("w1")), t.at("b1")));
  const Array y = add(ctx, linear(ctx, h, t.at("w2")), t.at("b2"));
  const Array loss = mean_all(ctx, square(ctx, sub(ctx, y, t.at("target"))));
  ag::backward(ctx, loss);
  testing::expect_gradients_match(ctx, m, loss, 1e-5);
}

}  // namespace
}  // namespace tempra
