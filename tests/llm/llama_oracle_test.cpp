// tests/llm/llama_oracle_test.cpp: tempra's Llama forward pass (llm/model/llama.h) against
// llama.cpp's on the same synthesized GGUFs (logit_oracle.h: procedure and criteria).
//
// Models: SynthSpec::llama_tiny() (2 layers, hidden 256, 4 query / 2 KV heads of dim 64, untied,
// Llama 3's rope scaling as a rope_freqs tensor) over llama.cpp's own Llama 3 vocab
// (models/ggml-vocab-llama-bpe.gguf: gpt2 model, llama-bpe pre-tokenizer, 128256 tokens), in
// F32, F16 and BF16, and quantized from the F32 file to Q8_0, Q4_0, Q4_K_M and Q6_K; one on
// llama.cpp's Llama 2 SentencePiece vocab (ggml-vocab-llama-spm.gguf); one on the synthetic
// vocab with tied embeddings and no rope scaling; one with linear rope scaling. The heavy label's case runs
// Llama 3.2 1B's shape in F16. The LlamaLoad cases check what the loader refuses.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "llm/logit_oracle.h"
#include "tempra/core/error.h"
#include "tempra/core/exec_context.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/llm/model/llama.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;
using namespace oracle;

const fs::path kLlamaBpeVocab = fs::path(TEMPRA_ORACLE_LLAMA_SRC) / "models/ggml-vocab-llama-bpe.gguf";

const fs::path& scratch_dir() {
  return tempra::testing::scratch_dir("tempra-llama-oracle");
}

SynthSpec tiny_spec(DType weight_type) {
  SynthSpec spec = SynthSpec::llama_tiny();
  spec.weight_type = weight_type;
  spec.seed = 20261202;
  spec.vocab_gguf = kLlamaBpeVocab;
  return spec;
}

fs::path tiny_model(const std::string& format) {
  if (format == "F32") return synth_model(scratch_dir(), "llama-tiny-F32", tiny_spec(DType::f32));
  if (format == "F16") return synth_model(scratch_dir(), "llama-tiny-F16", tiny_spec(DType::f16));
  if (format == "BF16") return synth_model(scratch_dir(), "llama-tiny-BF16", tiny_spec(DType::bf16));
  return quantized_model(tiny_model("F32"), scratch_dir(), "llama-tiny-" + format, format);
}

TEST(LlamaOracle, f32_logits_and_greedy_tokens_match_llama_cpp) {
  compare("llama-F32", tiny_model("F32"), kPrompts, kFloat);
}
TEST(LlamaOracle, f16_logits_and_greedy_tokens_match_llama_cpp) {
  compare("llama-F16", tiny_model("F16"), kPrompts, kFloat);
}
TEST(LlamaOracle, bf16_logits_within_llama_cpps_own_variation_and_greedy_tokens_match) {
  compare("llama-BF16", tiny_model("BF16"), kPrompts, kBf16);
}
TEST(LlamaOracle, q8_0_logits_match_llama_cpp) {
  compare("llama-Q8_0", tiny_model("Q8_0"), kPrompts, kQ8_0);
}
TEST(LlamaOracle, q4_0_logits_match_llama_cpp) {
  compare("llama-Q4_0", tiny_model("Q4_0"), kPrompts, kLowBit);
}
TEST(LlamaOracle, q4_k_m_logits_match_llama_cpp) {
  compare("llama-Q4_K_M", tiny_model("Q4_K_M"), kPrompts, kLowBit);
}
TEST(LlamaOracle, q6_k_logits_match_llama_cpp) {
  compare("llama-Q6_K", tiny_model("Q6_K"), kPrompts, kLowBit);
}
TEST(LlamaOracle, q4_k_m_standard_numerics_logits_match_llama_cpp) {
  compare("llama-Q4_K_M-standard", tiny_model("Q4_K_M"), kPrompts, kLowBitStandard);
}

// Llama 2's shape of vocab: llama.cpp's SentencePiece vocab (ggml-vocab-llama-spm.gguf, 32000
// tokens), no rope scaling, F16.
TEST(LlamaOracle, sentencepiece_vocab_f16_model_matches_llama_cpp) {
  SynthSpec spec = SynthSpec::llama_tiny();
  spec.vocab_gguf = fs::path(TEMPRA_ORACLE_LLAMA_SRC) / "models/ggml-vocab-llama-spm.gguf";
  spec.n_vocab = gguf_vocab_size(spec.vocab_gguf);
  spec.llama3_rope_scaling = false;
  spec.rope_freq_base = 10000.0;
  spec.seed = 11;
  compare("llama-spm-F16", synth_model(scratch_dir(), "llama-spm", spec), kPrompts, kFloat);
}

// Tied embeddings, no rope_freqs, the synthetic byte-level vocab.
TEST(LlamaOracle, synthetic_vocab_tied_model_without_rope_scaling_matches_llama_cpp) {
  SynthSpec spec = SynthSpec::llama_tiny();
  spec.n_vocab = 1000;
  spec.tied_embeddings = true;
  spec.llama3_rope_scaling = false;
  spec.weight_type = DType::f32;
  spec.seed = 9;
  compare("llama-synthetic-vocab-F32", synth_model(scratch_dir(), "llama-synthetic", spec), {1, 7, 64}, kFloat);
}

// Linear rope scaling (rope.scaling.factor 4): every position divided by 4, in both engines.
fs::path with_keys(const fs::path& from, const std::string& name,
                   const std::vector<std::pair<std::string, io::GgufValue>>& keys);
TEST(LlamaOracle, linear_rope_scaling_matches_llama_cpp) {
  SynthSpec spec = SynthSpec::llama_tiny();
  spec.n_vocab = 1000;
  spec.llama3_rope_scaling = false;
  spec.weight_type = DType::f32;
  spec.seed = 10;
  const fs::path plain = synth_model(scratch_dir(), "llama-unscaled", spec);
  compare("llama-linear-rope-F32",
          with_keys(plain, "llama-linear-rope",
                    {{"llama.rope.scaling.type", {std::string("linear")}}, {"llama.rope.scaling.factor", {4.0f}}}),
          {1, 7, 64}, kFloat);
}

// YaRN (factor 8 over 256 training positions, llama.cpp's generic attention factor): each pair's
// angle blends the interpolated and the extrapolated one, and the rotation grows by
// 1 + 0.1 ln 8, in both engines; the 512-token prompt runs past the original context.
TEST(LlamaOracle, yarn_rope_scaling_matches_llama_cpp) {
  SynthSpec spec = SynthSpec::llama_tiny();
  spec.n_vocab = 1000;
  spec.llama3_rope_scaling = false;
  spec.weight_type = DType::f32;
  spec.seed = 12;
  spec.yarn_factor = 8;
  spec.yarn_original_context = 256;
  compare("llama-yarn-rope-F32", synth_model(scratch_dir(), "llama-yarn", spec), kPrompts, kFloat);
}

// Llama 3.2 1B's shape (16 layers, hidden 2048, 32/8 heads of 64), F16, the 64-token prompt.
TEST(LlamaOracleHeavy, llama_1b_f16_logits_and_greedy_tokens_match_llama_cpp) {
  SynthSpec spec = SynthSpec::llama_1b();
  spec.weight_type = DType::f16;
  spec.seed = 20261202;
  spec.vocab_gguf = kLlamaBpeVocab;
  const fs::path path = synth_model(scratch_dir(), "llama-1b-F16", spec);
  compare("llama-1B-F16", path, {64}, kFloat);
  fs::remove(path);
}

// The loader's refusals, each naming what it refuses.
fs::path with_keys(const fs::path& from, const std::string& name,
                   const std::vector<std::pair<std::string, io::GgufValue>>& keys) {
  return oracle::with_keys(from, scratch_dir(), name, keys);
}

TEST(LlamaLoad, refuses_experts_a_partial_rope_and_longrope_by_name) {
  SynthSpec spec = SynthSpec::llama_tiny();
  spec.n_vocab = 300;
  spec.n_layer = 1;
  const fs::path good = synth_model(scratch_dir(), "llama-load", spec);
  EXPECT_EQ(load_model(good)->info().architecture, "llama");
  EXPECT_NE(load_error(with_keys(good, "experts", {{"llama.expert_count", {uint32_t{8}}}}))
                .find("llama.expert_count is 8: mixtures of experts are not supported"),
            std::string::npos);
  EXPECT_NE(load_error(with_keys(good, "rot", {{"llama.rope.dimension_count", {uint32_t{32}}}}))
                .find("rope.dimension_count 32 differs from the head dim 64: partial rotation is not supported"),
            std::string::npos);
  EXPECT_NE(load_error(with_keys(good, "longrope",
                                 {{"llama.rope.scaling.type", {std::string("longrope")}},
                                  {"llama.rope.scaling.factor", {4.0f}}}))
                .find("rope scaling 'longrope' is not supported (none, linear and yarn are)"),
            std::string::npos);
  // Linear scaling divides every position by the factor: it loads, and changes the logits.
  const fs::path linear = with_keys(good, "linear", {{"llama.rope.scaling.type", {std::string("linear")}},
                                                     {"llama.rope.scaling.factor", {4.0f}}});
  ExecContext ctx;
  const std::vector<int32_t> ids = {5, 9, 200, 17};
  const auto plain_model = load_model(good), scaled_model = load_model(linear);
  KvCache a = plain_model->make_cache(ctx, 16, KvCacheType::f32), b = scaled_model->make_cache(ctx, 16, KvCacheType::f32);
  const Array plain = plain_model->forward(ctx, ids, a), scaled = scaled_model->forward(ctx, ids, b);
  EXPECT_EQ(std::memcmp(plain.data<float>(), scaled.data<float>(), 300 * sizeof(float)), 0) << "position 0 rotates by 0";
  EXPECT_NE(std::memcmp(plain.data<float>(), scaled.data<float>(), size_t(plain.numel()) * sizeof(float)), 0);
}

TEST(LlamaSynth, rope_factors_follow_llama_3_1s_schedule) {
  const std::vector<float> f = llama3_rope_factors(64, 500000.0);
  ASSERT_EQ(f.size(), 32u);
  EXPECT_EQ(f.front(), 1.0f);  // the shortest wavelengths are left alone
  EXPECT_EQ(f.back(), 8.0f);   // the longest are divided by the factor
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
}

}  // namespace
}  // namespace tempra::llm
