// tests/train/adapter_test.cpp: LoRA adapter files (tempra/train/adapter.h): the round trip, the
// merge's algebra, and every way a file can be wrong, refused by name with the base untouched.
#include "tempra/train/adapter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "apps/qwen3_fixture.h"
#include "support/errors.h"
#include "support/files.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/ops/ops.h"
#include "tempra/train/qwen3_train.h"

namespace tempra::train {
namespace {

namespace fs = std::filesystem;

fs::path scratch() { return testing::scratch_dir("tempra_adapter_test"); }

fs::path base_model() {
  const fs::path path = scratch() / "base.gguf";
  if (!fs::exists(path)) testing::write_qwen3_model(path, {.weight_type = 1});
  return path;
}

LoraAdapter some_adapter(ExecContext& ctx, const fs::path& base, const char* targets = "q,v,down") {
  const llm::Qwen3Model model = llm::Qwen3Model::load(base);
  LoraAdapter lora = make_lora(ctx, Qwen3Weights::of(model), {.rank = 4, .alpha = 6, .targets = parse_targets(targets), .seed = 5});
  for (const optim::Param& p : lora.parameters())
    if (p.name.ends_with("lora_b")) {
      Array b = p.value;
      const Array drawn = normal(ctx, b.shape(), 0.0, 0.1, 1);
      std::copy_n(drawn.data<float>(), b.numel(), b.data<float>());
    }
  return lora;
}

TEST(AdapterFile, round_trips_every_pair_bit_for_bit_with_llama_cpps_names_and_keys) {
  ExecContext ctx;
  const fs::path base = base_model(), path = scratch() / "round_trip.gguf";
  const LoraAdapter lora = some_adapter(ctx, base);
  write_lora_gguf(path, lora, "qwen3");
  const io::GgufFile f = io::GgufFile::open(path);
  EXPECT_EQ(f.metadata().get<std::string>("general.type"), "adapter");
  EXPECT_EQ(f.metadata().get<std::string>("adapter.type"), "lora");
  EXPECT_EQ(f.metadata().get<float>("adapter.lora.alpha"), 6.0f);
  ASSERT_EQ(f.tensors().size(), 2u * 3u * 2u);
  EXPECT_EQ(f.tensors()[0].name, "blk.0.attn_q.weight.lora_a");
  EXPECT_EQ(f.tensors()[0].ne[0], 256);  // ggml's ne {in, rank}
  EXPECT_EQ(f.tensors()[0].ne[1], 4);

  const LoraAdapter back = read_lora_gguf(ctx, path, io::GgufModel::open(base));
  EXPECT_EQ(back.config().rank, 4);
  EXPECT_EQ(back.config().alpha, 6.0);
  EXPECT_EQ(back.config().targets, parse_targets("q,v,down"));
  const auto a = lora.parameters(), b = back.parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(to_vector<float>(ctx, a[i].value), to_vector<float>(ctx, b[i].value)) << a[i].name;
  }
}

TEST(AdapterFile, merging_is_w_plus_scale_b_a_and_the_training_forward_agrees) {
  ExecContext ctx;
  const fs::path base = base_model(), path = scratch() / "merge.gguf";
  const LoraAdapter lora = some_adapter(ctx, base, "all");
  write_lora_gguf(path, lora, "qwen3");
  io::GgufModel gguf = io::GgufModel::open(base);
  const Array w = gguf.tensor("blk.1.ffn_up.weight");
  merge_lora(ctx, gguf, read_lora_gguf(ctx, path, gguf));
  const Array merged = gguf.tensor("blk.1.ffn_up.weight");
  ASSERT_EQ(merged.dtype(), DType::f32);
  const LoraPair& p = lora.pair(1, LoraTarget::up);
  // One element by hand: W[5][7] + 1.5 * sum_r B[5][r] A[r][7].
  double expect = w.at({5, 7});
  for (int64_t r = 0; r < 4; ++r) expect += 1.5 * p.b.at({5, r}) * p.a.at({r, 7});
  EXPECT_NEAR(merged.at({5, 7}), expect, 1e-6);

  // The merged model's logits equal the training forward's with the adapter (f32 rounding apart).
  const std::unique_ptr<llm::Model> model = llm::load_model(gguf);
  const llm::Qwen3Model plain = llm::Qwen3Model::load(base);
  const std::vector<int32_t> tokens{5, 9, 77, 300, 2, 18};
  llm::KvCache cache = model->make_cache(ctx, 8, llm::KvCacheType::f32);
  const Array folded = model->forward(ctx, tokens, cache);
  const Array trained = qwen3_logits(ctx, Qwen3Weights::of(plain), Array::from_values<int32_t>(ctx, {1, 6}, tokens),
                                     {.lora = &lora, .checkpoint = false, .train_step = {}});
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < folded.numel(); ++i) {
    scale = std::max(scale, std::abs(double(folded.data<float>()[i])));
    worst = std::max(worst, std::abs(double(folded.data<float>()[i]) - double(trained.data<float>()[i])));
  }
  EXPECT_LE(worst, 1e-4 * scale);
}

// Rewrites the adapter file with `edit` applied to its metadata and tensors, then expects
// read_lora_gguf to refuse it with `part` in the message, and the base to be untouched.
struct Edit {
  std::string set_key{}, set_value{};
  std::string drop_tensor{};
  std::string rename_from{}, rename_to{};
  bool halve_a = false;
};

void expect_refused(const Edit& e, const std::string& part) {
  ExecContext ctx;
  const fs::path base = base_model(), good = scratch() / "good.gguf", bad = scratch() / "bad.gguf";
  write_lora_gguf(good, some_adapter(ctx, base), "qwen3");
  const io::GgufFile f = io::GgufFile::open(good);
  io::GgufWriter w;
  for (const auto& [k, v] : f.metadata().entries()) w.metadata().add(k, k == e.set_key ? io::GgufValue{e.set_value} : v);
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const io::GgufTensorInfo& t = f.tensors()[i];
    if (t.name == e.drop_tensor) continue;
    Array a = f.tensor(i);
    if (e.halve_a && t.name == "blk.0.attn_q.weight.lora_a") a = contiguous(ctx, a.narrow(1, 0, a.dim(1) / 2));
    w.add_tensor(t.name == e.rename_from ? e.rename_to : t.name, contiguous(ctx, a));
  }
  w.write(bad);
  io::GgufModel gguf = io::GgufModel::open(base);
  const Array before = gguf.tensor("blk.0.attn_q.weight");
  const std::string message = testing::error_message([&] { merge_lora(ctx, gguf, read_lora_gguf(ctx, bad, gguf)); });
  EXPECT_NE(message.find(part), std::string::npos) << message;
  EXPECT_NE(message.find("bad.gguf"), std::string::npos) << message;
  EXPECT_EQ(gguf.tensor("blk.0.attn_q.weight").raw_data(), before.raw_data());
}

TEST(AdapterFile, a_wrong_type_key_is_refused) { expect_refused({.set_key = "general.type", .set_value = "model"}, "not 'adapter'"); }
TEST(AdapterFile, another_architecture_is_refused) {
  expect_refused({.set_key = "general.architecture", .set_value = "llama"}, "the adapter is for 'llama'");
}
TEST(AdapterFile, a_missing_half_of_a_pair_is_refused) {
  expect_refused({.drop_tensor = "blk.1.ffn_down.weight.lora_b"}, "lacks its lora_b");
}
TEST(AdapterFile, an_unknown_tensor_is_refused) {
  expect_refused({.rename_from = "blk.0.attn_q.weight.lora_a", .rename_to = "blk.0.attn_qq.weight.lora_a"},
                 "blk.0.attn_qq.weight.lora_a");
}
TEST(AdapterFile, a_layer_past_the_model_is_refused) {
  expect_refused({.rename_from = "blk.1.attn_q.weight.lora_a", .rename_to = "blk.9.attn_q.weight.lora_a"},
                 "blk.9.attn_q.weight.lora_a");
}
TEST(AdapterFile, a_shape_that_does_not_fit_the_base_is_refused) {
  expect_refused({.halve_a = true}, "does not fit the model's");
}

TEST(AdapterFile, truncated_and_garbage_files_are_refused_by_the_reader) {
  ExecContext ctx;
  const fs::path base = base_model(), good = scratch() / "whole.gguf", cut = scratch() / "cut.gguf";
  write_lora_gguf(good, some_adapter(ctx, base), "qwen3");
  const std::vector<std::byte> bytes = testing::read_file(good);
  for (const size_t keep : {size_t(0), size_t(7), size_t(100), bytes.size() / 2, bytes.size() - 1}) {
    std::ofstream(cut, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(keep));
    io::GgufModel gguf = io::GgufModel::open(base);
    const std::string message = testing::error_message([&] { read_lora_gguf(ctx, cut, gguf); });
    EXPECT_FALSE(message.empty()) << "kept " << keep << " bytes";
  }
}

}  // namespace
}  // namespace tempra::train
