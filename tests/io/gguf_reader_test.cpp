// tests/io/gguf_reader_test.cpp: reading valid GGUF files: every metadata type, nested arrays,
// zero-copy tensors with reversed (row-major) shapes, v2 files, lookups and their errors.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/gguf_builder.h"
#include "io/gguf_corpus.h"
#include "support/errors.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/quant/formats.h"

namespace tempra::io {
namespace {

using testing::GgufBuilder;

std::shared_ptr<const void> no_owner(const std::vector<std::byte>& b) {
  return std::shared_ptr<const void>(b.data(), [](const void*) {});
}

std::vector<std::byte> tiny_model() { return testing::good_cases().front().bytes; }

std::filesystem::path write_temp(const std::string& name, const std::vector<std::byte>& bytes) {
  const auto path = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".gguf");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return path;
}

TEST(GgufReader, reads_every_scalar_metadata_type) {
  const auto bytes = tiny_model();
  const GgufFile f = GgufFile::parse(bytes, "tiny.gguf", no_owner(bytes));
  const GgufMetadata& m = f.metadata();
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(m.get<std::string>("general.architecture"), "tiny");
  EXPECT_EQ(m.get<uint8_t>("tiny.u8"), 7);
  EXPECT_EQ(m.get<int8_t>("tiny.i8"), -7);
  EXPECT_EQ(m.get<uint16_t>("tiny.u16"), 700);
  EXPECT_EQ(m.get<int16_t>("tiny.i16"), -700);
  EXPECT_EQ(m.get<uint32_t>("tiny.context_length"), 128u);
  EXPECT_EQ(m.get<int32_t>("tiny.i32"), -70000);
  EXPECT_EQ(m.get<float>("tiny.rope_theta"), 10000.0f);
  EXPECT_EQ(m.get<bool>("tiny.flag"), true);
  EXPECT_EQ(m.get<uint64_t>("tiny.u64"), uint64_t{1} << 40);
  EXPECT_EQ(m.get<int64_t>("tiny.i64"), -(int64_t{1} << 40));
  EXPECT_EQ(m.get<double>("tiny.f64"), 0.125);
  EXPECT_EQ(m.find("tiny.u8")->type(), GgufType::u8);
  EXPECT_EQ(m.find("tiny.f64")->type(), GgufType::f64);
}

TEST(GgufReader, keeps_metadata_in_file_order) {
  const auto bytes = tiny_model();
  const GgufFile f = GgufFile::parse(bytes, "tiny.gguf", no_owner(bytes));
  ASSERT_GE(f.metadata().size(), 3u);
  EXPECT_EQ(f.metadata().entries()[0].first, "general.architecture");
  EXPECT_EQ(f.metadata().entries()[1].first, "general.name");
  EXPECT_EQ(f.metadata().entries()[2].first, "tiny.u8");
}

TEST(GgufReader, reads_tokenizer_arrays) {
  const auto bytes = tiny_model();
  const GgufFile f = GgufFile::parse(bytes, "tiny.gguf", no_owner(bytes));
  const GgufArray& tokens = f.metadata().get<GgufArray>("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens.element_type(), GgufType::string);
  EXPECT_EQ(std::get<std::vector<std::string>>(tokens.items), (std::vector<std::string>{"<s>", "a", "b"}));
  const GgufArray& scores = f.metadata().get<GgufArray>("tokenizer.ggml.scores");
  EXPECT_EQ(std::get<std::vector<float>>(scores.items), (std::vector<float>{0.f, -1.f, -2.f}));
}

TEST(GgufReader, reads_nested_arrays) {
  const auto bytes = testing::good_cases().back().bytes;
  const GgufFile f = GgufFile::parse(bytes, "nested.gguf", no_owner(bytes));
  const GgufArray& nested = f.metadata().get<GgufArray>("nested.u8");
  ASSERT_EQ(nested.element_type(), GgufType::array);
  const auto& inner = std::get<std::vector<GgufArray>>(nested.items);
  ASSERT_EQ(inner.size(), 2u);
  EXPECT_EQ(std::get<std::vector<uint8_t>>(inner[0].items), (std::vector<uint8_t>{1, 2}));
  EXPECT_EQ(std::get<std::vector<uint8_t>>(inner[1].items), (std::vector<uint8_t>{3}));
  EXPECT_EQ(describe_type(*f.metadata().find("nested.u8")), "array[array[u8]]");
  EXPECT_EQ(describe_type(*f.metadata().find("nested.strings")), "array[array[array[string]]]");
}

TEST(GgufReader, reads_arrays_of_every_fixed_size_type) {
  GgufBuilder b;
  b.header(3, 0, 11);
  b.kv_array("u8", 0, 2).u8(1).u8(255);
  b.kv_array("i8", 1, 1).u8(0x80);
  b.kv_array("u16", 2, 1).put<uint16_t>(65535);
  b.kv_array("i16", 3, 1).put<int16_t>(-2);
  b.kv_array("u32", 4, 1).u32(4000000000u);
  b.kv_array("i32", 5, 1).i32(-3);
  b.kv_array("f32", 6, 1).f32(1.5f);
  b.kv_array("bool", 7, 3).u8(1).u8(0).u8(1);
  b.kv_array("u64", 10, 1).u64(UINT64_MAX);
  b.kv_array("i64", 11, 1).i64(INT64_MIN);
  b.kv_array("f64", 12, 1).put<double>(-0.5);
  const GgufFile f = GgufFile::parse(b.bytes(), "arrays.gguf", no_owner(b.bytes()));
  const GgufMetadata& m = f.metadata();
  EXPECT_EQ(std::get<std::vector<uint8_t>>(m.get<GgufArray>("u8").items), (std::vector<uint8_t>{1, 255}));
  EXPECT_EQ(std::get<std::vector<int8_t>>(m.get<GgufArray>("i8").items), (std::vector<int8_t>{-128}));
  EXPECT_EQ(std::get<std::vector<uint16_t>>(m.get<GgufArray>("u16").items), (std::vector<uint16_t>{65535}));
  EXPECT_EQ(std::get<std::vector<int16_t>>(m.get<GgufArray>("i16").items), (std::vector<int16_t>{-2}));
  EXPECT_EQ(std::get<std::vector<uint32_t>>(m.get<GgufArray>("u32").items), (std::vector<uint32_t>{4000000000u}));
  EXPECT_EQ(std::get<std::vector<int32_t>>(m.get<GgufArray>("i32").items), (std::vector<int32_t>{-3}));
  EXPECT_EQ(std::get<std::vector<float>>(m.get<GgufArray>("f32").items), (std::vector<float>{1.5f}));
  EXPECT_EQ(std::get<std::vector<bool>>(m.get<GgufArray>("bool").items), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(std::get<std::vector<uint64_t>>(m.get<GgufArray>("u64").items), (std::vector<uint64_t>{UINT64_MAX}));
  EXPECT_EQ(std::get<std::vector<int64_t>>(m.get<GgufArray>("i64").items), (std::vector<int64_t>{INT64_MIN}));
  EXPECT_EQ(std::get<std::vector<double>>(m.get<GgufArray>("f64").items), (std::vector<double>{-0.5}));
}

// Found by the fuzzer: a zero-length numeric array once passed a null pointer to memcpy.
TEST(GgufReader, reads_empty_arrays_of_every_type) {
  GgufBuilder b;
  b.header(3, 0, kGgufTypeCount);
  for (uint32_t type = 0; type < kGgufTypeCount; ++type) {
    std::string key = "e";  // not "e" + to_string(): g++ 12 raises a false -Wrestrict on that
    key += std::to_string(type);
    b.kv_array(key, type, 0);
  }
  const GgufFile f = GgufFile::parse(b.bytes(), "empty-arrays.gguf", no_owner(b.bytes()));
  ASSERT_EQ(f.metadata().size(), 13u);
  for (const auto& [key, value] : f.metadata().entries()) EXPECT_EQ(std::get<GgufArray>(value.value).size(), 0u) << key;
}

TEST(GgufReader, accepts_version_2) {
  GgufBuilder b;
  b.header(2, 1, 1).kv_string("general.architecture", "v2").tensor_info("w", {2}, 0, 0).pad().f32(1).f32(2);
  const GgufFile f = GgufFile::parse(b.bytes(), "v2.gguf", no_owner(b.bytes()));
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.tensor("w").at({1}), 2.0);
}

TEST(GgufReader, reverses_ggml_dims_into_row_major_shapes) {
  const auto bytes = tiny_model();
  const GgufFile f = GgufFile::parse(bytes, "tiny.gguf", no_owner(bytes));
  const GgufTensorInfo* t = f.find_tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->n_dims, 2u);
  EXPECT_EQ(t->ne[0], 3);  // row length
  EXPECT_EQ(t->ne[1], 2);
  EXPECT_EQ(t->shape(), (Dims{2, 3}));
  const Array a = f.tensor("token_embd.weight");
  EXPECT_EQ(a.shape(), (Dims{2, 3}));
  EXPECT_EQ(a.dtype(), DType::f32);
  EXPECT_EQ(a.at({0, 2}), 3.0);  // row 0 holds the first ne[0] values
  EXPECT_EQ(a.at({1, 0}), 4.0);
}

TEST(GgufReader, maps_ggml_types_to_dtypes) {
  const auto bytes = tiny_model();
  const GgufFile f = GgufFile::parse(bytes, "tiny.gguf", no_owner(bytes));
  const Array h = f.tensor("output_norm.weight");
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(h.at({3}), 4.0);
  const Array q = f.tensor("blk.0.attn_q.weight");
  EXPECT_EQ(q.dtype(), quant::q8_0());
  EXPECT_EQ(q.shape(), (Dims{1, 32}));
  EXPECT_EQ(q.nbytes(), 34u);
}

TEST(GgufReader, tensors_are_zero_copy_views_of_the_mapping_and_keep_it_alive) {
  const auto path = write_temp("zero-copy", tiny_model());
  Array a;
  {
    const GgufFile f = GgufFile::open(path);
    a = f.tensor("token_embd.weight");
    const auto bytes = f.tensor_bytes(0);
    EXPECT_EQ(a.raw_data(), static_cast<const void*>(bytes.data()));  // no copy
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.raw_data()) % f.alignment(), 0u);
  }
  std::filesystem::remove(path);
  EXPECT_EQ(a.at({1, 2}), 6.0);  // the file object and the path are gone; the mapping is not
  a.data<float>()[0] = 42.0f;     // copy-on-write: writable, and the file is untouched
  EXPECT_EQ(a.at({0, 0}), 42.0);
}

TEST(GgufReader, writes_through_a_mapped_tensor_do_not_change_the_file) {
  const auto bytes = tiny_model();
  const auto path = write_temp("cow", bytes);
  {
    const GgufFile f = GgufFile::open(path);
    f.tensor("token_embd.weight").data<float>()[0] = -1.0f;
  }
  EXPECT_EQ(GgufFile::open(path).tensor("token_embd.weight").at({0, 0}), 1.0);
  std::filesystem::remove(path);
}

TEST(GgufReader, allows_zero_element_tensors_and_files_without_tensors) {
  GgufBuilder b;
  b.header(3, 1, 0).tensor_info("empty", {0, 4}, 0, 0).pad();
  const GgufFile f = GgufFile::parse(b.bytes(), "empty.gguf", no_owner(b.bytes()));
  EXPECT_EQ(f.tensor("empty").shape(), (Dims{4, 0}));
  EXPECT_EQ(f.tensor("empty").numel(), 0);

  GgufBuilder m;
  m.header(3, 0, 1).kv_u32("x", 1);  // no padding after the metadata: ggml accepts that too
  EXPECT_EQ(GgufFile::parse(m.bytes(), "meta.gguf", no_owner(m.bytes())).tensors().size(), 0u);
}

TEST(GgufReader, data_section_honours_general_alignment) {
  GgufBuilder b;
  b.header(3, 1, 1).kv_u32("general.alignment", 64).tensor_info("w", {2}, 0, 0).pad(64).f32(7).f32(8);
  const GgufFile f = GgufFile::parse(b.bytes(), "a64.gguf", no_owner(b.bytes()));
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(f.tensor("w").at({0}), 7.0);
}

TEST(GgufReader, missing_key_and_wrong_type_errors_name_the_key) {
  const auto bytes = tiny_model();
  const GgufFile f = GgufFile::parse(bytes, "tiny.gguf", no_owner(bytes));
  EXPECT_EQ(tempra::testing::error_message([&] { (void)f.metadata().get<uint32_t>("nope"); }),
            "[gguf] metadata key 'nope' is missing");
  EXPECT_EQ(tempra::testing::error_message([&] { (void)f.metadata().get<uint32_t>("general.architecture"); }),
            "[gguf] metadata key 'general.architecture' is string, expected u32");
  EXPECT_FALSE(f.metadata().get_optional<uint32_t>("nope").has_value());
  EXPECT_EQ(tempra::testing::error_message([&] { (void)f.tensor("nope"); }),
            "[gguf] tiny.gguf: no tensor named 'nope'");
}

TEST(GgufReader, open_names_a_missing_file) {
  const std::string msg = tempra::testing::error_message([] { (void)GgufFile::open("/no/such/model.gguf"); });
  EXPECT_EQ(msg, "[gguf] /no/such/model.gguf: cannot open: No such file or directory");
}

TEST(GgufReader, rejects_a_directory) {
  const std::string msg =
      tempra::testing::error_message([] { (void)GgufFile::open(std::filesystem::temp_directory_path()); });
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tempra::io

namespace tempra::io {
namespace {

// TensorMapping::per_tensor reads only the header, by a prefix it doubles until the parse needs
// no more: a header of 3 MiB (three rounds) gives the metadata and tensors of the whole-file
// parse, each tensor's bytes through its own mapping, and file_size() the file's.
TEST(GgufReaderPerTensor, a_header_longer_than_the_first_read_parses_as_the_whole_file) {
  const std::string long_text(3u << 20, 'x');
  GgufBuilder b;
  b.header(3, 2, 2).kv_string("general.architecture", "tiny").kv_string("tiny.notes", long_text);
  b.tensor_info("a", {4}, 0, 0).tensor_info("b", {3, 2}, 0, 32).pad();
  for (int i = 0; i < 8; ++i) b.f32(float(i) + 0.5f);
  for (int i = 0; i < 6; ++i) b.f32(float(-i));
  const auto path = write_temp("gguf_per_tensor_long_header", b.bytes());
  const GgufFile whole = GgufFile::open(path), each = GgufFile::open(path, TensorMapping::per_tensor);
  EXPECT_EQ(each.file_size(), b.size());
  EXPECT_EQ(each.data_offset(), whole.data_offset());
  EXPECT_EQ(each.metadata().get<std::string>("tiny.notes"), long_text);
  ASSERT_EQ(each.tensors().size(), 2u);
  for (const char* name : {"a", "b"}) {
    const Array x = whole.tensor(name), y = each.tensor(name);
    ASSERT_EQ(x.shape(), y.shape());
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()), 0) << name;
  }
  std::filesystem::remove(path);
}

// Every corrupt file of the corpus fails the same way in both modes (the same parser; only the
// bytes at hand differ), and every good one parses.
TEST(GgufReaderPerTensor, the_corpus_gives_the_same_verdicts_in_both_modes) {
  for (const auto& c : testing::good_cases()) {
    const auto path = write_temp("gguf_per_tensor_good", c.bytes);
    EXPECT_NO_THROW(GgufFile::open(path, TensorMapping::per_tensor)) << c.name;
    std::filesystem::remove(path);
  }
  for (const auto& c : testing::corrupt_cases()) {
    const auto path = write_temp("gguf_per_tensor_bad", c.bytes);
    std::string whole_error, each_error;
    try {
      GgufFile::open(path);
    } catch (const Error& e) {
      whole_error = e.what();
    }
    try {
      GgufFile::open(path, TensorMapping::per_tensor);
    } catch (const Error& e) {
      each_error = e.what();
    }
    EXPECT_NE(each_error, "") << c.name;
    EXPECT_EQ(each_error, whole_error) << c.name;
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace tempra::io
