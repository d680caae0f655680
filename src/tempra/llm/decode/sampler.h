// tempra/llm/decode/sampler.h: choosing the next token from a row of logits.
//
// The chain and its order are llama.cpp's defaults (common/sampling.cpp): repetition penalties
// over the last `repeat_last_n` tokens, then top-k, top-p, min-p, temperature, and a draw from
// what is left. Each stage is the llama.cpp sampler of the same name:
// - penalties: a token seen c > 0 times has its logit divided by repeat_penalty when positive,
//   multiplied when negative, then reduced by c * frequency_penalty + presence_penalty;
// - top_k keeps the k largest logits (k <= 0: all); top_p keeps the smallest set, in order of
//   probability, whose mass reaches p; min_p keeps tokens with probability >= min_p * p_max;
//   each keeps at least one token;
// - temperature <= 0 is greedy: the largest logit, ties to the lowest id (llama.cpp's greedy);
//   otherwise logits are divided by the temperature and one token is drawn from the softmax.
// Draws come from the counter RNG keyed by (seed, step): the same seed and the same logits give
// the same tokens, and a session can be replayed from any step.
//
// Constrained output: a sampler given a GrammarMatcher (constrain()) first masks every token the
// grammar does not allow next (grammar_matcher.h), runs the chain over what is left, and advances
// the matcher past the token it returns. Masking comes first, so top-k, top-p and min-p choose
// among allowed tokens only and the draw follows the model's distribution restricted to the
// grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "tempra/llm/decode/grammar_matcher.h"
#include "tempra/llm/decode/token_mask.h"

namespace tempra::llm {

struct SamplerParams {
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;  // 1: off
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int32_t repeat_last_n = 64;  // 0: no penalties; -1: the whole history
  uint64_t seed = 0;
};

class Sampler {
 public:
  // Throws tempra::Error naming the parameter when one is out of range (negative temperature
  // is allowed and means greedy, as in llama.cpp).
  explicit Sampler(const SamplerParams& params);

  // The next token for `logits` (one row, n_vocab entries) after `history` (the tokens so
  // far, prompt included). Advances the draw counter (and the grammar, when constrained).
  // Throws on an empty or non-finite row with nothing finite to choose from, and when the
  // grammar allows no token with a finite logit.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

  // From now on, only tokens `grammar` allows (ids past its vocabulary never are).
  void constrain(std::unique_ptr<GrammarMatcher> grammar) { grammar_ = std::move(grammar); }
  GrammarMatcher* grammar() const { return grammar_.get(); }

  const SamplerParams& params() const { return params_; }
  uint64_t step() const { return step_; }
  void set_step(uint64_t step) { step_ = step; }

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };
  void apply_penalties(std::span<const int32_t> history);
  int32_t choose();  // the chain from top-k on, over candidates_ (all finite)

  SamplerParams params_;
  uint64_t step_ = 0;
  // Reused across calls, so sampling allocates only while they grow.
  std::vector<Candidate> candidates_;
  std::vector<float> probs_;
  std::unordered_map<int32_t, int> counts_;  // occurrences in the penalty window
  std::unique_ptr<GrammarMatcher> grammar_;
  TokenMask allowed_;
};

}  // namespace tempra::llm
