// tests/io/gguf_oracle_test.cpp: the GGUF reader and writer against ggml's own gguf code
// (llama.cpp's libggml-base, tools/oracle). A file written by gguf_write_to_file reads back with
// equal values and re-emits byte-identically; a file tempra writes loads in gguf_init_from_file
// with the same keys, values, tensor infos and data.
#include <gtest/gtest.h>

#include "support/files.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "ggml.h"
#include "gguf.h"
#include "io/gguf_corpus.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/quant/formats.h"

namespace tempra::io {
namespace {

using tempra::testing::read_file;
using tempra::testing::temp_path;

// ggml writes a file with every scalar type, arrays (numeric, bool, string) and f32, f16 and
// q8_0 tensors; alignment as given.
struct GgmlFile {
  std::filesystem::path path;
  std::vector<float> f32_data;
  std::vector<uint16_t> f16_data;
  std::vector<uint8_t> q8_data;

  explicit GgmlFile(const std::string& name, uint32_t alignment) : path(temp_path(name)) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1, 1);
    f32_data.resize(6 * 5);
    for (float& v : f32_data) v = u(rng);
    f16_data = {0x3c00, 0xbc00, 0x4000, 0x0001, 0x7bff, 0x8000, 0x3555, 0x2e66};
    q8_data.resize(34 * 4);
    for (size_t b = 0; b < 4; ++b) {
      q8_data[b * 34] = 0x66;
      q8_data[b * 34 + 1] = 0x2e;  // d = 0.1 in f16
      for (size_t i = 2; i < 34; ++i) q8_data[b * 34 + i] = static_cast<uint8_t>(rng());
    }

    gguf_context* g = gguf_init_empty();
    gguf_set_val_str(g, "general.architecture", "oracle");
    if (alignment != 32) gguf_set_val_u32(g, "general.alignment", alignment);
    gguf_set_val_u8(g, "t.u8", 200);
    gguf_set_val_i8(g, "t.i8", -100);
    gguf_set_val_u16(g, "t.u16", 60000);
    gguf_set_val_i16(g, "t.i16", -30000);
    gguf_set_val_u32(g, "t.u32", 4000000000u);
    gguf_set_val_i32(g, "t.i32", -2000000000);
    gguf_set_val_f32(g, "t.f32", 3.25f);
    gguf_set_val_bool(g, "t.bool", true);
    gguf_set_val_u64(g, "t.u64", 1ull << 50);
    gguf_set_val_i64(g, "t.i64", -(1ll << 50));
    gguf_set_val_f64(g, "t.f64", -1e300);
    const float scores[] = {0.0f, -1.5f, 2.25f};
    gguf_set_arr_data(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, 3);
    const int32_t types[] = {1, 3, 6};
    gguf_set_arr_data(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, 3);
    const char* tokens[] = {"<s>", "hello", "w\xc3\xb6rld"};
    gguf_set_arr_str(g, "tokenizer.ggml.tokens", tokens, 3);
    const uint8_t flags[] = {1, 0, 1, 1};
    gguf_set_arr_data(g, "t.bools", GGUF_TYPE_BOOL, flags, 4);
    const uint64_t big[] = {0, UINT64_MAX};
    gguf_set_arr_data(g, "t.u64s", GGUF_TYPE_UINT64, big, 2);

    ggml_init_params params{.mem_size = 1 << 20, .mem_buffer = nullptr, .no_alloc = false};
    ggml_context* ctx = ggml_init(params);
    ggml_tensor* a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 5);
    ggml_set_name(a, "token_embd.weight");
    std::memcpy(a->data, f32_data.data(), ggml_nbytes(a));
    ggml_tensor* h = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 8);
    ggml_set_name(h, "output_norm.weight");
    std::memcpy(h->data, f16_data.data(), ggml_nbytes(h));
    ggml_tensor* q = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 64, 2);
    ggml_set_name(q, "blk.0.attn_q.weight");
    std::memcpy(q->data, q8_data.data(), ggml_nbytes(q));
    gguf_add_tensor(g, a);
    gguf_add_tensor(g, h);
    gguf_add_tensor(g, q);
    EXPECT_TRUE(gguf_write_to_file(g, path.c_str(), false));
    gguf_free(g);
    ggml_free(ctx);
  }
  ~GgmlFile() { std::filesystem::remove(path); }
};

TEST(GgufOracle, reads_a_file_ggml_wrote_with_equal_values) {
  GgmlFile src("ggml-written", 32);
  const GgufFile f = GgufFile::open(src.path);
  const GgufMetadata& m = f.metadata();
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(m.get<std::string>("general.architecture"), "oracle");
  EXPECT_EQ(m.get<uint8_t>("t.u8"), 200);
  EXPECT_EQ(m.get<int8_t>("t.i8"), -100);
  EXPECT_EQ(m.get<uint16_t>("t.u16"), 60000);
  EXPECT_EQ(m.get<int16_t>("t.i16"), -30000);
  EXPECT_EQ(m.get<uint32_t>("t.u32"), 4000000000u);
  EXPECT_EQ(m.get<int32_t>("t.i32"), -2000000000);
  EXPECT_EQ(m.get<float>("t.f32"), 3.25f);
  EXPECT_EQ(m.get<bool>("t.bool"), true);
  EXPECT_EQ(m.get<uint64_t>("t.u64"), 1ull << 50);
  EXPECT_EQ(m.get<int64_t>("t.i64"), -(1ll << 50));
  EXPECT_EQ(m.get<double>("t.f64"), -1e300);
  EXPECT_EQ(std::get<std::vector<float>>(m.get<GgufArray>("tokenizer.ggml.scores").items),
            (std::vector<float>{0.0f, -1.5f, 2.25f}));
  EXPECT_EQ(std::get<std::vector<int32_t>>(m.get<GgufArray>("tokenizer.ggml.token_type").items),
            (std::vector<int32_t>{1, 3, 6}));
  EXPECT_EQ(std::get<std::vector<std::string>>(m.get<GgufArray>("tokenizer.ggml.tokens").items),
            (std::vector<std::string>{"<s>", "hello", "w\xc3\xb6rld"}));
  EXPECT_EQ(std::get<std::vector<bool>>(m.get<GgufArray>("t.bools").items), (std::vector<bool>{1, 0, 1, 1}));
  EXPECT_EQ(std::get<std::vector<uint64_t>>(m.get<GgufArray>("t.u64s").items),
            (std::vector<uint64_t>{0, UINT64_MAX}));

  ASSERT_EQ(f.tensors().size(), 3u);
  const Array a = f.tensor("token_embd.weight");
  EXPECT_EQ(a.shape(), (Dims{5, 6}));
  EXPECT_EQ(std::memcmp(a.raw_data(), src.f32_data.data(), a.nbytes()), 0);
  EXPECT_EQ(a.at({1, 0}), src.f32_data[6]);
  const Array h = f.tensor("output_norm.weight");
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(std::memcmp(h.raw_data(), src.f16_data.data(), h.nbytes()), 0);
  const Array q = f.tensor("blk.0.attn_q.weight");
  EXPECT_EQ(q.dtype(), quant::q8_0());
  EXPECT_EQ(q.shape(), (Dims{2, 64}));
  EXPECT_EQ(std::memcmp(q.raw_data(), src.q8_data.data(), q.nbytes()), 0);
}

// ggml's writer only lays tensors out at the default alignment (gguf_add_tensor uses the
// context's alignment, which gguf_set_val_u32("general.alignment") does not change), so the
// ggml-written reference is at 32; other alignments are checked by ggml reading our files below.
TEST(GgufOracle, re_emits_a_ggml_written_file_byte_identically) {
  GgmlFile src("ggml-reemit", 32);
  const auto out = temp_path("tempra-reemit");
  GgufWriter::from(GgufFile::open(src.path)).write(out);
  EXPECT_EQ(read_file(out), read_file(src.path));
  std::filesystem::remove(out);
}

TEST(GgufOracle, ggml_reads_tempra_files_with_a_larger_alignment) {
  GgufWriter w;
  w.metadata().add("general.architecture", {std::string("aligned")});
  w.metadata().add("general.alignment", {uint32_t{256}});
  const float a[3] = {1, 2, 3}, b[5] = {4, 5, 6, 7, 8};
  const int64_t ne_a[] = {3}, ne_b[] = {5, 1};
  w.add_tensor("a", 0, ne_a, std::as_bytes(std::span(a)));
  w.add_tensor("b", 0, ne_b, std::as_bytes(std::span(b)));
  const auto path = temp_path("tempra-aligned");
  w.write(path);
  ggml_context* data_ctx = nullptr;
  gguf_context* g = gguf_init_from_file(path.c_str(), gguf_init_params{.no_alloc = false, .ctx = &data_ctx});
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(gguf_get_alignment(g), 256u);
  EXPECT_EQ(gguf_get_data_offset(g) % 256, 0u);
  EXPECT_EQ(gguf_get_tensor_offset(g, 1), 256u);
  EXPECT_EQ(static_cast<const float*>(ggml_get_tensor(data_ctx, "b")->data)[4], 8.0f);
  gguf_free(g);
  ggml_free(data_ctx);
  std::filesystem::remove(path);
}

TEST(GgufOracle, ggml_reads_the_files_tempra_writes) {
  const auto c = testing::good_cases().front();  // every metadata type, f32/f16/q8_0 tensors
  const GgufFile ours = GgufFile::parse(c.bytes, c.name, std::shared_ptr<const void>(c.bytes.data(), [](const void*) {}));
  const auto path = temp_path("tempra-written");
  GgufWriter::from(ours).write(path);

  ggml_context* data_ctx = nullptr;
  gguf_init_params params{.no_alloc = false, .ctx = &data_ctx};
  gguf_context* g = gguf_init_from_file(path.c_str(), params);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(gguf_get_version(g), 3u);
  EXPECT_EQ(gguf_get_alignment(g), 32u);
  ASSERT_EQ(gguf_get_n_kv(g), static_cast<int64_t>(ours.metadata().size()));
  for (int64_t i = 0; i < gguf_get_n_kv(g); ++i) {
    const auto& [key, value] = ours.metadata().entries()[static_cast<size_t>(i)];
    EXPECT_EQ(gguf_get_key(g, i), key);
    EXPECT_EQ(static_cast<uint32_t>(gguf_get_kv_type(g, i)), static_cast<uint32_t>(value.type())) << key;
    if (const auto* a = std::get_if<GgufArray>(&value.value)) {
      EXPECT_EQ(static_cast<uint32_t>(gguf_get_arr_type(g, i)), static_cast<uint32_t>(a->element_type())) << key;
      EXPECT_EQ(gguf_get_arr_n(g, i), a->size()) << key;
    }
  }
  EXPECT_EQ(gguf_get_val_u32(g, gguf_find_key(g, "tiny.context_length")), 128u);
  EXPECT_EQ(gguf_get_val_f64(g, gguf_find_key(g, "tiny.f64")), 0.125);
  EXPECT_STREQ(gguf_get_arr_str(g, gguf_find_key(g, "tokenizer.ggml.tokens"), 1), "a");
  ASSERT_EQ(gguf_get_n_tensors(g), 3);
  for (int64_t i = 0; i < 3; ++i) {
    const GgufTensorInfo& t = ours.tensors()[static_cast<size_t>(i)];
    EXPECT_EQ(gguf_get_tensor_name(g, i), t.name);
    EXPECT_EQ(static_cast<int32_t>(gguf_get_tensor_type(g, i)), t.ggml_type);
    EXPECT_EQ(gguf_get_tensor_offset(g, i), t.offset);
    EXPECT_EQ(gguf_get_tensor_size(g, i), t.nbytes);
    const ggml_tensor* gt = ggml_get_tensor(data_ctx, t.name.c_str());
    ASSERT_NE(gt, nullptr);
    for (int d = 0; d < 4; ++d) EXPECT_EQ(gt->ne[d], t.ne[static_cast<size_t>(d)]) << t.name;
    EXPECT_EQ(std::memcmp(gt->data, ours.tensor_bytes(static_cast<size_t>(i)).data(), t.nbytes), 0) << t.name;
  }
  gguf_free(g);
  ggml_free(data_ctx);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tempra::io
