// tests/llm/generator_test.cpp: the generation loop (llm/generator.h).
//
// The text filters are checked piece by piece (stop strings held back and cut, <think> spans
// split across pushes); the loop is checked on a small synthesized Qwen3 model
// (tests/apps/qwen3_fixture) against a hand-written decode over Session: greedy equals the
// argmax of each step's logits, the prompt-logits callback gives Session::forward's
// logits, the same seed gives the same tokens, a reused prefix changes nothing, stop strings
// cut the text, and a prompt longer than the context is refused with the counts.
#include "tempra/llm/runtime/generator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/qwen3_fixture.h"
#include "support/errors.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;

std::string push_all(StopStringFilter& f, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += f.push(p);
  return out;
}

TEST(StopStringFilter, holds_back_a_possible_stop_and_cuts_at_the_first_one) {
  StopStringFilter f({"END", "xyz"});
  EXPECT_EQ(f.push("abc E"), "abc ");  // "E" may start "END"
  EXPECT_EQ(f.push("N"), "");
  EXPECT_EQ(f.push("D tail"), "");
  EXPECT_TRUE(f.stopped());
  EXPECT_EQ(f.push("more"), "");
  EXPECT_EQ(f.finish(), "");
}

TEST(StopStringFilter, releases_held_text_that_turns_out_not_to_be_a_stop) {
  StopStringFilter f({"END"});
  EXPECT_EQ(push_all(f, {"EN", "X", "E"}), "ENX");
  EXPECT_FALSE(f.stopped());
  EXPECT_EQ(f.finish(), "E");
}

TEST(StopStringFilter, earliest_stop_wins_and_no_stops_pass_everything) {
  StopStringFilter f({"cd", "b"});
  EXPECT_EQ(f.push("abcd"), "a");
  StopStringFilter none({""});
  EXPECT_EQ(none.push("abc"), "abc");
}

std::vector<std::pair<std::string, TextKind>> split(ThinkSplitter& s, const std::vector<std::string>& pieces) {
  std::vector<std::pair<std::string, TextKind>> out;
  const TextSink sink = [&](std::string_view t, TextKind k) {
    if (!out.empty() && out.back().second == k && k != TextKind::think_open && k != TextKind::think_close)
      out.back().first += t;
    else
      out.emplace_back(std::string(t), k);
  };
  for (const auto& p : pieces) s.push(p, sink);
  s.finish(sink);
  return out;
}

TEST(ThinkSplitter, classifies_think_spans_with_tags_split_across_pushes) {
  ThinkSplitter s;
  const auto out = split(s, {"<th", "ink>\nhm", "m</thi", "nk>\n\nanswer <", "b>"});
  using K = TextKind;
  const std::vector<std::pair<std::string, TextKind>> want = {
      {"<think>", K::think_open}, {"\nhmm", K::thinking}, {"</think>", K::think_close}, {"\n\nanswer <b>", K::content}};
  EXPECT_EQ(out, want);
}

TEST(ThinkSplitter, can_start_inside_a_think_span) {
  ThinkSplitter s(/*start_in_thinking=*/true);
  const auto out = split(s, {"a</think>b"});
  using K = TextKind;
  const std::vector<std::pair<std::string, TextKind>> want = {
      {"a", K::thinking}, {"</think>", K::think_close}, {"b", K::content}};
  EXPECT_EQ(out, want);
}

TEST(EndOfGeneration, is_llama_cpps_set_for_a_qwen_style_vocab) {
  TokenizerVocab v;
  v.tokens = {"a", "b", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|fim_pad|>", "<think>"};
  v.types = {TokenType::normal,  TokenType::normal,  TokenType::control,     TokenType::control,
             TokenType::control, TokenType::control, TokenType::user_defined};
  v.eos = 4;
  const Tokenizer t(v);
  EXPECT_EQ(end_of_generation_ids(t), (std::vector<int32_t>{2, 4, 5}));
}

// One small model for the whole binary.
struct Fixture {
  fs::path path;
  io::GgufModel gguf;
  Qwen3Model model;
  Tokenizer tokenizer;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    const fs::path dir = fs::temp_directory_path() / ("tempra_generator_test_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path path = dir / "model.gguf";
    testing::write_qwen3_model(path, {.n_layer = 2,
                                      .n_embd = 64,
                                      .n_ff = 128,
                                      .n_head = 4,
                                      .n_head_kv = 2,
                                      .head_dim = 16,
                                      .n_vocab = 256,
                                      .weight_type = 0,
                                      .seed = 7});
    io::GgufModel gguf = io::GgufModel::open(path);
    Qwen3Model model = Qwen3Model::load(gguf);
    Tokenizer tokenizer = Tokenizer::from_gguf(gguf.metadata());
    fs::remove_all(dir);  // the mapping stays valid after the unlink
    return Fixture{path, std::move(gguf), std::move(model), std::move(tokenizer)};
  }();
  return f;
}

const std::vector<int32_t> kPrompt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};

std::vector<float> last_row(const Array& logits) {
  std::vector<float> row(size_t(logits.dim(1)));
  std::memcpy(row.data(), logits.select(0, logits.dim(0) - 1).data<float>(), row.size() * sizeof(float));
  return row;
}

TEST(Generator, greedy_is_the_argmax_of_each_steps_logits) {
  const Fixture& f = fixture();
  ExecContext ctx;
  const int n_new = 12;
  // Reference: the same session API, by hand.
  Session ref(ctx, f.model, {.context = 64});
  std::vector<float> row = last_row(ref.forward(ctx, kPrompt));
  std::vector<int32_t> want;
  for (int i = 0; i < n_new; ++i) {
    const int32_t id = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
    want.push_back(id);
    if (id == f.tokenizer.eos()) break;
    row = last_row(ref.forward(ctx, std::vector<int32_t>{id}));
  }

  Session session(ctx, f.model, {.context = 64});
  Generator gen(ctx, f.model, f.tokenizer, session);
  const GenerationResult r = gen.generate(kPrompt, {.sampling = {.temperature = 0.0f}, .max_new_tokens = n_new});
  EXPECT_EQ(r.ids, want);
  std::vector<int32_t> text_ids = r.ids;
  if (r.reason == StopReason::end_of_generation) text_ids.pop_back();
  EXPECT_EQ(r.text, f.tokenizer.decode(text_ids, /*render_special=*/false));
  EXPECT_EQ(r.timings.prompt_tokens, int64_t(kPrompt.size()));
  EXPECT_EQ(r.timings.eval_tokens, int64_t(r.ids.size()) - 1);
  EXPECT_EQ(int64_t(gen.tokens().size()), session.size());
}

TEST(Generator, prompt_logits_callback_gives_every_positions_logits) {
  const Fixture& f = fixture();
  ExecContext ctx;
  Session ref(ctx, f.model, {.context = 64});
  const Array want = ref.forward(ctx, kPrompt);

  Session session(ctx, f.model, {.context = 64});
  Generator gen(ctx, f.model, f.tokenizer, session);
  const int64_t n_vocab = f.model.config().n_vocab;
  std::vector<float> got(kPrompt.size() * size_t(n_vocab), NAN);
  int64_t last_done = 0;
  gen.generate(kPrompt, {.sampling = {.temperature = 0.0f}, .max_new_tokens = 0, .batch = 4},
               {.on_prefill =
                    [&](int64_t done, int64_t total) {
                      EXPECT_GT(done, last_done);
                      EXPECT_EQ(total, int64_t(kPrompt.size()));
                      last_done = done;
                    },
                .on_prompt_logits =
                    [&](int64_t first, const Array& logits) {
                      std::memcpy(got.data() + first * n_vocab, logits.data<float>(), logits.nbytes());
                    }});
  EXPECT_EQ(last_done, int64_t(kPrompt.size()));
  // Batches of 4 against one batch of 10: the same positions, within float rounding.
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want.data<float>()[i], 1e-4f * (1 + std::abs(want.data<float>()[i]))) << "element " << i;
}

TEST(Generator, same_seed_same_tokens_and_a_reused_prefix_changes_nothing) {
  const Fixture& f = fixture();
  ExecContext ctx;
  const GenerateOptions options{.sampling = {.temperature = 1.5f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 11},
                                .max_new_tokens = 16};
  auto run = [&](const GenerateOptions& o) {
    Session session(ctx, f.model, {.context = 64});
    Generator gen(ctx, f.model, f.tokenizer, session);
    return gen.generate(kPrompt, o).ids;
  };
  const auto a = run(options);
  EXPECT_EQ(a, run(options));
  GenerateOptions other = options;
  other.sampling.seed = 12;
  EXPECT_NE(a, run(other));  // 16 draws at temperature 1.5 over 256 tokens

  // A session that already holds the prompt and more: only the last prompt token is evaluated.
  Session session(ctx, f.model, {.context = 64});
  Generator gen(ctx, f.model, f.tokenizer, session);
  gen.generate(kPrompt, options);
  const GenerationResult again = gen.generate(kPrompt, options);
  EXPECT_EQ(again.reused_tokens, int64_t(kPrompt.size()) - 1);
  EXPECT_EQ(again.timings.prompt_tokens, 1);
  // The sampler's step runs on across calls; greedy makes the comparison draw-independent.
  const GenerateOptions greedy{.sampling = {.temperature = 0.0f}, .max_new_tokens = 8};
  Session fresh(ctx, f.model, {.context = 64});
  Generator fresh_gen(ctx, f.model, f.tokenizer, fresh);
  EXPECT_EQ(gen.generate(kPrompt, greedy).ids, fresh_gen.generate(kPrompt, greedy).ids);
}

TEST(Generator, stop_string_text_is_never_emitted) {
  const Fixture& f = fixture();
  ExecContext ctx;
  const GenerateOptions greedy{.sampling = {.temperature = 0.0f}, .max_new_tokens = 12};
  Session s1(ctx, f.model, {.context = 64});
  const std::string full = Generator(ctx, f.model, f.tokenizer, s1).generate(kPrompt, greedy).text;
  ASSERT_GE(full.size(), 6u) << "the fixture's greedy output is too short to cut";
  const std::string stop = full.substr(full.size() / 2, 3);
  const size_t at = full.find(stop);

  GenerateOptions with_stop = greedy;
  with_stop.stop = {stop};
  Session s2(ctx, f.model, {.context = 64});
  std::string streamed;
  const GenerationResult r =
      Generator(ctx, f.model, f.tokenizer, s2)
          .generate(kPrompt, with_stop, {.on_text = [&](std::string_view t, TextKind) { streamed += t; }});
  EXPECT_EQ(r.reason, StopReason::stop_string);
  EXPECT_EQ(r.text, full.substr(0, at));
  EXPECT_EQ(streamed, r.text);
}

TEST(Generator, refuses_a_prompt_longer_than_the_context_with_the_counts) {
  const Fixture& f = fixture();
  ExecContext ctx;
  Session session(ctx, f.model, {.context = 8});
  Generator gen(ctx, f.model, f.tokenizer, session);
  EXPECT_NE(
      testing::error_message([&] { gen.generate(kPrompt, {}); }).find("prompt has 10 tokens but the context holds 8"),
      std::string::npos);
  EXPECT_NE(testing::error_message([&] { gen.generate(std::vector<int32_t>{}, {}); }).find("the prompt is empty"),
            std::string::npos);
  EXPECT_NE(testing::error_message([&] {
              gen.generate(std::vector<int32_t>{1, 999}, {});
            }).find("prompt token 1 is id 999, outside the vocab [0, 256)"),
            std::string::npos);
}

TEST(Generator, stops_when_the_context_is_full) {
  const Fixture& f = fixture();
  ExecContext ctx;
  Session session(ctx, f.model, {.context = 12});
  Generator gen(ctx, f.model, f.tokenizer, session);
  const GenerationResult r = gen.generate(kPrompt, {.sampling = {.temperature = 0.0f}, .max_new_tokens = 50});
  EXPECT_EQ(r.reason, StopReason::context_full);
  EXPECT_EQ(session.size(), 12);
  EXPECT_EQ(r.ids.size(), 3u);  // 2 fit after the prompt, the third was sampled from the last logits
}

// A recurrent model (qwen35: gated delta nets beside attention): its cache keeps all it holds
// or nothing, so a prompt that extends the session's tokens reuses them all, any other prompt
// starts over, and no draft is verified (a rejected row could not leave the state); each gives
// what a fresh session gives.
struct Hybrid {
  std::unique_ptr<Model> model;
  Tokenizer tokenizer;
};

const Hybrid& hybrid() {
  static const Hybrid h = [] {
    const fs::path dir = fs::temp_directory_path() / ("tempra_generator_test_qwen35_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    SynthSpec spec = SynthSpec::qwen35_tiny();
    spec.n_vocab = 300;
    spec.weight_type = DType::f32;
    spec.seed = 5;
    write_synthetic_model(dir / "qwen35.gguf", spec);
    const io::GgufModel gguf = io::GgufModel::open(dir / "qwen35.gguf");
    Hybrid out{load_model(gguf), Tokenizer::from_gguf(gguf.metadata())};
    fs::remove_all(dir);  // the mapping stays valid after the unlink
    return out;
  }();
  return h;
}

TEST(Generator, a_recurrent_model_reuses_a_whole_session_or_starts_over_and_never_drafts) {
  const Hybrid& h = hybrid();
  ExecContext ctx;
  GenerateOptions greedy{.sampling = {.temperature = 0.0f}, .max_new_tokens = 10};
  greedy.speculative.always = true;
  auto fresh = [&](std::span<const int32_t> prompt) {
    Session session(ctx, *h.model, {.context = 64});
    Generator gen(ctx, *h.model, h.tokenizer, session);
    return gen.generate(prompt, greedy);
  };
  Session session(ctx, *h.model, {.context = 64});
  Generator gen(ctx, *h.model, h.tokenizer, session);
  const GenerationResult first = gen.generate(kPrompt, greedy);
  EXPECT_EQ(first.ids, fresh(kPrompt).ids);
  EXPECT_EQ(first.timings.draft_tokens, 0);
  EXPECT_EQ(int64_t(gen.tokens().size()), session.size());

  // The session's tokens and two more: all of them kept.
  std::vector<int32_t> longer = gen.tokens();
  longer.insert(longer.end(), {7, 8});
  const GenerationResult extended = gen.generate(longer, greedy);
  EXPECT_EQ(extended.reused_tokens, int64_t(longer.size()) - 2);
  EXPECT_EQ(extended.ids, fresh(longer).ids);

  // The same prompt again would keep all but its last token: the state cannot, so it starts over.
  const GenerationResult again = gen.generate(kPrompt, greedy);
  EXPECT_EQ(again.reused_tokens, 0);
  EXPECT_EQ(again.ids, first.ids);

  KvCache cache = h.model->make_cache(ctx, 16, KvCacheType::f16);
  h.model->forward(ctx, std::vector<int32_t>{1, 2, 3}, cache);
  EXPECT_FALSE(cache.rewinds());
  EXPECT_TRUE(cache.can_truncate(3));
  EXPECT_FALSE(cache.can_truncate(2));
  EXPECT_NE(testing::error_message([&] { cache.truncate(2); }).find("cannot keep 2 of 3 positions: the recurrent"),
            std::string::npos);
  EXPECT_EQ(cache.size(), 3);
  cache.truncate(0);
  EXPECT_EQ(cache.size(), 0);
  const float* state = cache.recurrent_state(0);
  EXPECT_TRUE(std::all_of(state, state + cache.shape().recurrent_floats, [](float v) { return v == 0.0f; }));
}

}  // namespace
}  // namespace tempra::llm
