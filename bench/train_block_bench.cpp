// bench/train_block_bench.cpp: one training step of a small pre-norm transformer block, forward
// + loss + backward + AdamW, tempra against PyTorch (issue 3's benchmark).
//
// The block is tests/ag/torch_golden_test.cpp's (rms_norm, q/k/v projections, rope in the NeoX
// layout, causal grouped-query attention, output projection and residual, rms_norm, SwiGLU MLP
// and residual), f32, at batch 8, seq 128, d_model 256, 4 query heads and 2 kv heads of 64,
// FFN 704; the loss is the mean squared error of the block's output against a fixed target.
// AdamW (lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 1e-2) over the nine parameters.
//
// The harness (bench/train_harness.h) alternates rounds of tempra and of /usr/bin/python3
// bench/train_block_bench_torch.py with the same thread count; each round reports the mean wall
// and process CPU time per step over `steps` steps after a warm-up; the figure per side is the
// median over rounds. Not a test: the numbers go to docs/BENCHMARK.md.
//
// usage: train_block_bench [--backend native|scalar] [--threads T] [--rounds R] [--steps N] [--warmup W]
//                          [--python PATH] [--script PATH] [--tempra-only 1]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "tempra/ag/backward.h"
#include "tempra/ops/ops.h"
#include "tempra/optim/adamw.h"
#include "train_harness.h"

namespace {

using tempra::Array;
using tempra::DType;
using tempra::ExecContext;

constexpr int64_t kBatch = 8, kSeq = 128, kDim = 256, kQHeads = 4, kKvHeads = 2, kHeadDim = 64, kFfn = 704;
constexpr double kEps = 1e-6, kFreqBase = 10000.0;

Array param(ExecContext& ctx, const tempra::Dims& shape, double stddev) {
  Array a = stddev > 0 ? tempra::normal(ctx, shape, 0.0, stddev) : tempra::full(ctx, shape, 1.0);
  a.set_requires_grad();
  return a;
}

struct Block {
  Array attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;

  static Block init(ExecContext& ctx) {
    const double s_dim = 1.0 / std::sqrt(double(kDim)), s_heads = 1.0 / std::sqrt(double(kQHeads * kHeadDim)),
                 s_ffn = 1.0 / std::sqrt(double(kFfn));
    return {param(ctx, {kDim}, 0),
            param(ctx, {kQHeads * kHeadDim, kDim}, s_dim),
            param(ctx, {kKvHeads * kHeadDim, kDim}, s_dim),
            param(ctx, {kKvHeads * kHeadDim, kDim}, s_dim),
            param(ctx, {kDim, kQHeads * kHeadDim}, s_heads),
            param(ctx, {kDim}, 0),
            param(ctx, {kFfn, kDim}, s_dim),
            param(ctx, {kFfn, kDim}, s_dim),
            param(ctx, {kDim, kFfn}, s_ffn)};
  }
  std::vector<tempra::optim::Param> params() const {
    return {{"attn_norm", attn_norm}, {"wq", wq},         {"wk", wk},     {"wv", wv},        {"wo", wo},
            {"ffn_norm", ffn_norm},   {"w_gate", w_gate}, {"w_up", w_up}, {"w_down", w_down}};
  }
};

// The golden test's block, at the benchmark's shape.
Array block_loss(ExecContext& ctx, const Block& b, const Array& x, const Array& target, const Array& positions) {
  using namespace tempra;
  RopeParams rope_params;
  rope_params.mode = RopeMode::neox;
  rope_params.n_dims = kHeadDim;
  rope_params.freq_base = kFreqBase;
  const Array h = rms_norm(ctx, x, b.attn_norm, kEps);
  const Array q = rope(ctx, linear(ctx, h, b.wq).reshape({kBatch, kSeq, kQHeads, kHeadDim}), positions, rope_params);
  const Array k = rope(ctx, linear(ctx, h, b.wk).reshape({kBatch, kSeq, kKvHeads, kHeadDim}), positions, rope_params);
  const Array v = linear(ctx, h, b.wv).reshape({kBatch, kSeq, kKvHeads, kHeadDim});
  const Array o = attention(ctx, q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), {.causal = true});
  const Array heads = contiguous(ctx, o.transpose(1, 2)).reshape({kBatch, kSeq, kQHeads * kHeadDim});
  const Array x1 = add(ctx, x, linear(ctx, heads, b.wo));
  const Array h2 = rms_norm(ctx, x1, b.ffn_norm, kEps);
  const Array gated = mul(ctx, silu(ctx, linear(ctx, h2, b.w_gate)), linear(ctx, h2, b.w_up));
  const Array x2 = add(ctx, x1, linear(ctx, gated, b.w_down));
  return mean_all(ctx, square(ctx, sub(ctx, x2, target)));
}

// One round of tempra's side: a fresh block and optimizer, then time_steps.
train_harness::Timing tempra_round(const train_harness::Options& o) {
  ExecContext ctx(tempra::ExecOptions{.threads = o.threads, .backend = o.backend, .seed = 1});
  const Block model = Block::init(ctx);
  tempra::optim::AdamW optimizer(model.params(), 1e-3, tempra::optim::AdamWOptions{}, 1e-2);
  const Array x = tempra::normal(ctx, {kBatch, kSeq, kDim});
  const Array target = tempra::normal(ctx, {kBatch, kSeq, kDim});
  const Array positions = tempra::arange(ctx, kSeq, DType::i32);
  return train_harness::time_steps(o.steps, o.warmup, [&] {
    const Array loss = block_loss(ctx, model, x, target, positions);
    tempra::ag::backward(ctx, loss);
    optimizer.step(ctx);
    optimizer.zero_grad();
  });
}

}  // namespace

int main(int argc, char** argv) {
  const train_harness::Options o = train_harness::parse_options(
      "train_block_bench", argc, argv, {.steps = 20, .warmup = 3, .script = "bench/train_block_bench_torch.py"});
  std::printf(
      "transformer block training step (batch %lld, seq %lld, d_model %lld, heads %lld/%lld x %lld, ffn %lld, "
      "f32; forward + backward + AdamW), %d threads, %d steps per round\n",
      (long long)kBatch, (long long)kSeq, (long long)kDim, (long long)kQHeads, (long long)kKvHeads, (long long)kHeadDim,
      (long long)kFfn, o.threads, o.steps);
  return train_harness::run_rounds("train_block_bench", o, [&] { return tempra_round(o); });
}
