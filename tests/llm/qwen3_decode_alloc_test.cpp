// tests/llm/qwen3_decode_alloc_test.cpp: a Qwen3 decode step allocates nothing.
//
// What it proves: after one warm-up step (which grows the native kernels' per-thread scratch
// once), Session::decode makes no heap allocation at all, counted by replacing the global
// operator new (every form: a make_shared control block, a std::vector, a std::string of an
// error message would all show), and takes no buffer from the ExecContext's pool (its stats do
// not move). Checked for f32, f16 and bf16 weight matrices and for block-quantized ones
// (Q8_0 and Q4_K_M, made by `tempra quantize`), with f32, f16 and q8_0 caches, on both
// backends and with 2 threads, so the thread pool's fork-join is inside the count.
//
// This binary replaces operator new for itself only (support/count_allocations.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "apps/qwen3_fixture.h"
#include "quantize.h"
#include "support/count_allocations.h"
#include "support/files.h"
#include "tempra/llm/model/expert_cache.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/llm/model/synth.h"
#include "tempra/llm/runtime/session.h"

using tempra::testing::g_allocations;

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir() {
  return testing::scratch_dir("tempra_qwen3_alloc_test");
}

// The fixture's shape with head_dim 64 (a multiple of every block size), written once.
fs::path model(int32_t weight_type, const std::string& file_type = "") {
  const std::string base = "w" + std::to_string(weight_type);
  const fs::path source = scratch_dir() / (base + ".gguf");
  if (!fs::exists(source)) testing::write_qwen3_model(source, {.weight_type = weight_type});
  if (file_type.empty()) return source;
  const fs::path out = scratch_dir() / (base + "_" + file_type + ".gguf");
  if (!fs::exists(out)) app::quantize_model(source, out, *app::find_file_type(file_type));
  return out;
}

struct Case {
  const char* name;
  fs::path path;
};

void expect_allocation_free_decode(const Case& c, Backend backend, KvCacheType cache_type) {
  const char* cache_name = cache_type == KvCacheType::f16    ? " f16 cache"
                           : cache_type == KvCacheType::q8_0 ? " q8_0 cache"
                                                             : " f32 cache";
  SCOPED_TRACE(std::string(c.name) + (backend == Backend::native ? " native" : " scalar") + cache_name);
  ExecContext ctx({.threads = 2, .backend = backend});
  const Qwen3Model model = Qwen3Model::load(c.path);
  Session session(ctx, model, {.context = 64, .cache_type = cache_type});
  const std::vector<int32_t> prompt{3, 141, 59, 26, 5, 358, 97};
  session.prefill(ctx, prompt);
  int32_t token = 1;
  session.decode(ctx, token);  // warm-up: per-thread kernel scratch grows here, once

  const BufferPoolStats before = ctx.pool()->stats();
  const int64_t allocations_before = g_allocations.load();
  float checksum = 0;
  for (int step = 0; step < 8; ++step) {
    const std::span<const float> logits = session.decode(ctx, token);
    token = int32_t(std::abs(int64_t(logits[0] * 1000)) % 500);  // depends on the step's output
    checksum += logits[size_t(step)];
  }
  const int64_t allocations = g_allocations.load() - allocations_before;
  const BufferPoolStats after = ctx.pool()->stats();
  EXPECT_EQ(allocations, 0) << "operator new calls during 8 decode steps";
  EXPECT_EQ(after.hits + after.misses, before.hits + before.misses) << "pool acquires during 8 decode steps";
  EXPECT_EQ(session.size(), int64_t(prompt.size()) + 9);
  EXPECT_TRUE(std::isfinite(checksum));

  // The counter is live: a one-token forward() returns a fresh Array, which allocates.
  const int64_t before_forward = g_allocations.load();
  session.forward(ctx, std::vector<int32_t>{token});
  EXPECT_GT(g_allocations.load() - before_forward, 0);
}

TEST(Qwen3Decode, allocates_nothing_after_warm_up) {
  const std::vector<Case> cases{
      {"f32", model(0)},
      {"f16", model(1)},
      {"bf16", model(30)},
      {"Q8_0", model(0, "Q8_0")},
      {"Q4_K_M", model(0, "Q4_K_M")},
  };
  for (const Case& c : cases)
    for (Backend backend : {Backend::scalar, Backend::native})
      for (KvCacheType cache_type : {KvCacheType::f32, KvCacheType::f16, KvCacheType::q8_0})
        expect_allocation_free_decode(c, backend, cache_type);
}

// A mixture of experts decodes without allocating too, resident or streamed (--moe-stream): a
// cache of three experts misses in every step once warm, and a miss reads into a slot's
// existing buffer and moves its LRU node, so nothing is allocated once every slot is filled.
// DeepSeek-V2 adds latent attention (its values read in the keys), a leading dense layer and
// shared experts.
void expect_allocation_free_moe_decode(const SynthSpec& spec_in) {
  const fs::path path = scratch_dir() / (spec_in.architecture + "-moe.gguf");
  if (!fs::exists(path)) {
    SynthSpec spec = spec_in;
    spec.seed = 9;
    write_synthetic_model(path, spec);
  }
  const uint64_t one =
      load_model(path,
                 {.moe_stream = ExpertStreaming{.cache_bytes = uint64_t{1} << 40, .usage_file = {}, .prefetch = true}})
          ->expert_cache()
          ->expert_bytes();
  for (bool stream : {false, true}) {
    SCOPED_TRACE(spec_in.architecture + (stream ? " streamed" : " resident"));
    LoadOptions options;
    if (stream) options.moe_stream = ExpertStreaming{.cache_bytes = 3 * one, .usage_file = {}, .prefetch = true};
    const std::unique_ptr<Model> model = load_model(path, options);
    ExecContext ctx({.threads = 2});
    Session session(ctx, *model, {.context = 64});
    session.prefill(ctx, std::vector<int32_t>{3, 141, 59, 26, 5, 358, 97});
    int32_t token = 1;
    session.decode(ctx, token);
    const uint64_t misses_before = stream ? model->expert_cache()->stats().misses : 0;
    const int64_t allocations_before = g_allocations.load();
    for (int step = 0; step < 8; ++step) {
      const std::span<const float> logits = session.decode(ctx, token);
      token = int32_t(std::abs(int64_t(logits[0] * 1000)) % 500);
    }
    EXPECT_EQ(g_allocations.load() - allocations_before, 0) << "operator new calls during 8 decode steps";
    if (stream) {
      EXPECT_GT(model->expert_cache()->stats().misses, misses_before) << "the steps missed the cache";
    }
  }
}

TEST(Qwen3MoeDecode, allocates_nothing_after_warm_up_resident_or_streamed) {
  expect_allocation_free_moe_decode(SynthSpec::qwen3moe_tiny());
}

TEST(DeepSeek2Decode, allocates_nothing_after_warm_up_resident_or_streamed) {
  expect_allocation_free_moe_decode(SynthSpec::deepseek2_tiny());
}

// Qwen3.5's gated delta nets update their recurrent state in the cache in place: a decode step
// allocates nothing either, with an f16 or a q8_0 cache for its attention layers.
TEST(Qwen35Decode, allocates_nothing_after_warm_up) {
  const fs::path path = scratch_dir() / "qwen35.gguf";
  if (!fs::exists(path)) {
    SynthSpec spec = SynthSpec::qwen35_tiny();
    spec.seed = 9;
    write_synthetic_model(path, spec);
  }
  const std::unique_ptr<Model> model = load_model(path);
  for (KvCacheType cache_type : {KvCacheType::f16, KvCacheType::q8_0}) {
    ExecContext ctx({.threads = 2});
    Session session(ctx, *model, {.context = 64, .cache_type = cache_type});
    session.prefill(ctx, std::vector<int32_t>{3, 141, 59, 26, 5, 358, 97});
    int32_t token = 1;
    session.decode(ctx, token);
    const int64_t allocations_before = g_allocations.load();
    for (int step = 0; step < 8; ++step) {
      const std::span<const float> logits = session.decode(ctx, token);
      token = int32_t(std::abs(int64_t(logits[0] * 1000)) % 500);
    }
    EXPECT_EQ(g_allocations.load() - allocations_before, 0) << "operator new calls during 8 decode steps";
  }
}

// The session default is llama.cpp's: an f16 cache.
TEST(Qwen3Decode, the_default_cache_is_f16) {
  EXPECT_EQ(SessionOptions{}.cache_type, KvCacheType::f16);
}

// decode() and a one-token forward() compute the same logits, bit for bit (forward copies).
TEST(Qwen3Decode, decode_equals_a_one_token_forward) {
  ExecContext ctx({.threads = 2});
  const Qwen3Model m = Qwen3Model::load(model(0));
  Session a(ctx, m, {.context = 16}), b(ctx, m, {.context = 16});
  const std::vector<int32_t> prompt{7, 8, 9};
  a.forward(ctx, prompt);
  b.prefill(ctx, prompt);
  const Array want = a.forward(ctx, std::vector<int32_t>{42});
  const std::span<const float> got = b.decode(ctx, 42);
  ASSERT_EQ(int64_t(got.size()), want.numel());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want.data<float>()[i]) << "logit " << i;
}

// prefill() returns the last position's logits of forward() over the same tokens, in batches.
TEST(Qwen3Decode, prefill_returns_the_last_rows_logits) {
  ExecContext ctx({.threads = 2, .backend = Backend::scalar});
  const Qwen3Model m = Qwen3Model::load(model(0));
  Session a(ctx, m, {.context = 32, .cache_type = KvCacheType::f32});
  Session b(ctx, m, {.context = 32, .cache_type = KvCacheType::f32, .batch = 4});
  std::vector<int32_t> prompt;
  for (int i = 0; i < 11; ++i) prompt.push_back(int32_t(i * 37 % 500));
  const Array all = a.forward(ctx, prompt);
  const std::span<const float> last = b.prefill(ctx, prompt);
  EXPECT_EQ(b.size(), 11);
  const float* want = all.data<float>() + 10 * all.dim(1);
  for (size_t i = 0; i < last.size(); ++i) ASSERT_EQ(last[i], want[i]) << "logit " << i;
}

}  // namespace
}  // namespace tempra::llm
