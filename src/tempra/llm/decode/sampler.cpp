// tempra/llm/decode/sampler.cpp
#include "tempra/llm/decode/sampler.h"

#include <algorithm>
#include <cmath>

#include "tempra/core/error.h"
#include "tempra/core/rng.h"

namespace tempra::llm {

Sampler::Sampler(const SamplerParams& p) : params_(p) {
  check(std::isfinite(p.temperature), "sampler", "temperature must be finite, got ", p.temperature);
  check(p.top_p > 0.0f && p.top_p <= 1.0f, "sampler", "top_p must be in (0, 1], got ", p.top_p);
  check(p.min_p >= 0.0f && p.min_p <= 1.0f, "sampler", "min_p must be in [0, 1], got ", p.min_p);
  check(p.repeat_penalty > 0.0f && std::isfinite(p.repeat_penalty), "sampler",
        "repeat_penalty must be positive, got ", p.repeat_penalty);
  check(p.repeat_last_n >= -1, "sampler", "repeat_last_n must be >= -1, got ", p.repeat_last_n);
}

// Called while candidates_[id] is still token `id`: only the tokens in the window are touched,
// not the whole vocabulary.
void Sampler::apply_penalties(std::span<const int32_t> history) {
  const bool any = params_.repeat_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
                   params_.presence_penalty != 0.0f;
  if (!any || params_.repeat_last_n == 0 || history.empty()) return;
  const size_t window = params_.repeat_last_n < 0 ? history.size()
                                                  : std::min(history.size(), size_t(params_.repeat_last_n));
  counts_.clear();  // keeps its buckets: no allocation once warm
  for (int32_t id : history.last(window)) ++counts_[id];
  for (const auto& [id, count] : counts_) {
    float& logit = candidates_[size_t(id)].logit;
    logit = logit <= 0.0f ? logit * params_.repeat_penalty : logit / params_.repeat_penalty;
    logit -= float(count) * params_.frequency_penalty + params_.presence_penalty;
  }
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  check(!logits.empty(), "sampler", "empty logits row");
  const int32_t n_vocab = int32_t(logits.size());
  for (int32_t id : history)
    check(id >= 0 && id < n_vocab, "sampler", "history token ", id, " is outside the vocabulary of ", n_vocab);
  candidates_.resize(logits.size());
  for (int32_t i = 0; i < n_vocab; ++i) candidates_[i] = {i, logits[i]};
  if (grammar_) {
    grammar_->fill_mask(allowed_);
    for (int32_t i = 0; i < n_vocab; ++i)
      if (i >= allowed_.size() || !allowed_.allowed(i)) candidates_[i].logit = -INFINITY;
  }
  apply_penalties(history);
  // NaN logits are never chosen; -inf ones only if nothing else is left (then it is an error).
  std::erase_if(candidates_, [](const Candidate& c) { return !(c.logit > -INFINITY); });
  check(!candidates_.empty(), "sampler",
        grammar_ ? "the grammar allows no token with a finite logit here" : "no finite logit to choose from");
  const int32_t id = choose();
  if (grammar_) grammar_->accept(id);
  return id;
}

int32_t Sampler::choose() {
  const uint64_t step = step_++;

  // Sorted by logit, descending; ties by id so the order (and greedy) is reproducible.
  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (params_.temperature <= 0.0f) return std::min_element(candidates_.begin(), candidates_.end(), by_logit)->id;

  if (params_.top_k > 0 && size_t(params_.top_k) < candidates_.size()) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + params_.top_k, candidates_.end(), by_logit);
    candidates_.resize(size_t(params_.top_k));
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }

  // Probabilities of what is left (softmax at temperature 1, as llama.cpp's top_p and min_p see them).
  auto softmax = [&](float temperature) {
    probs_.resize(candidates_.size());
    const double peak = candidates_.front().logit;
    double sum = 0;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      probs_[i] = float(std::exp((double(candidates_[i].logit) - peak) / temperature));
      sum += probs_[i];
    }
    for (float& p : probs_) p = float(p / sum);
  };
  softmax(1.0f);
  if (params_.top_p < 1.0f) {
    double mass = 0;
    size_t keep = 0;
    while (keep < candidates_.size() && mass < params_.top_p) mass += probs_[keep++];
    candidates_.resize(std::max<size_t>(1, keep));
    softmax(1.0f);
  }
  if (params_.min_p > 0.0f) {
    const float floor = params_.min_p * probs_.front();
    size_t keep = 1;
    while (keep < candidates_.size() && probs_[keep] >= floor) ++keep;
    candidates_.resize(keep);
  }

  softmax(params_.temperature);
  const double u = CounterRng::uniform(params_.seed, step);
  double cumulative = 0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    cumulative += probs_[i];
    if (u < cumulative) return candidates_[i].id;
  }
  return candidates_.back().id;  // u within rounding of 1
}

}  // namespace tempra::llm
