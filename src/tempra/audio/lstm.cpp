// tempra/audio/lstm.cpp
#include "tempra/audio/lstm.h"

#include <algorithm>
#include <cmath>

#include "tempra/audio/lanes.h"
#include "tempra/audio/weight_reader.h"

namespace tempra::audio {
namespace {

constexpr int kHeadParts = 8;    // the head's partial sums
constexpr int kMostVectors = 8;  // gate vectors whose accumulators are live at once

}  // namespace

Lstm::Lstm(const LstmConfig& config, std::span<const float> weights, std::optional<double> sample_rate,
           const AmpOptions& options)
    : AmpModel(sample_rate), fast_(options.fast_tanh), hidden_(config.hidden_size) {
  int lanes = ScalarLanes::kLanes;
#if TEMPRA_AUDIO_NATIVE
  native_ = options.backend == Backend::native;
  if (native_) lanes = NativeLanes::kLanes;
#endif
  const int h = hidden_;
  rows_ = (4 * h + lanes - 1) / lanes * lanes;
  WeightReader read(weights, "LSTM");
  for (int l = 0; l < config.num_layers; ++l) {
    Layer& layer = layers_.emplace_back();
    layer.inputs = l == 0 ? config.input_size : h;
    const int columns = layer.inputs + h;
    layer.weights.assign(size_t(columns) * rows_, 0.0f);
    for (int r = 0; r < 4 * h; ++r)
      for (int j = 0; j < columns; ++j) layer.weights[size_t(j) * rows_ + r] = read.next();
    layer.bias.assign(size_t(rows_), 0.0f);
    for (int r = 0; r < 4 * h; ++r) layer.bias[size_t(r)] = read.next();
    read.vector(h, layer.h0);
    read.vector(h, layer.c0);
    layer.xh.assign(size_t(columns + kHeadParts), 0.0f);  // zeros after h: the head reads whole eights
    layer.c.assign(size_t(h), 0.0f);
  }
  read.vector(h, head_);
  head_.resize(size_t((h + kHeadParts - 1) / kHeadParts * kHeadParts), 0.0f);
  head_bias_ = read.next();
  read.expect_end();
  gates_.assign(size_t(rows_), 0.0f);
  g_pre_.assign(size_t(h), 0.0f);
  scale_.assign(size_t(rows_), 0.5f);
  shift_.assign(size_t(rows_), 1.0f);
  for (int r = 2 * h; r < 3 * h; ++r) scale_[size_t(r)] = 1.0f, shift_[size_t(r)] = -0.0f;
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

namespace {

// z[lane0 ..) for N vectors: bias plus the columns' products in column order, N independent
// chains of fused multiply-adds.
template <class L, int N>
void gate_vectors(const float* weights, const float* bias, const float* xh, int columns, int rows, int lane0,
                  float* z) {
  typename L::V acc[N];
  for (int v = 0; v < N; ++v) acc[v] = L::load(bias + lane0 + v * L::kLanes);
  for (int j = 0; j < columns; ++j) {
    const auto x = L::set1(xh[j]);
    const float* w = weights + size_t(j) * rows + lane0;
    for (int v = 0; v < N; ++v) acc[v] = L::fma(x, L::load(w + v * L::kLanes), acc[v]);
  }
  for (int v = 0; v < N; ++v) L::store(z + lane0 + v * L::kLanes, acc[v]);
}

// gate_vectors for n (1 ... N) vectors: the instance with n accumulators.
template <class L, int N = kMostVectors>
void gate_chunk(int n, const float* weights, const float* bias, const float* xh, int columns, int rows, int lane0,
                float* z) {
  if constexpr (N > 1)
    if (n < N) return gate_chunk<L, N - 1>(n, weights, bias, xh, columns, rows, lane0, z);
  gate_vectors<L, N>(weights, bias, xh, columns, rows, lane0, z);
}

}  // namespace

template <class L>
void Lstm::gate_products(const Layer& layer, float* z) const {
  const int columns = layer.inputs + hidden_, vectors = rows_ / L::kLanes;
  for (int v = 0; v < vectors; v += kMostVectors)
    gate_chunk<L>(std::min(kMostVectors, vectors - v), layer.weights.data(), layer.bias.data(), layer.xh.data(),
                  columns, rows_, v * L::kLanes, z);
}

template <class L>
float Lstm::step(float x) {
  const int h = hidden_;
  float* z = gates_.data();
  const float* input = &x;
  for (Layer& layer : layers_) {
    std::copy(input, input + layer.inputs, layer.xh.begin());
    gate_products<L>(layer, z);
    if (fast_) {
      // NAM's fast sigmoid for i, f, o and fast tanh for g, one pass: s (fast_tanh(s z) + k).
      for (int r = 0; r < rows_; r += L::kLanes) {
        const auto s = L::load(scale_.data() + r);
        L::store(z + r, L::mul(s, L::add(L::tanh(L::mul(L::load(z + r), s), true), L::load(shift_.data() + r))));
      }
    } else {
      std::copy(z + 2 * h, z + 3 * h, g_pre_.begin());
      L::sigmoid(z, rows_, false);
      for (int k = 0; k < h; ++k) z[2 * h + k] = std::tanh(g_pre_[size_t(k)]);
    }
    // c = f c + i g, h = o tanh(c), a vector of units at a time (the last one partial).
    float* c = layer.c.data();
    float* hidden = layer.xh.data() + layer.inputs;
    for (int k = 0; k < h; k += L::kLanes) {
      const int n = std::min(L::kLanes, h - k);
      const auto i = L::load_partial(z + k, n), f = L::load_partial(z + h + k, n),
                 g = L::load_partial(z + 2 * h + k, n), o = L::load_partial(z + 3 * h + k, n);
      const auto cell = L::add(L::mul(f, L::load_partial(c + k, n)), L::mul(i, g));
      L::store_partial(c + k, cell, n);
      L::store_partial(hidden + k, L::mul(o, L::tanh(cell, fast_)), n);
    }
    input = hidden;
  }
  // The head: 8 interleaved partial sums in registers, then a fixed tree (short dependency
  // chains). head_ and the last hidden state are padded with zeros to whole eights.
  const float* last = layers_.back().xh.data() + layers_.back().inputs;
  const float* w = head_.data();
  float p0 = 0, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = 0, p6 = 0, p7 = 0;
  for (int k = 0; k < h; k += 8) {
    p0 = std::fma(w[k], last[k], p0), p1 = std::fma(w[k + 1], last[k + 1], p1);
    p2 = std::fma(w[k + 2], last[k + 2], p2), p3 = std::fma(w[k + 3], last[k + 3], p3);
    p4 = std::fma(w[k + 4], last[k + 4], p4), p5 = std::fma(w[k + 5], last[k + 5], p5);
    p6 = std::fma(w[k + 6], last[k + 6], p6), p7 = std::fma(w[k + 7], last[k + 7], p7);
  }
  const float sum = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7));
  return head_bias_ + sum;
}

}  // namespace tempra::audio
