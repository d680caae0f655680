// tests/apps/quantize_test.cpp: `tempra quantize`'s type choice and refusals, without the
// oracle (quantize_oracle_test.cpp holds the outputs against llama.cpp itself). The expected
// types are read off llama-quant.cpp's rules for these shapes.
#include "quantize.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apps/qwen3_fixture.h"
#include "support/errors.h"
#include "support/files.h"
#include "tempra/io/ggml_types.h"
#include "tempra/io/gguf_writer.h"

namespace tempra::app {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  return testing::scratch_dir("tempra-quantize-test") / name;
}

fs::path model(const std::string& name, const testing::Qwen3Spec& spec) {
  const fs::path p = scratch(name + ".gguf");
  if (!fs::exists(p)) testing::write_qwen3_model(p, spec);
  return p;
}

std::map<std::string, std::string> plan_types(const fs::path& path, const char* type, bool pure = false) {
  const io::GgufModel m = io::GgufModel::open(path);
  std::map<std::string, std::string> out;
  for (const TensorPlan& p : plan_quantization(m, *find_file_type(type), pure))
    out[p.name] = io::ggml_type_name(p.to_type);
  return out;
}

TEST(Quantize, file_types_are_found_case_insensitively_with_llama_quantize_aliases) {
  ASSERT_NE(find_file_type("q4_k_m"), nullptr);
  EXPECT_EQ(find_file_type("q4_k_m")->ftype, 15);
  EXPECT_EQ(find_file_type("Q4_K"), find_file_type("Q4_K_M"));
  EXPECT_EQ(find_file_type("Q5_K")->ftype, 17);
  EXPECT_EQ(find_file_type("Q8_0")->ftype, 7);
  EXPECT_EQ(find_file_type("IQ2_XXS"), nullptr);  // needs an importance matrix
  EXPECT_EQ(find_file_type("Q9_9"), nullptr);
}

TEST(Quantize, q4_k_m_on_qwen3_keeps_norms_f32_and_gives_output_and_late_layers_more_bits) {
  const auto t = plan_types(model("wide", {}), "Q4_K_M");
  EXPECT_EQ(t.at("output.weight"), "q6_K");
  EXPECT_EQ(t.at("token_embd.weight"), "q4_K");  // untied: the base type
  EXPECT_EQ(t.at("output_norm.weight"), "f32");
  EXPECT_EQ(t.at("blk.0.attn_q_norm.weight"), "f32");
  // 2 layers: use_more_bits(i, 2) holds for layer 1 only (i >= 7 * 2 / 8).
  EXPECT_EQ(t.at("blk.0.attn_v.weight"), "q4_K");
  EXPECT_EQ(t.at("blk.1.attn_v.weight"), "q6_K");
  EXPECT_EQ(t.at("blk.0.ffn_down.weight"), "q4_K");
  EXPECT_EQ(t.at("blk.1.ffn_down.weight"), "q6_K");
  EXPECT_EQ(t.at("blk.1.attn_q.weight"), "q4_K");
  EXPECT_EQ(t.at("blk.1.ffn_up.weight"), "q4_K");
}

TEST(Quantize, rows_not_a_multiple_of_256_fall_back_and_tied_embeddings_quantize_like_the_output) {
  const testing::Qwen3Spec narrow{.n_layer = 8, .n_embd = 160, .n_ff = 544, .tied_embeddings = true};
  const auto t = plan_types(model("narrow", narrow), "Q4_K_M");
  EXPECT_EQ(t.at("token_embd.weight"), "q8_0");         // tied, 160 % 256 != 0
  EXPECT_EQ(t.at("blk.0.attn_q.weight"), "q5_0");       // q4_k -> q5_0
  EXPECT_EQ(t.at("blk.0.attn_output.weight"), "q4_K");  // rows of 4 * 64 = 256
  EXPECT_EQ(t.at("blk.0.attn_v.weight"), "q8_0");       // use_more_bits(0, 8): q6_k -> q8_0
  EXPECT_EQ(t.at("blk.1.attn_v.weight"), "q5_0");       // q4_k -> q5_0
  EXPECT_EQ(t.at("blk.3.ffn_down.weight"), "q8_0");     // (3 - 1) % 3 == 2: q6_k, 544 cols -> q8_0
  EXPECT_EQ(t.at("blk.4.ffn_down.weight"), "q5_0");
  const auto pure = plan_types(model("narrow", narrow), "Q4_K_M", true);
  EXPECT_EQ(pure.at("token_embd.weight"), "q5_0");  // pure: no output rule, only the fallback
  EXPECT_EQ(pure.at("blk.0.attn_output.weight"), "q4_K");
  EXPECT_EQ(pure.at("blk.0.ffn_norm.weight"), "f32");
}

TEST(Quantize, tensors_come_out_in_llama_loader_order_by_layer_number_then_name) {
  const fs::path p = model("deep", {.n_layer = 11, .n_embd = 64, .n_ff = 64, .head_dim = 16, .n_vocab = 64});
  const io::GgufModel m = io::GgufModel::open(p);
  const auto plan = plan_quantization(m, *find_file_type("Q8_0"), false);
  std::vector<std::string> names;
  for (const auto& e : plan) names.push_back(e.name);
  ASSERT_GE(names.size(), 5u);
  EXPECT_EQ(names[0], "output.weight");
  EXPECT_EQ(names[1], "output_norm.weight");
  EXPECT_EQ(names[2], "token_embd.weight");
  EXPECT_EQ(names[3], "blk.0.attn_k.weight");
  const auto pos = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  EXPECT_LT(pos("blk.2.ffn_up.weight"), pos("blk.10.attn_k.weight"));
}

TEST(Quantize, output_bytes_do_not_depend_on_the_thread_count) {
  const fs::path in = model("wide", {});
  const fs::path a = scratch("t1.gguf"), b = scratch("t3.gguf");
  quantize_model(in, a, *find_file_type("Q4_K_M"), {.threads = 1});
  quantize_model(in, b, *find_file_type("Q4_K_M"), {.threads = 3});
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  const std::vector<char> da{std::istreambuf_iterator<char>(fa), {}}, db{std::istreambuf_iterator<char>(fb), {}};
  EXPECT_TRUE(da == db);
  const io::GgufFile out = io::GgufFile::open(a);
  EXPECT_EQ(out.metadata().entries().back().first, "general.file_type");
  EXPECT_EQ(out.metadata().get<uint32_t>("general.file_type"), 15u);
  EXPECT_EQ(out.metadata().get<uint32_t>("general.quantization_version"), 2u);
}

// A one-layer model whose only matrix is already q8_0.
fs::path quantized_model(const std::string& name) {
  io::GgufWriter w;
  w.metadata().add("general.architecture", {std::string("qwen3")});
  w.metadata().add("qwen3.block_count", {uint32_t{1}});
  auto bytes = std::make_shared<std::vector<std::byte>>(2 * 34);  // 2 rows of one q8_0 block
  const std::vector<int64_t> ne{32, 2};
  w.add_tensor("blk.0.attn_q.weight", 8, ne, *bytes, bytes);
  const fs::path p = scratch(name + ".gguf");
  w.write(p);
  return p;
}

TEST(Quantize, requantizing_a_quantized_weight_is_refused_naming_it) {
  const fs::path in = quantized_model("q8");
  const std::string e =
      tempra::testing::error_message([&] { quantize_model(in, scratch("q8-q4.gguf"), *find_file_type("Q4_0")); });
  EXPECT_NE(e.find("tensor 'blk.0.attn_q.weight' is q8_0: requantizing to q4_0 is not supported"), e.npos) << e;
  EXPECT_NO_THROW(quantize_model(in, scratch("q8-q8.gguf"), *find_file_type("Q8_0")));  // same type: a copy
}

// In a mixture of experts an FFN tensor's layer is the number in its name (llama.cpp's
// layer_info), so one outside every layer is refused by name, as llama.cpp refuses it.
TEST(Quantize, a_mixture_of_experts_ffn_tensor_outside_the_layers_is_refused_naming_it) {
  for (const std::string name : {"blk.3.ffn_down_exps.weight", "blk.3.ffn_up_exps.weight", "ffn_gate_exps.weight"}) {
    io::GgufWriter w;
    w.metadata().add("general.architecture", {std::string("qwen3moe")});
    w.metadata().add("qwen3moe.block_count", {uint32_t{1}});
    w.metadata().add("qwen3moe.expert_count", {uint32_t{4}});
    auto bytes = std::make_shared<std::vector<std::byte>>(256 * 2 * sizeof(float));
    const std::vector<int64_t> ne{256, 2};
    w.add_tensor(name, 0, ne, *bytes, bytes);
    const fs::path in = scratch("moe-bad-layer.gguf");
    w.write(in);
    const std::string e = tempra::testing::error_message(
        [&] { quantize_model(in, scratch("moe-q4.gguf"), *find_file_type("Q4_K_M")); });
    EXPECT_NE(e.find("tensor '" + name + "' is not in a layer of [0, 1)"), e.npos) << e;
  }
}

}  // namespace
}  // namespace tempra::app
