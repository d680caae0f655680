// tempra/audio/lstm.cpp
#include "tempra/audio/lstm.h"

#include <algorithm>
#include <cmath>

#include "tempra/audio/lanes.h"
#include "tempra/audio/weight_reader.h"

namespace tempra::audio {
namespace {

constexpr int kGroup = 8;  // units per group: the cell update's width
constexpr int kGroupRows = 4 * kGroup;
constexpr int kHeadParts = 8;  // the head's partial sums
// Accumulators live at once (vectors times partial sums). On AVX2 that is all 16 registers: the
// feather and nano LSTMs (8 vectors, two partial sums) run in one pass and the compiler spills a
// little, still faster than a second pass that broadcasts every column again (measured on the
// avx2 build against a budget of 12: +3-4%). AVX-512 and NEON have 32 registers.
constexpr int kMostAccumulators = 16;
// Up to this H the rows sum h's columns in two partial sums (even and odd columns): a small
// model's step is one long chain of dependent operations, and the gate products' chain of H
// fused multiply-adds is its longest part. A wider one is bound by loading its weights
// instead, and the extra accumulators cost it (measured: H = 16 and 12 gain 5%, H = 24 loses 9%).
constexpr int kMostForTwoChains = 16;

// The row of gate `gate` (0 i, 1 f, 2 g, 3 o) of unit u in the grouped layout.
int grouped_row(int gate, int u) {
  return u / kGroup * kGroupRows + gate * kGroup + u % kGroup;
}

// The gate (0 i, 1 f, 2 g, 3 o) a row of the grouped layout belongs to.
int gate_of_row(int row) {
  return row % kGroupRows / kGroup;
}

}  // namespace

Lstm::Lstm(const LstmConfig& config, std::span<const float> weights, std::optional<double> sample_rate,
           const AmpOptions& options)
    : AmpModel(sample_rate), fast_(options.fast_tanh), hidden_(config.hidden_size) {
#if TEMPRA_AUDIO_NATIVE
  native_ = options.backend == Backend::native;
#endif
  const int h = hidden_;
  groups_ = (h + kGroup - 1) / kGroup;
  rows_ = groups_ * kGroupRows;
  WeightReader read(weights, "LSTM");
  for (int l = 0; l < config.num_layers; ++l) {
    Layer& layer = layers_.emplace_back();
    layer.inputs = l == 0 ? config.input_size : h;
    const int columns = layer.inputs + h;
    layer.weights.assign(size_t(columns) * rows_, 0.0f);
    for (int r = 0; r < 4 * h; ++r) {
      const int row = grouped_row(r / h, r % h);
      for (int j = 0; j < columns; ++j) layer.weights[size_t(j) * rows_ + row] = read.next();
    }
    layer.bias.assign(size_t(rows_), 0.0f);
    for (int r = 0; r < 4 * h; ++r) layer.bias[size_t(grouped_row(r / h, r % h))] = read.next();
    if (fast_)  // the fast sigmoid's inner 1/2 (lstm.h), exact
      for (int r = 0; r < rows_; ++r)
        if (gate_of_row(r) != 2) {
          layer.bias[size_t(r)] *= 0.5f;
          for (int j = 0; j < columns; ++j) layer.weights[size_t(j) * rows_ + r] *= 0.5f;
        }
    read.vector(h, layer.h0);
    read.vector(h, layer.c0);
    layer.h.assign(size_t(groups_ * kGroup), 0.0f);
    layer.c.assign(size_t(groups_ * kGroup), 0.0f);
  }
  read.vector(h, head_, groups_ * kGroup);  // whole eights (kHeadParts)
  head_bias_ = read.next();
  read.expect_end();
  gates_.assign(size_t(rows_), 0.0f);
  g_pre_.assign(size_t(groups_ * kGroup), 0.0f);
  scale_.assign(size_t(rows_), 0.5f);
  shift_.assign(size_t(rows_), 1.0f);
  for (int r = 0; r < rows_; ++r)
    if (gate_of_row(r) == 2) scale_[size_t(r)] = 1.0f, shift_[size_t(r)] = -0.0f;  // g: fast_tanh itself
  clear_state();
}

int64_t Lstm::prewarm_samples() const {
  const auto rate = expected_sample_rate();
  return rate ? std::max<int64_t>(1, int64_t(0.5 * *rate)) : 1;
}

void Lstm::clear_state() {
  for (Layer& layer : layers_) {
    std::fill(layer.h.begin(), layer.h.end(), 0.0f);
    std::fill(layer.c.begin(), layer.c.end(), 0.0f);
    std::copy(layer.h0.begin(), layer.h0.end(), layer.h.begin());
    std::copy(layer.c0.begin(), layer.c0.end(), layer.c.begin());
  }
}

void Lstm::process_block(const float* in, float* out, int n) {
#if TEMPRA_AUDIO_NATIVE
  if (native_) {
    for (int t = 0; t < n; ++t) out[t] = step<NativeLanes, NativeCellLanes>(in[t]);
    return;
  }
#endif
  for (int t = 0; t < n; ++t) out[t] = step<ScalarLanes, ScalarLanes>(in[t]);
}

namespace {

// One layer's gate rows for this step.
struct GateProducts {
  const float* weights;  // [inputs + H][rows]
  const float* bias;     // [rows]
  const float* input;    // [inputs]: the sample, or the layer below's h
  const float* h;        // [H]: this layer's h
  int inputs, hidden, rows;
  const float* scale;  // [rows] s and k of the fast gates (the inner s is in the weights), applied
  const float* shift;  // in the accumulators; scale nullptr: the pre-activations are stored as they are
};

// z[lane0 ..) for N vectors: bias plus the columns' products, N rows of vectors computed at
// once. The input's columns go into the first of K partial sums; h's column j into partial
// j mod K, each in column order; the partials are added in order at the end. Then, with fast
// gates, s (fast_tanh(z) + k), z already scaled by s.
template <class L, int N, int K>
void gate_vectors(const GateProducts& p, int lane0, float* z) {
  typename L::V acc[K][N];
  for (int v = 0; v < N; ++v) acc[0][v] = L::load(p.bias + lane0 + v * L::kLanes);
  for (int q = 1; q < K; ++q)
    for (int v = 0; v < N; ++v) acc[q][v] = L::set1(0.0f);
  const float* w = p.weights + lane0;
  for (int j = 0; j < p.inputs; ++j, w += p.rows) {
    const auto x = L::set1(p.input[j]);
    for (int v = 0; v < N; ++v) acc[0][v] = L::fma(x, L::load(w + v * L::kLanes), acc[0][v]);
  }
  for (int j = 0; j < p.hidden; j += K)
    for (int q = 0; q < K && j + q < p.hidden; ++q, w += p.rows) {
      const auto x = L::set1(p.h[j + q]);
      for (int v = 0; v < N; ++v) acc[q][v] = L::fma(x, L::load(w + v * L::kLanes), acc[q][v]);
    }
  for (int v = 0; v < N; ++v) {
    for (int q = 1; q < K; ++q) acc[0][v] = L::add(acc[0][v], acc[q][v]);
    const int r = lane0 + v * L::kLanes;
    if (p.scale) {
      const auto s = L::load(p.scale + r);
      acc[0][v] = L::mul(s, L::add(L::tanh(acc[0][v], true), L::load(p.shift + r)));
    }
    L::store(z + r, acc[0][v]);
  }
}

// gate_vectors for n (1 ... N) vectors: the instance with n rows of accumulators.
template <class L, int K, int N = kMostAccumulators / K>
void gate_chunk(int n, const GateProducts& p, int lane0, float* z) {
  if constexpr (N > 1)
    if (n < N) return gate_chunk<L, K, N - 1>(n, p, lane0, z);
  gate_vectors<L, N, K>(p, lane0, z);
}

}  // namespace

template <class L, class C>
float Lstm::step(float x) {
  float* z = gates_.data();
  const float* input = &x;
  for (Layer& layer : layers_) {
    const GateProducts products{.weights = layer.weights.data(),
                                .bias = layer.bias.data(),
                                .input = input,
                                .h = layer.h.data(),
                                .inputs = layer.inputs,
                                .hidden = hidden_,
                                .rows = rows_,
                                .scale = fast_ ? scale_.data() : nullptr,
                                .shift = shift_.data()};
    const int vectors = rows_ / L::kLanes;
    const int chains = hidden_ <= kMostForTwoChains ? 2 : 1, most = kMostAccumulators / chains;
    for (int v = 0; v < vectors; v += most) {
      const int n = std::min(most, vectors - v);
      if (chains == 2)
        gate_chunk<L, 2>(n, products, v * L::kLanes, z);
      else
        gate_chunk<L, 1>(n, products, v * L::kLanes, z);
    }
    if (!fast_) {  // sigmoid for every row, then tanh for g's
      for (int q = 0; q < groups_; ++q)
        std::copy_n(z + q * kGroupRows + 2 * kGroup, kGroup, g_pre_.begin() + q * kGroup);
      L::sigmoid(z, rows_, false);
      for (int q = 0; q < groups_; ++q)
        for (int k = 0; k < kGroup; k += C::kLanes)
          C::store(z + q * kGroupRows + 2 * kGroup + k, C::tanh(C::load(g_pre_.data() + q * kGroup + k), false));
    }
    // c = f c + i g, h = o tanh(c), eight units of a group at a time.
    for (int q = 0; q < groups_; ++q)
      for (int k = 0; k < kGroup; k += C::kLanes) {
        const float* gate = z + q * kGroupRows + k;
        float* c = layer.c.data() + q * kGroup + k;
        const auto i = C::load(gate), f = C::load(gate + kGroup), g = C::load(gate + 2 * kGroup),
                   o = C::load(gate + 3 * kGroup);
        const auto cell = C::add(C::mul(f, C::load(c)), C::mul(i, g));
        C::store(c, cell);
        C::store(layer.h.data() + q * kGroup + k, C::mul(o, C::tanh(cell, fast_)));
      }
    input = layer.h.data();
  }
  // The head: 8 interleaved partial sums (a cell vector's lanes, or several) over the whole
  // eights of units, then the rest one at a time (never the missing units: after an infinite
  // input their state is NaN for good, and 0 NaN is NaN), then a fixed tree.
  static_assert(kHeadParts % C::kLanes == 0 && kGroup % kHeadParts == 0);
  const float* last = layers_.back().h.data();
  constexpr int kParts = kHeadParts / C::kLanes;
  typename C::V part[kParts];
  for (int v = 0; v < kParts; ++v) part[v] = C::set1(0.0f);
  const int whole = hidden_ / kHeadParts * kHeadParts;
  for (int k = 0; k < whole; k += kHeadParts)
    for (int v = 0; v < kParts; ++v)
      part[v] = C::fma(C::load(head_.data() + k + v * C::kLanes), C::load(last + k + v * C::kLanes), part[v]);
  alignas(kBufferAlignment) float p[kHeadParts];
  for (int v = 0; v < kParts; ++v) C::store(p + v * C::kLanes, part[v]);
  for (int k = whole; k < hidden_; ++k) p[k - whole] = std::fma(head_[size_t(k)], last[k], p[k - whole]);
  const float sum = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
  return head_bias_ + sum;
}

}  // namespace tempra::audio
