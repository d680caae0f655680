// tests/llm/qwen35_oracle_test.cpp: tempra's Qwen3.5 forward pass (llm/model/qwen35.h: gated
// delta nets beside gated attention) against llama.cpp's on the same synthesized GGUFs
// (logit_oracle.h: procedure and criteria), and the loader's refusals.
//
// Models: SynthSpec::qwen35_tiny() (3 gated delta nets of 2 query/key and 4 value heads, then a
// gated attention layer rotating a quarter of each head) over the synthetic byte-level vocab, in
// F32 and F16, and quantized from the F32 file by llama.cpp's llama_model_quantize to Q8_0 and
// Q4_K_M (tempra's quantizer does not know llama.cpp's rules for the ssm tensors); and an F32
// variant of 8 layers with as many value heads as key heads. The 512-token prompt runs as one
// batch in both engines, so the recurrent state crosses every token of it; the greedy steps
// then carry it one token at a time.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "llama.h"
#include "llm/logit_oracle.h"
#include "support/llama_oracle.h"
#include "tempra/core/error.h"
#include "tempra/core/exec_context.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/model/qwen35.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;
using namespace oracle;

const fs::path& scratch_dir() {
  return tempra::testing::scratch_dir("tempra-qwen35-oracle");
}

SynthSpec tiny_spec(DType weight_type) {
  SynthSpec spec = SynthSpec::qwen35_tiny();
  spec.weight_type = weight_type;
  spec.seed = 20261203;
  return spec;
}

fs::path tiny_model(const std::string& format) {
  if (format == "F32") return synth_model(scratch_dir(), "qwen35-tiny-F32", tiny_spec(DType::f32));
  if (format == "F16") return synth_model(scratch_dir(), "qwen35-tiny-F16", tiny_spec(DType::f16));
  const llama_ftype type = format == "Q8_0" ? LLAMA_FTYPE_MOSTLY_Q8_0 : LLAMA_FTYPE_MOSTLY_Q4_K_M;
  return llama_quantized(tiny_model("F32"), scratch_dir(), "qwen35-tiny-" + format, type);
}

TEST(Qwen35Oracle, f32_logits_and_greedy_tokens_match_llama_cpp) {
  compare("qwen35-F32", tiny_model("F32"), kPrompts, kFloat);
}
TEST(Qwen35Oracle, f16_logits_and_greedy_tokens_match_llama_cpp) {
  compare("qwen35-F16", tiny_model("F16"), kPrompts, kFloat);
}
TEST(Qwen35Oracle, q8_0_logits_match_llama_cpp) {
  compare("qwen35-Q8_0", tiny_model("Q8_0"), kPrompts, kQ8_0);
}
TEST(Qwen35Oracle, q4_k_m_logits_match_llama_cpp) {
  compare("qwen35-Q4_K_M", tiny_model("Q4_K_M"), kPrompts, kLowBit);
}
// Two hybrid periods, one value head per key head (Qwen3.5's own ratio), attention every 4th.
TEST(Qwen35Oracle, f32_eight_layers_equal_heads_match_llama_cpp) {
  SynthSpec spec = tiny_spec(DType::f32);
  spec.n_layer = 8;
  spec.ssm_group_count = 4;
  compare("qwen35-8l-F32", synth_model(scratch_dir(), "qwen35-8l-F32", spec), kPrompts, kFloat);
}

std::vector<int32_t> sample_ids(int n) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(int32_t((i * 37 + 5) % 1000));
  return ids;
}

Array logits_of(const fs::path& path, std::span<const int32_t> ids) {
  ExecContext ctx({.threads = 2});
  const auto model = load_model(path);
  KvCache cache = model->make_cache(ctx, 64, KvCacheType::f32);
  return model->forward(ctx, ids, cache);
}

// The hybrid's layout as the file gives it: per-layer flags instead of the interval, and the
// multi-token-prediction blocks past the trunk (which are not loaded) give the same model.
TEST(Qwen35Load, reads_recurrent_layers_and_skips_prediction_blocks) {
  SynthSpec spec = tiny_spec(DType::f32);
  const fs::path good = synth_model(scratch_dir(), "qwen35-load", spec);
  const auto model = load_model(good);
  EXPECT_EQ(model->info().architecture, "qwen35");
  EXPECT_EQ(model->info().cache.n_layer, 1);
  EXPECT_EQ(model->info().cache.n_recurrent, 3);
  EXPECT_EQ(model->info().cache.recurrent_floats, 3 * (2 * 2 + 4) * 32 + 4 * 32 * 32);
  const std::vector<int32_t> ids = sample_ids(24);
  const Array expected = logits_of(good, ids);
  const fs::path flags =
      with_keys(good, scratch_dir(), "qwen35-flags",
                {{"qwen35.attention.recurrent_layers", {io::GgufArray{std::vector<bool>{true, true, true, false}}}}},
                {"qwen35.full_attention_interval"});
  const Array from_flags = logits_of(flags, ids);
  EXPECT_EQ(std::memcmp(expected.raw_data(), from_flags.raw_data(), expected.nbytes()), 0);
  const fs::path mtp =
      with_keys(good, scratch_dir(), "qwen35-mtp",
                {{"qwen35.block_count", {uint32_t{5}}}, {"qwen35.nextn_predict_layers", {uint32_t{1}}}});
  const Array from_mtp = logits_of(mtp, ids);
  EXPECT_EQ(std::memcmp(expected.raw_data(), from_mtp.raw_data(), expected.nbytes()), 0);
  // The other layout of the same weights is another model: the flags are read, not assumed.
  const fs::path swapped =
      with_keys(good, scratch_dir(), "qwen35-swapped", {{"qwen35.full_attention_interval", {uint32_t{2}}}});
  EXPECT_NE(load_error(swapped).find("tensor 'blk.1.attn_q.weight' is missing"), std::string::npos)
      << load_error(swapped);
}

// Several sequences in one forward, each over its own state: a prompt chunk of 11 rows and one
// of 5 in one batch, then a decode step of both in one batch, give each sequence the logits it
// gets alone, bit for bit (each sequence's rows take the path their count alone takes).
TEST(Qwen35Batch, sequences_in_one_forward_equal_each_alone) {
  const auto model = load_model(synth_model(scratch_dir(), "qwen35-load", tiny_spec(DType::f32)));
  ExecContext ctx({.threads = 2});
  const std::vector<int32_t> a = sample_ids(11), b = {9, 8, 7, 6, 5}, next_a = {40}, next_b = {41};
  auto alone = [&](const std::vector<int32_t>& prompt, const std::vector<int32_t>& step) {
    KvCache cache = model->make_cache(ctx, 32, KvCacheType::f16);
    model->forward(ctx, prompt, cache);
    return model->forward(ctx, step, cache);
  };
  const Array want_a = alone(a, next_a), want_b = alone(b, next_b);
  KvCache ca = model->make_cache(ctx, 32, KvCacheType::f16), cb = model->make_cache(ctx, 32, KvCacheType::f16);
  const auto buffers = model->make_buffers(ctx, 16, 2, 32);
  const SequenceRows prompts[] = {{&ca, a, 1}, {&cb, b, 1}};
  model->forward(ctx, prompts, *buffers);
  const SequenceRows steps[] = {{&ca, next_a, 1}, {&cb, next_b, 1}};
  model->forward(ctx, steps, *buffers);
  const int64_t n_vocab = model->info().n_vocab;
  EXPECT_EQ(std::memcmp(buffers->logits_row(0).data(), want_a.data<float>(), size_t(n_vocab) * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(buffers->logits_row(1).data(), want_b.data<float>(), size_t(n_vocab) * sizeof(float)), 0);
}

TEST(Qwen35Load, refuses_what_it_does_not_run_by_name) {
  const fs::path good = synth_model(scratch_dir(), "qwen35-load", tiny_spec(DType::f32));
  const auto refused = [&](const std::string& name, const std::vector<std::pair<std::string, io::GgufValue>>& keys,
                           const std::string& message) {
    const std::string error = load_error(with_keys(good, scratch_dir(), name, keys));
    EXPECT_NE(error.find(message), std::string::npos) << name << ": " << error;
  };
  refused("inner", {{"qwen35.ssm.inner_size", {uint32_t{96}}}},
          "ssm.inner_size 96 differs from time_step_rank x state_size 128");
  refused("heads", {{"qwen35.ssm.time_step_rank", {uint32_t{3}}}}, "ssm.time_step_rank 3 (a multiple of the groups");
  // A few bytes of metadata asking for a 4 GiB state per layer and sequence: refused at load.
  refused("state", {{"qwen35.ssm.state_size", {uint32_t{4096}}}, {"qwen35.ssm.time_step_rank", {uint32_t{64}}}},
          "a state of at most 16777216 floats) are out of range");
  refused("sections", {{"qwen35.rope.dimension_sections", {io::GgufArray{std::vector<int32_t>{2, 2, 2, 2}}}}},
          "leave rotated pair 6 of 8 without a text position");
  refused("sections_length", {{"qwen35.rope.dimension_sections", {io::GgufArray{std::vector<int32_t>{3, 3}}}}},
          "'qwen35.rope.dimension_sections' must be an array of 4 non-negative integers");
  refused("nextn", {{"qwen35.nextn_predict_layers", {uint32_t{4}}}}, "nextn_predict_layers 4 leaves no layer of the 4");
  refused("all_recurrent", {{"qwen35.full_attention_interval", {uint32_t{5}}}}, "no layer attends");
  refused("rot", {{"qwen35.rope.dimension_count", {uint32_t{66}}}},
          "rope.dimension_count 66 must be even and in (0, head dim 64]");
}

}  // namespace
}  // namespace tempra::llm
