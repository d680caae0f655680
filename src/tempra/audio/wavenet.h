// tempra/audio/wavenet.h: NAM's WaveNet (architecture 1), streaming.
//
// For each layer array, for a block of samples t (x the array's input, c the mono input signal
// as condition, C channels, Z = 2C when gated else C):
//
//   h_0[t]     = R x[t]                                             (rechannel, no bias)
//   z_l[t]     = b_l + sum_k W_lk h_l[t - d_l (K-1-k)] + M_l c[t]   (dilated conv + mix-in)
//   a_l[t]     = act(z_l[t])            or, gated, act(z_l[t][:C]) * sigmoid(z_l[t][C:])
//   head[t]   += a_l[t]                                             (head starts at the previous
//   h_l+1[t]   = h_l[t] + V_l a_l[t] + e_l                           array's head output, or 0)
//   out_arr[t] = h_L[t],   head_out[t] = H head[t] (+ bias)
//
// and the model's output is head_scale * the last array's head_out[t]. The weights are read in
// NeuralAmpModelerCore's order: per array R (row-major out x in), per layer the conv (for each
// output, each input, each tap), its bias, M, V (row-major) and e, then H and its bias; the head
// scale last. Here they are stored transposed, output channel innermost, so that every sum runs
// over contiguous rows.
//
// History: layer l keeps its input's last d_l (K-1) rows before the block in a buffer with room
// for kMaxBlock * 2 more; when a block would run past its end, the history moves to the front
// (NAM's rewind). No call allocates after construction.
#pragma once

#include <span>
#include <vector>

#include "tempra/audio/amp_model.h"

namespace tempra::audio {

class WaveNet final : public AmpModel {
 public:
  // weights: weight_count(config) floats in the file's order (parse_nam checked the count).
  WaveNet(const WaveNetConfig& config, std::span<const float> weights, std::optional<double> sample_rate,
          const AmpOptions& options = {});

  // NAM's: one sample more than the sum of the layer arrays' receptive fields.
  int64_t prewarm_samples() const override;
  // Samples of the input each output depends on: 1 + sum over layers of d_l (K - 1).
  int64_t receptive_field() const;

 private:
  struct Layer {
    int dilation = 1;
    std::vector<float> conv;           // [K][C][Z]
    std::vector<float> conv_bias;      // [Z]
    std::vector<float> mixin;          // [condition][Z]
    std::vector<float> residual;       // [C][C]
    std::vector<float> residual_bias;  // [C]
    std::vector<float> history;        // [history_rows + 2 kMaxBlock][C]: this layer's input
    int64_t history_rows = 0;          // d (K - 1)
    int64_t start = 0;                 // the row of the current block's first sample
  };
  struct LayerArray {
    LayerArrayConfig config;       // its activation as evaluated (Tanh is Fasttanh under fast_tanh)
    std::vector<float> rechannel;  // [input][C]
    std::vector<float> head;       // [C][head]
    std::vector<float> head_bias;  // [head], zeros without head_bias
    std::vector<Layer> layers;
    std::vector<float> output;    // [kMaxBlock][C]: the last layer's output
    std::vector<float> head_in;   // [kMaxBlock][C]
    std::vector<float> head_out;  // [kMaxBlock][head]
  };

  void clear_state() override;
  void process_block(const float* in, float* out, int n) override;
  void run_array(LayerArray& array, const float* input, int input_width, const float* head_start, const float* in,
                 int n);

  std::vector<LayerArray> arrays_;
  float head_scale_ = 0.0f;
  std::vector<float> z_;  // [kMaxBlock][max Z]: one layer's pre-activations
};

}  // namespace tempra::audio
