// tempra/audio/train/lstm_graph.h: NAM's LSTM as a trainable model (nam/models/recurrent.py).
//
// Each layer runs over a whole segment as one op with its own backward, lstm_sequence below
// (backpropagation through time, written out as plain loops), and the head is a linear op:
//
//   [i f g o]_t = W [x_t; h_{t-1}] + b              (PyTorch's gate order, W: 4H x (in + H))
//   c_t = sigmoid(f) c_{t-1} + sigmoid(i) tanh(g),  h_t = sigmoid(o) tanh(c_t)
//   y_t = w . h_t(last layer) + b_out
//
// Training follows NAM's: every segment starts from a learned initial state (zeros at first);
// the first `burn_in` samples (4096) run and their features are detached (they count in the
// loss and train the head, but pass no gradient into the layers), and then the rest runs in
// chunks of `truncate` (512) samples with the state detached between chunks, except between the
// burn-in and the first chunk (so the initial state learns). A segment no longer than the
// burn-in trains with full backpropagation through time (NAM would pass its layers nothing). Fresh
// weights are PyTorch's: uniform in +-1/sqrt(H), with NAM's tweak of the biases (the input
// gate's -2 and the forget gate's +2, on each of PyTorch's two bias vectors, so -4 and +4 on
// their sum, which is the one bias here). The exported initial state is NAM's: the state the
// trained layers reach after 48000 samples of silence from zeros.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tempra/audio/train/trainable_amp.h"

namespace tempra::audio {

// One LSTM layer over a sequence: x [B, T, in], w [4H, in + H], b [4H], h0 and c0 [B, H].
// Returns [B, T, 2H]: h_t in [..., :H], c_t in [..., H:] (so a caller can carry the last state
// into the next chunk, with or without its gradient). Gradients flow to every input.
Array lstm_sequence(ExecContext& ctx, const Array& x, const Array& w, const Array& b, const Array& h0, const Array& c0);

struct LstmTraining {
  int64_t burn_in = 4096;
  int64_t truncate = 512;
};

class TrainableLstm final : public TrainableAmp {
 public:
  static TrainableLstm init(ExecContext& ctx, const LstmConfig& config, uint64_t seed, LstmTraining training = {});
  // The weights of a `.nam` (weight_count(config) floats); its initial state becomes the learned
  // one, so training goes on from where the profile starts.
  static TrainableLstm from_weights(ExecContext& ctx, const LstmConfig& config, std::span<const float> weights,
                                    LstmTraining training = {});

  Array forward(ExecContext& ctx, const Array& x, bool training) const override;
  int64_t receptive_field() const override { return 1; }
  std::vector<optim::Param> params() const override;
  NamFile profile(ExecContext& ctx) const override;
  const char* architecture() const override { return "LSTM"; }

 private:
  struct Layer {
    Array w, b, h0, c0;  // h0, c0: [H], the learned initial state
  };
  static TrainableLstm build(ExecContext& ctx, const LstmConfig& config, LstmTraining training,
                             const std::function<void(std::vector<float>&, const char* part)>& fill);
  // The layers over x [B, T, 1] from `state` (per layer h and c, [B, H]), which it updates;
  // returns the last layer's h [B, T, H].
  Array run(ExecContext& ctx, const Array& x, std::vector<std::pair<Array, Array>>& state, bool detach_after) const;

  LstmConfig config_;
  LstmTraining training_;
  std::vector<Layer> layers_;
  Array head_w_, head_b_;  // [1, H], [1]
};

}  // namespace tempra::audio
