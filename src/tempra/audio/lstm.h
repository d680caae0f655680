// tempra/audio/lstm.h: NAM's LSTM, streaming one sample at a time.
//
// Each layer l (input x: the sample for layer 0, the previous layer's h otherwise; H units):
//
//   [i f g o] = W [x; h] + b                  (W is 4H x (in + H), gates in PyTorch's order)
//   c = sigmoid(f) c + sigmoid(i) tanh(g),   h = sigmoid(o) tanh(c)
//
// and the output is w . h_last + b_out. Weights in the file's order: per layer W (row-major),
// b, the initial h, the initial c; then w and b_out. W is kept transposed, each gate's rows
// padded with zeros to whole SIMD lanes (lanes.h), so the product runs over contiguous vectors
// of the four gates and each gate's nonlinearity over whole vectors. A reset returns every layer
// to the file's initial h and c.
#pragma once

#include <span>
#include <vector>

#include "tempra/audio/amp_model.h"

namespace tempra::audio {

class Lstm final : public AmpModel {
 public:
  Lstm(const LstmConfig& config, std::span<const float> weights, std::optional<double> sample_rate,
       const AmpOptions& options = {});

  // NAM's: half a second at the profile's rate, one sample when the file gives none. (NAM then
  // runs whole blocks of its host's maximum size, so a host of 4096-sample blocks prewarms
  // 24576 samples at 48 kHz; tempra runs exactly this many, whatever the caller's block.)
  int64_t prewarm_samples() const override;

 private:
  struct Layer {
    int inputs = 1;
    std::vector<float> weights;  // [inputs + H][4 Hs]: gates i, f, g, o, each Hs lanes
    std::vector<float> bias;     // [4 Hs]
    std::vector<float> h0, c0;   // the file's initial state [Hs]
    std::vector<float> xh;       // [inputs + Hs]: this step's input, then h
    std::vector<float> c;        // [Hs]
  };

  void clear_state() override;
  void process_block(const float* in, float* out, int n) override;
  template <class L>
  float step(float x);

  bool fast_ = true;     // AmpOptions::fast_tanh: NAM's fast tanh and fast sigmoid for the gates
  bool native_ = false;  // AmpOptions::backend, where this build has the native arm
  int hidden_ = 1;
  int hs_ = 1;  // H padded to whole lanes
  std::vector<Layer> layers_;
  std::vector<float> head_;  // [H]
  float head_bias_ = 0.0f;
  std::vector<float> gates_;  // [4 Hs]
};

}  // namespace tempra::audio
