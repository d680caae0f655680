// apps/mlp_demo: the README's named-axis MLP forward pass on seeded random data.
//
// Builds the two-layer model of the README sketch with weights drawn from the counter RNG, runs
// one forward pass over a small batch, and prints the output's axes, shape and values. The same
// seed prints the same numbers on any machine and thread count.
#include <cstdio>
#include <exception>

#include "tempra/typed/ops.h"

namespace demo {

TEMPRA_AXES(batch, in, h1, cls);

struct Model {
  tempra::Tensor<h1, in> w1;
  tempra::Tensor<h1> b1;
  tempra::Tensor<cls, h1> w2;
  tempra::Tensor<cls> b2;
};

tempra::Tensor<batch, cls> forward(tempra::ExecContext& ctx, const Model& m, const tempra::Tensor<batch, in>& x) {
  using namespace tempra;
  auto z1 = x.dot<in>(ctx, m.w1);           // contracts `in`: Tensor<batch, h1>
  auto a1 = tanh(ctx, add(ctx, z1, m.b1));  // bias broadcast by axis name
  return add(ctx, a1.dot<h1>(ctx, m.w2), m.b2);
}

}  // namespace demo

int main() {
  using namespace demo;
  try {
    tempra::ExecContext ctx(tempra::ExecOptions{.seed = 42});
    constexpr int64_t kBatch = 4, kIn = 2, kHidden = 16, kClasses = 3;
    const Model model{
        tempra::Tensor<h1, in>::normal(ctx, {kHidden, kIn}, 0.0, 0.5),
        tempra::Tensor<h1>::zeros(ctx, {kHidden}),
        tempra::Tensor<cls, h1>::normal(ctx, {kClasses, kHidden}, 0.0, 0.25),
        tempra::Tensor<cls>::zeros(ctx, {kClasses}),
    };
    const auto x = tempra::Tensor<batch, in>::uniform(ctx, {kBatch, kIn}, -1.0, 1.0);
    const tempra::Tensor<batch, cls> logits = forward(ctx, model, x);
    const auto probabilities = tempra::softmax<cls>(ctx, logits);

    std::printf("tempra MLP demo: %s -> %s, threads=%d, seed=42\n", decltype(x)::describe().c_str(),
                decltype(logits)::describe().c_str(), ctx.threads().size());
    std::printf("output shape %s\n", tempra::to_string(logits.shape()).c_str());
    for (int64_t b = 0; b < kBatch; ++b) {
      std::printf("  x=(% .4f, % .4f)  logits=", x.array().at({b, 0}), x.array().at({b, 1}));
      for (int64_t c = 0; c < kClasses; ++c) std::printf("% .6f ", logits.array().at({b, c}));
      std::printf(" p=");
      for (int64_t c = 0; c < kClasses; ++c) std::printf("%.4f ", probabilities.array().at({b, c}));
      std::printf("\n");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlp_demo: %s\n", e.what());
    return 1;
  }
}
