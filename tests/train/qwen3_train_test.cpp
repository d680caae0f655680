// tests/train/qwen3_train_test.cpp: the Qwen3 training forward (tempra/train/qwen3_train.h)
// against the inference forward it must equal, and LoRA on it.
//
// The two forwards hold each other: on the same loaded model (tests/apps/qwen3_fixture, every
// weight type: f32, f16, bf16, and the Q8_0 and Q4_K files tempra quantize writes from it), the
// training forward's logits for two sequences at once equal Qwen3Model::forward's for each
// sequence over a fresh cache, within 1e-5 of each position's largest logit. The measure is
// qwen3_test's: logits are softmax inputs, so error counts against their scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/qwen3_fixture.h"
#include "support/errors.h"
#include "support/files.h"
#include "tempra/ag/ag.h"
#include "tempra/ops/ops.h"
#include "tempra/optim/adamw.h"
#include "tempra/train/qwen3_train.h"

namespace tempra::train {
namespace {

namespace fs = std::filesystem;

// The fixture model in `weight_type` (0 f32, 1 f16, 30 bf16), quantized to `file_type` if given.
fs::path model_file(int32_t weight_type, const std::string& file_type = "") {
  return testing::qwen3_model_file(testing::scratch_dir("tempra_qwen3_train_test"), "w" + std::to_string(weight_type),
                                   {.weight_type = weight_type}, file_type);
}

// Two different sequences of 12 tokens.
constexpr int64_t kSeq = 12;
std::vector<int32_t> sequence(int s, int64_t n_vocab) {
  std::vector<int32_t> t;
  for (int64_t i = 0; i < kSeq; ++i) t.push_back(int32_t((17 * i + 101 * s + 5) % n_vocab));
  return t;
}

Array token_batch(ExecContext& ctx, int64_t n_vocab) {
  std::vector<int32_t> all = sequence(0, n_vocab);
  const std::vector<int32_t> second = sequence(1, n_vocab);
  all.insert(all.end(), second.begin(), second.end());
  return Array::from_values<int32_t>(ctx, {2, kSeq}, all);
}

struct ParityCase {
  const char* name;
  int32_t weight_type;
  const char* file_type;
  Backend backend;
};

class TrainForwardParity : public ::testing::TestWithParam<ParityCase> {};

TEST_P(TrainForwardParity, logits_equal_the_inference_forward_within_1e_5_of_each_positions_largest) {
  const ParityCase& p = GetParam();
  ExecContext ctx(ExecOptions{.backend = p.backend});
  llm::Qwen3Model model = llm::Qwen3Model::load(model_file(p.weight_type, p.file_type));
  // ops::linear keeps f32 activations before bf16 matrices, as exact numerics do; standard ones
  // round them to bf16 there (llm/model/decoder.h). Elsewhere the two agree.
  if (p.weight_type == 30) model.set_numerics(llm::Numerics::exact);
  const Qwen3Weights weights = Qwen3Weights::of(model);
  const int64_t V = model.info().n_vocab;
  const Array logits = qwen3_logits(ctx, weights, token_batch(ctx, V));
  ASSERT_EQ(logits.shape(), (Dims{2, kSeq, V}));
  ASSERT_EQ(logits.dtype(), DType::f32);
  double worst = 0;
  for (int s = 0; s < 2; ++s) {
    llm::KvCache cache = model.make_cache(ctx, kSeq, llm::KvCacheType::f32);
    const std::vector<int32_t> tokens = sequence(s, V);
    const Array ref = model.forward(ctx, tokens, cache);
    for (int64_t i = 0; i < kSeq; ++i) {
      const float* a = logits.data<float>() + (s * kSeq + i) * V;
      const float* b = ref.data<float>() + i * V;
      double scale = 0, err = 0;
      for (int64_t j = 0; j < V; ++j) {
        scale = std::max(scale, std::abs(double(b[j])));
        err = std::max(err, std::abs(double(a[j]) - double(b[j])));
      }
      worst = std::max(worst, err / scale);
    }
  }
  std::printf("%s: largest error %.3g of a position's largest logit\n", p.name, worst);
  EXPECT_LE(worst, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    WeightTypes, TrainForwardParity,
    ::testing::Values(ParityCase{"f32_scalar", 0, "", Backend::scalar}, ParityCase{"f32", 0, "", Backend::native},
                      ParityCase{"f16", 1, "", Backend::native}, ParityCase{"bf16", 30, "", Backend::native},
                      ParityCase{"q8_0", 0, "Q8_0", Backend::native}, ParityCase{"q4_k", 0, "Q4_K_M", Backend::native},
                      ParityCase{"q4_k_scalar", 0, "Q4_K_M", Backend::scalar}),
    [](const auto& info) { return std::string(info.param.name); });

// A small f32 model with adapters on every projection, their B drawn nonzero (a fresh adapter's
// B is zero, and then A's gradient is too).
struct Trainee {
  llm::Qwen3Model model;
  Qwen3Weights weights;
  LoraAdapter lora;
};

Trainee trainee(ExecContext& ctx, const char* file_type = "", double dropout = 0.0) {
  llm::Qwen3Model model = llm::Qwen3Model::load(model_file(0, file_type));
  Qwen3Weights weights = Qwen3Weights::of(model);
  LoraAdapter lora = make_lora(ctx, weights, {.rank = 4, .alpha = 8, .dropout = dropout, .targets = parse_targets("all"),
                                              .seed = 7});
  uint64_t offset = 0;
  for (const optim::Param& param : lora.parameters())
    if (param.name.ends_with("lora_b")) {
      NoGradGuard no_grad;
      Array p = param.value;
      const Array drawn = normal(ctx, p.shape(), 0.0, 0.05, 99, offset);
      std::copy_n(drawn.data<float>(), p.numel(), p.data<float>());
      offset += uint64_t(p.numel());
    }
  return Trainee{std::move(model), std::move(weights), std::move(lora)};
}

TEST(TrainForward, a_fresh_adapter_leaves_the_logits_bitwise_unchanged) {
  ExecContext ctx;
  const llm::Qwen3Model model = llm::Qwen3Model::load(model_file(1));
  const Qwen3Weights weights = Qwen3Weights::of(model);
  const LoraAdapter lora = make_lora(ctx, weights, {.targets = parse_targets("all")});
  const Array tokens = token_batch(ctx, model.info().n_vocab);
  const Array plain = qwen3_logits(ctx, weights, tokens);
  const Array adapted = qwen3_logits(ctx, weights, tokens, {.lora = &lora, .train_step = 0});
  const auto a = to_vector<float>(ctx, plain), b = to_vector<float>(ctx, adapted);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin()));
}

// Gradients of every adapter after one backward pass, in parameters() order.
std::vector<std::vector<float>> adapter_gradients(ExecContext& ctx, Trainee& t, bool checkpoint,
                                                  bool recompute_products = false) {
  for (const optim::Param& p : t.lora.parameters()) Array(p.value).zero_grad();
  const Array tokens = token_batch(ctx, t.model.info().n_vocab);
  std::vector<int32_t> next = to_vector<int32_t>(ctx, tokens);  // any targets will do
  for (int32_t& id : next) id = int32_t((id + 1) % t.model.info().n_vocab);
  const Array targets = Array::from_values<int32_t>(ctx, tokens.shape(), next);
  const Array loss = lm_loss(ctx,
                             qwen3_logits(ctx, t.weights, tokens,
                                          {.lora = &t.lora,
                                           .checkpoint = checkpoint,
                                           .train_step = 3,
                                           .recompute_products = recompute_products}),
                             targets);
  ag::backward(ctx, loss);
  std::vector<std::vector<float>> grads;
  for (const optim::Param& p : t.lora.parameters()) {
    EXPECT_TRUE(p.value.grad().defined()) << p.name;
    grads.push_back(to_vector<float>(ctx, p.value.grad()));
  }
  return grads;
}

TEST(TrainForward, checkpointed_blocks_give_bitwise_the_same_gradients_with_dropout) {
  ExecContext ctx;
  Trainee t = trainee(ctx, "Q8_0", 0.1);
  const auto direct = adapter_gradients(ctx, t, false);
  const auto checkpointed = adapter_gradients(ctx, t, true);  // the frozen products replayed
  const auto lean = adapter_gradients(ctx, t, true, true);    // and recomputed
  ASSERT_EQ(direct.size(), 2u * 2u * 7u);
  for (size_t i = 0; i < direct.size(); ++i) {
    EXPECT_EQ(direct[i], checkpointed[i]) << "parameter " << i;
    EXPECT_EQ(direct[i], lean[i]) << "parameter " << i << ", lean";
  }
  // The gradients are real: the last layer's down adapter's B moved.
  const auto& g = direct.back();
  EXPECT_GT(std::abs(*std::max_element(g.begin(), g.end(), [](float a, float b) { return std::abs(a) < std::abs(b); })),
            0.0f);
}

TEST(TrainForward, frozen_weights_stay_as_mapped_and_get_no_gradient) {
  ExecContext ctx;
  Trainee t = trainee(ctx, "Q4_K_M");
  EXPECT_TRUE(t.weights.layers[0].attn_q.dtype().is_block_quantized());
  adapter_gradients(ctx, t, false);
  for (const llm::Qwen3Layer& layer : t.weights.layers)
    for (const Array* w : {&layer.attn_q, &layer.attn_k, &layer.attn_v, &layer.attn_output, &layer.ffn_gate,
                           &layer.ffn_up, &layer.ffn_down, &layer.attn_norm})
      EXPECT_FALSE(w->requires_grad());
  // The weights are still the model's: views of the same mapped storage.
  EXPECT_EQ(t.weights.layers[1].ffn_down.raw_data(), t.model.layers()[1].ffn_down.raw_data());
}

TEST(TrainForward, adamw_on_the_adapters_memorizes_two_sequences) {
  ExecContext ctx;
  Trainee t = trainee(ctx, "Q8_0");
  const Array tokens = token_batch(ctx, t.model.info().n_vocab);
  // Next-token targets: each sequence shifted by one, the last position ignored.
  std::vector<int32_t> next = to_vector<int32_t>(ctx, tokens);
  for (int s = 0; s < 2; ++s) {
    for (int64_t i = 0; i + 1 < kSeq; ++i) next[size_t(s * kSeq + i)] = next[size_t(s * kSeq + i + 1)];
    next[size_t(s * kSeq + kSeq - 1)] = -100;
  }
  const Array targets = Array::from_values<int32_t>(ctx, {2, kSeq}, next);
  optim::AdamW opt(t.lora.parameters(), 1e-2);
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    const Array loss = lm_loss(ctx, qwen3_logits(ctx, t.weights, tokens, {.lora = &t.lora, .train_step = uint64_t(step)}),
                               targets);
    ag::backward(ctx, loss);
    opt.step(ctx);
    (step == 0 ? first : last) = loss.at({});
  }
  std::printf("loss %.4f -> %.4f\n", first, last);
  EXPECT_LT(last, 0.25 * first);
}

TEST(TrainForward, bad_input_is_refused_by_name) {
  ExecContext ctx;
  Trainee t = trainee(ctx);
  const auto message = [&](auto&& fn) { return testing::error_message(fn); };
  EXPECT_NE(message([&] { qwen3_logits(ctx, t.weights, Array::zeros(ctx, {12}, DType::i32)); }).find("[batch, seq]"),
            std::string::npos);
  EXPECT_NE(message([&] { qwen3_logits(ctx, t.weights, full(ctx, {1, 3}, 100000, DType::i32)); })
                .find("100000"),
            std::string::npos);
  EXPECT_NE(message([&] { parse_targets("q,x"); }).find("unknown target 'x'"), std::string::npos);
  EXPECT_NE(message([&] { parse_targets("q,q"); }).find("named twice"), std::string::npos);
  EXPECT_NE(message([&] { parse_targets("q,"); }).find("empty target"), std::string::npos);
  EXPECT_NE(message([&] { make_lora(ctx, t.weights, {.rank = 0}); }).find("rank 0"), std::string::npos);
  EXPECT_NE(message([&] { make_lora(ctx, t.weights, {.dropout = 1.0}); }).find("dropout 1"), std::string::npos);
}

}  // namespace
}  // namespace tempra::train
