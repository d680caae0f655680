// tempra/audio/train/amp_trainer.cpp: NAM's training recipe (see the header).
#include "tempra/audio/train/amp_trainer.h"

#include <chrono>
#include <numeric>

#include "tempra/ag/backward.h"
#include "tempra/audio/amp_model.h"
#include "tempra/core/error.h"
#include "tempra/core/rng.h"
#include "tempra/ops/ops.h"

namespace tempra::audio {
namespace {

constexpr const char* kOp = "amp train";
constexpr double kSilenceEnergy = 1e-9;

}  // namespace

Array esr_loss(ExecContext& ctx, const Array& prediction, const Array& target) {
  const Array error = mean_all(ctx, square(ctx, sub(ctx, prediction, target)));
  const double energy = mean_all(ctx, square(ctx, target.detach())).at({}) + kSilenceEnergy;
  return div(ctx, error, energy);
}

Array pre_emphasize(ExecContext& ctx, const Array& x, double coefficient) {
  const int64_t t = x.shape()[x.rank() - 1];
  return sub(ctx, x.slice(x.rank() - 1, 1, t), mul(ctx, x.slice(x.rank() - 1, 0, t - 1), coefficient));
}

AmpTrainOptions defaults_for(const char* architecture) {
  AmpTrainOptions options;
  if (std::string_view(architecture) == "LSTM") options.lr = 0.01, options.lr_decay = 0.005;
  return options;
}

AmpTrainer::AmpTrainer(ExecContext& ctx, std::unique_ptr<TrainableAmp> model, TrainingPair data,
                       const AmpTrainOptions& options)
    : ctx_(ctx),
      data_(std::move(data)),
      options_(options),
      model_(std::move(model)),
      optimizer_(model_->params(), options.lr, optim::AdamWOptions{}, 0.0) {
  check(options.ny >= 1 && options.batch_size >= 1, kOp, "ny and the batch size must be positive");
  check(options.lr > 0 && options.lr_decay >= 0 && options.lr_decay < 1, kOp,
        "lr must be positive and lr decay in [0, 1)");
  nx_ = model_->receptive_field();
  items_ = item_count(int64_t(data_.train_input.size()), nx_, options.ny);
  check(items_ >= 1, kOp, "the training split has ", data_.train_input.size(), " samples; one item needs ",
        nx_ + options.ny - 1, " (the receptive field ", nx_, " plus ", options.ny, " outputs less one)");
  check(int64_t(data_.validation_input.size()) >= 1, kOp, "the validation split is empty");
  batch_ = std::min(options.batch_size, items_);
}

EpochResult AmpTrainer::run_epoch() {
  const auto start = std::chrono::steady_clock::now();
  EpochResult r;
  r.epoch = ++epoch_;
  r.lr = optimizer_.groups()[0].lr;
  // Fisher-Yates from (seed, epoch): the order is the same on every machine and thread count.
  std::vector<int64_t> order(static_cast<size_t>(items_));
  std::iota(order.begin(), order.end(), 0);
  const uint64_t stream = options_.seed ^ (uint64_t(epoch_) * CounterRng::kGolden);
  for (int64_t i = items_ - 1; i > 0; --i)
    std::swap(order[size_t(i)], order[CounterRng::bits(stream, uint64_t(i)) % uint64_t(i + 1)]);

  const int64_t in_len = nx_ + options_.ny - 1;
  std::vector<float> xs(size_t(batch_ * in_len)), ys(size_t(batch_ * options_.ny));
  for (int64_t first = 0; first + batch_ <= items_; first += batch_) {
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t item = order[size_t(first + b)];
      const float* x = data_.train_input.data() + item * options_.ny;
      const float* y = data_.train_target.data() + item * options_.ny + nx_ - 1;
      std::copy(x, x + in_len, xs.begin() + b * in_len);
      std::copy(y, y + options_.ny, ys.begin() + b * options_.ny);
    }
    const Array x = Array::from_values<float>(ctx_, {batch_, 1, in_len}, xs);
    const Array y = Array::from_values<float>(ctx_, {batch_, 1, options_.ny}, ys);
    const Array p = model_->forward(ctx_, x, true);
    const Array plain = esr_loss(ctx_, p, y);
    Array loss = plain;
    if (options_.pre_emphasis_weight > 0)
      loss = add(ctx_, plain,
                 mul(ctx_,
                     esr_loss(ctx_, pre_emphasize(ctx_, p, options_.pre_emphasis),
                              pre_emphasize(ctx_, y, options_.pre_emphasis)),
                     options_.pre_emphasis_weight));
    ag::backward(ctx_, loss);
    optimizer_.step(ctx_);
    optimizer_.zero_grad();
    r.loss += loss.at({});
    r.train_esr += plain.at({});
    ++r.steps;
  }
  r.loss /= double(r.steps);
  r.train_esr /= double(r.steps);
  optimizer_.groups()[0].lr *= 1.0 - options_.lr_decay;
  const auto validation_start = std::chrono::steady_clock::now();
  r.validation_esr = esr(predict(profile(), data_.validation_input), data_.validation_target);
  const auto end = std::chrono::steady_clock::now();
  r.validation_seconds = std::chrono::duration<double>(end - validation_start).count();
  r.seconds = std::chrono::duration<double>(end - start).count();
  return r;
}

const NamFile& AmpTrainer::profile() {
  if (profile_epoch_ != epoch_) {
    profile_ = model_->profile(ctx_);
    profile_.sample_rate = data_.sample_rate;
    profile_epoch_ = epoch_;
  }
  return profile_;
}

std::vector<float> predict(const NamFile& profile, std::span<const float> input) {
  const std::unique_ptr<AmpModel> model = make_amp_model(profile, AmpOptions{.fast_tanh = false});
  std::vector<float> out(input.size());
  model->process(input.data(), out.data(), int64_t(input.size()));
  return out;
}

}  // namespace tempra::audio
