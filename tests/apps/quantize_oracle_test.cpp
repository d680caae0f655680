// tests/apps/quantize_oracle_test.cpp: `tempra quantize` against llama.cpp's own
// llama_model_quantize (libllama from tools/oracle). For each file type, both quantize the same
// synthesized Qwen3 model (apps/qwen3_fixture.h); the outputs must have the same tensors in the
// same order with the same types, extents and offsets, byte-identical tensor data, the same
// metadata, and be the same file byte for byte. llama.cpp must load tempra's output.
//
// Models: a 256-wide f32 model with its own output tensor (every row a multiple of 256), a
// 160-wide f16 model with tied embeddings and 8 layers, where attn_q/k/v, ffn_gate/up and the
// tied output fall back (160 and 544 are not multiples of 256) and the *_M mixes'
// use_more_bits layers differ from layer 0; Qwen3.5's body; and three mixtures of experts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "apps/qwen3_fixture.h"
#include "ggml-backend.h"
#include "llama.h"
#include "quantize.h"
#include "support/files.h"
#include "support/llama_oracle.h"
#include "tempra/io/ggml_types.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/llm/model/synth.h"

namespace tempra::app {
namespace {

namespace fs = std::filesystem;

using testing::init_llama;
using testing::last_llama_error;

fs::path scratch_dir() {
  return testing::scratch_dir("tempra-quantize-oracle");
}

struct Model {
  const char* label;
  testing::Qwen3Spec spec;
  std::optional<llm::SynthSpec> synth = {};  // another architecture, from the synthesizer
};

const Model& wide_f32() {
  static const Model m{"wide_f32", {}};
  return m;
}
const Model& narrow_f16_tied() {
  static const Model m{
      "narrow_f16_tied",
      {.n_layer = 8, .n_embd = 160, .n_ff = 544, .tied_embeddings = true, .weight_type = 1, .seed = 99}};
  return m;
}

// Qwen3.5's tiny body in F32: its ssm tensors (the f32 convolution, ssm_a, the 4-row beta and
// alpha, ssm_out of 128 columns, which no K-quant divides) follow llama.cpp's rules too.
const Model& qwen35_f32() {
  static const Model m = [] {
    llm::SynthSpec spec = llm::SynthSpec::qwen35_tiny();
    spec.weight_type = DType::f32;
    spec.seed = 5;
    return Model{"qwen35_f32", {}, spec};
  }();
  return m;
}

// Mixtures of experts in F32 (so no rounding hides a rule): Qwen3 MoE and DeepSeek-V2 with 8
// experts, which llama.cpp gives extra bits in attn_v, attn_k and attn_output (Mixtral's
// shape); their 128-wide experts fall back from the K-quants. Then a Qwen3 MoE of 4 experts and
// 8 layers in F16 with 256-wide experts, where ffn_down_exps follows the *_M mixes by layer.
llm::SynthSpec in_f32(llm::SynthSpec spec, uint64_t seed) {
  spec.weight_type = DType::f32;
  spec.seed = seed;
  return spec;
}
const Model& qwen3moe_f32() {
  static const Model m{"qwen3moe_f32", {}, in_f32(llm::SynthSpec::qwen3moe_tiny(), 6)};
  return m;
}
const Model& deepseek2_f32() {
  static const Model m{"deepseek2_f32", {}, in_f32(llm::SynthSpec::deepseek2_tiny(), 7)};
  return m;
}
const Model& qwen3moe_4x8l_f16() {
  static const Model m = [] {
    llm::SynthSpec spec = llm::SynthSpec::qwen3moe_tiny();
    spec.n_layer = 8;
    spec.n_expert = 4;
    spec.n_ff_exp = 256;
    spec.weight_type = DType::f16;
    spec.seed = 8;
    return Model{"qwen3moe_4x8l_f16", {}, spec};
  }();
  return m;
}

fs::path model_path(const Model& m) {
  const fs::path p = scratch_dir() / (std::string(m.label) + ".gguf");
  if (fs::exists(p)) return p;
  if (m.synth)
    llm::write_synthetic_model(p, *m.synth);
  else
    testing::write_qwen3_model(p, m.spec);
  return p;
}

// Runs llama_model_quantize with nthread 1 and defaults otherwise.
fs::path quantize_with_llama(const fs::path& in, const FileType& type, bool pure, const std::string& tag) {
  init_llama();
  const fs::path out = scratch_dir() / (tag + "-llama.gguf");
  llama_model_quantize_params params = llama_model_quantize_default_params();
  params.nthread = 1;
  params.ftype = static_cast<llama_ftype>(type.ftype);
  params.pure = pure;
  last_llama_error().clear();
  const uint32_t rc = llama_model_quantize(in.c_str(), out.c_str(), &params);
  EXPECT_EQ(rc, 0u) << "llama_model_quantize failed: " << last_llama_error();
  return out;
}

std::string type_name(int32_t t) {
  return io::ggml_type_name(t);
}

// Everything but whole-file identity, with messages that name the first difference.
void expect_same_gguf(const fs::path& ours_path, const fs::path& theirs_path) {
  const io::GgufFile ours = io::GgufFile::open(ours_path), theirs = io::GgufFile::open(theirs_path);
  EXPECT_EQ(ours.version(), theirs.version());
  EXPECT_EQ(ours.alignment(), theirs.alignment());

  const auto& om = ours.metadata().entries();
  const auto& tm = theirs.metadata().entries();
  ASSERT_EQ(om.size(), tm.size()) << "metadata key count";
  for (size_t i = 0; i < om.size(); ++i) {
    EXPECT_EQ(om[i].first, tm[i].first) << "metadata key " << i;
    EXPECT_TRUE(om[i].second == tm[i].second) << "metadata value of " << om[i].first;
  }

  ASSERT_EQ(ours.tensors().size(), theirs.tensors().size()) << "tensor count";
  for (size_t i = 0; i < ours.tensors().size(); ++i) {
    const io::GgufTensorInfo& a = ours.tensors()[i];
    const io::GgufTensorInfo& b = theirs.tensors()[i];
    SCOPED_TRACE("tensor " + std::to_string(i) + " '" + b.name + "'");
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(type_name(a.ggml_type), type_name(b.ggml_type));
    EXPECT_EQ(a.n_dims, b.n_dims);
    EXPECT_EQ(a.ne, b.ne);
    EXPECT_EQ(a.offset, b.offset);
    const auto da = ours.tensor_bytes(i), db = theirs.tensor_bytes(i);
    ASSERT_EQ(da.size(), db.size());
    const auto mismatch = std::mismatch(da.begin(), da.end(), db.begin());
    EXPECT_TRUE(mismatch.first == da.end())
        << "data differs first at byte " << (mismatch.first - da.begin()) << " of " << da.size();
  }
  EXPECT_EQ(ours.data_offset(), theirs.data_offset());
  EXPECT_EQ(ours.file_size(), theirs.file_size());
}

struct Case {
  const Model* model;
  const char* type;
  bool pure = false;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(info.param.model->label) + "_" + info.param.type + (info.param.pure ? "_pure" : "");
}

class QuantizeOracle : public ::testing::TestWithParam<Case> {};

TEST_P(QuantizeOracle, output_is_byte_identical_to_llama_model_quantize) {
  const Case& c = GetParam();
  const FileType* type = find_file_type(c.type);
  ASSERT_NE(type, nullptr);
  const fs::path in = model_path(*c.model);
  const std::string tag = case_name({c, 0});
  const fs::path theirs = quantize_with_llama(in, *type, c.pure, tag);
  const fs::path ours = scratch_dir() / (tag + "-tempra.gguf");
  quantize_model(in, ours, *type, {.pure = c.pure, .threads = 2});

  expect_same_gguf(ours, theirs);
  const std::vector<std::byte> original = testing::read_file(theirs);
  EXPECT_TRUE(testing::read_file(ours) == original) << "the files differ";

  // Our reader and writer re-emit llama.cpp's own output byte for byte.
  EXPECT_TRUE(io::GgufWriter::from(io::GgufFile::open(theirs)).to_bytes() == original)
      << "re-emitting llama_model_quantize's file changed it";

  // llama.cpp loads what tempra wrote.
  llama_model_params mp = llama_model_default_params();
  llama_model* loaded = llama_model_load_from_file(ours.c_str(), mp);
  EXPECT_NE(loaded, nullptr) << last_llama_error();
  if (loaded) llama_model_free(loaded);
  fs::remove(ours);
  fs::remove(theirs);
}

// Every file type on the wide model; the types whose rules or fallbacks differ on the narrow
// f16 tied model; pure mode on both.
INSTANTIATE_TEST_SUITE_P(
    WideF32, QuantizeOracle,
    ::testing::Values(Case{&wide_f32(), "Q8_0"}, Case{&wide_f32(), "Q4_0"}, Case{&wide_f32(), "Q4_1"},
                      Case{&wide_f32(), "Q5_0"}, Case{&wide_f32(), "Q5_1"}, Case{&wide_f32(), "Q2_K"},
                      Case{&wide_f32(), "Q3_K_S"}, Case{&wide_f32(), "Q3_K_M"}, Case{&wide_f32(), "Q3_K_L"},
                      Case{&wide_f32(), "Q4_K_S"}, Case{&wide_f32(), "Q4_K_M"}, Case{&wide_f32(), "Q5_K_S"},
                      Case{&wide_f32(), "Q5_K_M"}, Case{&wide_f32(), "Q6_K"}, Case{&wide_f32(), "IQ4_NL"},
                      Case{&wide_f32(), "IQ4_XS"}, Case{&wide_f32(), "TQ1_0"}, Case{&wide_f32(), "TQ2_0"},
                      Case{&wide_f32(), "F16"}, Case{&wide_f32(), "BF16"}, Case{&wide_f32(), "F32"},
                      Case{&wide_f32(), "Q4_K_M", true}, Case{&wide_f32(), "Q2_K", true}),
    case_name);
INSTANTIATE_TEST_SUITE_P(Qwen35F32, QuantizeOracle,
                         ::testing::Values(Case{&qwen35_f32(), "Q8_0"}, Case{&qwen35_f32(), "Q4_0"},
                                           Case{&qwen35_f32(), "Q4_K_M"}, Case{&qwen35_f32(), "Q6_K"},
                                           Case{&qwen35_f32(), "F16"}),
                         case_name);
INSTANTIATE_TEST_SUITE_P(MixturesOfExperts, QuantizeOracle,
                         ::testing::Values(Case{&qwen3moe_f32(), "Q8_0"}, Case{&qwen3moe_f32(), "Q4_0"},
                                           Case{&qwen3moe_f32(), "Q2_K"}, Case{&qwen3moe_f32(), "Q3_K_M"},
                                           Case{&qwen3moe_f32(), "Q4_K_M"}, Case{&qwen3moe_f32(), "IQ4_XS"},
                                           Case{&deepseek2_f32(), "Q8_0"}, Case{&deepseek2_f32(), "Q4_K_S"},
                                           Case{&deepseek2_f32(), "Q4_K_M"}, Case{&deepseek2_f32(), "Q6_K"},
                                           Case{&qwen3moe_4x8l_f16(), "Q3_K_M"}, Case{&qwen3moe_4x8l_f16(), "Q4_K_M"},
                                           Case{&qwen3moe_4x8l_f16(), "Q5_K_M"}, Case{&qwen3moe_4x8l_f16(), "Q4_K_S"}),
                         case_name);
INSTANTIATE_TEST_SUITE_P(NarrowF16Tied, QuantizeOracle,
                         ::testing::Values(Case{&narrow_f16_tied(), "Q8_0"}, Case{&narrow_f16_tied(), "Q4_0"},
                                           Case{&narrow_f16_tied(), "Q2_K"}, Case{&narrow_f16_tied(), "Q3_K_M"},
                                           Case{&narrow_f16_tied(), "Q4_K_S"}, Case{&narrow_f16_tied(), "Q4_K_M"},
                                           Case{&narrow_f16_tied(), "Q5_K_M"}, Case{&narrow_f16_tied(), "Q6_K"},
                                           Case{&narrow_f16_tied(), "IQ4_XS"}, Case{&narrow_f16_tied(), "TQ2_0"},
                                           Case{&narrow_f16_tied(), "BF16"}, Case{&narrow_f16_tied(), "Q4_K_M", true}),
                         case_name);

}  // namespace
}  // namespace tempra::app
