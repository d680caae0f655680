// bench/train_block_bench.cpp: one training step of a small pre-norm transformer block, forward
// + loss + backward + AdamW, tempra against PyTorch (issue 3's benchmark).
//
// The block is tests/ag/torch_golden_test.cpp's (rms_norm, q/k/v projections, rope in the NeoX
// layout, causal grouped-query attention, output projection and residual, rms_norm, SwiGLU MLP
// and residual), f32, at batch 8, seq 128, d_model 256, 4 query heads and 2 kv heads of 64,
// FFN 704; the loss is the mean squared error of the block's output against a fixed target.
// AdamW (lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 1e-2) over the nine parameters.
//
// Same harness as bench/train_bench.cpp: one invocation alternates rounds (tempra, then
// /usr/bin/python3 bench/train_block_bench_torch.py, R times) with the same thread count; each
// round reports the mean wall and process CPU time per step over `steps` steps after a warm-up;
// the figure per side is the median over rounds. Not a test: the numbers go to docs/BENCHMARK.md.
//
// usage: train_block_bench [--backend native|scalar] [--threads T] [--rounds R] [--steps N] [--warmup W] [--python PATH]
//                          [--script PATH] [--tempra-only 1]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tempra/ag/backward.h"
#include "tempra/ops/ops.h"
#include "tempra/optim/adamw.h"

namespace {

using Clock = std::chrono::steady_clock;
using tempra::Array;
using tempra::DType;
using tempra::ExecContext;

constexpr int64_t kBatch = 8, kSeq = 128, kDim = 256, kQHeads = 4, kKvHeads = 2, kHeadDim = 64, kFfn = 704;
constexpr double kEps = 1e-6, kFreqBase = 10000.0;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Timing {
  double wall_us = 0;  // per step
  double cpu_us = 0;   // process CPU time per step, all threads
};

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

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

// The kernel set tempra runs on (--backend): native by default, scalar for the old-vs-new record.
tempra::Backend g_backend = tempra::Backend::native;

Timing tempra_round(int threads, int steps, int warmup) {
  ExecContext ctx(tempra::ExecOptions{.threads = threads, .backend = g_backend, .seed = 1});
  const Block model = Block::init(ctx);
  tempra::optim::AdamW optimizer(model.params(), 1e-3, tempra::optim::AdamWOptions{}, 1e-2);
  const Array x = tempra::normal(ctx, {kBatch, kSeq, kDim});
  const Array target = tempra::normal(ctx, {kBatch, kSeq, kDim});
  const Array positions = tempra::arange(ctx, kSeq, DType::i32);
  auto step = [&] {
    const Array loss = block_loss(ctx, model, x, target, positions);
    tempra::ag::backward(ctx, loss);
    optimizer.step(ctx);
    optimizer.zero_grad();
  };
  for (int i = 0; i < warmup; ++i) step();
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  for (int i = 0; i < steps; ++i) step();
  return {std::chrono::duration<double, std::micro>(Clock::now() - start).count() / steps,
          (cpu_seconds() - cpu_start) * 1e6 / steps};
}

Timing torch_round(const std::string& python, const std::string& script, int threads, int steps, int warmup) {
  const std::string command = python + " " + script + " --threads " + std::to_string(threads) + " --steps " +
                              std::to_string(steps) + " --warmup " + std::to_string(warmup);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) {
    std::fprintf(stderr, "train_block_bench: cannot run %s\n", command.c_str());
    std::exit(1);
  }
  char line[256];
  Timing t{-1, -1};
  while (std::fgets(line, sizeof line, pipe.get()))
    if (std::sscanf(line, "us_per_step %lf cpu_us_per_step %lf", &t.wall_us, &t.cpu_us) == 2) break;
  if (t.cpu_us < 0) {
    std::fprintf(stderr, "train_block_bench: %s printed no us_per_step line\n", command.c_str());
    std::exit(1);
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 5, steps = 20, warmup = 3;
  bool tempra_only = false;
  std::string python = "/usr/bin/python3", script = "bench/train_block_bench_torch.py";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "train_block_bench: %s needs a value\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--threads")
      threads = std::atoi(value.c_str());
    else if (flag == "--rounds")
      rounds = std::atoi(value.c_str());
    else if (flag == "--steps")
      steps = std::atoi(value.c_str());
    else if (flag == "--warmup")
      warmup = std::atoi(value.c_str());
    else if (flag == "--backend" && (value == "native" || value == "scalar"))
      g_backend = value == "native" ? tempra::Backend::native : tempra::Backend::scalar;
    else if (flag == "--python")
      python = value;
    else if (flag == "--script")
      script = value;
    else if (flag == "--tempra-only")
      tempra_only = std::atoi(value.c_str()) != 0;
    else {
      std::fprintf(stderr, "train_block_bench: unknown option '%s'\n", flag.c_str());
      return 2;
    }
  }
  if (threads < 1 || rounds < 1 || steps < 1 || warmup < 0) {
    std::fprintf(stderr, "train_block_bench: --threads, --rounds and --steps must be >= 1\n");
    return 2;
  }
  std::vector<double> ours, theirs, ours_cpu, theirs_cpu;
  std::printf("transformer block training step (batch %lld, seq %lld, d_model %lld, heads %lld/%lld x %lld, ffn %lld, "
              "f32; forward + backward + AdamW), %d threads, %d steps per round\n",
              (long long)kBatch, (long long)kSeq, (long long)kDim, (long long)kQHeads, (long long)kKvHeads,
              (long long)kHeadDim, (long long)kFfn, threads, steps);
  for (int r = 0; r < rounds; ++r) {
    const Timing a = tempra_round(threads, steps, warmup);
    ours.push_back(a.wall_us);
    ours_cpu.push_back(a.cpu_us);
    if (tempra_only) {
      std::printf("round %d: tempra %9.1f us/step (cpu %9.1f)\n", r + 1, a.wall_us, a.cpu_us);
      continue;
    }
    const Timing b = torch_round(python, script, threads, steps, warmup);
    theirs.push_back(b.wall_us);
    theirs_cpu.push_back(b.cpu_us);
    std::printf("round %d: tempra %9.1f us/step (cpu %9.1f)   torch %9.1f us/step (cpu %9.1f)\n", r + 1, a.wall_us,
                a.cpu_us, b.wall_us, b.cpu_us);
    std::fflush(stdout);
  }
  if (tempra_only) {
    std::printf("median: tempra %.1f us/step wall, %.1f us/step cpu\n", median(ours), median(ours_cpu));
    return 0;
  }
  const double a = median(ours), b = median(theirs), ac = median(ours_cpu), bc = median(theirs_cpu);
  std::printf("median wall: tempra %.1f us/step, torch %.1f us/step, torch/tempra = %.2fx\n", a, b, b / a);
  std::printf("median cpu:  tempra %.1f us/step, torch %.1f us/step, torch/tempra = %.2fx\n", ac, bc, bc / ac);
  return 0;
}
