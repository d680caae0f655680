// tempra/train/reward.cpp: see reward.h.
#include "tempra/train/reward.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tempra/core/error.h"
#include "tempra/core/grad_node.h"
#include "tempra/train/finetune.h"

namespace tempra::train {
namespace {

// Logits [T, V] of one sequence, evaluated without recording gradients.
Array logits_of(ExecContext& ctx, const Qwen3Weights& w, const LoraAdapter* lora, const std::vector<int32_t>& tokens) {
  const Array ids = Array::from_values<int32_t>(ctx, {1, int64_t(tokens.size())}, tokens);
  return qwen3_logits(ctx, w, ids, {.lora = lora, .checkpoint = false, .train_step = {}}).select(0, 0);
}

int32_t argmax_row(const Array& logits, int64_t row) {
  const int64_t V = logits.dim(1);
  const float* x = logits.data<float>() + row * V;
  return int32_t(std::max_element(x, x + V) - x);  // the first of equal maxima: the lowest id
}

// Whether greedy decoding reproduces every counted token of e.
bool exact(ExecContext& ctx, const Qwen3Weights& w, const LoraAdapter* lora, const Example& e) {
  const Array logits = logits_of(ctx, w, lora, e.tokens);
  for (size_t i = 1; i < e.tokens.size(); ++i)
    if (e.counted[i] && argmax_row(logits, int64_t(i) - 1) != e.tokens[i]) return false;
  return true;
}

std::string greedy_continuation(ExecContext& ctx, const Qwen3Weights& w, const LoraAdapter* lora, const Example& e,
                                const llm::Tokenizer& tokenizer, int64_t max_new_tokens) {
  size_t prompt = 1;
  while (prompt < e.tokens.size() && !e.counted[prompt]) ++prompt;
  std::vector<int32_t> tokens(e.tokens.begin(), e.tokens.begin() + ptrdiff_t(prompt));
  std::vector<int32_t> generated;
  for (int64_t n = 0; n < max_new_tokens; ++n) {
    const int32_t next = argmax_row(logits_of(ctx, w, lora, tokens), int64_t(tokens.size()) - 1);
    if (next == tokenizer.eos()) break;
    tokens.push_back(next);
    generated.push_back(next);
  }
  return tokenizer.decode(generated);
}

}  // namespace

Reward Reward::parse(std::string_view spec, int64_t max_new_tokens) {
  Reward r;
  r.max_new_tokens = max_new_tokens;
  check(max_new_tokens >= 1, "reward", "the continuation's limit ", max_new_tokens, " must be at least 1");
  if (spec == "loss") return r;
  if (spec == "exact") {
    r.kind = Kind::exact;
    return r;
  }
  check(spec.starts_with("regex:") && spec.size() > 6, "reward", "'", spec,
        "' is not a reward: loss, exact or regex:PATTERN");
  r.kind = Kind::regex;
  r.pattern = std::string(spec.substr(6));
  try {
    r.compiled = std::regex(r.pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    fail("reward", "the pattern '", r.pattern, "' is not a valid regular expression: ", e.what());
  }
  return r;
}

std::string Reward::name() const {
  switch (kind) {
    case Kind::loss: return "loss";
    case Kind::exact: return "exact";
    case Kind::regex: return "regex:" + pattern;
  }
  return "?";
}

double reward(ExecContext& ctx, const Qwen3Weights& weights, const LoraAdapter* lora,
              std::span<const Example* const> examples, const Reward& reward, const llm::Tokenizer& tokenizer) {
  check(!examples.empty(), "reward", "no examples to score");
  NoGradGuard no_grad;
  if (reward.kind == Reward::Kind::loss) {
    const double loss = mean_lm_loss(ctx, weights, lora, examples, 1);
    return std::isnan(loss) ? 0.0 : -loss;  // nothing to score: every member ties
  }
  int64_t hits = 0;
  for (const Example* e : examples) {
    if (e->tokens.empty()) continue;  // no prompt to continue, no answer to match: a miss
    if (reward.kind == Reward::Kind::exact) hits += exact(ctx, weights, lora, *e);
    else
      hits += std::regex_search(
          greedy_continuation(ctx, weights, lora, *e, tokenizer, reward.max_new_tokens), reward.compiled);
  }
  return double(hits) / double(examples.size());
}

}  // namespace tempra::train
