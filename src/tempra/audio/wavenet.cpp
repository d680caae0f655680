// tempra/audio/wavenet.cpp
#include "tempra/audio/wavenet.h"

#include <algorithm>
#include <cstring>

#include "tempra/audio/activation.h"
#include "tempra/audio/weight_reader.h"

namespace tempra::audio {
namespace {

// Makes room for n more rows after `start`: when they would run past the buffer, the history
// rows before `start` move to the front.
void make_room(std::vector<float>& rows, int64_t& start, int64_t history_rows, int channels, int n) {
  const int64_t capacity = int64_t(rows.size()) / channels;
  if (start + n <= capacity) return;
  std::memmove(rows.data(), rows.data() + (start - history_rows) * channels,
               size_t(history_rows * channels) * sizeof(float));
  start = history_rows;
}

}  // namespace

WaveNet::WaveNet(const WaveNetConfig& config, std::span<const float> weights, std::optional<double> sample_rate,
                 const AmpOptions& options)
    : AmpModel(sample_rate) {
  WeightReader read(weights, "WaveNet");
  int max_z = 1;
  for (const LayerArrayConfig& c : config.layer_arrays) {
    LayerArray& a = arrays_.emplace_back();
    a.config = c;
    if (options.fast_tanh && c.activation == Activation::tanh) a.config.activation = Activation::fast_tanh;
    const int channels = c.channels, z = c.gated ? 2 * channels : channels;
    max_z = std::max(max_z, z);
    read.matrix_transposed(channels, c.input_size, a.rechannel);
    for (const int dilation : c.dilations) {
      Layer& layer = a.layers.emplace_back();
      layer.dilation = dilation;
      // The conv's weights come output-major, then input, then tap: store [tap][input][output].
      layer.conv.assign(size_t(c.kernel_size) * channels * z, 0.0f);
      for (int o = 0; o < z; ++o)
        for (int i = 0; i < channels; ++i)
          for (int k = 0; k < c.kernel_size; ++k) layer.conv[(size_t(k) * channels + i) * z + o] = read.next();
      read.vector(z, layer.conv_bias);
      read.matrix_transposed(z, c.condition_size, layer.mixin);
      read.matrix_transposed(channels, channels, layer.residual);
      read.vector(channels, layer.residual_bias);
      layer.history_rows = int64_t(dilation) * (c.kernel_size - 1);
      layer.history.assign(size_t(layer.history_rows + 2 * kMaxBlock) * channels, 0.0f);
    }
    read.matrix_transposed(c.head_size, channels, a.head);
    if (c.head_bias)
      read.vector(c.head_size, a.head_bias);
    else
      a.head_bias.assign(size_t(c.head_size), 0.0f);
    a.output.assign(size_t(kMaxBlock) * channels, 0.0f);
    a.head_in.assign(size_t(kMaxBlock) * channels, 0.0f);
    a.head_out.assign(size_t(kMaxBlock) * c.head_size, 0.0f);
  }
  head_scale_ = read.next();
  read.expect_end();
  z_.assign(size_t(max_z), 0.0f);
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
  const float* input = in;
  int input_width = 1;
  const float* head_start = nullptr;
  for (LayerArray& a : arrays_) {
    run_array(a, input, input_width, head_start, in, n);
    input = a.output.data();
    input_width = a.config.channels;
    head_start = a.head_out.data();
  }
  // The last head has one channel (parse_nam checks it). `out` may be `in`: written only now.
  const float* head = arrays_.back().head_out.data();
  for (int t = 0; t < n; ++t) out[t] = head_scale_ * head[t];
}

void WaveNet::run_array(LayerArray& a, const float* input, int input_width, const float* head_start,
                        const float* condition, int n) {
  const LayerArrayConfig& c = a.config;
  const int channels = c.channels, z_width = c.gated ? 2 * channels : channels, heads = c.head_size;
  const int kernel = c.kernel_size, condition_width = c.condition_size;
  float* head_in = a.head_in.data();
  if (head_start)
    std::memcpy(head_in, head_start, size_t(n) * channels * sizeof(float));
  else
    std::fill(head_in, head_in + size_t(n) * channels, 0.0f);

  // The first layer's input: the rechannelled array input.
  {
    Layer& first = a.layers.front();
    make_room(first.history, first.start, first.history_rows, channels, n);
    float* rows = first.history.data() + first.start * channels;
    for (int t = 0; t < n; ++t) {
      float* row = rows + size_t(t) * channels;
      std::fill(row, row + channels, 0.0f);
      for (int i = 0; i < input_width; ++i) {
        const float x = input[size_t(t) * input_width + i];
        const float* w = a.rechannel.data() + size_t(i) * channels;
        for (int o = 0; o < channels; ++o) row[o] += w[o] * x;
      }
    }
  }

  float* z = z_.data();
  for (size_t l = 0; l < a.layers.size(); ++l) {
    Layer& layer = a.layers[l];
    const float* x = layer.history.data() + layer.start * channels;  // row t is this block's sample t
    float* next = a.output.data();
    if (l + 1 < a.layers.size()) {
      Layer& after = a.layers[l + 1];
      make_room(after.history, after.start, after.history_rows, channels, n);
      next = after.history.data() + after.start * channels;
    }
    for (int t = 0; t < n; ++t) {
      std::copy(layer.conv_bias.begin(), layer.conv_bias.end(), z);
      for (int k = 0; k < kernel; ++k) {
        const float* past = x + (int64_t(t) - int64_t(layer.dilation) * (kernel - 1 - k)) * channels;
        const float* w = layer.conv.data() + size_t(k) * channels * z_width;
        for (int i = 0; i < channels; ++i) {
          const float xi = past[i];
          const float* wi = w + size_t(i) * z_width;
          for (int o = 0; o < z_width; ++o) z[o] += wi[o] * xi;
        }
      }
      for (int j = 0; j < condition_width; ++j) {
        const float cj = condition[size_t(t) * condition_width + j];
        const float* wj = layer.mixin.data() + size_t(j) * z_width;
        for (int o = 0; o < z_width; ++o) z[o] += wj[o] * cj;
      }
      apply_activation(c.activation, z, channels);
      if (c.gated) {
        apply_activation(Activation::sigmoid, z + channels, channels);
        for (int o = 0; o < channels; ++o) z[o] *= z[channels + o];
      }
      float* head_row = head_in + size_t(t) * channels;
      for (int o = 0; o < channels; ++o) head_row[o] += z[o];
      float* r = next + size_t(t) * channels;
      std::copy(layer.residual_bias.begin(), layer.residual_bias.end(), r);
      for (int i = 0; i < channels; ++i) {
        const float* wi = layer.residual.data() + size_t(i) * channels;
        for (int o = 0; o < channels; ++o) r[o] += wi[o] * z[i];
      }
      const float* x_row = x + size_t(t) * channels;
      for (int o = 0; o < channels; ++o) r[o] += x_row[o];
    }
    layer.start += n;
  }

  float* head_out = a.head_out.data();
  for (int t = 0; t < n; ++t) {
    float* h = head_out + size_t(t) * heads;
    std::copy(a.head_bias.begin(), a.head_bias.end(), h);
    for (int i = 0; i < channels; ++i) {
      const float v = head_in[size_t(t) * channels + i];
      const float* wi = a.head.data() + size_t(i) * heads;
      for (int o = 0; o < heads; ++o) h[o] += wi[o] * v;
    }
  }
}

}  // namespace tempra::audio
