// tempra/audio/train/trainable_amp.h: what the trainer needs of a model it trains.
//
// A trainable amp maps segments of input [B, 1, L] to the outputs that have their full context,
// [B, 1, L - receptive_field() + 1], with every weight a named leaf the optimizer updates, and
// turns its current weights into a `.nam` profile that the streaming models (amp_model.h) and
// NAM's own core play. NAM's WaveNet (wavenet_graph.h) and LSTM (lstm_graph.h) are the two.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "tempra/audio/nam_file.h"
#include "tempra/core/array.h"
#include "tempra/core/exec_context.h"
#include "tempra/optim/optimizer.h"

namespace tempra::audio {

class TrainableAmp {
 public:
  virtual ~TrainableAmp() = default;

  // x: [B, 1, L], L >= receptive_field(); returns [B, 1, L - receptive_field() + 1]. `training`:
  // a model whose training differs from inference (the LSTM's burn-in and truncated
  // backpropagation) trains that way; its outputs' values are the same.
  virtual Array forward(ExecContext& ctx, const Array& x, bool training) const = 0;
  virtual int64_t receptive_field() const = 0;
  virtual std::vector<optim::Param> params() const = 0;
  // The current weights as a profile (config and weights; no rate or metadata).
  virtual NamFile profile(ExecContext& ctx) const = 0;
  virtual const char* architecture() const = 0;  // "WaveNet", "LSTM"
};

// The architectures `tempra amp train --arch` names: NAM's stock WaveNets ("standard", "lite",
// "feather", "nano") and LSTMs ("lstm", the standard one, or "lstm-lite", "lstm-feather",
// "lstm-nano"); fresh weights from `seed`. nullptr for another name.
std::unique_ptr<TrainableAmp> make_trainable_amp(ExecContext& ctx, std::string_view arch, uint64_t seed);

}  // namespace tempra::audio
