// bench/ag_overhead_bench.cpp: what autograd costs an inference forward pass.
//
// Issue 3 asks that a forward with autograd compiled in cost no more than the same forward with
// recording disabled. Every op checks whether an input requires a gradient (one pointer test per
// input) and records nothing when none does. Three variants of the same MLP forward
// (x [batch, width] -> tanh(x W1 + b1) -> tanh(. W2 + b2) -> . W3, all through tempra/ops):
//   inference     parameters that do not require a gradient, grad mode on (the default)
//   no_grad       parameters that require a gradient, inside NoGradGuard (recording off)
//   recording     parameters that require a gradient, grad mode on (a training forward)
// The first two must agree within noise. Two sizes: a tiny one (batch 16, width 32) where
// per-op overhead dominates and any cost of the check would show, and a compute-bound one.
// Run: cmake -DTEMPRA_BUILD_BENCH=ON, then build/<dir>/bench/ag_overhead_bench
//      --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "tempra/core/grad_node.h"
#include "tempra/ops/ops.h"

namespace {

using tempra::Array;

tempra::ExecContext& context() {
  static tempra::ExecContext ctx;
  return ctx;
}

struct Mlp {
  Array w1, b1, w2, b2, w3;
};

Mlp make_mlp(int64_t width, bool requires_grad) {
  auto& ctx = context();
  Mlp m{tempra::normal(ctx, {width, width}, 0.0, 0.1, 1), tempra::normal(ctx, {width}, 0.0, 0.1, 2),
        tempra::normal(ctx, {width, width}, 0.0, 0.1, 3), tempra::normal(ctx, {width}, 0.0, 0.1, 4),
        tempra::normal(ctx, {width, 8}, 0.0, 0.1, 5)};
  if (requires_grad)
    for (Array* p : {&m.w1, &m.b1, &m.w2, &m.b2, &m.w3}) p->set_requires_grad();
  return m;
}

Array forward(const Mlp& m, const Array& x) {
  auto& ctx = context();
  Array h = tempra::tanh(ctx, tempra::add(ctx, tempra::matmul(ctx, x, m.w1), m.b1));
  h = tempra::tanh(ctx, tempra::add(ctx, tempra::matmul(ctx, h, m.w2), m.b2));
  return tempra::matmul(ctx, h, m.w3);
}

enum Variant { kInference, kNoGrad, kRecording };

void BM_mlp_forward(benchmark::State& state, Variant variant) {
  const int64_t batch = state.range(0), width = state.range(1);
  const Mlp m = make_mlp(width, variant != kInference);
  const Array x = tempra::normal(context(), {batch, width}, 0.0, 1.0, 9);
  for (auto _ : state) {
    if (variant == kNoGrad) {
      tempra::NoGradGuard no_grad;
      benchmark::DoNotOptimize(forward(m, x));
    } else {
      benchmark::DoNotOptimize(forward(m, x));
    }
  }
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Args({16, 32})->Args({256, 512})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_mlp_forward, inference, kInference)->Apply(sizes);
BENCHMARK_CAPTURE(BM_mlp_forward, no_grad, kNoGrad)->Apply(sizes);
BENCHMARK_CAPTURE(BM_mlp_forward, recording, kRecording)->Apply(sizes);

}  // namespace

BENCHMARK_MAIN();
