// tempra/train/reward.h: what evolution strategies (es.h) maximize on a Qwen3: a score of the
// current weights on some examples (dataset.h), from forward passes alone.
//
// Contract (higher is better; each runs the examples one at a time, without dropout):
// - loss: minus the mean cross entropy of every counted token (as Finetuner::eval_loss); 0 when
//   the examples count none.
// - exact: the fraction of examples whose every counted token is the greedy (argmax, lowest id
//   on ties) prediction from the tokens before it. That is exactly when greedy decoding from
//   the prompt reproduces the answer through its end of turn, found in one forward pass
//   (teacher forcing) instead of one per token.
// - regex:PATTERN: the fraction of examples whose greedy continuation of the prompt (the tokens
//   before the first counted one; at least the first token), up to max_new_tokens tokens or the
//   vocab's EOS, decoded to text, contains a match of PATTERN (ECMAScript, std::regex_search).
// Reward::parse reads "loss", "exact" or "regex:PATTERN", and names a bad spec or pattern.
#pragma once

#include <cstdint>
#include <regex>
#include <span>
#include <string>
#include <string_view>

#include "tempra/core/exec_context.h"
#include "tempra/llm/tokenizer/tokenizer.h"
#include "tempra/train/dataset.h"
#include "tempra/train/lora.h"
#include "tempra/train/qwen3_train.h"

namespace tempra::train {

struct Reward {
  enum class Kind { loss, exact, regex };
  Kind kind = Kind::loss;
  std::string pattern;          // regex: as given
  std::regex compiled;          // regex: the pattern compiled once
  int64_t max_new_tokens = 32;  // regex: the continuation's length limit

  static Reward parse(std::string_view spec, int64_t max_new_tokens = 32);
  std::string name() const;
};

double reward(ExecContext& ctx, const Qwen3Weights& weights, const LoraAdapter* lora,
              std::span<const Example* const> examples, const Reward& reward, const llm::Tokenizer& tokenizer);

}  // namespace tempra::train
