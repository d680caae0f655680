// tempra/audio/lstm.h: NAM's LSTM, streaming one sample at a time.
//
// Each layer l (input x: the sample for layer 0, the previous layer's h otherwise; H units):
//
//   [i f g o] = W [x; h] + b                  (W is 4H x (in + H), gates in PyTorch's order)
//   c = sigmoid(f) c + sigmoid(i) tanh(g),   h = sigmoid(o) tanh(c)
//
// and the output is w . h_last + b_out. Weights in the file's order: per layer W (row-major),
// b, the initial h, the initial c; then w and b_out.
//
// W is kept transposed (a column of gate rows per input), its rows regrouped: units go in groups of
// eight, and group q holds the rows i, f, g, o of units 8q ... 8q+7, 32 rows, so the cell update
// reads a group's four gates as four runs of eight at fixed offsets (on AVX-512, the halves of two
// vectors: no load straddles two stores). H = 24 is 3 groups, 96 rows: 6 AVX-512 vectors of
// accumulators, all live at once over the columns. A last group's missing units have zero weights
// and bias, and neither a column nor the head reads them (their h is 0 for finite input, NaN for
// good after an infinite one). Each
// row is its bias plus the columns' products in column order; up to H = 16 h's columns go
// alternately into two partial sums, added at the end (a small model's step is one chain of
// dependent operations, and this halves its longest link). The order depends on H alone, never on
// the vector width, so the backends agree bit for bit. With fast tanh (NAM's plugin) the four
// gates' nonlinearities are applied in the accumulators, s (fast_tanh(s z) + k), with s = 1/2 and
// k = 1 for i, f and o (NAM's fast sigmoid) and s = 1, k = -0 for g (fast_tanh itself: x + -0 is
// x for every x, -0 included); the inner s is folded into the rows' weights and bias once, which
// is exact short of subnormal values (a power of two) and takes a multiplication off the step's
// chain. The head is a dot product in 8
// interleaved partial sums (the same order on both backends). A reset returns every layer to the
// file's initial h and c.
#pragma once

#include <span>
#include <vector>

#include "tempra/audio/amp_model.h"
#include "tempra/core/aligned_vector.h"

namespace tempra::audio {

class Lstm final : public AmpModel {
 public:
  Lstm(const LstmConfig& config, std::span<const float> weights, std::optional<double> sample_rate,
       const AmpOptions& options = {});

  // NAM's: half a second at the profile's rate, one sample when the file gives none. (NAM then
  // runs whole blocks of its host's maximum size, so a host of 4096-sample blocks prewarms
  // 24576 samples at 48 kHz; tempra runs exactly this many, whatever the caller's block.)
  int64_t prewarm_samples() const override;

 private:
  struct Layer {
    int inputs = 1;
    AlignedVector<float> weights;  // [inputs + H][R]: per group of 8 units, rows i, f, g, o
    AlignedVector<float> bias;     // [R]
    std::vector<float> h0, c0;     // the file's initial state [H]
    AlignedVector<float> h, c;     // [8 G]: the state, the missing units' included
  };

  void clear_state() override;
  void process_block(const float* in, float* out, int n) override;
  template <class L, class C>
  float step(float x);

  bool fast_ = true;     // AmpOptions::fast_tanh: NAM's fast tanh and fast sigmoid for the gates
  bool native_ = false;  // AmpOptions::backend, where this build has the native arm
  int hidden_ = 1;
  int groups_ = 1;  // G: ceil(H / 8)
  int rows_ = 32;   // R: 32 G
  std::vector<Layer> layers_;
  AlignedVector<float> head_;  // [8 G]: w, then zeros
  float head_bias_ = 0.0f;
  AlignedVector<float> gates_;          // [R]: one step's gate values
  AlignedVector<float> scale_, shift_;  // [R]: the outer s and k of the fast gates
  AlignedVector<float> g_pre_;          // [8 G]: g's pre-activations, for the exact pass
};

}  // namespace tempra::audio
