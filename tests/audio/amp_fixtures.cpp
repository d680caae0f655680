// tests/audio/amp_fixtures.cpp
#include "audio/amp_fixtures.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "support/files.h"
#include "tempra/core/rng.h"

namespace tempra::audio::testing {
namespace {

std::vector<float> draw(int64_t n, uint64_t seed, float scale) {
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) w[size_t(i)] = (2.0f * CounterRng::uniform(seed, uint64_t(i)) - 1.0f) * scale;
  return w;
}

}  // namespace

NamFile random_profile(const WaveNetConfig& config, uint64_t seed, float scale) {
  NamFile f;
  f.config = config;
  f.weights = draw(weight_count(config), seed, scale);
  f.weights.back() = 0.5f;  // the head scale
  f.sample_rate = 48000.0;
  return f;
}

NamFile random_profile(const LstmConfig& config, uint64_t seed, float scale) {
  NamFile f;
  f.config = config;
  f.weights = draw(weight_count(config), seed, scale);
  f.sample_rate = 48000.0;
  return f;
}

std::vector<NamedProfile> profile_zoo() {
  std::vector<NamedProfile> zoo;
  uint64_t seed = 100;
  for (const char* name : {"standard", "lite", "feather", "nano"}) {
    zoo.push_back({std::string("wavenet_") + name, random_profile(*wavenet_preset(name), ++seed)});
    zoo.push_back({std::string("lstm_") + name, random_profile(*lstm_preset(name), ++seed)});
  }
  WaveNetConfig gated = *wavenet_preset("feather");
  for (LayerArrayConfig& a : gated.layer_arrays) a.gated = true;
  zoo.push_back({"wavenet_feather_gated", random_profile(gated, ++seed)});
  for (const Activation a : {Activation::fast_tanh, Activation::hard_tanh, Activation::relu, Activation::leaky_relu,
                             Activation::sigmoid, Activation::silu, Activation::hardswish}) {
    WaveNetConfig c = *wavenet_preset("nano");
    for (LayerArrayConfig& array : c.layer_arrays) array.activation = a;
    zoo.push_back({std::string("wavenet_nano_") + activation_name(a), random_profile(c, ++seed)});
  }
  // Kernel 2 and 4, three arrays, a head bias on the first: shapes off the stock path.
  WaveNetConfig odd;
  odd.layer_arrays = {{.input_size = 1,
                       .condition_size = 1,
                       .head_size = 5,
                       .channels = 3,
                       .kernel_size = 2,
                       .dilations = {1, 3, 9},
                       .activation = Activation::tanh,
                       .gated = true,
                       .head_bias = true},
                      {.input_size = 3,
                       .condition_size = 1,
                       .head_size = 2,
                       .channels = 5,
                       .kernel_size = 4,
                       .dilations = {2, 7},
                       .activation = Activation::tanh,
                       .gated = false,
                       .head_bias = false},
                      {.input_size = 5,
                       .condition_size = 1,
                       .head_size = 1,
                       .channels = 2,
                       .kernel_size = 1,
                       .dilations = {1},
                       .activation = Activation::relu,
                       .gated = false,
                       .head_bias = true}};
  zoo.push_back({"wavenet_three_arrays", random_profile(odd, ++seed)});
  zoo.push_back(
      {"lstm_three_layers", random_profile(LstmConfig{.num_layers = 3, .input_size = 1, .hidden_size = 24}, ++seed)});
  return zoo;
}

std::vector<float> test_signal(int64_t n, uint64_t seed) {
  std::vector<float> x(static_cast<size_t>(n), 0.0f);
  constexpr double kRate = 48000.0, kPi = 3.141592653589793;
  const int64_t part = n / 4;
  // A logarithmic sweep 40 Hz ... 8 kHz at 0.5.
  for (int64_t i = 0; i < part; ++i) {
    const double t = double(i) / kRate, length = double(part) / kRate, k = std::log(8000.0 / 40.0);
    x[size_t(i)] = float(0.5 * std::sin(2 * kPi * 40.0 * length / k * (std::exp(t / length * k) - 1.0)));
  }
  // Noise bursts of 20 ms at 0.1, 0.3, 0.9.
  for (int64_t i = part; i < 2 * part; ++i) {
    const int64_t burst = (i - part) / 960;
    const float level = (burst % 3 == 0) ? 0.1f : (burst % 3 == 1 ? 0.3f : 0.9f);
    x[size_t(i)] = ((burst % 2) ? 0.0f : level) * (2.0f * CounterRng::uniform(seed, uint64_t(i)) - 1.0f);
  }
  // Plucked chords: decaying harmonics of E2, A2, D3, G3, B3, E4, struck every 0.25 s at three levels.
  const double strings[] = {82.41, 110.0, 146.83, 196.0, 246.94, 329.63};
  for (int64_t i = 2 * part; i < n; ++i) {
    const int64_t since = (i - 2 * part) % 12000, strike = (i - 2 * part) / 12000;
    const double t = double(since) / kRate, level = 0.05 + 0.05 * double(strike % 3);
    double v = 0;
    for (const double f : strings)
      for (int h = 1; h <= 4; ++h) v += level / h * std::exp(-t * (3.0 + h)) * std::sin(2 * kPi * f * h * t);
    x[size_t(i)] = float(v);
  }
  return x;
}

AudioData toy_amp(const std::vector<float>& x, int64_t delay) {
  AudioData y;
  y.samples.assign(x.size(), 0.0f);
  auto at = [&](int64_t t) { return t >= 0 ? double(x[size_t(t)]) : 0.0; };
  for (int64_t t = 0; t < int64_t(x.size()); ++t)
    y.samples[size_t(t)] =
        float(0.6 * std::tanh(3 * (0.7 * at(t - delay) + 0.3 * at(t - delay - 1))) + 0.1 * at(t - delay - 2));
  return y;
}

AudioData as_audio(const std::vector<float>& x) {
  AudioData a;
  a.samples = x;
  return a;
}

std::vector<std::vector<float>> nam_core_outputs(const std::filesystem::path& scratch,
                                                 const std::vector<std::filesystem::path>& profiles,
                                                 const std::vector<float>& input, int block) {
  const std::filesystem::path in = scratch / "oracle-in.f32", jobs = scratch / "oracle-jobs.txt";
  std::ofstream(in, std::ios::binary)
      .write(reinterpret_cast<const char*>(input.data()), std::streamsize(input.size() * sizeof(float)));
  {
    std::ofstream list(jobs);
    for (size_t i = 0; i < profiles.size(); ++i)
      list << profiles[i].string() << ' ' << in.string() << ' '
           << (scratch / ("oracle-" + std::to_string(i) + ".f32")).string() << ' ' << block << '\n';
  }
  const std::string cmd = std::string("node '") + TEMPRA_SOURCE_DIR + "/tests/audio/nam_wasm.mjs' '" +
                          TEMPRA_NAM_WASM_DIR + "' '" + jobs.string() + "'";
  std::vector<std::vector<float>> outputs(profiles.size());
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << "NAM's core failed: " << cmd;
    return outputs;
  }
  for (size_t i = 0; i < profiles.size(); ++i) {
    const auto bytes = tempra::testing::read_file(scratch / ("oracle-" + std::to_string(i) + ".f32"));
    outputs[i].resize(bytes.size() / sizeof(float));
    std::memcpy(outputs[i].data(), bytes.data(), outputs[i].size() * sizeof(float));
  }
  return outputs;
}

}  // namespace tempra::audio::testing
