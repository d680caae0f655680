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
// scale last.
//
// Layout: every sum runs over output channels held in SIMD lanes, an input value broadcast to
// all of them. So weights are stored transposed (input-major, output channel innermost) and
// every row of channels (a layer's history, z, the head) is padded with zeros to a whole number
// of lanes; a gated z keeps its activation half and its gate half each in its own padded run,
// so the two line up lane for lane. The native backend computes tiles of 8 samples at once (8
// independent accumulators hide the FMA latency) with the arm's vectors; the scalar backend
// runs the same code one lane wide, the readable specification. Each sample's arithmetic is the
// same whatever tile or block it falls in, so any split of the input gives the same bits.
//
// History: layer l keeps its input's last d_l (K-1) rows before the block in a buffer with room
// for 2 kMaxBlock more; when a block would run past its end, the history moves to the front
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

  struct Layer {
    int dilation = 1;
    std::vector<float> conv;           // [K][C][Zs]: tap, input channel, output lane
    std::vector<float> conv_bias;      // [Zs]
    std::vector<float> mixin;          // [condition][Zs]
    std::vector<float> residual;       // [C][Cs]
    std::vector<float> residual_bias;  // [Cs]
    std::vector<float> history;        // [history_rows + 2 kMaxBlock][Cs]: this layer's input
    int64_t history_rows = 0;          // d (K - 1)
    int64_t start = 0;                 // the row of the current block's first sample
  };
  struct LayerArray {
    LayerArrayConfig config;       // its activation as evaluated (Tanh is Fasttanh under fast_tanh)
    int cs = 1;                    // C padded to whole lanes: the stride of channel rows
    int zs = 1;                    // z's row stride: Cs, or 2 Cs when gated (activation, then gate)
    int hs = 1;                    // the head size padded to whole lanes
    int input_stride = 1;          // the stride of this array's input rows (1: the signal)
    std::vector<float> rechannel;  // [input][Cs]
    std::vector<float> head;       // [C][Hs]
    std::vector<float> head_bias;  // [Hs], zeros without head_bias
    std::vector<Layer> layers;
    std::vector<float> output;    // [kMaxBlock][Cs]: the last layer's output
    std::vector<float> head_in;   // [kMaxBlock][Cs]
    std::vector<float> head_out;  // [kMaxBlock][Hs]
  };

 private:
  void clear_state() override;
  void process_block(const float* in, float* out, int n) override;

  bool native_ = false;  // AmpOptions::backend, where this build has the native arm
  std::vector<LayerArray> arrays_;
  float head_scale_ = 0.0f;
  std::vector<float> z_;  // [kTile][max Zs]: one tile's pre-activations
};

}  // namespace tempra::audio
