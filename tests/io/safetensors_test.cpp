// tests/io/safetensors_test.cpp: the safetensors reader and writer (src/tempra/io/safetensors.h).
//
// Round trips through a file and through memory (every dtype, a strided view, rank 0, empty
// tensors, metadata with escapes), the committed goldens of tools/gen_goldens.py (written by
// hand from the format description, so an independent writer), and one test per corruption:
// each must throw a tempra::Error naming the file and the field, never crash.
#include "tempra/io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tempra/core/error.h"
#include "tempra/core/exec_context.h"
#include "tempra/core/storage.h"
#include "tempra/quant/formats.h"

namespace tempra::io {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  const fs::path dir = fs::temp_directory_path() / ("tempra_safetensors_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// A file from a header string and raw data bytes.
std::vector<std::byte> make_file(const std::string& header, size_t data_bytes, uint64_t header_size_override = 0) {
  std::vector<std::byte> out(8);
  const uint64_t n = header_size_override ? header_size_override : header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<std::byte>(i & 0xff));
  return out;
}

SafetensorsFile parse_bytes(const std::vector<std::byte>& bytes, const std::string& name = "case.safetensors") {
  return SafetensorsFile::parse(bytes, name, std::make_shared<int>(0));
}

// Expects parse to throw a tempra::Error whose message contains every fragment.
void expect_rejected(const std::string& header, size_t data_bytes, const std::vector<std::string>& fragments,
                     uint64_t header_size_override = 0) {
  const auto bytes = make_file(header, data_bytes, header_size_override);
  try {
    parse_bytes(bytes);
    ADD_FAILURE() << "accepted: " << header;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[safetensors] case.safetensors: "), std::string::npos) << what;
    for (const auto& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "missing '" << f << "' in: " << what;
  }
}

TEST(Safetensors, round_trip_every_dtype_in_the_given_order_with_metadata) {
  ExecContext ctx;
  std::vector<NamedArray> tensors;
  tensors.push_back({"z.f64", Array::from_values<double>(ctx, {2, 2}, {1.5, -2.25, 3e300, -0.0})});
  tensors.push_back({"a.f32", Array::from_values<float>(ctx, {3}, {1.f, 2.f, 3.f})});
  tensors.push_back({"m.i64", Array::from_values<int64_t>(ctx, {2}, {-(int64_t{1} << 62), 7})});
  tensors.push_back({"i32", Array::from_values<int32_t>(ctx, {1, 1, 2}, {-5, 6})});
  tensors.push_back({"i16", Array::from_values<int16_t>(ctx, {1}, {-300})});
  tensors.push_back({"i8", Array::from_values<int8_t>(ctx, {3}, {-1, 0, 1})});
  tensors.push_back({"u8", Array::from_values<uint8_t>(ctx, {2}, {0, 255})});
  tensors.push_back({"b", Array::from_values<bool>(ctx, {2}, {true, false})});
  tensors.push_back({"h", Array::from_values<f16_t>(ctx, {2}, {to_f16(1.0f), to_f16(-2.0f)})});
  tensors.push_back({"bh", Array::from_values<bf16_t>(ctx, {1}, {to_bf16(0.5f)})});
  tensors.push_back({"scalar", Array::from_values<float>(ctx, {}, {42.f})});
  tensors.push_back({"empty", Array::zeros(ctx, {0, 4}, DType::f32)});
  const std::map<std::string, std::string> metadata{{"format", "pt"}, {"quote\"and\\slash", "line\nbreak\t\x01"}};

  const fs::path path = temp_dir() / "round_trip.safetensors";
  write_safetensors(path, tensors, metadata);
  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.metadata(), metadata);
  EXPECT_EQ(f.data_offset() % 8, 0u);
  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& info = f.tensors()[i];
    EXPECT_EQ(info.name, tensors[i].name);  // the order given
    const Array back = f.tensor(info.name);
    EXPECT_EQ(back.dtype(), tensors[i].value.dtype()) << info.name;
    EXPECT_EQ(back.shape(), tensors[i].value.shape()) << info.name;
    ASSERT_EQ(back.nbytes(), tensors[i].value.nbytes());
    if (back.nbytes() > 0) {
      EXPECT_EQ(std::memcmp(back.raw_data(), tensors[i].value.raw_data(), back.nbytes()), 0) << info.name;
    }
  }
  // The memory form is the file's bytes.
  const auto bytes = safetensors_bytes(tensors, metadata);
  std::ifstream in(path, std::ios::binary);
  const std::string on_disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(on_disk.size(), bytes.size());
  EXPECT_EQ(std::memcmp(on_disk.data(), bytes.data(), bytes.size()), 0);
  fs::remove_all(path.parent_path());
}

TEST(Safetensors, aligned_tensors_are_zero_copy_views_of_the_mapping) {
  ExecContext ctx;
  const std::vector<NamedArray> tensors{{"w", Array::from_values<float>(ctx, {2, 2}, {1, 2, 3, 4})}};
  const auto bytes = safetensors_bytes(tensors);
  const SafetensorsFile f = parse_bytes(bytes);
  const Array w = f.tensor("w");
  EXPECT_EQ(static_cast<const std::byte*>(w.raw_data()), bytes.data() + f.data_offset());
}

TEST(Safetensors, unaligned_tensors_are_copied_with_the_same_values) {
  ExecContext ctx;
  // 3 bytes of u8 put the f32 tensor at data offset 3: legal in the format, unaligned for f32.
  const std::vector<NamedArray> tensors{{"u", Array::from_values<uint8_t>(ctx, {3}, {1, 2, 3})},
                                        {"f", Array::from_values<float>(ctx, {2}, {0.25f, -8.f})}};
  const auto bytes = safetensors_bytes(tensors);
  const SafetensorsFile f = parse_bytes(bytes);
  EXPECT_EQ(f.find("f")->begin, 3u);
  const Array v = f.tensor("f");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.raw_data()) % alignof(float), 0u);
  EXPECT_EQ(v.at({0}), 0.25);
  EXPECT_EQ(v.at({1}), -8.0);
}

TEST(Safetensors, strided_views_are_written_in_row_major_order) {
  ExecContext ctx;
  const Array a = Array::from_values<float>(ctx, {2, 3}, {0, 1, 2, 3, 4, 5});
  const Array t = a.transpose(0, 1);  // [3, 2]: 0 3 / 1 4 / 2 5
  const std::vector<NamedArray> tensors{{"t", t}};
  const auto bytes = safetensors_bytes(tensors);
  const Array back = parse_bytes(bytes).tensor("t");
  ASSERT_EQ(back.shape(), (Dims{3, 2}));
  const float* p = back.data<float>();
  const std::vector<float> expected{0, 3, 1, 4, 2, 5};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(p[i], expected[i]);
}

TEST(Safetensors, reads_the_committed_goldens_written_by_an_independent_writer) {
  // tools/gen_goldens.py writes these by hand from the format description.
  const SafetensorsFile f = SafetensorsFile::open(fs::path(TEMPRA_GOLDEN_DIR) / "matmul.safetensors");
  EXPECT_FALSE(f.tensors().empty());
  EXPECT_TRUE(f.metadata().count("cases"));
  for (const auto& t : f.tensors()) EXPECT_EQ(f.tensor(t.name).nbytes(), t.nbytes());
}

TEST(Safetensors, writer_rejects_duplicate_names_and_leaves_the_old_file) {
  ExecContext ctx;
  const fs::path path = temp_dir() / "keep.safetensors";
  const std::vector<NamedArray> good{{"a", Array::from_values<float>(ctx, {1}, {1.f})}};
  write_safetensors(path, good);
  const auto size_before = fs::file_size(path);
  const std::vector<NamedArray> dup{{"a", good[0].value}, {"a", good[0].value}};
  EXPECT_THROW(write_safetensors(path, dup), Error);
  const std::vector<NamedArray> reserved{{"__metadata__", good[0].value}};
  EXPECT_THROW(write_safetensors(path, reserved), Error);
  EXPECT_EQ(fs::file_size(path), size_before);
  EXPECT_EQ(SafetensorsFile::open(path).tensor("a").at({0}), 1.0);
  fs::remove_all(path.parent_path());
}

TEST(Safetensors, writer_rejects_a_block_quantized_dtype) {
  ExecContext ctx;
  const Array q = Array::zeros(ctx, {32}, quant::q8_0());
  const std::vector<NamedArray> tensors{{"q", q}};
  EXPECT_THROW(safetensors_bytes(tensors), Error);
}

TEST(Safetensors, rejects_a_file_shorter_than_the_size_field) {
  const std::vector<std::byte> bytes(5);
  EXPECT_THROW(parse_bytes(bytes), Error);
}

TEST(Safetensors, rejects_a_header_size_past_the_end) {
  expect_rejected("{}", 0, {"header size 100 extends past the end of the file"}, 100);
}

TEST(Safetensors, rejects_a_header_size_over_the_limit) {
  expect_rejected("{}", 0, {"exceeds the 100000000-byte limit"}, uint64_t{1} << 40);
}

TEST(Safetensors, rejects_a_truncated_file) {
  ExecContext ctx;
  const std::vector<NamedArray> tensors{{"w", Array::from_values<float>(ctx, {4}, {1, 2, 3, 4})}};
  auto bytes = safetensors_bytes(tensors);
  bytes.resize(bytes.size() - 3);
  try {
    parse_bytes(bytes);
    ADD_FAILURE() << "accepted a truncated file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'w': data_offsets [0, 16] extend past the end of the file"),
              std::string::npos)
        << e.what();
  }
}

TEST(Safetensors, rejects_trailing_bytes_after_the_last_tensor) {
  expect_rejected(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 3, {"trailing bytes"});
}

TEST(Safetensors, rejects_overlapping_tensors) {
  expect_rejected(
      R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", 4,
      {"tensor 'b'", "overlap tensor 'a'"});
}

TEST(Safetensors, rejects_a_hole_between_tensors) {
  expect_rejected(
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}})", 5,
      {"tensor 'b'", "leave a hole"});
}

TEST(Safetensors, rejects_a_shape_that_does_not_match_the_byte_span) {
  expect_rejected(R"({"w":{"dtype":"F32","shape":[4,3],"data_offsets":[0,40]}})", 40,
                  {"tensor 'w': shape [4, 3] of F32 needs 48 bytes, data_offsets span 40"});
}

TEST(Safetensors, rejects_offsets_that_end_before_they_begin) {
  expect_rejected(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", 4, {"end before they begin"});
}

TEST(Safetensors, rejects_an_unknown_dtype_and_names_an_unsupported_one) {
  expect_rejected(R"({"w":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", 4, {"tensor 'w': unknown dtype 'F33'"});
  expect_rejected(R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", 1,
                  {"dtype F8_E4M3 is not supported"});
}

TEST(Safetensors, rejects_negative_fractional_and_overflowing_extents) {
  expect_rejected(R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", 0,
                  {"shape[0] must be a non-negative integer"});
  expect_rejected(R"({"w":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", 1, {"must be an integer"});
  expect_rejected(R"({"w":{"dtype":"U8","shape":[99999999999999999999],"data_offsets":[0,1]}})", 1,
                  {"does not fit in 64 bits"});
  expect_rejected(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0,
                  {"does not fit in 63 bits"});
}

TEST(Safetensors, rejects_missing_unknown_and_duplicate_fields) {
  expect_rejected(R"({"w":{"dtype":"U8","shape":[1]}})", 1, {"tensor 'w': missing field 'data_offsets'"});
  expect_rejected(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":1}})", 1, {"unknown field 'extra'"});
  expect_rejected(R"({"w":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1,
                  {"has the key 'dtype' twice"});
  expect_rejected(
      R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"w":{"dtype":"U8","shape":[0],"data_offsets":[1,1]}})", 1,
      {"has the key 'w' twice"});
  expect_rejected(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", 1, {"exactly 2 integers"});
}

TEST(Safetensors, rejects_malformed_json) {
  expect_rejected(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},})", 1, {"header JSON"});
  expect_rejected(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]})", 1, {"header JSON", "unexpected end"});
  expect_rejected(R"([1])", 0, {"must be a JSON object"});
  expect_rejected(R"({"w\q":{}})", 0, {"invalid escape"});
  expect_rejected(R"({"\ud800":{}})", 0, {"surrogate"});
  expect_rejected(R"({} x)", 0, {"trailing bytes after the header object"});
}

TEST(Safetensors, rejects_a_header_that_is_not_utf8) {
  expect_rejected("{\"w\xc0\xaf\":{}}", 0, {"the header is not valid UTF-8 (byte 3 of the header)"});
  expect_rejected("{\"w\xed\xa0\x80\":{}}", 0, {"not valid UTF-8"});  // an encoded surrogate
}

TEST(Safetensors, writer_rejects_names_and_metadata_that_are_not_utf8) {
  ExecContext ctx;
  const Array a = Array::zeros(ctx, {1}, DType::f32);
  const std::vector<NamedArray> bad_name{{"w\xff", a}};
  EXPECT_THROW(safetensors_bytes(bad_name), Error);
  const std::vector<NamedArray> good{{"w\xc3\xa9", a}};
  EXPECT_THROW(safetensors_bytes(good, {{"k", "\xe2\x82"}}), Error);  // truncated sequence
  EXPECT_EQ(parse_bytes(safetensors_bytes(good, {{"k", "\xe2\x82\xac"}})).metadata().at("k"), "\xe2\x82\xac");
}

TEST(Safetensors, rejects_non_string_metadata_values) {
  expect_rejected(R"({"__metadata__":{"k":1}})", 0, {"__metadata__ value of 'k' must be a string"});
}

TEST(Safetensors, accepts_space_padding_and_unicode_escapes) {
  const auto bytes = make_file(
      R"({"__metadata__":{"k":"\u00e9\ud83d\ude00"},"w":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}   )", 1);
  const SafetensorsFile f = parse_bytes(bytes);
  EXPECT_EQ(f.metadata().at("k"), "\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(f.tensor("w").rank(), 0);
}

TEST(Safetensors, open_names_a_missing_file) {
  try {
    SafetensorsFile::open("/no/such/file.safetensors");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/file.safetensors: cannot open"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tempra::io
