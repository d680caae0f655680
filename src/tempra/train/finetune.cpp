// tempra/train/finetune.cpp: see finetune.h.
#include "tempra/train/finetune.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <string>

#include "tempra/ag/backward.h"
#include "tempra/core/error.h"
#include "tempra/core/grad_node.h"
#include "tempra/core/rng.h"
#include "tempra/io/safetensors.h"
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
                     std::vector<Example> eval, const FinetuneOptions& options)
    : ctx_(ctx), weights_(weights), train_(std::move(train)), eval_(std::move(eval)), options_(options) {
  check(!train_.empty(), "finetune", "no training examples");
  check(options_.batch >= 1, "finetune", "--batch ", options_.batch, " must be at least 1");
  check(options_.lr > 0 && std::isfinite(options_.lr), "finetune", "--lr ", options_.lr, " must be positive");
  LoraConfig lora = options_.lora;
  lora.seed = options_.seed;
  lora_ = make_lora(ctx_, weights_, lora);
  optimizer_ = std::make_unique<optim::AdamW>(lora_.parameters(), options_.lr, optim::AdamWOptions{}, 0.0);
}

std::vector<const Example*> Finetuner::batch_for(int64_t step) const {
  const size_t n = train_.size(), b = size_t(options_.batch);
  std::vector<const Example*> out;
  uint64_t cached_epoch = UINT64_MAX;
  std::vector<size_t> order;
  for (size_t j = 0; j < b; ++j) {
    const uint64_t at = uint64_t(step) * b + j, epoch = at / n;
    if (epoch != cached_epoch) {
      order = permutation(n, splitmix64_mix(options_.seed ^ (0xe90c4ull + epoch)));
      cached_epoch = epoch;
    }
    out.push_back(&train_[order[at % n]]);
  }
  return out;
}

Finetuner::Batch Finetuner::make_batch(const std::vector<const Example*>& examples) const {
  size_t T = 0;
  for (const Example* e : examples) T = std::max(T, e->tokens.size());
  const size_t B = examples.size();
  std::vector<int32_t> tokens(B * T, 0), targets(B * T, int32_t(kIgnore));
  Batch batch;
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
  batch.tokens = Array::from_values<int32_t>(ctx_, {int64_t(B), int64_t(T)}, tokens);
  batch.targets = Array::from_values<int32_t>(ctx_, {int64_t(B), int64_t(T)}, targets);
  return batch;
}

StepResult Finetuner::train_step() {
  const int64_t step = steps_done();
  const Batch batch = make_batch(batch_for(step));
  optimizer_->zero_grad();
  StepResult r{.loss = 0, .tokens = batch.tokens_real, .counted = batch.counted};
  if (batch.counted == 0) {  // nothing to learn in this batch: the step still counts
    optimizer_->step(ctx_);
    return r;
  }
  const Array loss = lm_loss(ctx_,
                             qwen3_logits(ctx_, weights_, batch.tokens,
                                          {.lora = &lora_,
                                           .checkpoint = options_.checkpoint_activations,
                                           .train_step = uint64_t(step)}),
                             batch.targets);
  ag::backward(ctx_, loss);
  optimizer_->step(ctx_);
  r.loss = loss.at({});
  return r;
}

double Finetuner::eval_loss() {
  NoGradGuard no_grad;
  double sum = 0;
  int64_t counted = 0;
  for (size_t first = 0; first < eval_.size(); first += size_t(options_.batch)) {
    std::vector<const Example*> group;
    for (size_t i = first; i < std::min(eval_.size(), first + size_t(options_.batch)); ++i) group.push_back(&eval_[i]);
    const Batch batch = make_batch(group);
    if (batch.counted == 0) continue;
    const Array loss =
        lm_loss(ctx_, qwen3_logits(ctx_, weights_, batch.tokens, {.lora = &lora_, .checkpoint = false, .train_step = {}}),
                batch.targets);
    sum += loss.at({}) * double(batch.counted);
    counted += batch.counted;
  }
  return counted == 0 ? NAN : sum / double(counted);
}

std::map<std::string, std::string> Finetuner::identity() const {
  const auto real = [](double v) {  // the shortest decimal that round-trips
    char buf[32];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  };
  std::string targets;
  for (LoraTarget t : lora_.config().targets) targets += (targets.empty() ? "" : ",") + std::string(target_name(t));
  // FNV-1a over every training token and mark, in order: another data file (or another split)
  // would continue a different run.
  uint64_t hash = 0xcbf29ce484222325ull;
  const auto mix = [&](uint64_t v) { hash = (hash ^ v) * 0x100000001b3ull; };
  for (const Example& e : train_) {
    mix(e.tokens.size());
    for (size_t i = 0; i < e.tokens.size(); ++i) mix(uint64_t(uint32_t(e.tokens[i])) << 1 | e.counted[i]);
  }
  return {{"lora.rank", std::to_string(lora_.config().rank)},
          {"lora.alpha", real(lora_.config().alpha)},
          {"lora.dropout", real(lora_.config().dropout)},
          {"lora.targets", targets},
          {"lr", real(options_.lr)},
          {"seed", std::to_string(options_.seed)},
          {"batch", std::to_string(options_.batch)},
          {"train_examples", std::to_string(train_.size())},
          {"train_data_fnv1a", std::to_string(hash)}};
}

void Finetuner::save(const std::filesystem::path& path) const {
  optim::save_checkpoint(ctx_, path, lora_.parameters(), optimizer_.get(), optim::LrSchedule::constant(), identity());
}

void Finetuner::load(const std::filesystem::path& path) {
  // The run's identity first, from the header alone, so that a checkpoint of another run is
  // named as such; then load_checkpoint validates every tensor before it changes anything.
  const io::SafetensorsFile file = io::SafetensorsFile::open(path);
  for (const auto& [key, value] : identity()) {
    const auto it = file.metadata().find("user." + key);
    check(it != file.metadata().end() && it->second == value, "finetune", path.string(), ": the checkpoint's ", key,
          " is ", it == file.metadata().end() ? std::string("missing") : "'" + it->second + "'", ", this run's '", value,
          "'");
  }
  optim::load_checkpoint(ctx_, path, lora_.parameters(), optimizer_.get());
}

}  // namespace tempra::train
