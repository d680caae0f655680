// tempra/audio/wavenet.cpp
#include "tempra/audio/wavenet.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tempra/audio/lanes.h"
#include "tempra/audio/weight_reader.h"

namespace tempra::audio {
namespace {

using Layer = WaveNet::Layer;
using LayerArray = WaveNet::LayerArray;

// Samples a layer computes at once: independent accumulators enough to hide an FMA's latency.
constexpr int kTile = 8;

int round_up(int n, int lanes) {
  return (n + lanes - 1) / lanes * lanes;
}

// Makes room for n more rows after `start`: when they would run past the buffer, the history
// rows before `start` move to the front.
void make_room(Layer& layer, int cs, int n) {
  const int64_t capacity = int64_t(layer.history.size()) / cs;
  if (layer.start + n <= capacity) return;
  std::memmove(layer.history.data(), layer.history.data() + (layer.start - layer.history_rows) * cs,
               size_t(layer.history_rows * cs) * sizeof(float));
  layer.start = layer.history_rows;
}

// z[r][lane ...) for R samples and V vectors of z's lanes: bias, then the taps' and the
// condition's products, in that order whatever the blocking. V R accumulators: V weight vectors
// and R broadcast inputs feed V R fused multiply-adds.
template <class L, int V, int R>
void conv_block(const Layer& layer, const LayerArray& a, const float* x, const float* cond, int lane, float* z) {
  const int c = a.config.channels, cs = a.cs, zs = a.zs, kernel = a.config.kernel_size;
  const int condition_width = a.config.condition_size;
  typename L::V acc[V][R];
  for (int v = 0; v < V; ++v) {
    const auto bias = L::load(layer.conv_bias.data() + lane + v * L::kLanes);
    for (int r = 0; r < R; ++r) acc[v][r] = bias;
  }
  for (int k = 0; k < kernel; ++k) {
    const float* past = x - int64_t(layer.dilation) * (kernel - 1 - k) * cs;
    const float* w = layer.conv.data() + size_t(k) * c * zs + lane;
    for (int i = 0; i < c; ++i)
      for (int r = 0; r < R; ++r) {
        const auto xi = L::set1(past[size_t(r) * cs + i]);
        for (int v = 0; v < V; ++v) acc[v][r] = L::fma(xi, L::load(w + size_t(i) * zs + v * L::kLanes), acc[v][r]);
      }
  }
  for (int j = 0; j < condition_width; ++j)
    for (int r = 0; r < R; ++r) {
      const auto cj = L::set1(cond[r * condition_width + j]);
      for (int v = 0; v < V; ++v)
        acc[v][r] = L::fma(cj, L::load(layer.mixin.data() + size_t(j) * zs + lane + v * L::kLanes), acc[v][r]);
    }
  for (int v = 0; v < V; ++v)
    for (int r = 0; r < R; ++r) L::store(z + size_t(r) * zs + lane + v * L::kLanes, acc[v][r]);
}

// T rows of one layer: x, cond, head_in and next point at the tile's first row (strides Cs, the
// condition width, Cs, Cs); z is [T][Zs] of scratch.
template <class L, int T>
void layer_rows(const Layer& layer, const LayerArray& a, const float* x, const float* cond, float* head_in, float* next,
                float* z) {
  const int c = a.config.channels, cs = a.cs, zs = a.zs;
  const int condition_width = a.config.condition_size;
  // Where z spans two vectors or more (AVX2's 16 channels, a gated layer's two halves), they go
  // in pairs over half the tile: 8 accumulators as before, but each broadcast input feeds two
  // FMAs instead of one, and loads, not FMAs, bound this loop (the avx2 build's standard WaveNet:
  // +24%). The residual convolution blocked the same way ran slower, so it keeps one vector.
  int lane = 0;
  if constexpr (T % 2 == 0)
    for (; lane + 2 * L::kLanes <= zs; lane += 2 * L::kLanes)
      for (int r = 0; r < T; r += T / 2)
        conv_block<L, 2, T / 2>(layer, a, x + size_t(r) * cs, cond + r * condition_width, lane, z + size_t(r) * zs);
  for (; lane < zs; lane += L::kLanes) conv_block<L, 1, T>(layer, a, x, cond, lane, z);
  typename L::V acc[T];
  for (int r = 0; r < T; ++r) {
    float* zr = z + size_t(r) * zs;
    L::activate(a.config.activation, zr, cs);
    if (a.config.gated) {
      L::activate(Activation::sigmoid, zr + cs, cs);
      for (int lane = 0; lane < cs; lane += L::kLanes)
        L::store(zr + lane, L::mul(L::load(zr + lane), L::load(zr + cs + lane)));
    }
    float* head_row = head_in + size_t(r) * cs;
    for (int lane = 0; lane < cs; lane += L::kLanes)
      L::store(head_row + lane, L::add(L::load(head_row + lane), L::load(zr + lane)));
  }
  for (int lane = 0; lane < cs; lane += L::kLanes) {
    const auto bias = L::load(layer.residual_bias.data() + lane);
    for (int r = 0; r < T; ++r) acc[r] = bias;
    for (int i = 0; i < c; ++i) {
      const auto wi = L::load(layer.residual.data() + size_t(i) * cs + lane);
      for (int r = 0; r < T; ++r) acc[r] = L::fma(L::set1(z[size_t(r) * zs + i]), wi, acc[r]);
    }
    for (int r = 0; r < T; ++r)
      L::store(next + size_t(r) * cs + lane, L::add(acc[r], L::load(x + size_t(r) * cs + lane)));
  }
}

// rows[t] = bias + sum_i w[i] in[t][i] over n rows: the 1x1 convolutions at an array's ends
// (out stride `out_stride`, a whole number of lanes; in stride `in_stride`, width `width`).
template <class L>
void one_by_one(const float* in, int in_stride, int width, const float* w, const float* bias, int out_stride,
                float* out, int n) {
  for (int t = 0; t < n; ++t) {
    const float* row = in + size_t(t) * in_stride;
    for (int lane = 0; lane < out_stride; lane += L::kLanes) {
      auto acc = bias ? L::load(bias + lane) : L::set1(0.0f);
      for (int i = 0; i < width; ++i) acc = L::fma(L::set1(row[i]), L::load(w + size_t(i) * out_stride + lane), acc);
      L::store(out + size_t(t) * out_stride + lane, acc);
    }
  }
}

template <class L>
void run_array(LayerArray& a, const float* input, const float* head_start, const float* condition, float* z, int n) {
  const int cs = a.cs;
  float* head_in = a.head_in.data();
  if (head_start)
    std::memcpy(head_in, head_start, size_t(n) * cs * sizeof(float));
  else
    std::fill(head_in, head_in + size_t(n) * cs, 0.0f);

  Layer& first = a.layers.front();
  make_room(first, cs, n);
  one_by_one<L>(input, a.input_stride, a.config.input_size, a.rechannel.data(), nullptr, cs,
                first.history.data() + first.start * cs, n);

  const int condition_width = a.config.condition_size;
  for (size_t l = 0; l < a.layers.size(); ++l) {
    Layer& layer = a.layers[l];
    const float* x = layer.history.data() + layer.start * cs;  // row t is this block's sample t
    float* next = a.output.data();
    if (l + 1 < a.layers.size()) {
      Layer& after = a.layers[l + 1];
      make_room(after, cs, n);
      next = after.history.data() + after.start * cs;
    }
    int t = 0;
    for (; t + kTile <= n; t += kTile)
      layer_rows<L, kTile>(layer, a, x + size_t(t) * cs, condition + size_t(t) * condition_width,
                           head_in + size_t(t) * cs, next + size_t(t) * cs, z);
    for (; t < n; ++t)
      layer_rows<L, 1>(layer, a, x + size_t(t) * cs, condition + size_t(t) * condition_width, head_in + size_t(t) * cs,
                       next + size_t(t) * cs, z);
    layer.start += n;
  }
  one_by_one<L>(head_in, cs, a.config.channels, a.head.data(), a.head_bias.data(), a.hs, a.head_out.data(), n);
}

template <class L>
void run_arrays(std::vector<LayerArray>& arrays, const float* in, float* z, int n) {
  const float* input = in;
  const float* head_start = nullptr;
  for (LayerArray& a : arrays) {
    run_array<L>(a, input, head_start, in, z, n);
    input = a.output.data();
    head_start = a.head_out.data();
  }
}

}  // namespace

WaveNet::WaveNet(const WaveNetConfig& config, std::span<const float> weights, std::optional<double> sample_rate,
                 const AmpOptions& options)
    : AmpModel(sample_rate) {
  int lanes = ScalarLanes::kLanes;
#if TEMPRA_AUDIO_NATIVE
  native_ = options.backend == Backend::native;
  if (native_) lanes = NativeLanes::kLanes;
#endif
  WeightReader read(weights, "WaveNet");
  int max_zs = 1, input_stride = 1;
  for (const LayerArrayConfig& c : config.layer_arrays) {
    LayerArray& a = arrays_.emplace_back();
    a.config = c;
    if (options.fast_tanh && c.activation == Activation::tanh) a.config.activation = Activation::fast_tanh;
    const int channels = c.channels, z = c.gated ? 2 * channels : channels;
    a.cs = round_up(channels, lanes);
    a.zs = c.gated ? 2 * a.cs : a.cs;
    a.hs = round_up(c.head_size, lanes);
    a.input_stride = input_stride;
    input_stride = a.cs;
    max_zs = std::max(max_zs, a.zs);
    // z's output o: the activation half's lanes first, then (gated) the gate half's from Cs on.
    auto z_lane = [&](int o) { return o < channels ? o : a.cs + (o - channels); };

    read.matrix_transposed(channels, c.input_size, a.rechannel, a.cs);
    for (const int dilation : c.dilations) {
      Layer& layer = a.layers.emplace_back();
      layer.dilation = dilation;
      // The conv's weights come output-major, then input, then tap: store [tap][input][lane].
      layer.conv.assign(size_t(c.kernel_size) * channels * a.zs, 0.0f);
      for (int o = 0; o < z; ++o)
        for (int i = 0; i < channels; ++i)
          for (int k = 0; k < c.kernel_size; ++k)
            layer.conv[(size_t(k) * channels + i) * a.zs + z_lane(o)] = read.next();
      layer.conv_bias.assign(size_t(a.zs), 0.0f);
      for (int o = 0; o < z; ++o) layer.conv_bias[size_t(z_lane(o))] = read.next();
      layer.mixin.assign(size_t(c.condition_size) * a.zs, 0.0f);
      for (int o = 0; o < z; ++o)
        for (int j = 0; j < c.condition_size; ++j) layer.mixin[size_t(j) * a.zs + z_lane(o)] = read.next();
      read.matrix_transposed(channels, channels, layer.residual, a.cs);
      read.vector(channels, layer.residual_bias, a.cs);
      layer.history_rows = int64_t(dilation) * (c.kernel_size - 1);
      layer.history.assign(size_t(layer.history_rows + 2 * kMaxBlock) * a.cs, 0.0f);
    }
    read.matrix_transposed(c.head_size, channels, a.head, a.hs);
    if (c.head_bias)
      read.vector(c.head_size, a.head_bias, a.hs);
    else
      a.head_bias.assign(size_t(a.hs), 0.0f);
    a.output.assign(size_t(kMaxBlock) * a.cs, 0.0f);
    a.head_in.assign(size_t(kMaxBlock) * a.cs, 0.0f);
    a.head_out.assign(size_t(kMaxBlock) * a.hs, 0.0f);
  }
  head_scale_ = read.next();
  read.expect_end();
  z_.assign(size_t(kTile) * max_zs, 0.0f);
  clear_state();
}

int64_t WaveNet::receptive_field() const {
  int64_t field = 1;
  for (const LayerArray& a : arrays_)
    for (const Layer& layer : a.layers) field += layer.history_rows;
  return field;
}

int64_t WaveNet::prewarm_samples() const {
  return receptive_field();
}

void WaveNet::clear_state() {
  for (LayerArray& a : arrays_)
    for (Layer& layer : a.layers) {
      std::fill(layer.history.begin(), layer.history.end(), 0.0f);
      layer.start = layer.history_rows;
    }
}

void WaveNet::process_block(const float* in, float* out, int n) {
#if TEMPRA_AUDIO_NATIVE
  if (native_)
    run_arrays<NativeLanes>(arrays_, in, z_.data(), n);
  else
    run_arrays<ScalarLanes>(arrays_, in, z_.data(), n);
#else
  run_arrays<ScalarLanes>(arrays_, in, z_.data(), n);
#endif
  // The last head has one channel (parse_nam checks it). `out` may be `in`: written only now.
  const LayerArray& last = arrays_.back();
  for (int t = 0; t < n; ++t) out[t] = head_scale_ * last.head_out[size_t(t) * last.hs];
}

}  // namespace tempra::audio
