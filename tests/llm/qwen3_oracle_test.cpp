// tests/llm/qwen3_oracle_test.cpp: tempra's Qwen3 forward pass against llama.cpp's (the oracle,
// libllama from tools/oracle/install.sh), logit for logit, on the same GGUF and the same tokens.
//
// Models: synthesized by llm::write_synthetic_model with Qwen3's real tokenizer and vocab
// (151936 rows) and a small body (SynthSpec::tiny(): 2 layers, hidden 256, 4 query / 2 KV
// heads of dim 128), in F32, F16 and BF16, and quantized from the F32 file by `tempra quantize`
// (app::quantize_model, byte-identical to llama-quantize) to Q8_0, Q4_0, Q4_K_M and Q6_K. One
// more run (label `heavy`) uses the real Qwen3-0.6B shape in F16.
//
// How each prompt runs in both engines and the criteria: logit_oracle.h. Numerics::ggml rounds
// activations to f16/bf16 before f16/bf16 weight matrices and, for batches under 64 tokens,
// takes ggml's f16-accumulator flash attention, as llama.cpp's CPU backend computes them.
// Measured before each (tiny model): BF16 cosine min 0.99996 with exact activations, 0.99998
// with rounded ones; the 7-token prompt 0.999984 with f32 attention, 0.999995 with ggml's. The
// models live in a per-process temporary folder, removed when the tests end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "llama.h"
#include "quantize.h"
#include "support/files.h"
#include "llm/logit_oracle.h"
#include "support/llama_oracle.h"
#include "tempra/core/exec_context.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/llm/runtime/session.h"
#include "tempra/llm/model/synth.h"
#include "tempra/llm/tokenizer/tokenizer.h"
#include "tempra/ops/ops.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;

using namespace oracle;

const fs::path& scratch_dir() {
  return tempra::testing::scratch_dir("tempra-qwen3-oracle");
}

SynthSpec tiny_spec(DType weight_type) {
  SynthSpec spec = SynthSpec::tiny();
  spec.weight_type = weight_type;
  spec.seed = 20261130;
  spec.tokenizer_dir = TEMPRA_QWEN3_TOKENIZER_DIR;
  return spec;
}

fs::path synth_model(const std::string& name, const SynthSpec& spec) {
  return oracle::synth_model(scratch_dir(), name, spec);
}

// The tiny model in `format`: F32/F16/BF16 synthesized directly, the rest quantized from F32.
fs::path tiny_model(const std::string& format) {
  if (format == "F32") return synth_model("tiny-F32", tiny_spec(DType::f32));
  if (format == "F16") return synth_model("tiny-F16", tiny_spec(DType::f16));
  if (format == "BF16") return synth_model("tiny-BF16", tiny_spec(DType::bf16));
  return oracle::quantized_model(tiny_model("F32"), scratch_dir(), "tiny-" + format, format);
}

TEST(Qwen3Oracle, f32_logits_and_greedy_tokens_match_llama_cpp) {
  compare("F32", tiny_model("F32"), kPrompts, kFloat);
}
TEST(Qwen3Oracle, f16_logits_and_greedy_tokens_match_llama_cpp) {
  compare("F16", tiny_model("F16"), kPrompts, kFloat);
}
TEST(Qwen3Oracle, bf16_logits_within_llama_cpps_own_variation_and_greedy_tokens_match) {
  compare("BF16", tiny_model("BF16"), kPrompts, kBf16);
}
TEST(Qwen3Oracle, q8_0_logits_match_llama_cpp) {
  compare("Q8_0", tiny_model("Q8_0"), kPrompts, kQ8_0);
}
TEST(Qwen3Oracle, q4_0_logits_match_llama_cpp) {
  compare("Q4_0", tiny_model("Q4_0"), kPrompts, kLowBit);
}
TEST(Qwen3Oracle, q4_k_m_logits_match_llama_cpp) {
  compare("Q4_K_M", tiny_model("Q4_K_M"), kPrompts, kLowBit);
}
TEST(Qwen3Oracle, q6_k_logits_match_llama_cpp) {
  compare("Q6_K", tiny_model("Q6_K"), kPrompts, kLowBit);
}
TEST(Qwen3Oracle, q8_0_standard_numerics_logits_match_llama_cpp) {
  compare("Q8_0-standard", tiny_model("Q8_0"), kPrompts, kQ8_0Standard);
}
TEST(Qwen3Oracle, q4_0_standard_numerics_logits_match_llama_cpp) {
  compare("Q4_0-standard", tiny_model("Q4_0"), kPrompts, kLowBitStandard);
}
TEST(Qwen3Oracle, q4_k_m_standard_numerics_logits_match_llama_cpp) {
  compare("Q4_K_M-standard", tiny_model("Q4_K_M"), kPrompts, kLowBitStandard);
}
TEST(Qwen3Oracle, q6_k_standard_numerics_logits_match_llama_cpp) {
  compare("Q6_K-standard", tiny_model("Q6_K"), kPrompts, kLowBitStandard);
}

// The synthetic byte-level vocab (no tokenizer folder) and a separate output matrix: llama.cpp
// loads the file, tokenizes as tempra does and computes the same logits.
TEST(Qwen3Synth, synthetic_vocab_untied_model_matches_llama_cpp) {
  SynthSpec spec = SynthSpec::tiny();
  spec.n_vocab = 1000;
  spec.tied_embeddings = false;
  spec.weight_type = DType::f32;
  spec.seed = 5;
  compare("synthetic-vocab-F32", synth_model("synthetic-vocab", spec), {1, 7, 64}, kFloat);
}

TEST(Qwen3Synth, same_seed_writes_the_same_bytes_and_another_seed_other_weights) {
  SynthSpec spec = SynthSpec::tiny();
  spec.n_vocab = 300;
  spec.n_layer = 1;
  spec.seed = 11;
  const fs::path a = synth_model("seed-a", spec), b = synth_model("seed-b", spec);
  spec.seed = 12;
  const fs::path c = synth_model("seed-c", spec);
  const auto bytes = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(a), bytes(b));
  EXPECT_NE(bytes(a), bytes(c));
  // The scales the header promises, measured on the file: the embedding's std is 0.02, a
  // matrix's 1/sqrt(its row length), a norm's values 1 + N(0, 0.05).
  const io::GgufFile file = io::GgufFile::open(a);
  ExecContext ctx;
  const auto moments = [&](const std::string& name) {
    const Array t = contiguous(ctx, cast(ctx, file.tensor(name), DType::f32));
    const float* x = t.data<float>();
    double sum = 0, sum2 = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      sum += x[i];
      sum2 += double(x[i]) * x[i];
    }
    const double mean = sum / double(t.numel());
    return std::pair{mean, std::sqrt(sum2 / double(t.numel()) - mean * mean)};
  };
  EXPECT_NEAR(moments("token_embd.weight").second, 0.02, 0.001);
  EXPECT_NEAR(moments("blk.0.ffn_down.weight").second, 1.0 / std::sqrt(768.0), 0.002);
  EXPECT_NEAR(moments("blk.0.attn_q.weight").second, 1.0 / std::sqrt(256.0), 0.002);
  EXPECT_NEAR(moments("blk.0.ffn_norm.weight").first, 1.0, 0.01);
  EXPECT_NEAR(moments("blk.0.ffn_norm.weight").second, 0.05, 0.01);
}

TEST(Qwen3Synth, invalid_specs_throw_naming_the_field) {
  const auto message = [](const SynthSpec& spec) {
    try {
      write_synthetic_model(scratch_dir() / "never.gguf", spec);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  SynthSpec spec = SynthSpec::tiny();
  spec.n_head = 3;
  EXPECT_NE(message(spec).find("n_head 3 is not a multiple of n_head_kv 2"), std::string::npos) << message(spec);
  spec = SynthSpec::tiny();
  spec.head_dim = 63;
  EXPECT_NE(message(spec).find("head_dim 63 is odd"), std::string::npos) << message(spec);
  spec = SynthSpec::tiny();
  spec.n_vocab = 100;
  EXPECT_NE(message(spec).find("n_vocab 100 is too small"), std::string::npos) << message(spec);
  spec = SynthSpec::tiny();
  spec.tokenizer_dir = TEMPRA_QWEN3_TOKENIZER_DIR;
  spec.n_vocab = 151000;
  EXPECT_NE(message(spec).find("vocab size 151000 is smaller than the tokenizer's 151669"), std::string::npos)
      << message(spec);
  spec = SynthSpec::tiny();
  spec.weight_type = DType::i32;
  EXPECT_NE(message(spec).find("weight type must be f32, f16 or bf16"), std::string::npos) << message(spec);
  EXPECT_FALSE(fs::exists(scratch_dir() / "never.gguf"));
}

// The real Qwen3-0.6B shape (28 layers, hidden 1024, 16/8 heads), F16, the 64-token prompt.
TEST(Qwen3OracleHeavy, qwen3_0_6b_f16_logits_and_greedy_tokens_match_llama_cpp) {
  SynthSpec spec = SynthSpec::qwen3_0_6b();
  spec.weight_type = DType::f16;
  spec.seed = 20261130;
  spec.tokenizer_dir = TEMPRA_QWEN3_TOKENIZER_DIR;
  const fs::path path = synth_model("qwen3-0.6b-F16", spec);
  compare("0.6B-F16", path, {64}, kFloat);
  fs::remove(path);
}

}  // namespace
}  // namespace tempra::llm
