// tempra/audio/lstm.cpp
#include "tempra/audio/lstm.h"

#include <algorithm>
#include <cmath>

#include "tempra/audio/activation.h"
#include "tempra/audio/weight_reader.h"

namespace tempra::audio {

Lstm::Lstm(const LstmConfig& config, std::span<const float> weights, std::optional<double> sample_rate,
           const AmpOptions& options)
    : AmpModel(sample_rate), fast_(options.fast_tanh), hidden_(config.hidden_size) {
  WeightReader read(weights, "LSTM");
  const int h = hidden_;
  for (int l = 0; l < config.num_layers; ++l) {
    Layer& layer = layers_.emplace_back();
    layer.inputs = l == 0 ? config.input_size : h;
    read.matrix_transposed(4 * h, layer.inputs + h, layer.weights);
    read.vector(4 * h, layer.bias);
    read.vector(h, layer.h0);
    read.vector(h, layer.c0);
    layer.xh.assign(size_t(layer.inputs + h), 0.0f);
    layer.c.assign(size_t(h), 0.0f);
  }
  read.vector(h, head_);
  head_bias_ = read.next();
  read.expect_end();
  gates_.assign(size_t(4 * h), 0.0f);
  clear_state();
}

int64_t Lstm::prewarm_samples() const {
  return std::max<int64_t>(1, int64_t(0.5 * expected_sample_rate().value_or(48000.0)));
}

void Lstm::clear_state() {
  for (Layer& layer : layers_) {
    std::fill(layer.xh.begin(), layer.xh.end(), 0.0f);
    std::copy(layer.h0.begin(), layer.h0.end(), layer.xh.begin() + layer.inputs);
    layer.c = layer.c0;
  }
}

void Lstm::process_block(const float* in, float* out, int n) {
  for (int t = 0; t < n; ++t) out[t] = step(in[t]);
}

float Lstm::step(float x) {
  const int h = hidden_, rows = 4 * h;
  float* g = gates_.data();
  const float* input = &x;
  for (Layer& layer : layers_) {
    std::copy(input, input + layer.inputs, layer.xh.begin());
    std::copy(layer.bias.begin(), layer.bias.end(), g);
    for (int j = 0; j < layer.inputs + h; ++j) {
      const float v = layer.xh[size_t(j)];
      const float* w = layer.weights.data() + size_t(j) * rows;
      for (int r = 0; r < rows; ++r) g[r] += w[r] * v;
    }
    float* hidden = layer.xh.data() + layer.inputs;
    float* c = layer.c.data();
    if (fast_) {
      for (int i = 0; i < h; ++i) c[i] = fast_sigmoid(g[h + i]) * c[i] + fast_sigmoid(g[i]) * fast_tanh(g[2 * h + i]);
      for (int i = 0; i < h; ++i) hidden[i] = fast_sigmoid(g[3 * h + i]) * fast_tanh(c[i]);
    } else {
      for (int i = 0; i < h; ++i) c[i] = sigmoid(g[h + i]) * c[i] + sigmoid(g[i]) * std::tanh(g[2 * h + i]);
      for (int i = 0; i < h; ++i) hidden[i] = sigmoid(g[3 * h + i]) * std::tanh(c[i]);
    }
    input = hidden;
  }
  float y = head_bias_;
  const float* last = layers_.back().xh.data() + layers_.back().inputs;
  for (int i = 0; i < h; ++i) y += head_[size_t(i)] * last[i];
  return y;
}

}  // namespace tempra::audio
