// tests/audio/amp_fixtures.h: seeded NAM profiles and test signals for the audio tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tempra/audio/nam_file.h"
#include "tempra/audio/wav.h"

namespace tempra::audio::testing {

// A profile of `config` with weights drawn uniformly from [-scale, scale] by CounterRng(seed),
// a head scale of 0.5 (WaveNet), at 48 kHz.
NamFile random_profile(const WaveNetConfig& config, uint64_t seed, float scale = 0.4f);
NamFile random_profile(const LstmConfig& config, uint64_t seed, float scale = 0.4f);

// A named set of profiles the parity and streaming tests run over: the four stock WaveNets and
// LSTMs, a gated WaveNet, one WaveNet per activation, a three-layer LSTM.
struct NamedProfile {
  std::string name;
  NamFile file;
};
std::vector<NamedProfile> profile_zoo();

// A guitar-like test signal at 48 kHz: a sine sweep, noise bursts and decaying plucked chords
// at three levels (peak ~0.9), `n` samples, seeded.
std::vector<float> test_signal(int64_t n, uint64_t seed = 7);

// A toy amp for training tests: 0.6 tanh(3 (0.7 x[t-d] + 0.3 x[t-d-1])) + 0.1 x[t-d-2], its
// output delayed by d samples, as a 48 kHz mono recording.
AudioData toy_amp(const std::vector<float>& x, int64_t delay);
// x as a 48 kHz mono recording.
AudioData as_audio(const std::vector<float>& x);

// NAM's own core (NeuralAmpModelerCore compiled to WebAssembly, @opendaw/nam-wasm, driven by
// nam_wasm.mjs under node): each profile file's output on `input` in blocks of `block`, from a
// fresh instance at 48 kHz. `scratch` holds the job files. Fails the test (and returns empty
// outputs) when node or the core fails.
std::vector<std::vector<float>> nam_core_outputs(const std::filesystem::path& scratch,
                                                 const std::vector<std::filesystem::path>& profiles,
                                                 const std::vector<float>& input, int block = 64);

}  // namespace tempra::audio::testing
