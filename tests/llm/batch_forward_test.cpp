// tests/llm/batch_forward_test.cpp: the batched forward of model.h (rows of many sequences in one
// pass, each over its own KV cache) changes no result.
//
// Eight streams with prompts of different lengths are prefilled, then decoded greedily for
// several steps twice: each stream alone (one forward per stream and step) and all eight in one
// forward per step. Up to 32 rows in a batch, every matrix product takes the same kernel path as
// a single row (the quantized dots, or the f32 GEMM's skinny dot products, which compute each
// output element in one fixed order), so the logits are bitwise equal on both backends, for
// every weight type and cache type. Longer sequences (prompt chunks past 32 rows) take the packed
// GEMM or the decoded quantized weights, as they do alone, and each row keeps its sequence's path
// when decode rows and long chunks share a batch, so those are bitwise equal too. Bad batches
// are refused before any cache changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "apps/qwen3_fixture.h"
#include "support/errors.h"
#include "support/files.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/model/qwen3.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;

fs::path model_file(int32_t weight_type, const std::string& file_type = "") {
  return testing::qwen3_model_file(testing::scratch_dir("tempra_batch_forward_test"), "w" + std::to_string(weight_type),
                                   {.weight_type = weight_type}, file_type);
}

template <class Fn>
void expect_error_containing(Fn&& fn, const std::string& part) {
  const std::string message = testing::error_message(fn);
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

int32_t argmax(std::span<const float> row) {
  return int32_t(std::max_element(row.begin(), row.end()) - row.begin());
}

// Prompt s: 3 + s tokens, different for every stream.
std::vector<int32_t> prompt(int s) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 3 + s; ++i) ids.push_back(int32_t((37 * s + 11 * i + 5) % 500));
  return ids;
}

struct Streams {
  std::vector<KvCache> caches;
  std::vector<int32_t> next;  // each stream's next token
};

// Prefills each stream alone (the same code path for both runs), keeping its greedy token.
Streams prefilled(ExecContext& ctx, const Model& model, int count, KvCacheType type) {
  Streams st;
  for (int s = 0; s < count; ++s) {
    st.caches.push_back(model.make_cache(ctx, 64, type));
    const Array logits = model.forward(ctx, prompt(s), st.caches.back());
    const float* last = logits.data<float>() + (logits.dim(0) - 1) * logits.dim(1);
    st.next.push_back(argmax({last, size_t(logits.dim(1))}));
  }
  return st;
}

void expect_batched_decode_is_bitwise_alone(const fs::path& path, const char* name, Backend backend,
                                            KvCacheType cache_type) {
  SCOPED_TRACE(std::string(name) + (backend == Backend::native ? " native" : " scalar") + " cache " +
               std::to_string(int(cache_type)));
  ExecContext ctx({.threads = 2, .backend = backend});
  const std::unique_ptr<Model> model = load_model(path);
  constexpr int kStreams = 8, kSteps = 5;
  const int64_t n_vocab = model->info().n_vocab;
  Streams alone = prefilled(ctx, *model, kStreams, cache_type);
  Streams batched = prefilled(ctx, *model, kStreams, cache_type);
  const auto one = model->make_buffers(ctx, 1, 1, 64);
  const auto eight = model->make_buffers(ctx, kStreams, kStreams, 64);
  for (int step = 0; step < kSteps; ++step) {
    std::vector<SequenceRows> batch;
    for (int s = 0; s < kStreams; ++s)
      batch.push_back({&batched.caches[size_t(s)], std::span<const int32_t>(&batched.next[size_t(s)], 1), 1});
    model->forward(ctx, batch, *eight);
    for (int s = 0; s < kStreams; ++s) {
      const SequenceRows row{&alone.caches[size_t(s)], std::span<const int32_t>(&alone.next[size_t(s)], 1), 1};
      model->forward(ctx, std::span<const SequenceRows>(&row, 1), *one);
      const std::span<const float> want = one->logits_row(0), got = eight->logits_row(s);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), size_t(n_vocab) * sizeof(float)), 0)
          << "stream " << s << " step " << step << ": batched logits differ from its logits alone";
      alone.next[size_t(s)] = batched.next[size_t(s)] = argmax(want);
    }
  }
  for (int s = 0; s < kStreams; ++s) EXPECT_EQ(batched.caches[size_t(s)].size(), 3 + s + kSteps);
}

// Every weight format on both backends with every cache type: 30 runs (under the sanitizers
// 100 s), labelled heavy and run once, in release (tests/llm/CMakeLists.txt). The case after it
// takes each kind of kernel once, everywhere.
TEST(BatchForwardSoak, eight_decode_streams_in_one_pass_equal_each_alone_bitwise_on_every_format) {
  struct Case {
    const char* name;
    fs::path path;
  };
  const std::vector<Case> cases{{"f32", model_file(0)},
                                {"f16", model_file(1)},
                                {"bf16", model_file(30)},
                                {"Q8_0", model_file(0, "Q8_0")},
                                {"Q4_K_M", model_file(0, "Q4_K_M")}};
  for (const Case& c : cases)
    for (Backend backend : {Backend::scalar, Backend::native})
      for (KvCacheType cache_type : {KvCacheType::f32, KvCacheType::f16, KvCacheType::q8_0})
        expect_batched_decode_is_bitwise_alone(c.path, c.name, backend, cache_type);
}

TEST(BatchForward, eight_decode_streams_in_one_pass_equal_each_alone_bitwise) {
  expect_batched_decode_is_bitwise_alone(model_file(0), "f32", Backend::native, KvCacheType::f32);
  expect_batched_decode_is_bitwise_alone(model_file(1), "f16", Backend::scalar, KvCacheType::f16);
  expect_batched_decode_is_bitwise_alone(model_file(0, "Q4_K_M"), "Q4_K_M", Backend::native, KvCacheType::q8_0);
}

// Decode rows, short and long prompt chunks interleaved in one pass of 120 rows: every sequence
// still takes the kernels it takes alone (RowPath in qwen3.cpp: the packed GEMM and the decoded
// quantized weights compute each element in one order whatever the row count), so each one's
// logits and cache equal its own forward alone, bit for bit, including a head of 40 logit rows.
TEST(BatchForward, decode_rows_and_long_prompt_chunks_interleaved_equal_each_alone_bitwise) {
  for (const auto& [weights, type] : std::vector<std::pair<int32_t, const char*>>{{0, ""}, {1, ""}, {0, "Q8_0"}}) {
    for (Backend backend : {Backend::scalar, Backend::native}) {
      SCOPED_TRACE(std::to_string(weights) + type + (backend == Backend::native ? " native" : " scalar"));
      ExecContext ctx({.threads = 2, .backend = backend});
      const std::unique_ptr<Model> model = load_model(model_file(weights, type));
      const int64_t V = model->info().n_vocab;
      Streams alone = prefilled(ctx, *model, 2, KvCacheType::f16);
      Streams batched = prefilled(ctx, *model, 2, KvCacheType::f16);
      auto chunk = [](size_t n, int salt) {
        std::vector<int32_t> ids(n);
        for (size_t i = 0; i < n; ++i) ids[i] = int32_t((29 * i + 3 * size_t(salt) + 1) % 500);
        return ids;
      };
      const std::vector<int32_t> long1 = chunk(40, 1), short1 = chunk(12, 2), long2 = chunk(66, 3);
      std::vector<KvCache> fresh;
      for (int i = 0; i < 6; ++i) fresh.push_back(model->make_cache(ctx, 96, KvCacheType::f16));
      const auto buffers = model->make_buffers(ctx, 120, 45, 96);
      const std::vector<SequenceRows> batch{{&batched.caches[0], std::span(&batched.next[0], 1), 1},
                                            {&fresh[0], long1, 1},
                                            {&fresh[1], short1, 2},
                                            {&batched.caches[1], std::span(&batched.next[1], 1), 1},
                                            {&fresh[2], long2, 40}};
      model->forward(ctx, batch, *buffers);

      // Each sequence alone, asking for the same logit rows (the head's path follows their count).
      auto alone_logits = [&](std::span<const int32_t> tokens, KvCache& cache, int64_t logit_rows) {
        const auto one = model->make_buffers(ctx, int64_t(tokens.size()), logit_rows, 96);
        const SequenceRows seq{&cache, tokens, logit_rows};
        model->forward(ctx, std::span(&seq, 1), *one);
        return std::vector<float>(one->logits.data<float>(), one->logits.data<float>() + logit_rows * V);
      };
      auto rows_equal = [&](int64_t got_row, const std::vector<float>& want) {
        return std::memcmp(buffers->logits_row(got_row).data(), want.data(), want.size() * sizeof(float)) == 0;
      };
      EXPECT_TRUE(rows_equal(0, alone_logits(std::span(&alone.next[0], 1), alone.caches[0], 1)));
      EXPECT_TRUE(rows_equal(1, alone_logits(long1, fresh[3], 1)));
      EXPECT_TRUE(rows_equal(2, alone_logits(short1, fresh[4], 2)));
      EXPECT_TRUE(rows_equal(4, alone_logits(std::span(&alone.next[1], 1), alone.caches[1], 1)));
      EXPECT_TRUE(rows_equal(5, alone_logits(long2, fresh[5], 40)));
      // The long chunk's cache holds what a lone prefill wrote: the next step agrees bitwise.
      const int32_t next = 42;
      const Array after_batched = model->forward(ctx, std::span(&next, 1), fresh[0]);
      const Array after_alone = model->forward(ctx, std::span(&next, 1), fresh[3]);
      EXPECT_EQ(std::memcmp(after_batched.data<float>(), after_alone.data<float>(), size_t(V) * sizeof(float)), 0);
    }
  }
}

// More than 32 decode streams: the float GEMM runs them in slices of 32 rows, so stream 39 of 40
// equals itself alone bit for bit.
TEST(BatchForward, forty_decode_streams_equal_each_alone_bitwise) {
  ExecContext ctx({.threads = 2});
  const std::unique_ptr<Model> model = load_model(model_file(1));
  constexpr int kStreams = 40;
  Streams alone = prefilled(ctx, *model, kStreams, KvCacheType::f16);
  Streams batched = prefilled(ctx, *model, kStreams, KvCacheType::f16);
  const auto buffers = model->make_buffers(ctx, kStreams, kStreams, 64);
  std::vector<SequenceRows> batch;
  for (int s = 0; s < kStreams; ++s)
    batch.push_back({&batched.caches[size_t(s)], std::span<const int32_t>(&batched.next[size_t(s)], 1), 1});
  model->forward(ctx, batch, *buffers);
  const int64_t V = model->info().n_vocab;
  for (int s = 0; s < kStreams; ++s) {
    const Array want = model->forward(ctx, std::span(&alone.next[size_t(s)], 1), alone.caches[size_t(s)]);
    EXPECT_EQ(std::memcmp(buffers->logits_row(s).data(), want.data<float>(), size_t(V) * sizeof(float)), 0)
        << "stream " << s;
  }
}

TEST(BatchForward, bad_batches_are_refused_before_any_cache_changes) {
  ExecContext ctx({.threads = 1});
  const std::unique_ptr<Model> model = load_model(model_file(0));
  KvCache a = model->make_cache(ctx, 8, KvCacheType::f32), b = model->make_cache(ctx, 8, KvCacheType::f32);
  const auto buffers = model->make_buffers(ctx, 8, 4, 8);
  const std::vector<int32_t> two{1, 2}, bad{1, 100000}, nine(9, 1);
  auto refused = [&](std::vector<SequenceRows> batch, const std::string& message) {
    expect_error_containing([&] { model->forward(ctx, batch, *buffers); }, message);
    EXPECT_EQ(a.size(), 0);
    EXPECT_EQ(b.size(), 0);
  };
  refused({}, "at least one sequence");
  refused({{&a, two, 1}, {&a, two, 1}}, "sequences 0 and 1 share one KV cache");
  refused({{&a, two, 1}, {&b, bad, 1}}, "token id 100000 out of range [0, 512) (sequence 1)");
  refused({{&a, two, 3}}, "sequence 0 asks for the logits of 3 of its 2 tokens");
  refused({{&a, {}, 0}}, "sequence 0 has no tokens");
  refused({{&a, nine, 1}}, "overflows the KV cache capacity 8 (sequence 0)");
  refused({{&a, two, 2}, {&b, two, 2}, {nullptr, two, 0}}, "sequence 2 has no KV cache");
  KvCache small = model->make_cache(ctx, 8, KvCacheType::f32);
  const auto one_row = model->make_buffers(ctx, 1, 1, 8);
  expect_error_containing(
      [&] {
        const SequenceRows rows{&small, two, 1};
        model->forward(ctx, std::span(&rows, 1), *one_row);
      },
      "does not fit buffers for 1 rows");
  EXPECT_EQ(small.size(), 0);
}

TEST(BatchForward, load_model_names_the_supported_architectures) {
  // A GGUF whose general.architecture no file claims: written by the fixture, then relabelled.
  const fs::path good = model_file(0);
  const fs::path odd = testing::scratch_dir("tempra_batch_forward_test") / "llama-labelled.gguf";
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // "qwen3" appears as the architecture value first; same length, so offsets stay valid.
  const size_t at = bytes.find("qwen3");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 5, "zzzz9");
  std::ofstream(odd, std::ios::binary) << bytes;
  expect_error_containing([&] { load_model(odd); }, "architecture 'zzzz9' is not supported (supported: deepseek2, gemma3, llama, qwen3, qwen35, qwen3moe)");
}

}  // namespace
}  // namespace tempra::llm
