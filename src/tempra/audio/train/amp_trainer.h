// tempra/audio/train/amp_trainer.h: trains a NAM model on a reamping pair, as NAM's trainer does.
//
// The recipe is NAM's (nam/train/core.py `train`): items of ny = 8192 output samples with the
// receptive field's history before them, shuffled every epoch, batches of 16 (the last partial
// batch dropped), Adam with an lr decayed after every epoch (ExponentialLR): for WaveNets lr
// 0.004 and decay 0.007 (PyTorch's default Conv1d initialization, head scale 0.02), for LSTMs
// lr 0.01 and decay 0.005 (defaults_for). The loss is the ESR
// (error-to-signal ratio: squared error over squared target) of the batch taken as one signal,
// on the signals and again on their pre-emphasized versions, y[n] - 0.85 y[n-1], which weighs
// the treble a guitarist hears where plain ESR is dominated by the bass's energy:
//
//   loss = ESR(p, y) + w ESR(pre(p), pre(y)),   w = 1
//
// NAM's recipes differ in the details: its WaveNets train on MSE plus a pre-emphasized
// multi-resolution STFT term, its LSTMs add the pre-emphasized MSE at weight 1 with coefficient
// 0.85 (as here). NAM's losses.esr takes each item's ratio and averages them: an item that is
// mostly silence (a decaying note, a pause) then weighs thousands of times more than a loud one
// and training chases the noise floor, so here the ratio is over the batch. The target energy
// has 1e-9 added, so an all-silent batch gives its squared error, not a division by zero.
//
// The shuffle is a pure function of (seed, epoch) through the counter RNG, so a run is
// reproducible; validation runs the streaming model (amp_model.h, exact tanh) over the whole
// validation split from a reset, as NAM's validation_esr pads the start with zeros.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tempra/audio/nam_file.h"
#include "tempra/audio/train/amp_data.h"
#include "tempra/audio/train/trainable_amp.h"
#include "tempra/core/exec_context.h"
#include "tempra/optim/adamw.h"

namespace tempra::audio {

struct AmpTrainOptions {
  int64_t ny = 8192;        // output samples per item
  int64_t batch_size = 16;  // items per step (fewer when the data has fewer)
  double lr = 0.004;
  double lr_decay = 0.007;     // lr *= 1 - lr_decay after each epoch
  double pre_emphasis = 0.85;  // the filter's coefficient
  double pre_emphasis_weight = 1.0;
  uint64_t seed = 0;  // every epoch's shuffle
};
// NAM's lr and decay for an architecture ("WaveNet" or "LSTM"), the rest as above.
AmpTrainOptions defaults_for(const char* architecture);

struct EpochResult {
  int64_t epoch = 0;              // 1-based
  int64_t steps = 0;              // optimizer steps this epoch
  double loss = 0;                // the mean training loss over the epoch's steps
  double train_esr = 0;           // the mean ESR (without pre-emphasis) over its steps
  double validation_esr = 0;      // on the whole validation split, after the epoch
  double lr = 0;                  // the lr the epoch trained at
  double seconds = 0;             // training and validation
  double validation_seconds = 0;  // of which validation
};

// The ESR of the batch (the loss above, one term); prediction and target [B, 1, T]. The target
// takes no gradient.
Array esr_loss(ExecContext& ctx, const Array& prediction, const Array& target);
// y[n] - coefficient y[n-1] along the last axis (one sample shorter).
Array pre_emphasize(ExecContext& ctx, const Array& x, double coefficient);

// A profile's output (exact tanh, as trained) on `input` from a reset: how validation scores it.
std::vector<float> predict(const NamFile& profile, std::span<const float> input);

class AmpTrainer {
 public:
  AmpTrainer(ExecContext& ctx, std::unique_ptr<TrainableAmp> model, TrainingPair data,
             const AmpTrainOptions& options = {});

  EpochResult run_epoch();
  // The model's current weights as a profile (version 0.5.4, the data's sample rate); the
  // caller adds metadata. Made once per epoch and kept: validation scores it, and exporting an
  // LSTM runs 48000 samples of silence.
  const NamFile& profile();
  const TrainingPair& data() const { return data_; }
  int64_t items() const { return items_; }
  int64_t batch_size() const { return batch_; }
  int64_t epochs_done() const { return epoch_; }
  const TrainableAmp& model() const { return *model_; }

 private:
  ExecContext& ctx_;
  TrainingPair data_;
  AmpTrainOptions options_;
  std::unique_ptr<TrainableAmp> model_;
  optim::AdamW optimizer_;
  int64_t nx_ = 1, items_ = 0, batch_ = 1, epoch_ = 0;
  NamFile profile_;
  int64_t profile_epoch_ = -1;  // the epoch profile_ holds the weights of
};

}  // namespace tempra::audio
