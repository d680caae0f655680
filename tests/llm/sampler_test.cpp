// tests/llm/sampler_test.cpp: the sampling chain, stage by stage.
//
// Each stage is checked for what it must guarantee (greedy's tie rule, what top-k/top-p/min-p
// can never return, llama.cpp's penalty arithmetic), the draw against the softmax it samples
// from (20,000 draws, each frequency within 0.015 of its probability: ~5 standard deviations),
// and replay: the same seed gives the same tokens.
#include "tempra/llm/decode/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "support/errors.h"

namespace tempra::llm {
namespace {

const std::vector<int32_t> kNoHistory;

TEST(Sampler, GreedyTakesTheLargestLogitTiesToTheLowestIdAndSkipsNaN) {
  Sampler greedy({.temperature = 0.0f});
  EXPECT_EQ(greedy.sample(std::vector<float>{0.1f, 2.0f, -1.0f, 2.0f}, kNoHistory), 1);
  EXPECT_EQ(greedy.sample(std::vector<float>{NAN, 0.5f, 0.25f}, kNoHistory), 1);
  Sampler negative({.temperature = -1.0f});  // llama.cpp: temperature <= 0 is greedy
  EXPECT_EQ(negative.sample(std::vector<float>{3.0f, 4.0f}, kNoHistory), 1);
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
  Sampler s({.temperature = 5.0f, .top_k = 1, .top_p = 1.0f, .min_p = 0.0f, .seed = 9});
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.sample(std::vector<float>{0.0f, 0.3f, 0.2f}, kNoHistory), 1);
}

TEST(Sampler, DrawsFollowTheTemperatureSoftmax) {
  const std::vector<float> logits{1.0f, 0.0f, 2.0f, -1.0f};
  const float temperature = 1.5f;
  Sampler s({.temperature = temperature, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 42});
  std::vector<int> counts(logits.size());
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) ++counts[s.sample(logits, kNoHistory)];
  double sum = 0;
  for (float l : logits) sum += std::exp(l / temperature);
  for (size_t i = 0; i < logits.size(); ++i)
    EXPECT_NEAR(double(counts[i]) / draws, std::exp(logits[i] / temperature) / sum, 0.015) << "token " << i;
}

TEST(Sampler, TopPAndMinPNeverReturnWhatTheyCut) {
  // Probabilities at temperature 1: ~0.64, 0.24, 0.09, 0.03.
  const std::vector<float> logits{3.0f, 2.0f, 1.0f, 0.0f};
  Sampler top_p({.temperature = 1.0f, .top_k = 0, .top_p = 0.7f, .min_p = 0.0f, .seed = 1});
  Sampler min_p({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.2f, .seed = 2});
  std::vector<int> seen_p(4), seen_m(4);
  for (int i = 0; i < 2000; ++i) {
    ++seen_p[top_p.sample(logits, kNoHistory)];
    ++seen_m[min_p.sample(logits, kNoHistory)];
  }
  // top_p 0.7: 0.64 < 0.7, so the set is {0, 1}; min_p 0.2: p >= 0.128 keeps {0, 1}.
  EXPECT_GT(seen_p[0], 0);
  EXPECT_GT(seen_p[1], 0);
  EXPECT_EQ(seen_p[2] + seen_p[3], 0);
  EXPECT_GT(seen_m[1], 0);
  EXPECT_EQ(seen_m[2] + seen_m[3], 0);
}

TEST(Sampler, PenaltiesFollowLlamaCppArithmetic) {
  // repeat_penalty divides a positive logit and multiplies a negative one.
  Sampler repeat({.temperature = 0.0f, .repeat_penalty = 2.0f});
  EXPECT_EQ(repeat.sample(std::vector<float>{2.0f, 1.5f}, std::vector<int32_t>{0}), 1);  // 2 / 2 < 1.5
  EXPECT_EQ(repeat.sample(std::vector<float>{-0.5f, -0.8f}, std::vector<int32_t>{0}), 1);  // -1.0 < -0.8
  // frequency counts occurrences in the window, presence counts once.
  Sampler frequency({.temperature = 0.0f, .frequency_penalty = 0.1f});
  EXPECT_EQ(frequency.sample(std::vector<float>{1.0f, 0.85f}, std::vector<int32_t>{0, 0}), 1);  // 0.8 < 0.85
  EXPECT_EQ(frequency.sample(std::vector<float>{1.0f, 0.85f}, std::vector<int32_t>{0}), 0);     // 0.9 > 0.85
  Sampler presence({.temperature = 0.0f, .presence_penalty = 0.3f});
  EXPECT_EQ(presence.sample(std::vector<float>{1.0f, 0.8f}, std::vector<int32_t>{0, 0, 0}), 1);  // 0.7 < 0.8
  // Only the last repeat_last_n tokens count.
  Sampler window({.temperature = 0.0f, .repeat_penalty = 2.0f, .repeat_last_n = 1});
  EXPECT_EQ(window.sample(std::vector<float>{2.0f, 1.5f}, std::vector<int32_t>{0, 1}), 0);  // 0 is outside
}

TEST(Sampler, SameSeedSameTokensAndReplayFromAStep) {
  const std::vector<float> logits{0.5f, 0.4f, 0.3f, 0.2f, 0.1f, 0.0f};
  const SamplerParams params{.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 77};
  Sampler a(params), b(params), other({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 78});
  std::vector<int32_t> first, second, third;
  for (int i = 0; i < 64; ++i) {
    first.push_back(a.sample(logits, kNoHistory));
    second.push_back(b.sample(logits, kNoHistory));
    third.push_back(other.sample(logits, kNoHistory));
  }
  EXPECT_EQ(first, second);
  EXPECT_NE(first, third);
  Sampler replay(params);
  replay.set_step(40);
  for (int i = 40; i < 64; ++i) EXPECT_EQ(replay.sample(logits, kNoHistory), first[i]);
}

TEST(Sampler, BadParametersAndRowsAreErrorsNamingWhatWasWrong) {
  EXPECT_NE(testing::error_message([] { Sampler({.top_p = 0.0f}); }).find("top_p"), std::string::npos);
  EXPECT_NE(testing::error_message([] { Sampler({.min_p = 1.5f}); }).find("min_p"), std::string::npos);
  EXPECT_NE(testing::error_message([] { Sampler({.repeat_penalty = 0.0f}); }).find("repeat_penalty"),
            std::string::npos);
  EXPECT_NE(testing::error_message([] { Sampler({.temperature = NAN}); }).find("temperature"), std::string::npos);
  Sampler s({});
  EXPECT_NE(testing::error_message([&] { s.sample(std::vector<float>{}, kNoHistory); }).find("empty"),
            std::string::npos);
  EXPECT_NE(testing::error_message([&] { s.sample(std::vector<float>{-INFINITY, NAN}, kNoHistory); })
                .find("no finite logit"),
            std::string::npos);
  EXPECT_NE(testing::error_message([&] { s.sample(std::vector<float>{1.0f}, std::vector<int32_t>{3}); })
                .find("outside the vocabulary"),
            std::string::npos);
}

}  // namespace
}  // namespace tempra::llm
