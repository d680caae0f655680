// tempra/audio/amp_model.h: a NAM profile as a streaming audio processor.
//
// make_amp_model builds the architecture a `.nam` file names (NeuralAmpModelerCore's get_dsp),
// resets it and prewarms it. process() then takes any number of samples per call and its output
// does not depend on how the input is split into calls, bit for bit: each sample's arithmetic is
// the same whatever block it arrives in, and the state between calls lives in history buffers
// (wavenet.h) or recurrent state (lstm.h). Once built, a model's process() allocates nothing,
// takes no lock and does no I/O: it may run inside an audio callback.
//
// Real-time contract, as NAM's plugin keeps it: construct, reset and prewarm outside the audio
// thread; call process() from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "tempra/audio/nam_file.h"
#include "tempra/core/exec_context.h"

namespace tempra::audio {

// How a model evaluates tanh. NAM's plugin turns its fast tanh on for every model it plays
// (Activation::enable_fast_tanh): layers named "Tanh" then run NAM's Fasttanh, and the LSTM takes
// fast tanh and fast sigmoid for its gates. NAM's WebAssembly build does the same. tempra follows
// the plugin by default; fast_tanh = false evaluates tanhf, as NAM's core does when left alone.
//
// backend: native computes with the build's SIMD arm (scalar where the build has none); scalar
// runs the same arithmetic one lane at a time, the specification native is tested against.
struct AmpOptions {
  bool fast_tanh = true;
  Backend backend = Backend::native;
};

class AmpModel {
 public:
  // The largest block process() computes at once; longer calls are split (same result).
  static constexpr int64_t kMaxBlock = 4096;

  virtual ~AmpModel() = default;
  AmpModel(const AmpModel&) = delete;
  AmpModel& operator=(const AmpModel&) = delete;

  // out[i] = the model's response to in[i] given everything processed since the last reset.
  // in and out may alias exactly (in place) but not partially overlap.
  void process(const float* in, float* out, int64_t n);

  // Back to the state just after loading, then prewarmed: NAM's Reset + prewarm, which runs
  // prewarm_samples() of silence so that the first real sample meets the state silence leaves.
  void reset();
  virtual int64_t prewarm_samples() const = 0;
  // The rate the profile was trained at, if the file says.
  std::optional<double> expected_sample_rate() const { return sample_rate_; }

 protected:
  explicit AmpModel(std::optional<double> sample_rate) : sample_rate_(sample_rate) {}
  // Forgets everything processed: zero history, the file's initial recurrent state.
  virtual void clear_state() = 0;
  // 1 <= n <= kMaxBlock.
  virtual void process_block(const float* in, float* out, int n) = 0;

 private:
  std::optional<double> sample_rate_;
};

// The model a profile describes, reset and prewarmed.
std::unique_ptr<AmpModel> make_amp_model(const NamFile& file, const AmpOptions& options = {});

}  // namespace tempra::audio
