// tests/llm/deepseek2_oracle_test.cpp: tempra's DeepSeek-V2 forward pass (llm/model/deepseek2.h)
// against llama.cpp's on the same synthesized GGUFs (logit_oracle.h: procedure and criteria).
//
// Models: SynthSpec::deepseek2_tiny() (3 layers, the first dense; latent attention with YaRN;
// 8 routed experts, 2 used, plus a shared one) over the synthetic byte-level vocab, in F32 and
// F16 and quantized from the F32 file to Q8_0 by llama.cpp's llama_model_quantize (tempra's
// quantizer refuses mixtures of experts); and an F32 variant with the query bottleneck
// (q_lora_rank, as the full-size DeepSeek-V2 has) and without YaRN, and one with V2's
// group-limited routing and normalized, scaled weights. The routing criteria are
// the Qwen3 MoE oracle's (qwen3moe_oracle_test.cpp): positions are held up to the first one
// either engine routes differently, which must be a near-tie.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "llama.h"
#include "llm/logit_oracle.h"
#include "support/llama_oracle.h"
#include "tempra/core/error.h"
#include "tempra/core/exec_context.h"
#include "tempra/llm/model/deepseek2.h"
#include "tempra/llm/model/expert_cache.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;
using namespace oracle;

const fs::path& scratch_dir() {
  return tempra::testing::scratch_dir("tempra-deepseek2-oracle");
}

SynthSpec tiny_spec(DType weight_type) {
  SynthSpec spec = SynthSpec::deepseek2_tiny();
  spec.weight_type = weight_type;
  spec.seed = 20261202;
  return spec;
}

fs::path tiny_model(const std::string& format) {
  if (format == "F32") return synth_model(scratch_dir(), "deepseek2-tiny-F32", tiny_spec(DType::f32));
  if (format == "F16") return synth_model(scratch_dir(), "deepseek2-tiny-F16", tiny_spec(DType::f16));
  return llama_quantized(tiny_model("F32"), scratch_dir(), "deepseek2-tiny-" + format, LLAMA_FTYPE_MOSTLY_Q8_0);
}

constexpr Criteria kFloatMoe{.min_cosine = 0.99999, .min_top1_agreement = 1.0, .greedy = false,
                             .router_near_tie = 4.5e-3, .min_held_positions = 64};
// F32 with routing features llama.cpp's F32 runs alike: every position held (no routing
// difference excused).
constexpr Criteria kFloatMoeEverywhere{.min_cosine = 0.99999, .min_top1_agreement = 1.0, .greedy = false,
                                       .router_near_tie = 1e-6, .min_held_positions = 1 + 7 + 64 + 512};
constexpr Criteria kQ8_0Moe{.min_cosine = 0.999, .min_top1_agreement = 0.90, .greedy = false,
                            .router_near_tie = 4.5e-2, .min_held_positions = 64};

TEST(DeepSeek2Oracle, f32_logits_and_greedy_tokens_match_llama_cpp) {
  compare("deepseek2-F32", tiny_model("F32"), kPrompts, kFloat);
}
TEST(DeepSeek2Oracle, f16_logits_match_llama_cpp_up_to_routing_near_ties) {
  compare("deepseek2-F16", tiny_model("F16"), kPrompts, kFloatMoe);
}
TEST(DeepSeek2Oracle, q8_0_logits_match_llama_cpp_up_to_routing_near_ties) {
  compare("deepseek2-Q8_0", tiny_model("Q8_0"), kPrompts, kQ8_0Moe);
}
// The full-size models' query bottleneck (attn_q_a, its norm, attn_q_b), plain rope.
TEST(DeepSeek2Oracle, f32_query_bottleneck_without_yarn_matches_llama_cpp) {
  SynthSpec spec = tiny_spec(DType::f32);
  spec.q_lora_rank = 96;
  spec.yarn_factor = 0;
  spec.yarn_mscale_all_dim = 0;
  compare("deepseek2-q_lora-F32", synth_model(scratch_dir(), "deepseek2-q-lora-F32", spec), kPrompts, kFloat);
}

// DeepSeek-V2's routing beyond V2-Lite's: experts in groups of which each token takes the best
// (2 groups of 4, scored by their two best experts; 1 used), weights normalized and scaled
// (V2's routed_scaling_factor is 16).
TEST(DeepSeek2Oracle, f32_group_limited_normalized_scaled_routing_matches_llama_cpp) {
  SynthSpec spec = tiny_spec(DType::f32);
  spec.n_expert_groups = 2;
  spec.n_group_used = 1;
  spec.expert_weights_norm = true;
  spec.expert_weights_scale = 2.5;
  const fs::path grouped = synth_model(scratch_dir(), "deepseek2-groups-F32", spec);
  compare("deepseek2-groups-F32", grouped, kPrompts, kFloatMoeEverywhere);
  // The groups matter: without them the same weights route some of these tokens elsewhere.
  spec.n_expert_groups = spec.n_group_used = 0;
  const fs::path ungrouped = synth_model(scratch_dir(), "deepseek2-ungrouped-F32", spec);
  ExecContext ctx({.threads = 2});
  std::vector<int32_t> ids;
  for (int i = 0; i < 64; ++i) ids.push_back(int32_t((i * 37 + 5) % 1000));
  const auto a = load_model(grouped), b = load_model(ungrouped);
  KvCache ca = a->make_cache(ctx, 64, KvCacheType::f32), cb = b->make_cache(ctx, 64, KvCacheType::f32);
  const Array x = a->forward(ctx, ids, ca), y = b->forward(ctx, ids, cb);
  EXPECT_NE(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()), 0);
}

// DeepSeek-V3's routing in this architecture: a sigmoid router whose scores carry a selection
// bias per expert (exp_probs_b) for choosing, not for weighting, in groups, normalized and scaled.
TEST(DeepSeek2Oracle, f32_sigmoid_gating_with_selection_bias_matches_llama_cpp) {
  SynthSpec spec = tiny_spec(DType::f32);
  spec.sigmoid_gating = true;
  spec.n_expert_groups = 4;
  spec.n_group_used = 2;
  spec.expert_weights_norm = true;
  spec.expert_weights_scale = 2.5;
  compare("deepseek2-sigmoid-F32", synth_model(scratch_dir(), "deepseek2-sigmoid-F32", spec), kPrompts,
          kFloatMoeEverywhere);
}

// The loader's refusals, each naming what the file asks for that the forward does not do.
TEST(DeepSeek2Load, refuses_what_it_does_not_run_by_name) {
  SynthSpec spec = tiny_spec(DType::f32);
  spec.n_layer = 2;
  const fs::path good = synth_model(scratch_dir(), "deepseek2-load", spec);
  EXPECT_EQ(load_model(good)->info().architecture, "deepseek2");
  EXPECT_EQ(load_model(good)->info().cache.values_in_keys, true);
  const auto refused = [&](const std::string& name, const std::vector<std::pair<std::string, io::GgufValue>>& keys,
                           const std::string& message) {
    const std::string error = load_error(with_keys(good, scratch_dir(), name, keys));
    EXPECT_NE(error.find(message), std::string::npos) << name << ": " << error;
  };
  refused("gating", {{"deepseek2.expert_gating_func", {uint32_t{3}}}}, "expert_gating_func 3 is not supported");
  refused("temperature", {{"deepseek2.attention.temperature_scale", {0.1f}}},
          "attention.temperature_scale (attention temperature tuning) is not supported");
  refused("no_q_lora", {{"deepseek2.attention.q_lora_rank", {std::string("x")}}},
          "'deepseek2.attention.q_lora_rank' must be a non-negative integer");
  refused("value_length", {{"deepseek2.attention.value_length", {uint32_t{160}}}},
          "value_length kv_lora_rank and head_count_kv 1");
  refused("lead", {{"deepseek2.leading_dense_block_count", {uint32_t{0xffffffff}}}},
          "leading_dense_block_count 4294967295 exceeds block_count 2");
  refused("shared", {{"deepseek2.expert_shared_count", {uint32_t{0xffffffff}}}}, "expert_shared_count 4294967295 is out of range");
  refused("groups", {{"deepseek2.expert_group_count", {uint32_t{3}}}, {"deepseek2.expert_group_used_count", {uint32_t{1}}}},
          "must divide the 8 experts");
  // The form converted before llama.cpp split attn_kv_b: no key_length_mla.
  const fs::path legacy = with_keys(good, scratch_dir(), "deepseek2-legacy", {}, {"deepseek2.attention.key_length_mla"});
  EXPECT_NE(load_error(legacy).find("files with the unsplit attn_kv_b"), std::string::npos);
}

}  // namespace
}  // namespace tempra::llm
