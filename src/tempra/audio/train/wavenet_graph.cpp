// tempra/audio/train/wavenet_graph.cpp: the differentiable WaveNet (see the header).
#include "tempra/audio/train/wavenet_graph.h"

#include <cmath>
#include <functional>

#include "tempra/core/error.h"
#include "tempra/core/rng.h"
#include "tempra/ops/ops.h"

namespace tempra::audio {
namespace {

// The activation on the op library, each as NAM's core evaluates it (activation.h).
Array activate(ExecContext& ctx, Activation activation, const Array& z) {
  switch (activation) {
    case Activation::tanh:
      return tanh(ctx, z);
    case Activation::hard_tanh:
      return minimum(ctx, maximum(ctx, z, -1.0), 1.0);
    case Activation::relu:
      return relu(ctx, z);
    case Activation::leaky_relu:
      return maximum(ctx, z, mul(ctx, z, 0.01));
    case Activation::sigmoid:
      return sigmoid(ctx, z);
    case Activation::silu:
      return silu(ctx, z);
    case Activation::hardswish:
      return mul(ctx, mul(ctx, z, minimum(ctx, maximum(ctx, add(ctx, z, 3.0), 0.0), 6.0)), 1.0 / 6.0);
    case Activation::fast_tanh:
      break;
  }
  fail("amp train", "activation ", activation_name(activation), " is an inference shortcut and is not trained; train ",
       "with Tanh (a player evaluates it as Fasttanh)");
}

// The last n samples of [B, C, T].
Array last(const Array& x, int64_t n) {
  const int64_t length = x.shape()[2];
  return x.slice(2, length - n, length);
}

Array conv(ExecContext& ctx, const Array& x, const Array& w, const Array& bias = {}, int64_t dilation = 1) {
  return conv1d(ctx, x, w, bias, Conv1dOptions{.dilation = dilation});
}

}  // namespace

int64_t TrainableWaveNet::LayerArray::receptive_field() const {
  int64_t field = 1;
  for (const Layer& layer : layers) field += int64_t(layer.dilation) * (config.kernel_size - 1);
  return field;
}

int64_t TrainableWaveNet::receptive_field() const {
  int64_t field = 1;
  for (const LayerArray& a : arrays_) field += a.receptive_field() - 1;
  return field;
}

TrainableWaveNet TrainableWaveNet::build(ExecContext& ctx, const WaveNetConfig& config, float head_scale,
                                         const std::function<void(std::span<float>, int64_t fan_in)>& fill) {
  NamFile probe;
  probe.config = config;
  probe.weights.assign(size_t(weight_count(config)), 0.0f);
  validate(probe, "amp train");
  TrainableWaveNet net;
  net.config_ = config;
  net.head_scale_ = head_scale;
  auto weight = [&](const Dims& shape, int64_t fan_in) {
    std::vector<float> values(size_t(shape.product()));
    fill(values, fan_in);
    Array a = Array::from_values<float>(ctx, shape, values);
    a.set_requires_grad();
    return a;
  };
  for (const LayerArrayConfig& c : config.layer_arrays) {
    LayerArray array;
    array.config = c;
    const int64_t z = c.gated ? 2 * c.channels : c.channels;
    array.rechannel = weight({c.channels, c.input_size, 1}, c.input_size);
    for (int d : c.dilations) {
      Layer layer;
      layer.dilation = d;
      layer.conv = weight({z, c.channels, c.kernel_size}, int64_t(c.channels) * c.kernel_size);
      layer.conv_bias = weight({z}, int64_t(c.channels) * c.kernel_size);
      layer.mixin = weight({z, c.condition_size, 1}, c.condition_size);
      layer.residual = weight({c.channels, c.channels, 1}, c.channels);
      layer.residual_bias = weight({c.channels}, c.channels);
      array.layers.push_back(std::move(layer));
    }
    array.head = weight({c.head_size, c.channels, 1}, c.channels);
    if (c.head_bias) array.head_bias = weight({c.head_size}, c.channels);
    check(c.activation != Activation::fast_tanh, "amp train", "activation ", activation_name(c.activation),
          " is an inference shortcut and is not trained; train with Tanh (a player evaluates it as Fasttanh)");
    net.arrays_.push_back(std::move(array));
  }
  return net;
}

TrainableWaveNet TrainableWaveNet::init(ExecContext& ctx, const WaveNetConfig& config, float head_scale,
                                        uint64_t seed) {
  uint64_t index = 0;
  return build(ctx, config, head_scale, [&](std::span<float> values, int64_t fan_in) {
    const float bound = 1.0f / std::sqrt(float(fan_in));
    for (float& v : values) v = (2.0f * CounterRng::uniform(seed, index++) - 1.0f) * bound;
  });
}

TrainableWaveNet TrainableWaveNet::from_weights(ExecContext& ctx, const WaveNetConfig& config,
                                                std::span<const float> weights) {
  check(int64_t(weights.size()) == weight_count(config), "amp train", "expected ", weight_count(config),
        " weights for this WaveNet, got ", weights.size());
  size_t next = 0;
  TrainableWaveNet net = build(ctx, config, weights.back(), [&](std::span<float> values, int64_t) {
    for (float& v : values) v = weights[next++];
  });
  return net;
}

Array TrainableWaveNet::forward(ExecContext& ctx, const Array& x, bool) const {
  check(x.rank() == 3 && x.shape()[1] == 1, "amp train", "WaveNet input must be [batch, 1, samples], got ", x.shape());
  check(x.shape()[2] >= receptive_field(), "amp train", "segments of ", x.shape()[2],
        " samples are shorter than the receptive field, ", receptive_field());
  Array input = x, head;
  for (const LayerArray& array : arrays_) {
    const LayerArrayConfig& c = array.config;
    const int64_t out = input.shape()[2] - (array.receptive_field() - 1);
    Array h = conv(ctx, input, array.rechannel);
    Array sum;  // the head's running sum over this array's layers (starting from the last head)
    if (head.defined()) sum = last(head, out);
    for (const Layer& layer : array.layers) {
      const int64_t length = h.shape()[2] - int64_t(layer.dilation) * (c.kernel_size - 1);
      Array z =
          add(ctx, conv(ctx, h, layer.conv, layer.conv_bias, layer.dilation), conv(ctx, last(x, length), layer.mixin));
      Array a = c.gated ? mul(ctx, activate(ctx, c.activation, z.slice(1, 0, c.channels)),
                              sigmoid(ctx, z.slice(1, c.channels, 2 * c.channels)))
                        : activate(ctx, c.activation, z);
      h = add(ctx, last(h, length), conv(ctx, a, layer.residual, layer.residual_bias));
      sum = sum.defined() ? add(ctx, sum, last(a, out)) : last(a, out);
    }
    head = conv(ctx, sum, array.head, array.head_bias);
    input = last(h, out);
  }
  return mul(ctx, head, double(head_scale_));
}

std::vector<std::pair<std::string, Array>> TrainableWaveNet::named_weights() const {
  std::vector<std::pair<std::string, Array>> out;
  for (size_t i = 0; i < arrays_.size(); ++i) {
    const std::string a = "array" + std::to_string(i);
    out.emplace_back(a + ".rechannel.weight", arrays_[i].rechannel);
    for (size_t l = 0; l < arrays_[i].layers.size(); ++l) {
      const Layer& layer = arrays_[i].layers[l];
      const std::string p = a + ".layer" + std::to_string(l);
      out.emplace_back(p + ".conv.weight", layer.conv);
      out.emplace_back(p + ".conv.bias", layer.conv_bias);
      out.emplace_back(p + ".mixin.weight", layer.mixin);
      out.emplace_back(p + ".residual.weight", layer.residual);
      out.emplace_back(p + ".residual.bias", layer.residual_bias);
    }
    out.emplace_back(a + ".head.weight", arrays_[i].head);
    if (arrays_[i].head_bias.defined()) out.emplace_back(a + ".head.bias", arrays_[i].head_bias);
  }
  return out;
}

std::vector<optim::Param> TrainableWaveNet::params() const {
  std::vector<optim::Param> out;
  for (auto& [name, value] : named_weights()) out.push_back({name, value});
  return out;
}

NamFile TrainableWaveNet::profile(ExecContext&) const {
  NamFile file;
  file.config = config_;
  file.weights = flat_weights();
  return file;
}

std::vector<float> TrainableWaveNet::flat_weights() const {
  std::vector<float> out;
  out.reserve(size_t(weight_count(config_)));
  for (const auto& [name, value] : named_weights()) {
    const float* p = value.data<float>();
    out.insert(out.end(), p, p + value.numel());
  }
  out.push_back(head_scale_);
  return out;
}

}  // namespace tempra::audio
