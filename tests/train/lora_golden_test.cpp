// tests/train/lora_golden_test.cpp: LoRA gradients through the Qwen3 training forward
// (tempra/train/qwen3_train.h) against PyTorch's, and against finite differences.
//
// The golden (tests/goldens/grad_qwen3_lora.safetensors, tools/gen_grad_goldens.py, torch 1.13
// in f64) is a 2-layer Qwen3 with frozen weights and LoRA adapters on all seven projections,
// next-token cross entropy with ignored targets. The same weights, filled into Qwen3Weights in
// f64, run through the very forward the fine-tuner uses: the loss and all 28 adapter gradients
// must match within 1e-6 relative, with and without activation checkpointing, on both backends.
#include <gtest/gtest.h>

#include <string>

#include "ag/torch_golden.h"
#include "tempra/ag/ag.h"
#include "tempra/train/qwen3_train.h"

namespace tempra::train {
namespace {

constexpr const auto& kAll = kAllLoraTargets;

// The golden's data tensors: tokens, targets and every base weight.
std::vector<std::string> data_names(int n_layer) {
  std::vector<std::string> names = {"tokens", "targets", "token_embd", "output_norm", "output"};
  for (int il = 0; il < n_layer; ++il)
    for (const char* n : {"attn_norm", "attn_q_norm", "attn_k_norm", "ffn_norm", "q", "k", "v", "o", "gate", "up",
                          "down"})
      names.push_back("blk" + std::to_string(il) + "." + n);
  return names;
}

struct GoldenQwen3 {
  testing::GoldenModel m;
  Qwen3Weights weights;
  LoraAdapter lora;
};

GoldenQwen3 load_golden(ExecContext& ctx) {
  constexpr int kLayers = 2;
  testing::GoldenModel m = testing::load_model(ctx, "grad_qwen3_lora", data_names(kLayers));
  const auto& p = m.spec.params;
  const auto t = [&](const std::string& name) { return m.tensors.at(name); };
  Qwen3Weights w;
  llm::DecoderConfig& c = w.config;
  c.n_layer = p.at("n_layer");
  EXPECT_EQ(c.n_layer, kLayers);
  c.n_embd = p.at("dim");
  c.n_ff = p.at("ffn");
  c.n_head = p.at("q_heads");
  c.n_head_kv = p.at("kv_heads");
  c.head_dim = p.at("head_dim");
  c.n_rot = c.head_dim;
  c.n_vocab = p.at("vocab");
  c.rms_norm_eps = p.at("eps");
  c.rope_freq_base = p.at("freq_base");
  w.token_embd = t("token_embd");
  w.output_norm = t("output_norm");
  w.output = t("output");
  for (int il = 0; il < c.n_layer; ++il) {
    const std::string b = "blk" + std::to_string(il) + ".";
    w.layers.push_back(llm::Qwen3Layer{.attn_norm = t(b + "attn_norm"), .attn_q = t(b + "q"), .attn_k = t(b + "k"),
                                       .attn_v = t(b + "v"), .attn_output = t(b + "o"),
                                       .attn_q_norm = t(b + "attn_q_norm"), .attn_k_norm = t(b + "attn_k_norm"),
                                       .ffn_norm = t(b + "ffn_norm"), .ffn_gate = t(b + "gate"), .ffn_up = t(b + "up"),
                                       .ffn_down = t(b + "down")});
  }
  LoraConfig config{.rank = p.at("rank"), .alpha = p.at("alpha"), .targets = parse_targets("all")};
  LoraAdapter lora = make_lora(ctx, w, config);
  for (int il = 0; il < c.n_layer; ++il)
    for (LoraTarget target : kAll) {
      const std::string b = "blk" + std::to_string(il) + "." + std::string(target_name(target));
      lora.pair(il, target) = LoraPair{t(b + ".lora_a"), t(b + ".lora_b")};
    }
  return GoldenQwen3{std::move(m), std::move(w), std::move(lora)};
}

struct Case {
  Backend backend;
  bool checkpoint;
};

class LoraGolden : public ::testing::TestWithParam<Case> {};

TEST_P(LoraGolden, loss_and_all_28_adapter_gradients_match_torch_f64_within_1e_6) {
  ExecContext ctx(ExecOptions{.backend = GetParam().backend});
  GoldenQwen3 g = load_golden(ctx);
  const Array logits = qwen3_logits(ctx, g.weights, g.m.tensors.at("tokens"),
                                    {.lora = &g.lora, .checkpoint = GetParam().checkpoint, .train_step = 0});
  ASSERT_EQ(logits.dtype(), DType::f64);
  const Array loss = lm_loss(ctx, logits, g.m.tensors.at("targets"));
  ag::backward(ctx, loss);
  EXPECT_EQ(g.m.parameters.size(), 28u);
  testing::expect_gradients_match(ctx, g.m, loss, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Backends, LoraGolden,
                         ::testing::Values(Case{Backend::scalar, false}, Case{Backend::native, false},
                                           Case{Backend::native, true}),
                         [](const auto& info) {
                           return std::string(info.param.backend == Backend::scalar ? "scalar" : "native") +
                                  (info.param.checkpoint ? "_checkpointed" : "");
                         });

// Finite differences in f64 on one layer's adapters of every target (ag::gradcheck).
TEST(LoraGradcheck, every_target_of_layer_1_against_central_differences) {
  ExecContext ctx;
  GoldenQwen3 g = load_golden(ctx);
  std::vector<Array> inputs;
  for (LoraTarget t : kAll) {
    inputs.push_back(g.lora.pair(1, t).a);
    inputs.push_back(g.lora.pair(1, t).b);
  }
  const Array tokens = g.m.tensors.at("tokens"), targets = g.m.tensors.at("targets");
  const ag::GradFn fn = [&](ExecContext& c, const std::vector<Array>& in) {
    LoraAdapter lora = g.lora;
    for (size_t i = 0; i < std::size(kAll); ++i) lora.pair(1, kAll[i]) = LoraPair{in[2 * i], in[2 * i + 1]};
    return lm_loss(c, qwen3_logits(c, g.weights, tokens, {.lora = &lora, .checkpoint = false, .train_step = {}}), targets);
  };
  const ag::GradcheckResult r = ag::gradcheck(ctx, fn, inputs, {.tolerance = 1e-6, .seed = 42, .differentiable = {}});
  EXPECT_TRUE(r.ok) << r.worst << " (max error " << r.max_error << ")";
  EXPECT_GT(r.checked, 500);
  std::printf("gradcheck: %lld elements, max error %.3g\n", static_cast<long long>(r.checked), r.max_error);
}

}  // namespace
}  // namespace tempra::train
