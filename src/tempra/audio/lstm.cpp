// tempra/audio/lstm.cpp
#include "tempra/audio/lstm.h"

#include <algorithm>
#include <cmath>

#include "tempra/audio/lanes.h"
#include "tempra/audio/weight_reader.h"

namespace tempra::audio {

Lstm::Lstm(const LstmConfig& config, std::span<const float> weights, std::optional<double> sample_rate,
           const AmpOptions& options)
    : AmpModel(sample_rate), fast_(options.fast_tanh), hidden_(config.hidden_size) {
  int lanes = ScalarLanes::kLanes;
#if TEMPRA_AUDIO_NATIVE
  native_ = options.backend == Backend::native;
  if (native_) lanes = NativeLanes::kLanes;
#endif
  const int h = hidden_;
  hs_ = (h + lanes - 1) / lanes * lanes;
  // Row r of W (gate r / H, unit r % H) goes to lane (r / H) Hs + r % H.
  auto lane = [&](int r) { return size_t(r / h) * hs_ + size_t(r % h); };
  WeightReader read(weights, "LSTM");
  for (int l = 0; l < config.num_layers; ++l) {
    Layer& layer = layers_.emplace_back();
    layer.inputs = l == 0 ? config.input_size : h;
    const int columns = layer.inputs + h;
    layer.weights.assign(size_t(columns) * 4 * hs_, 0.0f);
    for (int r = 0; r < 4 * h; ++r)
      for (int j = 0; j < columns; ++j) layer.weights[size_t(j) * 4 * hs_ + lane(r)] = read.next();
    layer.bias.assign(size_t(4 * hs_), 0.0f);
    for (int r = 0; r < 4 * h; ++r) layer.bias[lane(r)] = read.next();
    read.vector(h, layer.h0, hs_);
    read.vector(h, layer.c0, hs_);
    layer.xh.assign(size_t(layer.inputs + hs_), 0.0f);
    layer.c.assign(size_t(hs_), 0.0f);
  }
  read.vector(h, head_);
  head_bias_ = read.next();
  read.expect_end();
  gates_.assign(size_t(4 * hs_), 0.0f);
  clear_state();
}

int64_t Lstm::prewarm_samples() const {
  const auto rate = expected_sample_rate();
  return rate ? std::max<int64_t>(1, int64_t(0.5 * *rate)) : 1;
}

void Lstm::clear_state() {
  for (Layer& layer : layers_) {
    std::fill(layer.xh.begin(), layer.xh.end(), 0.0f);
    std::copy(layer.h0.begin(), layer.h0.end(), layer.xh.begin() + layer.inputs);
    layer.c = layer.c0;
  }
}

void Lstm::process_block(const float* in, float* out, int n) {
#if TEMPRA_AUDIO_NATIVE
  if (native_) {
    for (int t = 0; t < n; ++t) out[t] = step<NativeLanes>(in[t]);
    return;
  }
#endif
  for (int t = 0; t < n; ++t) out[t] = step<ScalarLanes>(in[t]);
}

template <class L>
float Lstm::step(float x) {
  const int h = hidden_, hs = hs_, rows = 4 * hs;
  float* g = gates_.data();
  const float* input = &x;
  for (Layer& layer : layers_) {
    std::copy(input, input + layer.inputs, layer.xh.begin());
    const int columns = layer.inputs + h;
    const float* xh = layer.xh.data();
    // Four vectors of gates at a time: four independent FMA chains over the columns.
    int lane = 0;
    for (; lane + 4 * L::kLanes <= rows; lane += 4 * L::kLanes) {
      const float* b = layer.bias.data() + lane;
      auto a0 = L::load(b), a1 = L::load(b + L::kLanes), a2 = L::load(b + 2 * L::kLanes),
           a3 = L::load(b + 3 * L::kLanes);
      for (int j = 0; j < columns; ++j) {
        const auto v = L::set1(xh[j]);
        const float* w = layer.weights.data() + size_t(j) * rows + lane;
        a0 = L::fma(v, L::load(w), a0);
        a1 = L::fma(v, L::load(w + L::kLanes), a1);
        a2 = L::fma(v, L::load(w + 2 * L::kLanes), a2);
        a3 = L::fma(v, L::load(w + 3 * L::kLanes), a3);
      }
      L::store(g + lane, a0), L::store(g + lane + L::kLanes, a1), L::store(g + lane + 2 * L::kLanes, a2),
          L::store(g + lane + 3 * L::kLanes, a3);
    }
    for (; lane < rows; lane += L::kLanes) {
      auto a = L::load(layer.bias.data() + lane);
      for (int j = 0; j < columns; ++j)
        a = L::fma(L::set1(xh[j]), L::load(layer.weights.data() + size_t(j) * rows + lane), a);
      L::store(g + lane, a);
    }
    // i, f and o through the sigmoid, g through tanh (NAM's fast forms with fast tanh on).
    L::sigmoid(g, 2 * hs, fast_);
    L::activate(fast_ ? Activation::fast_tanh : Activation::tanh, g + 2 * hs, hs);
    L::sigmoid(g + 3 * hs, hs, fast_);
    float* c = layer.c.data();
    float* hidden = layer.xh.data() + layer.inputs;
    for (int i = 0; i < hs; i += L::kLanes)
      L::store(c + i,
               L::add(L::mul(L::load(g + hs + i), L::load(c + i)), L::mul(L::load(g + i), L::load(g + 2 * hs + i))));
    std::copy(c, c + hs, hidden);
    L::activate(fast_ ? Activation::fast_tanh : Activation::tanh, hidden, hs);
    for (int i = 0; i < hs; i += L::kLanes) L::store(hidden + i, L::mul(L::load(g + 3 * hs + i), L::load(hidden + i)));
    input = hidden;
  }
  float y = head_bias_;
  const float* last = layers_.back().xh.data() + layers_.back().inputs;
  for (int i = 0; i < h; ++i) y += head_[size_t(i)] * last[i];
  return y;
}

}  // namespace tempra::audio
