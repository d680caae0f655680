// tests/llm/gemma3_oracle_test.cpp: tempra's Gemma 3 forward pass (llm/model/gemma3.h) against
// llama.cpp's on the same synthesized GGUFs (logit_oracle.h: procedure and criteria).
//
// Models: SynthSpec::gemma3_tiny() (2 layers: a local one sliding over 16 positions with rope
// base 1e4, then a global one with base 1e6; 4 query heads / 1 KV head of dim 64, tied) over
// llama.cpp's SentencePiece vocab (ggml-vocab-llama-spm.gguf, 32000 tokens), in F32, F16 and
// BF16 and quantized from the F32 file to Q8_0 and Q4_K_M. The prompts of 64 and 512 tokens
// run far past the window. One more with a final logit soft cap (0.5, inside the synthetic logits'
// spread, so the tanh reshapes them; Gemma 2 uses 30 on trained logits) on the synthetic
// vocab. The heavy label's case runs Gemma 3 1B's shape in F16.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "llm/logit_oracle.h"
#include "support/errors.h"
#include "tempra/core/exec_context.h"
#include "tempra/llm/model/gemma3.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;
using namespace oracle;

const fs::path kSpmVocab = fs::path(TEMPRA_ORACLE_LLAMA_SRC) / "models/ggml-vocab-llama-spm.gguf";

const fs::path& scratch_dir() {
  return tempra::testing::scratch_dir("tempra-gemma3-oracle");
}

SynthSpec tiny_spec(DType weight_type) {
  SynthSpec spec = SynthSpec::gemma3_tiny();
  spec.weight_type = weight_type;
  spec.seed = 20261203;
  spec.vocab_gguf = kSpmVocab;
  spec.n_vocab = gguf_vocab_size(kSpmVocab);
  return spec;
}

fs::path tiny_model(const std::string& format) {
  if (format == "F32") return synth_model(scratch_dir(), "gemma3-tiny-F32", tiny_spec(DType::f32));
  if (format == "F16") return synth_model(scratch_dir(), "gemma3-tiny-F16", tiny_spec(DType::f16));
  if (format == "BF16") return synth_model(scratch_dir(), "gemma3-tiny-BF16", tiny_spec(DType::bf16));
  return quantized_model(tiny_model("F32"), scratch_dir(), "gemma3-tiny-" + format, format);
}

TEST(Gemma3Oracle, f32_logits_and_greedy_tokens_match_llama_cpp) {
  compare("gemma3-F32", tiny_model("F32"), kPrompts, kFloat);
}
TEST(Gemma3Oracle, f16_logits_and_greedy_tokens_match_llama_cpp) {
  compare("gemma3-F16", tiny_model("F16"), kPrompts, kFloat);
}
TEST(Gemma3Oracle, bf16_logits_within_llama_cpps_own_variation_and_greedy_tokens_match) {
  compare("gemma3-BF16", tiny_model("BF16"), kPrompts, kBf16);
}
TEST(Gemma3Oracle, q8_0_logits_match_llama_cpp) {
  compare("gemma3-Q8_0", tiny_model("Q8_0"), kPrompts, kQ8_0);
}
TEST(Gemma3Oracle, q4_k_m_logits_match_llama_cpp) {
  compare("gemma3-Q4_K_M", tiny_model("Q4_K_M"), kPrompts, kLowBit);
}
TEST(Gemma3Oracle, q4_k_m_standard_numerics_logits_match_llama_cpp) {
  compare("gemma3-Q4_K_M-standard", tiny_model("Q4_K_M"), kPrompts, kLowBitStandard);
}

TEST(Gemma3Oracle, final_logit_soft_cap_matches_llama_cpp) {
  SynthSpec spec = SynthSpec::gemma3_tiny();
  spec.n_vocab = 1000;
  spec.final_logit_softcapping = 0.5;  // below the logits' spread, so the cap changes them
  spec.weight_type = DType::f32;
  spec.seed = 12;
  compare("gemma3-softcap-F32", synth_model(scratch_dir(), "gemma3-softcap", spec), {1, 7, 64}, kFloat);
}

// Gemma 3 1B's shape (26 layers, 5 local to 1 global, window 512), F16, the 64-token prompt.
TEST(Gemma3OracleHeavy, gemma3_1b_f16_logits_and_greedy_tokens_match_llama_cpp) {
  SynthSpec spec = SynthSpec::gemma3_1b();
  spec.weight_type = DType::f16;
  spec.seed = 20261203;
  const fs::path path = synth_model(scratch_dir(), "gemma3-1b-F16", spec);
  compare("gemma3-1B-F16", path, {64}, kFloat);
  fs::remove(path);
}

TEST(Gemma3Load, a_synthesized_model_loads_as_gemma3) {
  SynthSpec spec = SynthSpec::gemma3_tiny();
  spec.n_vocab = 300;
  const fs::path path = synth_model(scratch_dir(), "gemma3-load", spec);
  const auto model = load_model(path);
  EXPECT_EQ(model->info().architecture, "gemma3");
  EXPECT_EQ(model->info().cache.n_head_kv, 1);
  EXPECT_EQ(model->info().cache.head_dim, 64);
}

// The tiny preset over a 300-token synthetic vocab in F32, and n token ids spread over it.
fs::path small_vocab_model(const std::string& name, uint64_t seed) {
  SynthSpec spec = SynthSpec::gemma3_tiny();
  spec.n_vocab = 300;
  spec.weight_type = DType::f32;
  spec.seed = seed;
  return synth_model(scratch_dir(), name, spec);
}
std::vector<int32_t> token_ids(int n) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(int32_t((i * 37 + 5) % 300));
  return ids;
}

// The sliding window keeps a row's bits whatever the passes: 30 tokens (past the window of 16)
// in one pass, in passes of 7, and one at a time give bit-identical logits at every position,
// on both backends and with f32 and q8_0 caches.
TEST(Gemma3Load, a_prompt_split_into_passes_gives_the_same_logits_bit_for_bit) {
  const auto model = load_model(small_vocab_model("gemma3-split", 3));
  const std::vector<int32_t> ids = token_ids(30);
  for (const Backend backend : {Backend::scalar, Backend::native}) {
    for (const KvCacheType cache_type : {KvCacheType::f32, KvCacheType::q8_0}) {
      ExecContext ctx({.threads = 2, .backend = backend});
      const auto run = [&](size_t pass) {
        KvCache cache = model->make_cache(ctx, 64, cache_type);
        std::vector<float> all;
        for (size_t at = 0; at < ids.size(); at += pass) {
          const size_t m = std::min(pass, ids.size() - at);
          const Array logits = model->forward(ctx, std::span(ids.data() + at, m), cache);
          all.insert(all.end(), logits.data<float>(), logits.data<float>() + logits.numel());
        }
        return all;
      };
      const std::vector<float> whole = run(30), sevens = run(7), ones = run(1);
      ASSERT_EQ(whole.size(), sevens.size());
      EXPECT_EQ(std::memcmp(whole.data(), sevens.data(), whole.size() * sizeof(float)), 0);
      EXPECT_EQ(std::memcmp(whole.data(), ones.data(), whole.size() * sizeof(float)), 0);
    }
  }
}

// A cache made for passes of at most 64 rows keeps only the local layer's window in a ring of
// 16 + 64 + 63 = 143 positions (286 rows), where a full one holds all 1024: 400 prompt tokens in
// passes of 64 then 100 decode steps go round the ring three times and give the full cache's logits bit
// for bit, on both backends and every cache type. The ring takes rewinds to where its next rows
// see only positions it holds (and to 0), refuses the rest and a pass past its 64 rows by name,
// and a rewound ring continues as the full cache does.
TEST(Gemma3Load, a_sliding_windows_ring_gives_the_full_caches_bits) {
  const auto model = load_model(small_vocab_model("gemma3-ring", 4));
  ASSERT_EQ(model->info().cache.layer_window, (std::vector<int64_t>{16, 0}));
  const std::vector<int32_t> ids = token_ids(500);
  for (const Backend backend : {Backend::scalar, Backend::native}) {
    for (const KvCacheType cache_type : {KvCacheType::f32, KvCacheType::f16, KvCacheType::q8_0}) {
      SCOPED_TRACE(std::string(backend == Backend::scalar ? "scalar" : "native") + " cache type " +
                   std::to_string(int(cache_type)));
      ExecContext ctx({.threads = 2, .backend = backend});
      KvCache full = model->make_cache(ctx, 1024, cache_type), ring = model->make_cache(ctx, 1024, cache_type, 64);
      EXPECT_EQ(full.layer_rows(0), 1024);
      EXPECT_EQ(ring.layer_rows(0), 286);   // the local layer: twice its ring
      EXPECT_EQ(ring.layer_rows(1), 1024);  // the global one
      const auto logits = [&](KvCache& cache, size_t at, size_t m) {
        const Array out = model->forward(ctx, std::span(ids.data() + at, m), cache);
        return std::vector<float>(out.data<float>(), out.data<float>() + out.numel());
      };
      const auto same = [&](size_t at, size_t m) {
        return logits(full, at, m) == logits(ring, at, m);
      };
      bool equal = true;
      for (size_t at = 0; at < 400; at += 64) equal = equal && same(at, std::min<size_t>(64, 400 - at));
      for (size_t at = 400; at < 500; ++at) equal = equal && same(at, 1);
      EXPECT_TRUE(equal) << "the ring's logits differ from the full cache's";

      // Rewinds: the next row at n sees from n - 15 rounded down to a multiple of 64.
      EXPECT_TRUE(ring.can_truncate(500 - 64));
      EXPECT_FALSE(ring.can_truncate(500 - 200));
      EXPECT_TRUE(ring.can_truncate(0));
      const std::string refused = testing::error_message([&] { ring.truncate(300); });
      EXPECT_NE(refused.find("a sliding window's ring no longer holds the positions"), refused.npos) << refused;
      full.truncate(470);
      ring.truncate(470);
      EXPECT_TRUE(same(470, 20)) << "after a rewind";
      const std::string too_many = testing::error_message([&] { (void)logits(ring, 0, 65); });
      EXPECT_NE(too_many.find("65 rows in one write exceed the 64 a sliding window's ring takes"), too_many.npos)
          << too_many;
    }
  }
}

}  // namespace
}  // namespace tempra::llm
