// bench/train_bench.cpp: one training step of the spirals MLP (apps/spirals: 2 -> 64 -> 64 -> 2,
// tanh, batch 256), forward + cross-entropy + backward + AdamW, tempra against PyTorch.
//
// The harness (bench/train_harness.h) alternates rounds of tempra and of /usr/bin/python3
// bench/train_bench_torch.py with the same thread count (torch.set_num_threads), model, batch,
// optimizer hyper-parameters and loss; each round reports the mean wall and process CPU time per
// step over `steps` steps after a warm-up; the figure per side is the median over rounds. Not a
// test: the numbers go to docs/BENCHMARK.md with the machine, date and load.
//
// usage: train_bench [--backend native|scalar] [--threads T] [--rounds R] [--steps N] [--warmup W] [--python PATH]
//                    [--script PATH] [--tempra-only 1]
#include <cstdint>
#include <cstdio>

#include "spirals.h"
#include "tempra/ag/backward.h"
#include "tempra/core/grad_node.h"
#include "train_harness.h"

namespace {

// One round of tempra's side: a fresh model and optimizer, then time_steps.
train_harness::Timing tempra_round(const train_harness::Options& o, const spirals::Dataset& data) {
  tempra::ExecContext ctx(tempra::ExecOptions{.threads = o.threads, .backend = o.backend, .seed = 1});
  const spirals::Mlp model = spirals::Mlp::init(ctx);
  auto optimizer = spirals::make_optimizer("adamw", model);
  const int64_t batch = spirals::Trainer::kBatch;
  tempra::Array x = tempra::Array::empty(ctx, {batch, 2}, tempra::DType::f32);
  tempra::Array y = tempra::Array::empty(ctx, {batch}, tempra::DType::i32);
  for (int64_t i = 0; i < batch; ++i) {
    x.data<float>()[2 * i] = data.x[static_cast<size_t>(2 * i)];
    x.data<float>()[2 * i + 1] = data.x[static_cast<size_t>(2 * i + 1)];
    y.data<int32_t>()[i] = data.y[static_cast<size_t>(i)];
  }
  const auto xt = tempra::Tensor<spirals::batch, spirals::in>::from(x);
  return train_harness::time_steps(o.steps, o.warmup, [&] {
    const auto logits = spirals::forward(ctx, model, xt);
    const tempra::Array loss = spirals::loss(ctx, logits, y);
    tempra::ag::backward(ctx, loss);
    optimizer->step(ctx);
    optimizer->zero_grad();
  });
}

}  // namespace

int main(int argc, char** argv) {
  const train_harness::Options o = train_harness::parse_options(
      "train_bench", argc, argv, {.steps = 500, .warmup = 50, .script = "bench/train_bench_torch.py"});
  const spirals::Dataset data = spirals::make_spirals(20261130, 500, 0.02);
  std::printf("spirals MLP training step (batch %lld, forward + backward + AdamW), %d threads, %d steps per round\n",
              static_cast<long long>(spirals::Trainer::kBatch), o.threads, o.steps);
  return train_harness::run_rounds("train_bench", o, [&] { return tempra_round(o, data); });
}
