// tempra/train/finetune.cpp: see finetune.h.
#include "tempra/train/finetune.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <string>

#include "tempra/ag/backward.h"
#include "tempra/core/error.h"
#include "tempra/core/fnv1a.h"
#include "tempra/core/grad_node.h"
#include "tempra/core/rng.h"
#include "tempra/io/safetensors.h"
#include "tempra/ops/ops.h"
#include "tempra/optim/checkpoint.h"

namespace tempra::train {
namespace {

// A permutation of 0 .. n-1 by Fisher-Yates over the counter RNG's stream `key`.
std::vector<size_t> permutation(size_t n, uint64_t key) {
  std::vector<size_t> p(n);
  std::iota(p.begin(), p.end(), size_t{0});
  for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[CounterRng::bits(key, i) % i]);
  return p;
}

constexpr int64_t kIgnore = -100;

}  // namespace

Split split_examples(std::vector<Example> all, double eval_fraction, uint64_t seed) {
  check(eval_fraction >= 0 && eval_fraction < 1, "finetune", "--eval-split ", eval_fraction, " must be in [0, 1)");
  size_t n_eval = size_t(std::llround(eval_fraction * double(all.size())));
  if (eval_fraction > 0 && all.size() >= 2) n_eval = std::clamp<size_t>(n_eval, 1, all.size() - 1);
  if (all.size() < 2) n_eval = 0;
  const std::vector<size_t> order = permutation(all.size(), splitmix64_mix(seed ^ 0x5b1177ull));
  std::vector<bool> held(all.size(), false);
  for (size_t i = 0; i < n_eval; ++i) held[order[i]] = true;
  Split s;
  for (size_t i = 0; i < all.size(); ++i) (held[i] ? s.eval : s.train).push_back(std::move(all[i]));
  return s;
}

Finetuner::Finetuner(ExecContext& ctx, const Qwen3Weights& weights, std::vector<Example> train,
                     std::vector<Example> eval, const FinetuneOptions& options, Communicator& comm)
    : ctx_(ctx),
      weights_(weights),
      train_(std::move(train)),
      eval_(std::move(eval)),
      options_(options),
      comm_(comm) {
  check(!train_.empty(), "finetune", "no training examples");
  check(options_.batch >= 1, "finetune", "--batch ", options_.batch, " must be at least 1");
  check(options_.lr > 0 && std::isfinite(options_.lr), "finetune", "--lr ", options_.lr, " must be positive");
  LoraConfig lora = options_.lora;
  lora.seed = options_.seed;
  lora_ = make_lora(ctx_, weights_, lora);
  optimizer_ = std::make_unique<optim::AdamW>(lora_.parameters(), options_.lr, optim::AdamWOptions{}, 0.0);
}

std::vector<size_t> batch_indices(size_t n, int64_t batch, uint64_t seed, int64_t step) {
  const size_t b = size_t(batch);
  std::vector<size_t> out;
  uint64_t cached_epoch = UINT64_MAX;
  std::vector<size_t> order;
  for (size_t j = 0; j < b; ++j) {
    const uint64_t at = uint64_t(step) * b + j, epoch = at / n;
    if (epoch != cached_epoch) {
      order = permutation(n, splitmix64_mix(seed ^ (0xe90c4ull + epoch)));
      cached_epoch = epoch;
    }
    out.push_back(order[at % n]);
  }
  return out;
}

std::vector<const Example*> Finetuner::batch_for(int64_t step) const {
  std::vector<const Example*> out;
  for (size_t i : batch_indices(train_.size(), options_.batch, options_.seed, step)) out.push_back(&train_[i]);
  return out;
}

LmBatch lm_batch(ExecContext& ctx, std::span<const Example* const> examples) {
  size_t T = 0;
  for (const Example* e : examples) T = std::max(T, e->tokens.size());
  const size_t B = examples.size();
  std::vector<int32_t> tokens(B * T, 0), targets(B * T, int32_t(kIgnore));
  LmBatch batch;
  for (size_t b = 0; b < B; ++b) {
    const Example& e = *examples[b];
    std::copy(e.tokens.begin(), e.tokens.end(), tokens.begin() + ptrdiff_t(b * T));
    for (size_t i = 0; i + 1 < e.tokens.size(); ++i)
      if (e.counted[i + 1]) {
        targets[b * T + i] = e.tokens[i + 1];
        ++batch.counted;
      }
    batch.tokens_real += int64_t(e.tokens.size());
  }
  batch.tokens = Array::from_values<int32_t>(ctx, {int64_t(B), int64_t(T)}, tokens);
  batch.targets = Array::from_values<int32_t>(ctx, {int64_t(B), int64_t(T)}, targets);
  return batch;
}

double mean_lm_loss(ExecContext& ctx, const Qwen3Weights& weights, const LoraAdapter* lora,
                    std::span<const Example* const> examples, int64_t group) {
  NoGradGuard no_grad;
  double sum = 0;
  int64_t counted = 0;
  for (size_t first = 0; first < examples.size(); first += size_t(group)) {
    const LmBatch batch = lm_batch(ctx, examples.subspan(first, std::min(examples.size() - first, size_t(group))));
    if (batch.counted == 0) continue;
    const Array loss = lm_loss(
        ctx, qwen3_logits(ctx, weights, batch.tokens, {.lora = lora, .checkpoint = false, .train_step = {}}),
        batch.targets);
    sum += loss.at({}) * double(batch.counted);
    counted += batch.counted;
  }
  return counted == 0 ? NAN : sum / double(counted);
}

StepResult Finetuner::train_step() {
  const int64_t step = steps_done();
  const std::vector<const Example*> examples = batch_for(step);
  const int64_t n = int64_t(examples.size()), size = comm_.size(), rank = comm_.rank();
  StepResult r;
  for (const Example* e : examples) {
    r.tokens += int64_t(e->tokens.size());
    for (size_t i = 1; i < e->counted.size(); ++i) r.counted += e->counted[i];  // predicted from token i - 1
  }
  optimizer_->zero_grad();
  if (r.counted == 0) {  // nothing to learn in this batch: the step still counts
    optimizer_->step(ctx_);
    return r;
  }
  std::vector<optim::Param> params = lora_.parameters();  // views: set_grad reaches the adapter's
  int64_t n_values = 0;
  for (const optim::Param& p : params) n_values += p.value.numel();

  // This rank's share: the contiguous examples [first, last), so that gathering the shares in
  // rank order gives every example's gradient in batch order.
  const int64_t first = n * rank / size, last = n * (rank + 1) / size;
  std::vector<float> grads;  // example by example, each every parameter's gradient in order
  std::vector<double> losses;
  grads.reserve(size_t((last - first) * n_values));
  for (int64_t j = first; j < last; ++j) {
    const LmBatch one = lm_batch(ctx_, std::span<const Example* const>(&examples[size_t(j)], 1));
    optimizer_->zero_grad();
    double loss_value = 0;
    if (one.counted > 0) {
      // The example's share of the batch's mean: its own mean times counted / the batch's counted.
      // Dropout is keyed by its place in the step (step * batch + j): each example its own
      // mask, the same whichever rank runs it.
      const Array loss = mul(ctx_,
                             lm_loss(ctx_,
                                     qwen3_logits(ctx_, weights_, one.tokens,
                                                  {.lora = &lora_,
                                                   .checkpoint = options_.checkpoint_activations,
                                                   .train_step = uint64_t(step) * uint64_t(n) + uint64_t(j),
                                                   .recompute_products = options_.recompute_products}),
                                     one.targets),
                             double(one.counted) / double(r.counted));
      ag::backward(ctx_, loss);
      loss_value = loss.at({});
    }
    losses.push_back(loss_value);
    for (const optim::Param& p : params) {
      const Array g = p.value.grad();
      if (g.defined()) grads.insert(grads.end(), g.data<float>(), g.data<float>() + g.numel());
      else grads.insert(grads.end(), size_t(p.value.numel()), 0.0f);
    }
  }
  const std::vector<float> all = comm_.allgather(std::move(grads));
  const std::vector<double> all_losses = comm_.allgather(std::move(losses));

  // The sum over the examples in batch order, from zero: the same additions in the same order
  // whatever the number of processes.
  std::vector<float> sum(size_t(n_values), 0.0f);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n_values; ++i) sum[size_t(i)] += all[size_t(j * n_values + i)];
  for (double l : all_losses) r.loss += l;
  int64_t at = 0;
  for (optim::Param& p : params) {
    const std::span<const float> g(sum.data() + at, size_t(p.value.numel()));
    p.value.set_grad(Array::from_values<float>(ctx_, p.value.shape(), g));
    at += p.value.numel();
  }
  optimizer_->step(ctx_);
  return r;
}

double Finetuner::eval_loss() {
  std::vector<const Example*> all;
  for (const Example& e : eval_) all.push_back(&e);
  return mean_lm_loss(ctx_, weights_, &lora_, all, options_.batch);
}

std::string shortest_decimal(double v) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

uint64_t training_data_hash(const std::vector<Example>& examples) {
  // Every token and mark, in order.
  Fnv1a hash;
  for (const Example& e : examples) {
    hash.mix(e.tokens.size());
    for (size_t i = 0; i < e.tokens.size(); ++i) hash.mix(uint64_t(uint32_t(e.tokens[i])) << 1 | e.counted[i]);
  }
  return hash.value;
}

void check_run_identity(const std::filesystem::path& path, const std::map<std::string, std::string>& identity) {
  const io::SafetensorsFile file = io::SafetensorsFile::open(path);
  for (const auto& [key, value] : identity) {
    const auto it = file.metadata().find("user." + key);
    check(it != file.metadata().end() && it->second == value, "finetune", path.string(), ": the checkpoint's ", key,
          " is ", it == file.metadata().end() ? std::string("missing") : "'" + it->second + "'", ", this run's '", value,
          "'");
  }
}

std::map<std::string, std::string> Finetuner::identity() const {
  std::string targets;
  for (LoraTarget t : lora_.config().targets) targets += (targets.empty() ? "" : ",") + std::string(target_name(t));
  // Another data file (or another split) would continue a different run: the tokens' hash.
  return {{"lora.rank", std::to_string(lora_.config().rank)},
          {"lora.alpha", shortest_decimal(lora_.config().alpha)},
          {"lora.dropout", shortest_decimal(lora_.config().dropout)},
          {"lora.targets", targets},
          {"lr", shortest_decimal(options_.lr)},
          {"seed", std::to_string(options_.seed)},
          {"batch", std::to_string(options_.batch)},
          {"train_examples", std::to_string(train_.size())},
          {"train_data_fnv1a", std::to_string(training_data_hash(train_))}};
}

void Finetuner::save(const std::filesystem::path& path) const {
  optim::save_checkpoint(ctx_, path, lora_.parameters(), optimizer_.get(), optim::LrSchedule::constant(), identity());
}

void Finetuner::load(const std::filesystem::path& path) {
  // The run's identity first, from the header alone, so that a checkpoint of another run is
  // named as such; then load_checkpoint validates every tensor before it changes anything.
  check_run_identity(path, identity());
  optim::load_checkpoint(ctx_, path, lora_.parameters(), optimizer_.get());
}

}  // namespace tempra::train
