// bench/amp_bench.cpp: real-time factor of tempra's NAM models (bench/run_amp.sh runs it beside
// NAM's own core, native and WebAssembly, on the same profiles).
//
//   amp_bench [--profiles DIR] [--seconds S] [--block N] [--reps R] [--exact-tanh] [--scalar]
//
// Writes the stock configurations (WaveNet standard, lite, feather, nano; LSTM the same names)
// with seeded random weights to DIR (default bench-amp-profiles) so the references run the very
// same files, then for each: builds the model (reset and prewarmed), processes S seconds (default
// 10) of a 48 kHz test signal in blocks of N (default 64) on this one thread, R times (default 5),
// and prints the median real-time factor (seconds of audio per second of compute) and the share
// of one core that real-time playback would take.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tempra/audio/amp_model.h"
#include "tempra/core/rng.h"

namespace {

using namespace tempra;
using namespace tempra::audio;

NamFile profile(const std::string& arch, const std::string& name, uint64_t seed) {
  NamFile f;
  if (arch == "wavenet") f.config = *wavenet_preset(name);
  else f.config = *lstm_preset(name);
  const int64_t n = std::holds_alternative<WaveNetConfig>(f.config) ? weight_count(std::get<WaveNetConfig>(f.config))
                                                                     : weight_count(std::get<LstmConfig>(f.config));
  for (int64_t i = 0; i < n; ++i) f.weights.push_back((2.0f * CounterRng::uniform(seed, uint64_t(i)) - 1.0f) * 0.3f);
  if (arch == "wavenet") f.weights.back() = 0.02f;  // NAM's head scale
  f.sample_rate = 48000.0;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir = "bench-amp-profiles";
  double seconds = 10;
  int block = 64, reps = 5;
  AmpOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "amp_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--profiles") dir = value();
    else if (a == "--seconds") seconds = std::atof(value());
    else if (a == "--block") block = std::atoi(value());
    else if (a == "--reps") reps = std::atoi(value());
    else if (a == "--exact-tanh") options.fast_tanh = false;
    else if (a == "--scalar") options.backend = Backend::scalar;
    else {
      std::fprintf(stderr, "amp_bench: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (block < 1 || block > AmpModel::kMaxBlock || seconds <= 0 || reps < 1) {
    std::fprintf(stderr, "amp_bench: --block 1 ... 4096, --seconds > 0, --reps >= 1\n");
    return 2;
  }
  std::filesystem::create_directories(dir);
  const int64_t n = int64_t(seconds * 48000);
  std::vector<float> x(static_cast<size_t>(n)), y(x.size());
  for (int64_t i = 0; i < n; ++i)
    x[size_t(i)] = float(0.4 * std::sin(0.05 * double(i)) * std::exp(-double(i % 24000) / 12000.0) +
                         0.05 * (2.0 * CounterRng::uniform(3, uint64_t(i)) - 1.0));
  std::printf("%-18s %10s %10s\n", "profile", "rtf", "core %");
  uint64_t seed = 1;
  for (const char* arch : {"wavenet", "lstm"})
    for (const char* name : {"standard", "lite", "feather", "nano"}) {
      const NamFile file = profile(arch, name, seed++);
      const std::string label = std::string(arch) + "_" + name;
      write_nam(dir / (label + ".nam"), file);
      const auto model = make_amp_model(file, options);
      std::vector<double> rtf;
      for (int r = 0; r < reps; ++r) {
        const auto start = std::chrono::steady_clock::now();
        for (int64_t at = 0; at < n; at += block)
          model->process(x.data() + at, y.data() + at, std::min<int64_t>(block, n - at));
        rtf.push_back(seconds / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      std::sort(rtf.begin(), rtf.end());
      const double median = rtf[rtf.size() / 2];
      std::printf("%-18s %10.2f %9.2f%%\n", label.c_str(), median, 100.0 / median);
    }
  return 0;
}
