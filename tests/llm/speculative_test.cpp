// tests/llm/speculative_test.cpp: speculative decoding from the context (decode/draft.h, the
// generator's verify passes).
//
// Lossless: with speculation forced on every draft (`always`), greedy and seeded sampling give
// token for token what decoding without it gives, on f32, F16, Q8_0 and Q4_K_M models, with and
// without a grammar; on a model that copies (a scripted chain) the drafts are accepted. The
// acceptance rule, statistically: over 20,000 seeds, the token drawn by a verify pass (the second
// generated token, after the most frequent first one) has the frequencies of the softmax the
// model gives at that position, each within 5 standard deviations. And the drafter and the gate
// on their own.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

#include "apps/qwen3_fixture.h"
#include "support/files.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/decode/draft.h"
#include "tempra/llm/model/synth.h"
#include "tempra/llm/runtime/generator.h"
#include "tempra/llm/runtime/session.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;

TEST(ContextDrafter, continues_the_longest_match_at_its_most_recent_occurrence) {
  ContextDrafter d;
  // 1 2 3 9 ... 5 2 3 7 8 ... 2 3: "2 3" occurred twice; the most recent continues 7 8.
  d.append(std::vector<int32_t>{1, 2, 3, 9, 4, 5, 2, 3, 7, 8, 6, 2, 3});
  ContextDrafter::Draft draft = d.draft(3);
  EXPECT_EQ(draft.match_length, 2);
  EXPECT_EQ(draft.tokens, (std::vector<int32_t>{7, 8, 6}));
  // A longer match wins over a more recent shorter one: "4 5 2 3" -> 7.
  ContextDrafter e;
  e.append(std::vector<int32_t>{4, 5, 2, 3, 7, 1, 2, 3, 9, 4, 5, 2, 3});
  draft = e.draft(8);
  EXPECT_EQ(draft.match_length, 4);
  EXPECT_EQ(draft.tokens, (std::vector<int32_t>{7, 1, 2, 3, 9, 4, 5, 2}));
  // No earlier occurrence of the last token: no draft.
  e.append(42);
  EXPECT_TRUE(e.draft(4).tokens.empty());
  // Truncating forgets what came after.
  e.truncate(5);
  e.append(std::vector<int32_t>{4, 5});
  draft = e.draft(2);
  EXPECT_EQ(draft.tokens, (std::vector<int32_t>{2, 3}));
}

TEST(SpeculationGate, speculates_when_acceptance_pays_for_the_wider_pass_and_not_otherwise) {
  SpeculationGate gate;
  for (int i = 0; i < 10; ++i) {
    gate.record_decode(10.0);
    gate.record_verify(4, 4, 16, 11.0);  // 5 rows cost 1.1 decode steps, everything accepted
  }
  EXPECT_GE(gate.choose(8, 16), 4);
  SpeculationGate costly;
  for (int i = 0; i < 40; ++i) {
    costly.record_decode(10.0);
    costly.record_verify(2, 0, 1, 30.0);  // 3 rows cost 3 steps, nothing accepted
  }
  int tried = 0;
  for (int i = 0; i < 64; ++i) tried += costly.choose(8, 1) > 0;
  EXPECT_LE(tried, 2);  // only the periodic probes
}

struct Loaded {
  std::unique_ptr<Model> model;
  Tokenizer tokenizer;
};

Loaded load(const std::string& file_type) {
  const fs::path path = testing::qwen3_model_file(
      testing::scratch_dir("tempra_speculative_test"), "model",
      {.n_layer = 2, .n_embd = 64, .n_ff = 128, .n_head = 4, .n_head_kv = 2, .head_dim = 32, .n_vocab = 256, .weight_type = 1, .seed = 5},
      file_type);
  const io::GgufModel gguf = io::GgufModel::open(path);
  return {load_model(gguf), Tokenizer::from_gguf(gguf.metadata())};
}

// A prompt that repeats itself, so the drafter has matches to offer.
std::vector<int32_t> repetitive_prompt() {
  std::vector<int32_t> ids;
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 12; ++i) ids.push_back(int32_t(10 + (i * 7) % 40));
  return ids;
}

GenerationResult run(const Loaded& m, const GenerateOptions& options, std::span<const int32_t> prompt) {
  ExecContext ctx;
  Session session(ctx, *m.model, {.context = 256});
  Generator generator(ctx, *m.model, m.tokenizer, session);
  return generator.generate(prompt, options);
}

TEST(Speculative, greedy_and_seeded_sampling_give_the_same_tokens_with_or_without_it) {
  const std::vector<int32_t> prompt = repetitive_prompt();
  for (const std::string type : {"", "F32", "Q8_0", "Q4_K_M"}) {
    SCOPED_TRACE("weights " + (type.empty() ? std::string("F16") : type));
    const Loaded m = load(type);
    for (int s = 0; s < 4; ++s) {
      GenerateOptions off;
      off.max_new_tokens = 40;
      off.speculative.enabled = false;
      if (s > 0) off.sampling = {.temperature = 1.2f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = uint64_t(s)};
      else off.sampling.temperature = 0.0f;
      GenerateOptions on = off;
      on.speculative = {.enabled = true, .draft_max = 6, .always = true};
      const GenerationResult a = run(m, off, prompt), b = run(m, on, prompt);
      EXPECT_EQ(a.ids, b.ids) << "seed " << s;
      EXPECT_EQ(a.text, b.text);
      EXPECT_GT(b.timings.verify_passes, 0);
      EXPECT_EQ(b.timings.eval_tokens, int64_t(b.ids.size()) - 1);
    }
  }
}

TEST(Speculative, a_grammar_cuts_drafts_and_the_output_is_unchanged) {
  const Loaded m = load("");
  auto grammar = std::make_shared<const Grammar>(parse_grammar("root ::= [\\x01-\\x7f]{1,60}"));
  const std::vector<int32_t> prompt = repetitive_prompt();
  for (int s = 0; s < 3; ++s) {
    GenerateOptions off;
    off.max_new_tokens = 50;
    off.grammar = grammar;
    off.speculative.enabled = false;
    off.sampling = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = uint64_t(s)};
    GenerateOptions on = off;
    on.speculative = {.enabled = true, .draft_max = 8, .always = true};
    EXPECT_EQ(run(m, off, prompt).ids, run(m, on, prompt).ids) << "seed " << s;
  }
}

TEST(Speculative, a_model_that_copies_has_its_drafts_accepted) {
  // A scripted model (synth.h): after each token of the chain its most likely next token
  // is the chain's next one. The prompt holds the chain twice, then its start again.
  const fs::path path = testing::scratch_dir("tempra_speculative_test") / "copy.gguf";
  std::vector<int32_t> chain;
  for (int i = 0; i < 40; ++i) chain.push_back(int32_t(20 + i));
  if (!fs::exists(path)) {
    SynthSpec spec{.n_layer = 1, .n_embd = 64, .n_ff = 64, .n_head = 2, .n_head_kv = 1, .head_dim = 32,
                        .n_vocab = 512, .tied_embeddings = false, .context_length = 512, .weight_type = DType::f32};
    spec.scripts = {chain};
    write_synthetic_model(path, spec);
  }
  const io::GgufModel gguf = io::GgufModel::open(path);
  const Loaded m{load_model(gguf), Tokenizer::from_gguf(gguf.metadata())};
  std::vector<int32_t> prompt = chain;
  prompt.insert(prompt.end(), chain.begin(), chain.begin() + 5);
  GenerateOptions off;
  off.max_new_tokens = 30;
  off.sampling.temperature = 0.0f;
  off.speculative.enabled = false;
  GenerateOptions on = off;
  on.speculative = {.enabled = true, .draft_max = 8, .always = false};
  const GenerationResult a = run(m, off, prompt), b = run(m, on, prompt);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(std::vector<int32_t>(a.ids.begin(), a.ids.begin() + 10),
            std::vector<int32_t>(chain.begin() + 5, chain.begin() + 15));  // it does copy
  ASSERT_GT(b.timings.draft_tokens, 0);
  EXPECT_GE(double(b.timings.draft_accepted) / double(b.timings.draft_tokens), 0.9);
  EXPECT_LT(b.timings.verify_passes, 10);  // ~8 tokens per pass, not one
}

TEST(Speculative, a_verify_pass_draws_from_the_models_distribution) {
  const Loaded m = load("");
  // Every id once, so whatever the first token is, it occurred before and the drafter has a draft.
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 250; ++i) prompt.push_back((i * 37) % 250);
  const SamplerParams plain{.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f};
  // The most frequent first token, and the softmax after it.
  ExecContext ctx;
  Session session(ctx, *m.model, {.context = 512});
  Generator generator(ctx, *m.model, m.tokenizer, session);
  constexpr int kSeeds = 20000;
  std::map<int32_t, int> first;
  std::vector<std::pair<int32_t, int32_t>> pairs;
  int64_t verified = 0;
  for (int s = 0; s < kSeeds; ++s) {
    GenerateOptions o;
    o.max_new_tokens = 3;  // the second token comes from a verify pass of [first, draft]
    o.sampling = plain;
    o.sampling.seed = uint64_t(s);
    o.speculative = {.enabled = true, .draft_max = 4, .always = true};
    const GenerationResult r = generator.generate(prompt, o);
    ++first[r.ids[0]];
    if (r.ids.size() < 2) continue;  // the first token ended generation
    pairs.emplace_back(r.ids[0], r.ids[1]);
    verified += r.timings.verify_passes;
  }
  EXPECT_GT(verified, kSeeds / 2);  // most second tokens came from a verify pass
  const int32_t mode = std::max_element(first.begin(), first.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  std::vector<int32_t> context = prompt;
  context.push_back(mode);
  Session reference(ctx, *m.model, {.context = 512});
  const Array logits = reference.forward(ctx, context);
  const int64_t n_vocab = logits.dim(1);
  const float* row = logits.data<float>() + (logits.dim(0) - 1) * n_vocab;
  double peak = -INFINITY, sum = 0;
  for (int64_t i = 0; i < n_vocab; ++i) peak = std::max(peak, double(row[i]));
  std::vector<double> p(static_cast<size_t>(n_vocab));
  for (int64_t i = 0; i < n_vocab; ++i) sum += p[size_t(i)] = std::exp(double(row[i]) - peak);
  for (double& x : p) x /= sum;
  std::map<int32_t, int> second;
  int n = 0;
  for (const auto& [a, b] : pairs)
    if (a == mode) {
      ++second[b];
      ++n;
    }
  ASSERT_GT(n, 2000);
  for (int64_t t = 0; t < n_vocab; ++t) {
    const double expected = p[size_t(t)] * n, sd = std::sqrt(n * p[size_t(t)] * (1 - p[size_t(t)])) + 1e-9;
    EXPECT_LE(std::abs(second[int32_t(t)] - expected), 5 * sd + 1) << "token " << t << " p " << p[size_t(t)];
  }
}

}  // namespace
}  // namespace tempra::llm
