// tests/llm/scheduler_test.cpp: continuous batching (llm/runtime/scheduler.h).
//
// Eight requests run together give each exactly the tokens and text a lone Generator gives it
// (same prompt split, same seed): greedy and sampled, on f32 and Q8_0 weights. A follow-up turn
// prefills only its new suffix and answers as a cold prefill does; a long prompt is prefilled
// in chunks while another stream keeps getting a token every step; cancellation ends queued and
// running requests; bad requests are refused by name and a full queue gives no id.
#include "tempra/llm/runtime/scheduler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apps/qwen3_fixture.h"
#include "support/errors.h"
#include "support/files.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/synth.h"
#include "tempra/llm/runtime/generator.h"
#include "tempra/llm/runtime/session.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;

struct Loaded {
  std::unique_ptr<Model> model;
  Tokenizer tokenizer;
};

Loaded load(const std::string& file_type = "") {
  const fs::path path = testing::qwen3_model_file(
      testing::scratch_dir("tempra_scheduler_test"), "model",
      {.n_layer = 2, .n_embd = 64, .n_ff = 128, .n_head = 4, .n_head_kv = 2, .head_dim = 32, .n_vocab = 256, .weight_type = 0, .seed = 11},
      file_type);
  const io::GgufModel gguf = io::GgufModel::open(path);
  return {load_model(gguf), Tokenizer::from_gguf(gguf.metadata())};
}

std::vector<int32_t> prompt(int s, int length) {
  std::vector<int32_t> ids;
  for (int i = 0; i < length; ++i) ids.push_back(int32_t((31 * s + 7 * i + 3) % 250));
  return ids;
}

GenerateOptions options_for(int s) {
  GenerateOptions o;
  o.max_new_tokens = 10 + s;
  o.batch = 16;  // the lone generator splits its prompt where the scheduler's chunks do
  if (s % 2 == 1) o.sampling = {.temperature = 0.9f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = uint64_t(s)};
  else o.sampling.temperature = 0.0f;
  return o;
}

struct Outcome {
  GenerationResult result;
  std::string streamed;
  int done_calls = 0;
};

Request request(const std::vector<int32_t>& ids, const GenerateOptions& options, Outcome& out) {
  Request r;
  r.prompt = ids;
  r.options = options;
  r.on_text = [&out](std::string_view text, TextKind) { out.streamed += text; };
  r.on_done = [&out](const GenerationResult& result) {
    out.result = result;
    ++out.done_calls;
  };
  return r;
}

TEST(Scheduler, eight_requests_together_get_each_the_tokens_of_a_lone_generator) {
  for (const char* type : {"", "Q8_0"}) {
    SCOPED_TRACE(type);
    const Loaded m = load(type);
    ExecContext ctx({.threads = 2});
    constexpr int kRequests = 8;
    const std::vector<int> lengths{5, 40, 9, 17, 33, 3, 64, 12};
    Scheduler scheduler(ctx, *m.model, m.tokenizer, {.slots = kRequests, .context = 128, .batch = 160, .chunk = 16});
    std::vector<Outcome> outs(kRequests);
    for (int s = 0; s < kRequests; ++s)
      ASSERT_TRUE(scheduler.submit(request(prompt(s, lengths[size_t(s)]), options_for(s), outs[size_t(s)])));
    scheduler.run_until_idle();
    for (int s = 0; s < kRequests; ++s) {
      Session session(ctx, *m.model, {.context = 128});
      Generator alone(ctx, *m.model, m.tokenizer, session);
      const GenerationResult want = alone.generate(prompt(s, lengths[size_t(s)]), options_for(s));
      const Outcome& got = outs[size_t(s)];
      EXPECT_EQ(got.done_calls, 1);
      EXPECT_EQ(got.result.ids, want.ids) << "request " << s;
      EXPECT_EQ(got.result.text, want.text) << "request " << s;
      EXPECT_EQ(got.streamed, want.text) << "request " << s;
      EXPECT_EQ(got.result.reason, want.reason) << "request " << s;
      EXPECT_EQ(got.result.timings.prompt_tokens, lengths[size_t(s)]);
      EXPECT_GE(got.result.ids.size(), 4u) << "request " << s << " (the test wants generated tokens to compare)";
    }
    const SchedulerStats stats = scheduler.stats();
    EXPECT_EQ(stats.busy_slots, 0);
    EXPECT_EQ(stats.queued, 0);
    EXPECT_EQ(stats.prompt_tokens, 5 + 40 + 9 + 17 + 33 + 3 + 64 + 12);
  }
}

// Speculation forced on every draft, with prompts that repeat themselves: every request still
// gets the lone generator's tokens (without speculation), and drafts were verified and kept.
TEST(Scheduler, speculative_drafts_in_a_batch_change_no_token) {
  for (const char* type : {"", "Q8_0"}) {
    SCOPED_TRACE(type);
    const Loaded m = load(type);
    ExecContext ctx({.threads = 2});
    constexpr int kRequests = 4;
    Scheduler scheduler(ctx, *m.model, m.tokenizer, {.slots = kRequests, .context = 128, .batch = 64, .chunk = 16});
    std::vector<Outcome> outs(kRequests);
    auto repeated = [](int s) {
      std::vector<int32_t> ids = prompt(s, 8), once = ids;
      for (int r = 0; r < 3; ++r) ids.insert(ids.end(), once.begin(), once.end());
      return ids;
    };
    for (int s = 0; s < kRequests; ++s) {
      GenerateOptions o = options_for(s);
      o.max_new_tokens = 30;
      o.speculative = {.enabled = true, .draft_max = 6, .always = true};
      ASSERT_TRUE(scheduler.submit(request(repeated(s), o, outs[size_t(s)])));
    }
    scheduler.run_until_idle();
    int64_t drafted = 0;
    for (int s = 0; s < kRequests; ++s) {
      Session session(ctx, *m.model, {.context = 128});
      Generator alone(ctx, *m.model, m.tokenizer, session);
      GenerateOptions o = options_for(s);
      o.max_new_tokens = 30;
      o.speculative.enabled = false;
      const GenerationResult want = alone.generate(repeated(s), o);
      EXPECT_EQ(outs[size_t(s)].result.ids, want.ids) << "request " << s;
      EXPECT_EQ(outs[size_t(s)].streamed, want.text) << "request " << s;
      const GenerationTimings& t = outs[size_t(s)].result.timings;
      EXPECT_EQ(t.eval_tokens, int64_t(want.ids.size()) - 1);
      drafted += t.draft_tokens;
    }
    EXPECT_GT(drafted, 0);
  }
}

TEST(Scheduler, more_requests_than_slots_wait_their_turn_and_get_the_same_tokens) {
  const Loaded m = load();
  ExecContext ctx({.threads = 2});
  Scheduler scheduler(ctx, *m.model, m.tokenizer, {.slots = 2, .context = 128, .batch = 64, .chunk = 16});
  std::vector<Outcome> outs(5);
  for (int s = 0; s < 5; ++s) ASSERT_TRUE(scheduler.submit(request(prompt(s, 10 + s), options_for(s), outs[size_t(s)])));
  EXPECT_EQ(scheduler.stats().queued, 5);
  scheduler.step();
  EXPECT_EQ(scheduler.stats().queued, 3);
  EXPECT_EQ(scheduler.stats().busy_slots, 2);
  scheduler.run_until_idle();
  for (int s = 0; s < 5; ++s) {
    Session session(ctx, *m.model, {.context = 128});
    Generator alone(ctx, *m.model, m.tokenizer, session);
    EXPECT_EQ(outs[size_t(s)].result.ids, alone.generate(prompt(s, 10 + s), options_for(s)).ids) << "request " << s;
  }
}

// A second turn that starts with the first turn's prompt and answer prefills only what is new,
// picks the slot that holds it (not the least recently used one), and answers as a cold prefill.
TEST(Scheduler, a_follow_up_turn_reuses_its_slot_and_prefills_only_the_suffix) {
  const Loaded m = load();
  ExecContext ctx({.threads = 2});
  Scheduler scheduler(ctx, *m.model, m.tokenizer, {.slots = 2, .context = 128, .batch = 64, .chunk = 16});
  GenerateOptions greedy = options_for(0);
  Outcome first, other, second;
  const std::vector<int32_t> turn1 = prompt(1, 30);
  ASSERT_TRUE(scheduler.submit(request(turn1, greedy, first)));
  scheduler.run_until_idle();
  ASSERT_TRUE(scheduler.submit(request(prompt(2, 20), greedy, other)));  // takes the other (LRU) slot
  scheduler.run_until_idle();

  std::vector<int32_t> turn2 = turn1;
  turn2.insert(turn2.end(), first.result.ids.begin(), first.result.ids.end());
  for (int32_t id : {7, 8, 9, 10}) turn2.push_back(id);
  ASSERT_TRUE(scheduler.submit(request(turn2, greedy, second)));
  scheduler.run_until_idle();
  // The slot holds turn1 and every answer token but the last (sampled, never fed back).
  const int64_t reused = int64_t(turn1.size() + first.result.ids.size()) - 1;
  EXPECT_EQ(second.result.reused_tokens, reused);
  EXPECT_EQ(second.result.timings.prompt_tokens, int64_t(turn2.size()) - reused);
  EXPECT_EQ(scheduler.stats().reused_tokens, reused);

  Session session(ctx, *m.model, {.context = 128});
  Generator cold(ctx, *m.model, m.tokenizer, session);
  EXPECT_EQ(second.result.ids, cold.generate(turn2, greedy).ids);
}

// A recurrent model (qwen35) in the scheduler: a follow-up turn keeps the slot's whole cache, a
// prompt that leaves the cached tokens partway starts its slot over (a recurrent state keeps all
// it holds or nothing), no draft is verified, and each answer is a lone generator's.
TEST(Scheduler, a_recurrent_model_reuses_whole_slots_or_starts_them_over) {
  const fs::path path = testing::scratch_dir("tempra_scheduler_test") / "qwen35.gguf";
  if (!fs::exists(path)) {
    SynthSpec spec = SynthSpec::qwen35_tiny();
    spec.n_vocab = 300;
    spec.weight_type = DType::f32;
    spec.seed = 3;
    write_synthetic_model(path, spec);
  }
  const io::GgufModel gguf = io::GgufModel::open(path);
  const Loaded m{load_model(gguf), Tokenizer::from_gguf(gguf.metadata())};
  ExecContext ctx({.threads = 2});
  Scheduler scheduler(ctx, *m.model, m.tokenizer, {.slots = 1, .context = 128, .batch = 64, .chunk = 16});
  GenerateOptions greedy = options_for(0);
  greedy.speculative.always = true;
  auto cold = [&](const std::vector<int32_t>& ids) {
    Session session(ctx, *m.model, {.context = 128});
    Generator generator(ctx, *m.model, m.tokenizer, session);
    return generator.generate(ids, greedy).ids;
  };
  Outcome first, second, third;
  const std::vector<int32_t> turn1 = prompt(1, 30);
  ASSERT_TRUE(scheduler.submit(request(turn1, greedy, first)));
  scheduler.run_until_idle();
  EXPECT_EQ(first.result.ids, cold(turn1));
  EXPECT_EQ(first.result.timings.draft_tokens, 0);

  std::vector<int32_t> turn2 = turn1;
  turn2.insert(turn2.end(), first.result.ids.begin(), first.result.ids.end());
  for (int32_t id : {7, 8, 9, 10}) turn2.push_back(id);
  ASSERT_TRUE(scheduler.submit(request(turn2, greedy, second)));
  scheduler.run_until_idle();
  EXPECT_EQ(second.result.reused_tokens, int64_t(turn1.size() + first.result.ids.size()) - 1);
  EXPECT_EQ(second.result.ids, cold(turn2));

  std::vector<int32_t> edited = turn1;  // the first turn with its last 5 tokens changed
  for (size_t i = edited.size() - 5; i < edited.size(); ++i) edited[i] = 200;
  ASSERT_TRUE(scheduler.submit(request(edited, greedy, third)));
  scheduler.run_until_idle();
  EXPECT_EQ(third.result.reused_tokens, 0);
  EXPECT_EQ(third.result.ids, cold(edited));
}

// A new conversation that shares only the template's first tokens with a cached one takes an
// empty slot, not the cached one: the cached conversation's next turn still finds its prefix.
TEST(Scheduler, a_new_conversation_takes_an_empty_slot_and_keeps_the_others_cache) {
  const Loaded m = load();
  ExecContext ctx({.threads = 2});
  Scheduler scheduler(ctx, *m.model, m.tokenizer, {.slots = 2, .context = 128, .batch = 64, .chunk = 16});
  std::vector<int32_t> a = prompt(1, 20), b = prompt(2, 20);
  b[0] = a[0], b[1] = a[1];  // the same first tokens, as every chat prompt has
  Outcome first, other, again;
  ASSERT_TRUE(scheduler.submit(request(a, options_for(0), first)));
  scheduler.run_until_idle();
  ASSERT_TRUE(scheduler.submit(request(b, options_for(0), other)));
  scheduler.run_until_idle();
  EXPECT_EQ(other.result.reused_tokens, 0);  // 2 of 20 tokens is no reason to evict a conversation
  std::vector<int32_t> a2 = a;
  a2.insert(a2.end(), first.result.ids.begin(), first.result.ids.end());
  ASSERT_TRUE(scheduler.submit(request(a2, options_for(0), again)));
  scheduler.run_until_idle();
  EXPECT_EQ(again.result.reused_tokens, int64_t(a.size() + first.result.ids.size()) - 1);
}

// While a 200-token prompt is prefilled in chunks of 16, a stream already decoding gets a token
// at every step: the long prompt does not freeze it.
TEST(Scheduler, a_long_prompt_is_prefilled_in_chunks_between_the_decode_steps_of_others) {
  const Loaded m = load();
  ExecContext ctx({.threads = 2});
  Scheduler scheduler(ctx, *m.model, m.tokenizer, {.slots = 2, .context = 256, .batch = 17, .chunk = 16});
  GenerateOptions many = options_for(0);
  many.max_new_tokens = 40;
  Outcome decoding, longer;
  int64_t step = 0;
  std::map<int64_t, int> tokens_at_step;
  Request r = request(prompt(3, 8), many, decoding);
  r.on_token = [&](int32_t, std::span<const float>) { ++tokens_at_step[step]; };
  ASSERT_TRUE(scheduler.submit(std::move(r)));
  for (; step < 3; ++step) scheduler.step();  // prefill, then two decode steps
  int64_t first_token_step = -1;
  Request l = request(prompt(4, 200), options_for(0), longer);
  l.on_token = [&](int32_t, std::span<const float>) {
    if (first_token_step < 0) first_token_step = step;
  };
  ASSERT_TRUE(scheduler.submit(std::move(l)));
  for (; scheduler.stats().busy_slots > 0 || step == 3; ++step) scheduler.step();
  ASSERT_EQ(first_token_step, 3 + 12);  // ceil(200 / 16) = 13 chunks: steps 3 ... 15
  for (int64_t s = 3; s <= first_token_step; ++s) EXPECT_EQ(tokens_at_step[s], 1) << "step " << s;
  EXPECT_EQ(decoding.result.ids.size(), 40u);
  EXPECT_EQ(longer.done_calls, 1);
}

TEST(Scheduler, cancel_ends_a_running_and_a_queued_request_and_frees_the_slot) {
  const Loaded m = load();
  ExecContext ctx({.threads = 2});
  Scheduler scheduler(ctx, *m.model, m.tokenizer, {.slots = 1, .context = 128, .batch = 32, .chunk = 16});
  GenerateOptions endless = options_for(0);
  endless.max_new_tokens = 100;
  endless.speculative.enabled = false;  // one token per step, so four steps make four tokens
  Outcome running, queued, after;
  const auto a = scheduler.submit(request(prompt(5, 6), endless, running));
  const auto b = scheduler.submit(request(prompt(6, 6), endless, queued));
  ASSERT_TRUE(a && b);
  for (int i = 0; i < 4; ++i) scheduler.step();
  scheduler.cancel(*a);
  scheduler.cancel(*b);
  scheduler.cancel(12345);  // unknown: ignored
  scheduler.step();
  EXPECT_EQ(running.done_calls, 1);
  EXPECT_EQ(running.result.reason, StopReason::cancelled);
  EXPECT_EQ(running.result.ids.size(), 4u);
  EXPECT_EQ(queued.done_calls, 1);
  EXPECT_EQ(queued.result.reason, StopReason::cancelled);
  EXPECT_TRUE(queued.result.ids.empty());
  EXPECT_EQ(scheduler.stats().busy_slots, 0);
  // The slot serves the next request, and its cache (prompt + 3 fed tokens) is reused.
  ASSERT_TRUE(scheduler.submit(request(prompt(5, 6), options_for(0), after)));
  scheduler.run_until_idle();
  EXPECT_EQ(after.done_calls, 1);
  EXPECT_EQ(after.result.reused_tokens, 5);
}

TEST(Scheduler, bad_requests_are_refused_by_name_and_a_full_queue_gives_no_id) {
  const Loaded m = load();
  ExecContext ctx({.threads = 1});
  Scheduler scheduler(ctx, *m.model, m.tokenizer, {.slots = 1, .context = 32, .batch = 16, .chunk = 16, .max_queue = 2});
  Outcome o;
  auto refused = [&](Request r, const std::string& part) {
    const std::string message = testing::error_message([&] { scheduler.submit(std::move(r)); });
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  refused(request({}, {}, o), "the prompt is empty");
  refused(request(prompt(1, 33), {}, o), "prompt has 33 tokens but the context holds 32");
  refused(request({1, 2, 999}, {}, o), "prompt token 2 is id 999, outside the vocab [0, 256)");
  GenerateOptions bad;
  bad.sampling.top_p = 2.0f;
  refused(request({1, 2}, bad, o), "top_p");
  EXPECT_EQ(scheduler.stats().queued, 0);
  // One request for the free slot, two waiting beyond it; a fourth finds the queue full.
  EXPECT_TRUE(scheduler.submit(request({1, 2}, {}, o)));
  EXPECT_TRUE(scheduler.submit(request({1, 2}, {}, o)));
  EXPECT_TRUE(scheduler.submit(request({1, 2}, {}, o)));
  EXPECT_FALSE(scheduler.submit(request({1, 2}, {}, o)));

  const std::string message = testing::error_message(
      [&] { Scheduler(ctx, *m.model, m.tokenizer, {.slots = 4, .context = 32, .batch = 16, .chunk = 16}); });
  EXPECT_NE(message.find("batch 16 cannot hold 3 decode rows and a prompt chunk of 16"), std::string::npos) << message;
}

}  // namespace
}  // namespace tempra::llm
