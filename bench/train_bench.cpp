// bench/train_bench.cpp: one training step of the spirals MLP (apps/spirals: 2 -> 64 -> 64 -> 2,
// tanh, batch 256), forward + cross-entropy + backward + AdamW, tempra against PyTorch.
//
// Both sides run in one invocation, alternating rounds (tempra, then torch, R times) so that a
// change in machine load hits both: each round times `steps` steps after a warm-up and reports
// the mean step time, wall clock and process CPU time (all threads; on a loaded machine the CPU
// time is the steadier figure); the figure per side is the median over rounds. PyTorch runs as
// /usr/bin/python3 bench/train_bench_torch.py with the same thread count
// (torch.set_num_threads), model, batch, optimizer hyper-parameters and loss. Not a test: the
// numbers go to docs/BENCHMARK.md with the machine, date and load.
//
// usage: train_bench [--backend native|scalar] [--threads T] [--rounds R] [--steps N] [--python PATH] [--script PATH]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "spirals.h"
#include "tempra/ag/backward.h"
#include "tempra/core/grad_node.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Timing {
  double wall_us = 0;  // per step
  double cpu_us = 0;   // process CPU time per step, all threads: robust to a loaded machine
};

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Mean time per step over `steps` steps, after `warmup` untimed ones.
// The kernel set tempra runs on (--backend): native by default, scalar for the old-vs-new record.
tempra::Backend g_backend = tempra::Backend::native;

Timing tempra_round(int threads, int steps, int warmup, const spirals::Dataset& data) {
  tempra::ExecContext ctx(tempra::ExecOptions{.threads = threads, .backend = g_backend, .seed = 1});
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
  auto step = [&] {
    const auto logits = spirals::forward(ctx, model, xt);
    const tempra::Array loss = spirals::loss(ctx, logits, y);
    tempra::ag::backward(ctx, loss);
    optimizer->step(ctx);
    optimizer->zero_grad();
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
    std::fprintf(stderr, "train_bench: cannot run %s\n", command.c_str());
    std::exit(1);
  }
  char line[256];
  Timing t{-1, -1};
  while (std::fgets(line, sizeof line, pipe.get()))
    if (std::sscanf(line, "us_per_step %lf cpu_us_per_step %lf", &t.wall_us, &t.cpu_us) == 2) break;
  if (t.cpu_us < 0) {
    std::fprintf(stderr, "train_bench: %s printed no us_per_step line\n", command.c_str());
    std::exit(1);
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 5, steps = 500, warmup = 50;
  std::string python = "/usr/bin/python3", script = "bench/train_bench_torch.py";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "train_bench: %s needs a value\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--threads")
      threads = std::atoi(value.c_str());
    else if (flag == "--rounds")
      rounds = std::atoi(value.c_str());
    else if (flag == "--steps")
      steps = std::atoi(value.c_str());
    else if (flag == "--backend" && (value == "native" || value == "scalar"))
      g_backend = value == "native" ? tempra::Backend::native : tempra::Backend::scalar;
    else if (flag == "--python")
      python = value;
    else if (flag == "--script")
      script = value;
    else {
      std::fprintf(stderr, "train_bench: unknown option '%s'\n", flag.c_str());
      return 2;
    }
  }
  if (threads < 1 || rounds < 1 || steps < 1) {
    std::fprintf(stderr, "train_bench: --threads, --rounds and --steps must be >= 1\n");
    return 2;
  }
  const spirals::Dataset data = spirals::make_spirals(20261130, 500, 0.02);
  std::vector<double> ours, theirs, ours_cpu, theirs_cpu;
  std::printf("spirals MLP training step (batch %lld, forward + backward + AdamW), %d threads, %d steps per round\n",
              static_cast<long long>(spirals::Trainer::kBatch), threads, steps);
  for (int r = 0; r < rounds; ++r) {
    const Timing a = tempra_round(threads, steps, warmup, data);
    const Timing b = torch_round(python, script, threads, steps, warmup);
    ours.push_back(a.wall_us);
    theirs.push_back(b.wall_us);
    ours_cpu.push_back(a.cpu_us);
    theirs_cpu.push_back(b.cpu_us);
    std::printf("round %d: tempra %8.1f us/step (cpu %8.1f)   torch %8.1f us/step (cpu %8.1f)\n", r + 1, a.wall_us,
                a.cpu_us, b.wall_us, b.cpu_us);
    std::fflush(stdout);
  }
  const double a = median(ours), b = median(theirs), ac = median(ours_cpu), bc = median(theirs_cpu);
  std::printf("median wall: tempra %.1f us/step, torch %.1f us/step, torch/tempra = %.2fx\n", a, b, b / a);
  std::printf("median cpu:  tempra %.1f us/step, torch %.1f us/step, torch/tempra = %.2fx\n", ac, bc, bc / ac);
  return 0;
}
