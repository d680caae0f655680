// tempra/audio/train/wavenet_graph.h: NAM's WaveNet written on the op library, so it trains.
//
// The same network as the streaming WaveNet (audio/wavenet.h), computed the way NAM's trainer
// computes it (nam/models/wavenet.py): on whole segments [B, 1, L] with "valid" convolutions,
// so every output sample sees its full receptive field and the output is shorter than the input
// by receptive_field() - 1 samples. Every step is an op that records its gradient (conv1d,
// slice, add, the activation), so ag::backward gives each weight's gradient with no code here.
//
// Per layer array (x its input [B, in, L], c the condition: the model's input signal):
//   h    = conv1d(x, rechannel)                                   [B, C, L]
//   per layer, d its dilation, L' = len(h) - d (K - 1):
//     z    = conv1d(h, conv, conv_bias, dilation d) + conv1d(c[-L':], mixin)
//     a    = act(z)   or, gated, act(z[:C]) * sigmoid(z[C:])
//     h    = h[-L':] + conv1d(a, residual, residual_bias)
//     head = a[-out:] (first layer of the first array) else head[-out:] + a[-out:]
//   head_out = conv1d(head, head_rechannel (+ bias)),  output = h[-out:]
// where out = L - (the array's receptive field - 1), and "head" starts as the previous array's
// head_out. The model's output is head_scale * the last array's head_out. head_scale is a
// constant of the config, as in NAM's trainer (it is exported as the last weight, not learned).
//
// Weights are held one Array per NAM parameter, in NAM's export order (params()), so
// flat_weights() is the `.nam` weight list and from_weights() its inverse.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tempra/audio/train/trainable_amp.h"

namespace tempra::audio {

class TrainableWaveNet final : public TrainableAmp {
 public:
  // Fresh weights as torch initializes NAM's Conv1d layers: uniform in +-1/sqrt(fan_in) for
  // weights and biases (kaiming_uniform with a = sqrt(5)), drawn from the counter RNG by seed.
  // Refuses what training does not support by name (Fasttanh: it names an inference shortcut).
  static TrainableWaveNet init(ExecContext& ctx, const WaveNetConfig& config, float head_scale, uint64_t seed);
  // The weights of a `.nam` (weights: weight_count(config) floats, the head scale last).
  static TrainableWaveNet from_weights(ExecContext& ctx, const WaveNetConfig& config, std::span<const float> weights);

  // x: [B, 1, L] with L >= receptive_field(); returns [B, 1, L - receptive_field() + 1]. The
  // same computation trains and infers.
  Array forward(ExecContext& ctx, const Array& x, bool training = false) const override;

  // 1 + the sum over layers of d (K - 1): the input samples one output depends on.
  int64_t receptive_field() const override;
  const WaveNetConfig& config() const { return config_; }
  float head_scale() const { return head_scale_; }

  // The trained parameters, named ("array0.layer3.conv.weight"), for an optimizer.
  std::vector<optim::Param> params() const override;
  NamFile profile(ExecContext& ctx) const override;
  const char* architecture() const override { return "WaveNet"; }
  // Every weight in NAM's export order, the head scale last: a `.nam` file's "weights".
  std::vector<float> flat_weights() const;

 private:
  struct Layer {
    int dilation = 1;
    Array conv, conv_bias, mixin, residual, residual_bias;
  };
  struct LayerArray {
    LayerArrayConfig config;
    Array rechannel, head, head_bias;  // head_bias empty without config.head_bias
    std::vector<Layer> layers;
    int64_t receptive_field() const;
  };
  // Every weight Array in export order, with its name.
  std::vector<std::pair<std::string, Array>> named_weights() const;
  static TrainableWaveNet build(ExecContext& ctx, const WaveNetConfig& config, float head_scale,
                                const std::function<void(std::span<float>, int64_t fan_in)>& fill);

  WaveNetConfig config_;
  float head_scale_ = 0.02f;
  std::vector<LayerArray> arrays_;
};

}  // namespace tempra::audio
