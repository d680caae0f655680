// bench/train_harness.h: what the training benchmarks (train_bench, train_block_bench) share:
// the command line, the timing of a round, the alternating rounds and the report.
//
// One invocation alternates rounds (tempra, then PyTorch's side, R times) so that a change in
// machine load hits both: each round times `steps` steps after `warmup` untimed ones and reports
// the mean step time, wall clock and process CPU time (all threads; on a loaded machine the CPU
// time is the steadier figure); the figure per side is the median over rounds. PyTorch's side is
// a script (bench/train_harness_torch.py) run as `python script --threads T --steps N --warmup W`
// that prints `us_per_step <wall> cpu_us_per_step <cpu>`.
//
// Options: --backend native|scalar, --threads T, --rounds R, --steps N, --warmup W,
// --python PATH, --script PATH, --tempra-only 1 (no PyTorch rounds).
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tempra/core/exec_context.h"

namespace train_harness {

struct Options {
  tempra::Backend backend = tempra::Backend::native;  // native by default, scalar for the old-vs-new record
  int threads = 2, rounds = 5, steps = 0, warmup = 0;
  std::string python = "/usr/bin/python3", script;
  bool tempra_only = false;
};

struct Timing {
  double wall_us = 0;  // per step
  double cpu_us = 0;   // process CPU time per step, all threads: robust to a loaded machine
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Mean time per step over `steps` calls of step(), after `warmup` untimed ones.
template <class Step>
Timing time_steps(int steps, int warmup, Step&& step) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) step();
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  for (int i = 0; i < steps; ++i) step();
  return {std::chrono::duration<double, std::micro>(Clock::now() - start).count() / steps,
          (cpu_seconds() - cpu_start) * 1e6 / steps};
}

// `defaults` with the command line's options applied; exits 2 on a bad one, naming `program`.
inline Options parse_options(const char* program, int argc, char** argv, const Options& defaults) {
  Options o = defaults;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: %s needs a value\n", program, flag.c_str());
      std::exit(2);
    }
    const std::string value = argv[++i];
    if (flag == "--threads")
      o.threads = std::atoi(value.c_str());
    else if (flag == "--rounds")
      o.rounds = std::atoi(value.c_str());
    else if (flag == "--steps")
      o.steps = std::atoi(value.c_str());
    else if (flag == "--warmup")
      o.warmup = std::atoi(value.c_str());
    else if (flag == "--backend" && (value == "native" || value == "scalar"))
      o.backend = value == "native" ? tempra::Backend::native : tempra::Backend::scalar;
    else if (flag == "--python")
      o.python = value;
    else if (flag == "--script")
      o.script = value;
    else if (flag == "--tempra-only")
      o.tempra_only = std::atoi(value.c_str()) != 0;
    else {
      std::fprintf(stderr, "%s: unknown option '%s'\n", program, flag.c_str());
      std::exit(2);
    }
  }
  if (o.threads < 1 || o.rounds < 1 || o.steps < 1 || o.warmup < 0) {
    std::fprintf(stderr, "%s: --threads, --rounds and --steps must be >= 1, --warmup >= 0\n", program);
    std::exit(2);
  }
  return o;
}

// One round of PyTorch's side: the script's us_per_step line; exits 1 if it prints none.
inline Timing torch_round(const char* program, const Options& o) {
  const std::string command = o.python + " " + o.script + " --threads " + std::to_string(o.threads) + " --steps " +
                              std::to_string(o.steps) + " --warmup " + std::to_string(o.warmup);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) {
    std::fprintf(stderr, "%s: cannot run %s\n", program, command.c_str());
    std::exit(1);
  }
  char line[256];
  Timing t{-1, -1};
  while (std::fgets(line, sizeof line, pipe.get()))
    if (std::sscanf(line, "us_per_step %lf cpu_us_per_step %lf", &t.wall_us, &t.cpu_us) == 2) break;
  if (t.cpu_us < 0) {
    std::fprintf(stderr, "%s: %s printed no us_per_step line\n", program, command.c_str());
    std::exit(1);
  }
  return t;
}

// The alternating rounds, a line each, then the medians (and torch/tempra ratios); returns 0.
// tempra_round() builds tempra's side afresh and times it (time_steps).
inline int run_rounds(const char* program, const Options& o, const std::function<Timing()>& tempra_round) {
  std::vector<double> ours, theirs, ours_cpu, theirs_cpu;
  for (int r = 0; r < o.rounds; ++r) {
    const Timing a = tempra_round();
    ours.push_back(a.wall_us);
    ours_cpu.push_back(a.cpu_us);
    if (o.tempra_only) {
      std::printf("round %d: tempra %9.1f us/step (cpu %9.1f)\n", r + 1, a.wall_us, a.cpu_us);
    } else {
      const Timing b = torch_round(program, o);
      theirs.push_back(b.wall_us);
      theirs_cpu.push_back(b.cpu_us);
      std::printf("round %d: tempra %9.1f us/step (cpu %9.1f)   torch %9.1f us/step (cpu %9.1f)\n", r + 1, a.wall_us,
                  a.cpu_us, b.wall_us, b.cpu_us);
    }
    std::fflush(stdout);
  }
  if (o.tempra_only) {
    std::printf("median: tempra %.1f us/step wall, %.1f us/step cpu\n", median(ours), median(ours_cpu));
    return 0;
  }
  const double a = median(ours), b = median(theirs), ac = median(ours_cpu), bc = median(theirs_cpu);
  std::printf("median wall: tempra %.1f us/step, torch %.1f us/step, torch/tempra = %.2fx\n", a, b, b / a);
  std::printf("median cpu:  tempra %.1f us/step, torch %.1f us/step, torch/tempra = %.2fx\n", ac, bc, bc / ac);
  return 0;
}

}  // namespace train_harness
