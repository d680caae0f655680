// tempra/audio/train/amp_data.cpp: alignment, split and items of a reamping pair (see the header).
#include "tempra/audio/train/amp_data.h"

#include <algorithm>
#include <cmath>

#include "tempra/core/error.h"

namespace tempra::audio {
namespace {

constexpr const char* kOp = "amp train";
constexpr int64_t kStretch = int64_t(1) << 16;
constexpr int kWhiteningOrder = 32;
// The normalized correlation below which the target is taken as unrelated to the input: two
// independent noises reach ~sqrt(2 ln L / N) = 0.016 at best over L = 4800 lags of N = 2^16.
constexpr double kMinStrength = 0.05;

// The start of the window of x with the most treble, the energy of its first difference
// (stepping by a quarter window): broadband material (noise, a pick's attack) whose response is
// sharp in time. A sweep or a held note is louder but predictable, and tells little of timing.
int64_t brightest_window(std::span<const float> x, int64_t window) {
  int64_t best = 0;
  double best_energy = -1;
  for (int64_t start = 0; start + window <= int64_t(x.size()); start += std::max<int64_t>(1, window / 4)) {
    double energy = 0;
    for (int64_t t = std::max<int64_t>(start, 1); t < start + window; ++t) {
      const double d = double(x[size_t(t)]) - x[size_t(t - 1)];
      energy += d * d;
    }
    if (energy > best_energy) best_energy = energy, best = start;
  }
  return best;
}

std::vector<float> channel_of(const AudioData& audio, int channel, const char* role) {
  check(channel >= 0 && channel < audio.channels, kOp, "the ", role, " has ", audio.channels, " channel(s); channel ",
        channel, " does not exist");
  return audio.channel(channel);
}

// The prediction-error filter [1, -a_1, ..., -a_p] of an order-p linear predictor of x
// (Levinson-Durbin on x's autocorrelation, its zero lag raised by 1e-6 so a pure tone stays
// well-conditioned): x through it is close to white noise.
std::vector<double> whitening_filter(std::span<const float> x, int order) {
  std::vector<double> r(size_t(order + 1), 0.0);
  for (int k = 0; k <= order; ++k)
    for (size_t t = size_t(k); t < x.size(); ++t) r[size_t(k)] += double(x[t]) * x[t - size_t(k)];
  r[0] *= 1.0 + 1e-6;
  std::vector<double> a(size_t(order + 1), 0.0), previous;
  a[0] = 1.0;
  double error = r[0];
  for (int i = 1; i <= order && error > 0; ++i) {
    double acc = r[size_t(i)];
    for (int j = 1; j < i; ++j) acc += a[size_t(j)] * r[size_t(i - j)];
    const double k = -acc / error;
    previous = a;
    for (int j = 1; j < i; ++j) a[size_t(j)] = previous[size_t(j)] + k * previous[size_t(i - j)];
    a[size_t(i)] = k;
    error *= 1.0 - k * k;
  }
  return a;
}

std::vector<double> filtered(std::span<const float> x, const std::vector<double>& filter) {
  std::vector<double> out(x.size());
  for (size_t t = 0; t < x.size(); ++t) {
    double acc = 0;
    for (size_t k = 0; k < filter.size() && k <= t; ++k) acc += filter[k] * x[t - k];
    out[t] = acc;
  }
  return out;
}

}  // namespace

LatencyEstimate estimate_latency(std::span<const float> input, std::span<const float> target, int64_t max_lag) {
  const int64_t n = int64_t(std::min(input.size(), target.size()));
  check(max_lag >= 0 && n > max_lag, kOp, "latency estimation needs more than ", max_lag, " samples, got ", n);
  const int64_t window = std::min(kStretch, n - max_lag);
  const int64_t start = brightest_window(input.first(size_t(n - max_lag)), window);
  // Both signals through the filter that whitens the input: the target is still the amp's
  // response to the (now white) input, so the correlation is the response itself, not the
  // response smeared by the input's autocorrelation (a sweep's is as wide as its period).
  const std::vector<double> filter = whitening_filter(input.subspan(size_t(start), size_t(window)), kWhiteningOrder);
  const std::vector<double> x = filtered(input.subspan(size_t(start), size_t(window)), filter);
  const std::vector<double> y = filtered(target.subspan(size_t(start), size_t(window + max_lag)), filter);
  std::vector<double> r(size_t(max_lag + 1));
  double peak = 0;
  LatencyEstimate e;
  for (int64_t lag = 0; lag <= max_lag; ++lag) {
    double sum = 0;
    for (int64_t t = 0; t < window; ++t) sum += x[size_t(t)] * y[size_t(t + lag)];
    r[size_t(lag)] = std::fabs(sum);
    if (r[size_t(lag)] > peak) peak = r[size_t(lag)], e.peak = lag;
  }
  // The onset: searching back from the peak, the first lag of the run that stays above a quarter
  // of it (an earlier lag above it with a dip between would be another echo, not this response).
  e.onset = e.peak;
  while (e.onset > 0 && r[size_t(e.onset - 1)] >= 0.25 * peak) --e.onset;
  double xx = 0, yy = 0;
  for (int64_t t = 0; t < window; ++t)
    xx += x[size_t(t)] * x[size_t(t)], yy += y[size_t(t + e.peak)] * y[size_t(t + e.peak)];
  e.strength = xx > 0 && yy > 0 ? peak / std::sqrt(xx * yy) : 0.0;
  return e;
}

TrainingPair prepare_pair(const AudioData& input, const AudioData& target, const PairOptions& options) {
  check(input.sample_rate == target.sample_rate, kOp, "the input is at ", input.sample_rate, " Hz and the target at ",
        target.sample_rate, " Hz; resample one of them first");
  std::vector<float> x = channel_of(input, options.input_channel, "input");
  std::vector<float> y = channel_of(target, options.target_channel, "target");
  const int rate = input.sample_rate;
  // NAM allows the output to run on by up to 1 s; a longer one is a different recording.
  check(int64_t(y.size()) <= int64_t(x.size()) + rate, kOp, "the target is ",
        double(int64_t(y.size()) - int64_t(x.size())) / rate,
        " s longer than the input (at most 1 s): not a reamp of it?");
  const size_t n = std::min(x.size(), y.size());
  x.resize(n);
  y.resize(n);
  for (size_t t = 0; t < n; ++t) {
    check(std::isfinite(x[t]) && std::isfinite(y[t]), kOp, "sample ", t, " of the ",
          std::isfinite(x[t]) ? "target" : "input", " is not a finite number");
    check(std::fabs(y[t]) < 1.0f, kOp, "the target clips at sample ", t, " (|y| = ", std::fabs(y[t]),
          "): record the amp's output lower, a clipped capture teaches the model the interface's clipping");
  }

  TrainingPair pair;
  pair.sample_rate = rate;
  if (options.latency) {
    check(*options.latency >= 0 && *options.latency < int64_t(n) / 2, kOp, "--latency ", *options.latency,
          " samples must be at least 0 and under half the recording");
    pair.latency = *options.latency;
  } else {
    const LatencyEstimate e = estimate_latency(x, y, std::min<int64_t>(options.max_latency, int64_t(n) / 4));
    check(e.strength >= kMinStrength, kOp, "the target does not follow the input (correlation ", e.strength,
          " at best): are these the same take? give --latency if you know it");
    pair.estimate = e;
    pair.latency = std::max<int64_t>(0, e.onset - 1);  // NAM's safety factor
  }
  x.resize(n - size_t(pair.latency));
  y.erase(y.begin(), y.begin() + pair.latency);

  const auto validation = int64_t(std::llround(options.validation_seconds * rate));
  check(validation > 0 && validation < int64_t(x.size()), kOp, "a validation split of ", options.validation_seconds,
        " s does not fit in ", double(x.size()) / rate, " s of aligned audio");
  check(validation >= rate / 10, kOp, "a validation split of ", options.validation_seconds,
        " s is too short to judge a model by; give at least 0.1 s");
  const size_t cut = x.size() - size_t(validation);
  pair.train_input.assign(x.begin(), x.begin() + ptrdiff_t(cut));
  pair.train_target.assign(y.begin(), y.begin() + ptrdiff_t(cut));
  pair.validation_input.assign(x.begin() + ptrdiff_t(cut), x.end());
  pair.validation_target.assign(y.begin() + ptrdiff_t(cut), y.end());
  double energy = 0;
  for (const float v : pair.validation_target) energy += double(v) * v;
  check(energy > 0, kOp, "the validation split (the target's last ", options.validation_seconds,
        " s) is silent: an ESR against silence is undefined; trim the silence or choose --validation-seconds");
  return pair;
}

int64_t item_count(int64_t samples, int64_t nx, int64_t ny) {
  return samples >= nx + ny - 1 ? (samples - nx + 1) / ny : 0;
}

double esr(std::span<const float> prediction, std::span<const float> target) {
  check(prediction.size() == target.size() && !target.empty(), kOp, "ESR of ", prediction.size(), " against ",
        target.size(), " samples");
  double error = 0, energy = 0;
  for (size_t t = 0; t < target.size(); ++t) {
    const double d = double(prediction[t]) - target[t];
    error += d * d;
    energy += double(target[t]) * target[t];
  }
  check(energy > 0, kOp, "ESR against a silent target is undefined");
  return error / energy;
}

}  // namespace tempra::audio
