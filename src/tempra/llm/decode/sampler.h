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
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

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
  // far, prompt included). Advances the draw counter. Throws on an empty or non-finite row
  // with nothing finite to choose from.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

  const SamplerParams& params() const { return params_; }
  uint64_t step() const { return step_; }
  void set_step(uint64_t step) { step_ = step; }

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };
  void apply_penalties(std::span<const int32_t> history);

  SamplerParams params_;
  uint64_t step_ = 0;
  // Reused across calls, so sampling allocates only while they grow.
  std::vector<Candidate> candidates_;
  std::vector<float> probs_;
  std::unordered_map<int32_t, int> counts_;  // occurrences in the penalty window
};

}  // namespace tempra::llm
