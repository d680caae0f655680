// bench/nam_core_driver.cpp: NeuralAmpModelerCore's real-time factor on a profile, for
// bench/run_amp.sh. Compiled there against a NeuralAmpModelerCore checkout outside this
// repository (NAM_CORE_DIR) and Debian's Eigen; nothing of NAM is committed here.
//
//   nam_core_driver MODEL.nam SECONDS BLOCK REPS   -> prints the median real-time factor
//
// As NAM's plugin runs: fast tanh on, Reset and prewarm at 48 kHz with the block as the
// maximum buffer size, then process() block by block on this thread.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "NAM/activations.h"
#include "NAM/dsp.h"
#include "NAM/get_dsp.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: nam_core_driver MODEL.nam SECONDS BLOCK REPS\n");
    return 2;
  }
  nam::activations::Activation::enable_fast_tanh();
  auto dsp = nam::get_dsp(std::filesystem::path(argv[1]));
  const double seconds = std::atof(argv[2]);
  const int block = std::atoi(argv[3]), reps = std::atoi(argv[4]);
  const int n = int(seconds * 48000);
  std::vector<NAM_SAMPLE> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) x[size_t(i)] = NAM_SAMPLE(0.4 * std::sin(0.05 * i) * std::exp(-double(i % 24000) / 12000.0));
  dsp->ResetAndPrewarm(48000, block);
  std::vector<double> rtf;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int at = 0; at < n; at += block) {
      NAM_SAMPLE* in = x.data() + at;
      NAM_SAMPLE* out = y.data() + at;
      dsp->process(&in, &out, std::min(block, n - at));
    }
    rtf.push_back(seconds / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(rtf.begin(), rtf.end());
  std::printf("%.2f\n", rtf[rtf.size() / 2]);
  return 0;
}
