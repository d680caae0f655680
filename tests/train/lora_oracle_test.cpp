// tests/train/lora_oracle_test.cpp: tempra's LoRA adapter files and merges against llama.cpp.
//
// An adapter made by tempra (every projection of every layer, rank 8, B drawn nonzero so it
// changes the model) is written with write_lora_gguf and loaded by llama.cpp itself
// (llama_adapter_lora_init, scale 1) over the base GGUF; tempra loads the same file and folds it
// into the weights (read_lora_gguf, merge_lora). On F32 and F16 bases the logits of a 32-token
// prompt must agree at every position to a cosine of at least 0.9999, and greedy decoding must
// pick the same 16 tokens up to llama.cpp's first step without a clear margin (logit_oracle.h).
// Then the merge round trip: `tempra merge --type Q8_0` writes one file that both engines load
// without any adapter, with the same criteria at Q8_0's cosine bound (0.999).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/qwen3_fixture.h"
#include "llm/logit_oracle.h"
#include "merge.h"
#include "support/files.h"
#include "tempra/llm/model/decoder.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/ops/ops.h"
#include "tempra/train/adapter.h"
#include "tempra/train/qwen3_train.h"

namespace tempra::train {
namespace {

namespace fs = std::filesystem;
using llm::oracle::Llama;

fs::path scratch() { return testing::scratch_dir("tempra_lora_oracle_test"); }

fs::path base_model(int32_t weight_type) {
  const fs::path path = scratch() / ("base_w" + std::to_string(weight_type) + ".gguf");
  if (!fs::exists(path)) testing::write_qwen3_model(path, {.weight_type = weight_type});
  return path;
}

// A trained-looking adapter over `base`: A as initialized, B ~ N(0, 0.02).
fs::path adapter_for(const fs::path& base) {
  const fs::path path = scratch() / (base.stem().string() + "_lora.gguf");
  ExecContext ctx;
  const llm::Qwen3Model model = llm::Qwen3Model::load(base);
  const LoraAdapter lora =
      make_lora(ctx, Qwen3Weights::of(model), {.rank = 8, .alpha = 16, .targets = parse_targets("all"), .seed = 3});
  uint64_t offset = 0;
  for (const optim::Param& p : lora.parameters())
    if (p.name.ends_with("lora_b")) {
      Array b = p.value;
      const Array drawn = normal(ctx, b.shape(), 0.0, 0.02, 11, offset);
      std::copy_n(drawn.data<float>(), b.numel(), b.data<float>());
      offset += uint64_t(b.numel());
    }
  write_lora_gguf(path, lora, "qwen3");
  return path;
}

std::vector<int32_t> prompt(int64_t n_vocab) {
  std::vector<int32_t> t;
  for (int i = 0; i < 32; ++i) t.push_back(int32_t((37 * i * i + 11 * i + 3) % n_vocab));
  return t;
}

// tempra's model from `gguf` (an adapter already merged, or not), with ggml's roundings.
std::unique_ptr<llm::Model> tempra_model(const io::GgufModel& gguf) {
  std::unique_ptr<llm::Model> m = llm::load_model(gguf);
  dynamic_cast<llm::DecoderModel&>(*m).set_numerics(llm::Numerics::ggml);
  return m;
}

// Logits of every prompt position, then 16 greedy steps, in both engines; checks the criteria.
void expect_agreement(Llama& llama, const llm::Model& model, double min_cosine, const std::string& label) {
  ExecContext ctx;
  const int64_t V = model.info().n_vocab;
  ASSERT_EQ(llama.n_vocab(), V);
  const std::vector<int32_t> tokens = prompt(V);
  llama.clear();
  const std::vector<float> ref = llama.decode(tokens, 0);
  llm::KvCache cache = model.make_cache(ctx, 64, llm::KvCacheType::f16);
  const Array got = model.forward(ctx, tokens, cache);
  llm::oracle::Figures f;
  for (size_t i = 0; i < tokens.size(); ++i)
    f.add(llm::oracle::check_position(ref.data() + i * size_t(V), got.data<float>() + i * V, size_t(V)));
  // Greedy: each engine feeds back its own choice; equal up to llama.cpp's first unclear step.
  std::vector<float> last(ref.end() - V, ref.end());
  Array ours = got.select(0, int64_t(tokens.size()) - 1);
  int matched = 0, steps = 0;
  for (; steps < 16; ++steps) {
    if (!llm::oracle::clear_margin(last.data(), size_t(V))) break;
    const auto theirs = int32_t(llm::oracle::argmax(last.data(), size_t(V)));
    const auto mine = int32_t(llm::oracle::argmax(contiguous(ctx, ours).data<float>(), size_t(V)));
    if (theirs != mine) break;
    ++matched;
    last = llama.decode({theirs}, int32_t(tokens.size()) + steps);
    const std::vector<int32_t> next{mine};
    ours = model.forward(ctx, next, cache).select(0, 0);
  }
  std::printf("%s: cosine min %.7f mean %.7f, top-1 %d/%d clear positions, greedy %d of %d clear steps\n",
              label.c_str(), f.min_cosine, f.mean_cosine(), f.clear_agree, f.clear, matched, steps);
  EXPECT_GE(f.min_cosine, min_cosine) << label;
  EXPECT_EQ(f.clear_agree, f.clear) << label;
  EXPECT_EQ(matched, steps) << label;
  EXPECT_GE(steps, 4) << label << ": too few clear greedy steps to mean anything";
}

class LoraOracle : public ::testing::TestWithParam<int32_t> {};

TEST_P(LoraOracle, llama_cpp_with_tempras_adapter_file_agrees_with_tempra_folding_it_in) {
  const fs::path base = base_model(GetParam()), lora = adapter_for(base);
  Llama llama(base);
  llama.use_lora(lora);
  ExecContext ctx;
  io::GgufModel gguf = io::GgufModel::open(base);
  merge_lora(ctx, gguf, read_lora_gguf(ctx, lora, gguf));
  const std::unique_ptr<llm::Model> adapted = tempra_model(gguf);
  expect_agreement(llama, *adapted, 0.9999, base.stem().string() + " + adapter");

  // The adapter matters: without it the logits are far from these.
  const std::unique_ptr<llm::Model> plain = tempra_model(io::GgufModel::open(base));
  const std::vector<int32_t> tokens = prompt(plain->info().n_vocab);
  llm::KvCache c1 = plain->make_cache(ctx, 64, llm::KvCacheType::f16), c2 = adapted->make_cache(ctx, 64, llm::KvCacheType::f16);
  const Array without = plain->forward(ctx, tokens, c1), with = adapted->forward(ctx, tokens, c2);
  const int64_t V = plain->info().n_vocab;
  double worst = 1;
  for (size_t i = 0; i < tokens.size(); ++i)
    worst = std::min(worst, llm::oracle::check_position(with.data<float>() + i * V, without.data<float>() + i * V,
                                                        size_t(V)).cosine);
  std::printf("the base without the adapter: cosine min %.4f against the adapted logits\n", worst);
  EXPECT_LT(worst, 0.99);
}

INSTANTIATE_TEST_SUITE_P(Bases, LoraOracle, ::testing::Values(0, 1),
                         [](const auto& info) { return info.param == 0 ? std::string("F32") : std::string("F16"); });

TEST(LoraMergeOracle, a_merged_q8_0_gguf_gives_llama_cpp_and_tempra_the_same_answers) {
  const fs::path base = base_model(1), lora = adapter_for(base);
  const fs::path merged = scratch() / "merged_q8_0.gguf";
  const app::MergeSummary s = app::merge_model(base, lora, merged, app::find_file_type("Q8_0"));
  EXPECT_EQ(s.merged, 2u * 7u);
  Llama llama(merged);
  expect_agreement(llama, *tempra_model(io::GgufModel::open(merged)), 0.999, "merged Q8_0");
}

}  // namespace
}  // namespace tempra::train
