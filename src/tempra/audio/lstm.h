// tempra/audio/lstm.h: NAM's LSTM, streaming one sample at a time.
//
// Each layer l (input x: the sample for layer 0, the previous layer's h otherwise; H units):
//
//   [i f g o] = W [x; h] + b                  (W is 4H x (in + H), gates in PyTorch's order)
//   c = sigmoid(f) c + sigmoid(i) tanh(g),   h = sigmoid(o) tanh(c)
//
// and the output is w . h_last + b_out. Weights in the file's order: per layer W (row-major),
// b, the initial h, the initial c; then w and b_out. W is kept transposed with the four gates'
// 4H rows contiguous (PyTorch's order) and padded once to whole SIMD lanes (lanes.h), so the
// product is a few vectors of accumulators, all live at once, over the columns: for H = 24 on
// AVX-512, 6 vectors where per-gate padding would take 8. With fast tanh (NAM's plugin) the four
// gates' nonlinearities are one pass over all lanes, s (fast_tanh(s z) + k), with s = 1/2 and
// k = 1 for i, f and o (NAM's fast sigmoid, operation for operation) and s = 1, k = -0 for g
// (fast_tanh itself: x + -0 is x for every x, -0 included). The cell
// update reads the gates at offsets 0, H, 2H, 3H, a vector of units at a time. The head is a
// dot product in 8 interleaved partial sums (the same order on both backends). A reset returns
// every layer to the file's initial h and c.
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
    std::vector<float> weights;  // [inputs + H][R]: rows i, f, g, o (H each), then zeros
    std::vector<float> bias;     // [R]
    std::vector<float> h0, c0;   // the file's initial state [H]
    std::vector<float> xh;       // [inputs + H + 8]: this step's input, h, zeros (the head reads eights)
    std::vector<float> c;        // [H]
  };

  void clear_state() override;
  void process_block(const float* in, float* out, int n) override;
  template <class L>
  float step(float x);
  template <class L>
  void gate_products(const Layer& layer, float* z) const;

  bool fast_ = true;     // AmpOptions::fast_tanh: NAM's fast tanh and fast sigmoid for the gates
  bool native_ = false;  // AmpOptions::backend, where this build has the native arm
  int hidden_ = 1;
  int rows_ = 4;  // R: 4H padded to whole lanes
  std::vector<Layer> layers_;
  std::vector<float> head_;  // [H]
  float head_bias_ = 0.0f;
  std::vector<float> gates_;          // [R]: one step's gate values
  std::vector<float> scale_, shift_;  // [R]: s and k of the fast gate pass (m is s)
  std::vector<float> g_pre_;          // [H]: g's pre-activations, for the exact pass
};

}  // namespace tempra::audio
