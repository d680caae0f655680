// tests/train/pretrain_test.cpp: training every weight (tempra/train/pretrain.h): the trainable
// copy computes what the model does and gets a gradient everywhere (the tied head's included),
// checkpointed blocks give the same gradients, steps lower the loss, resume is bit for bit,
// windows and bits per byte follow the contract.
#include "tempra/train/pretrain.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "support/files.h"
#include "tempra/ag/backward.h"
#include "tempra/core/error.h"
#include "tempra/core/grad_node.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/synth.h"
#include "tempra/ops/ops.h"

namespace tempra::train {
namespace {

namespace fs = std::filesystem;

fs::path scratch() {
  return testing::scratch_dir("tempra_pretrain_test");
}

// A small tied Qwen3 with the synthesizer's byte-level vocab, f16 on disk (the copies are f32).
const fs::path& model_file() {
  static const fs::path path = [] {
    const fs::path p = scratch() / "init.gguf";
    llm::SynthSpec spec{.n_layer = 2,
                        .n_embd = 64,
                        .n_ff = 128,
                        .n_head = 2,
                        .n_head_kv = 1,
                        .head_dim = 32,
                        .n_vocab = 300,
                        .context_length = 512,
                        .weight_type = DType::f16};
    llm::write_synthetic_model(p, spec);
    return p;
  }();
  return path;
}

struct Loaded {
  io::GgufModel gguf = io::GgufModel::open(model_file());
  llm::Qwen3Model model = llm::Qwen3Model::load(gguf);
  llm::Tokenizer tokenizer = llm::Tokenizer::from_gguf(gguf.metadata());
};

TokenStream stream_of(const llm::Tokenizer& tokenizer, const std::string& text) {
  return {tokenizer.encode(text), {}};
}

const std::string kText =
    "the cat sat on the mat and the dog sat on the log; the cat and the dog sat together on the mat. ";

std::string repeated(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += kText;
  return s;
}

std::vector<float> values(const Array& a) {
  const float* p = a.data<float>();
  return {p, p + a.numel()};
}

TEST(Pretrain, the_trainable_copy_computes_the_models_logits) {
  ExecContext ctx;
  Loaded m;
  const Qwen3Weights frozen = Qwen3Weights::of(m.model);
  const TrainableQwen3 t = TrainableQwen3::copy_of(ctx, frozen);
  EXPECT_TRUE(t.tied);
  EXPECT_TRUE(t.weights.output.shares_storage_with(t.weights.token_embd));
  EXPECT_EQ(t.matrices.size(), 2u * 7u);
  EXPECT_EQ(t.others.size(), 2u + 2u * 4u);  // embedding, output norm; four norms per layer
  const Array tokens = Array::from_values<int32_t>(ctx, {1, 12}, std::vector<int32_t>(12, 97));
  NoGradGuard no_grad;
  // The f16 weights widened to f32 are the same numbers: the logits agree closely.
  const std::vector<float> a = values(qwen3_logits(ctx, frozen, tokens)),
                           b = values(qwen3_logits(ctx, t.weights, tokens));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-3) << i;
}

TEST(Pretrain, every_weight_gets_a_gradient_and_checkpointing_gives_the_same_bits) {
  ExecContext ctx;
  Loaded m;
  const TokenStream s = stream_of(m.tokenizer, repeated(3));
  const Windows w = stream_windows(ctx, s, {0, 7}, 32);
  std::vector<std::vector<float>> grads[2];
  for (const bool checkpoint : {false, true}) {
    TrainableQwen3 t = TrainableQwen3::copy_of(ctx, Qwen3Weights::of(m.model));
    // Default options: qwen3_logits itself must see that these weights train (no replayed products).
    TrainForwardOptions options;
    options.checkpoint = checkpoint;
    const Array loss = lm_loss(ctx, qwen3_logits(ctx, t.weights, w.tokens, options), w.targets);
    ag::backward(ctx, loss);
    for (const optim::Param& p : t.params()) {
      ASSERT_TRUE(p.value.grad().defined()) << p.name;
      grads[checkpoint].push_back(values(p.value.grad()));
    }
    // The tied head's gradient reaches embedding rows of tokens the input never holds.
    const Array g = t.weights.token_embd.grad();
    const int64_t unused_row = 299;  // <|im_end|>: not in the text
    double sum = 0;
    for (int64_t j = 0; j < g.dim(1); ++j) sum += std::abs(g.data<float>()[unused_row * g.dim(1) + j]);
    EXPECT_GT(sum, 0.0);
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i) EXPECT_EQ(grads[0][i], grads[1][i]) << "param " << i;
}

TEST(Pretrain, steps_lower_the_loss_on_repeated_text) {
  ExecContext ctx;
  Loaded m;
  TrainableQwen3 t = TrainableQwen3::copy_of(ctx, Qwen3Weights::of(m.model));
  const TokenStream s = stream_of(m.tokenizer, repeated(20));
  Pretrainer trainer(ctx, t, s, {.batch = 4, .seq = 32, .steps = 40, .warmup = 5, .seed = 3});
  double first = 0, last = 0;
  for (int i = 0; i < 40; ++i) {
    const PretrainStep r = trainer.step();
    EXPECT_TRUE(std::isfinite(r.loss));
    EXPECT_GT(r.grad_norm, 0.0);
    if (i == 0) first = r.loss;
    last = r.loss;
  }
  EXPECT_LT(last, 0.5 * first) << "first " << first << ", last " << last;
}

TEST(Pretrain, a_resumed_run_continues_bit_for_bit) {
  const fs::path ckpt = scratch() / "resume.ckpt";
  const PretrainOptions o{.batch = 2, .seq = 16, .steps = 6, .warmup = 2, .seed = 9};
  const auto final_weights = [&](bool resume) {
    ExecContext ctx;
    Loaded m;
    TrainableQwen3 t = TrainableQwen3::copy_of(ctx, Qwen3Weights::of(m.model));
    const TokenStream s = stream_of(m.tokenizer, repeated(4));
    Pretrainer trainer(ctx, t, s, o);
    if (resume) {
      for (int i = 0; i < 3; ++i) trainer.step();
      trainer.save(ckpt);
      TrainableQwen3 fresh = TrainableQwen3::copy_of(ctx, Qwen3Weights::of(m.model));
      Pretrainer again(ctx, fresh, s, o);
      again.load(ckpt);
      EXPECT_EQ(again.steps_done(), 3);
      while (again.steps_done() < o.steps) again.step();
      std::vector<std::vector<float>> out;
      for (const optim::Param& p : fresh.params()) out.push_back(values(p.value));
      return out;
    }
    while (trainer.steps_done() < o.steps) trainer.step();
    std::vector<std::vector<float>> out;
    for (const optim::Param& p : t.params()) out.push_back(values(p.value));
    return out;
  };
  EXPECT_EQ(final_weights(false), final_weights(true));
}

TEST(Pretrain, a_checkpoint_of_another_run_is_refused_by_name) {
  const fs::path ckpt = scratch() / "other.ckpt";
  ExecContext ctx;
  Loaded m;
  TrainableQwen3 t = TrainableQwen3::copy_of(ctx, Qwen3Weights::of(m.model));
  const TokenStream s = stream_of(m.tokenizer, repeated(4));
  Pretrainer(ctx, t, s, {.batch = 2, .seq = 16, .steps = 5}).save(ckpt);
  Pretrainer other(ctx, t, s, {.batch = 2, .seq = 16, .steps = 5, .lr_matrix = 0.01});
  try {
    other.load(ckpt);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lr_matrix"), std::string::npos) << e.what();
  }
}

TEST(Pretrain, windows_mark_untrained_targets) {
  ExecContext ctx;
  const TokenStream s{{10, 11, 12, 13, 14, 15}, {1, 1, 0, 1, 0, 1}};
  const Windows w = stream_windows(ctx, s, {1}, 4);
  const int32_t* tok = w.tokens.data<int32_t>();
  const int32_t* tgt = w.targets.data<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(tok, tok + 4), (std::vector<int32_t>{11, 12, 13, 14}));
  EXPECT_EQ(std::vector<int32_t>(tgt, tgt + 4), (std::vector<int32_t>{-100, 13, -100, 15}));
  EXPECT_EQ(w.trained, 2);
  EXPECT_THROW(stream_windows(ctx, s, {2}, 4), Error);
}

// A model whose logits are all equal predicts every token with probability 1/V: its bits per
// byte are the scored targets' count times log2(V) over their bytes. One window covers the whole
// text after its first token, a special one, so the scored bytes are the text's bytes without
// the specials' text.
TEST(Pretrain, bits_per_byte_of_a_uniform_model) {
  ExecContext ctx;
  Loaded m;
  TrainableQwen3 t = TrainableQwen3::copy_of(ctx, Qwen3Weights::of(m.model));
  std::memset(t.weights.token_embd.raw_data(), 0, t.weights.token_embd.nbytes());  // tied: the head too
  const std::string text = "<|endoftext|>abc de<|endoftext|>fghij klm nop<|endoftext|>qr";
  const TokenStream val = stream_of(m.tokenizer, text);
  const int64_t seq = int64_t(val.tokens.size()) - 1;
  Pretrainer trainer(ctx, t, val, {.batch = 2, .seq = seq});
  const int64_t specials = 3, text_bytes = int64_t(text.size()) - specials * 13;
  const int64_t scored = int64_t(val.tokens.size()) - specials;
  const double expected = double(scored) * std::log2(300.0) / double(text_bytes);
  EXPECT_NEAR(trainer.eval_bpb(val, m.tokenizer, 1000), expected, 1e-5 * expected);
}

}  // namespace
}  // namespace tempra::train
