// tempra/audio/train/amp_data.h: a reamping pair (dry input, amp output) made ready to train on.
//
// What NAM's trainer does with a pair (nam/train/core.py, nam/data.py), for any input file:
//   - the rates must match and the output must not clip (|y| >= 1 is NAM's "Output clipped.");
//   - the output may be longer than the input by up to 1 s (the recording ran on); both are cut
//     to the shorter;
//   - the output's latency is removed: x = x[:-delay], y = y[delay:], delay = the estimate less
//     NAM's safety factor of 1 sample (a causal model can learn a delay, never an advance), or
//     the latency the user gives;
//   - the last `validation_seconds` are the validation split (NAM's single-pair recipe: 9 s), the
//     rest trains;
//   - training items are NAM's: non-overlapping output windows of ny samples, each with the
//     receptive field's nx - 1 samples of input before it.
//
// The latency is estimated from the cross-correlation r(lag) = sum_t x'[t] y'[t + lag] over the
// input's most treble-rich stretch of 2^16 samples, where x' and y' are both signals through
// the filter that whitens that stretch of x (an order-32 linear predictor's error filter). With
// a white input the correlation is the amp's impulse response itself, rather than the response
// smeared by the input's autocorrelation. The delay is the response's onset: searching back
// from the peak |r|, the first lag of the run that stays above a quarter of it (the peak may come
// a sample or two later, through the amp's filters). NAM's own calibration needs blips at known
// places in its standard input files; this works on any input with some broadband material.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tempra/audio/wav.h"

namespace tempra::audio {

struct LatencyEstimate {
  int64_t onset = 0;    // the lag where |r| first reaches a quarter of its peak
  int64_t peak = 0;     // the lag of the peak |r|
  double strength = 0;  // peak |r| / (|x| |y|) over the stretch: near 0 means no relation found
};

// lags 0 .. max_lag; the stretch must hold at least max_lag + 1 samples of both signals.
LatencyEstimate estimate_latency(std::span<const float> input, std::span<const float> target, int64_t max_lag);

struct PairOptions {
  double validation_seconds = 9.0;
  int64_t max_latency = 4800;           // the largest latency estimated (samples; 100 ms at 48 kHz)
  std::optional<int64_t> latency = {};  // the user's, in samples (no safety factor subtracted)
  int input_channel = 0, target_channel = 0;
};

struct TrainingPair {
  int sample_rate = 48000;
  std::vector<float> train_input, train_target;            // aligned, equal lengths
  std::vector<float> validation_input, validation_target;  // aligned, equal lengths
  int64_t latency = 0;                                     // samples removed: y[t + latency] answers x[t]
  std::optional<LatencyEstimate> estimate;                 // when it was estimated
};

// Errors name the file's role ("input", "target") and what is wrong.
TrainingPair prepare_pair(const AudioData& input, const AudioData& target, const PairOptions& options);

// NAM's training items over (input, target): item i's output is target[nx - 1 + i ny, + ny) and
// its input input[i ny, + nx + ny - 1). (n - nx + 1) / ny items, the tail dropped.
int64_t item_count(int64_t samples, int64_t nx, int64_t ny);

// Mean squared error over mean squared target, in double: NAM's ESR for one signal.
double esr(std::span<const float> prediction, std::span<const float> target);

}  // namespace tempra::audio
