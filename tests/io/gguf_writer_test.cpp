// tests/io/gguf_writer_test.cpp: the writer's layout, its atomic file write, and byte-identical
// re-emission of files read back (GgufWriter::from). ggml's own files: gguf_oracle_test.cpp.
#include <gtest/gtest.h>

#include "support/files.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/gguf_builder.h"
#include "io/gguf_corpus.h"
#include "support/errors.h"
#include "tempra/io/gguf_writer.h"

namespace tempra::io {
namespace {

using tempra::testing::read_file;
using tempra::testing::temp_path;

using testing::GgufBuilder;

std::shared_ptr<const void> no_owner(const std::vector<std::byte>& b) {
  return std::shared_ptr<const void>(b.data(), [](const void*) {});
}

TEST(GgufWriter, files_it_wrote_round_trip_byte_identically) {
  for (const auto& c : testing::good_cases()) {
    const GgufFile f = GgufFile::parse(c.bytes, c.name, no_owner(c.bytes));
    EXPECT_EQ(GgufWriter::from(f).to_bytes(), c.bytes) << c.name;
  }
}

TEST(GgufWriter, write_to_disk_then_reopen_round_trips_byte_identically) {
  const auto original = testing::good_cases().front().bytes;
  const auto path = temp_path("rt");
  {
    const GgufFile f = GgufFile::parse(original, "tiny", no_owner(original));
    GgufWriter::from(f).write(path);
  }
  EXPECT_EQ(read_file(path), original);
  const auto again = temp_path("rt2");
  GgufWriter::from(GgufFile::open(path)).write(again);
  EXPECT_EQ(read_file(again), original);
  std::filesystem::remove(path);
  std::filesystem::remove(again);
}

TEST(GgufWriter, lays_out_tensors_like_ggml_aligned_and_zero_padded) {
  GgufWriter w;
  w.metadata().add("general.architecture", {std::string("x")});
  const float a[3] = {1, 2, 3}, b[1] = {4};
  const int64_t ne_a[] = {3}, ne_b[] = {1};
  w.add_tensor("a", 0, ne_a, std::as_bytes(std::span(a)));
  w.add_tensor("b", 0, ne_b, std::as_bytes(std::span(b)));
  const auto bytes = w.to_bytes();
  EXPECT_EQ(bytes.size() % 32, 0u);
  const GgufFile f = GgufFile::parse(bytes, "w", no_owner(bytes));
  EXPECT_EQ(f.tensors()[0].offset, 0u);
  EXPECT_EQ(f.tensors()[1].offset, 32u);  // 12 bytes rounded up to the alignment
  EXPECT_EQ(f.tensor("b").at({0}), 4.0);
  for (size_t i = f.data_offset() + 12; i < f.data_offset() + 32; ++i) EXPECT_EQ(bytes[i], std::byte{0});
}

TEST(GgufWriter, writes_arrays_of_the_array_dtype_with_reversed_shape) {
  ExecContext ctx;
  const Array x = Array::from_values<float>(ctx, {2, 3}, {1, 2, 3, 4, 5, 6});
  GgufWriter w;
  w.add_tensor("x", x);
  const auto bytes = w.to_bytes();
  const GgufFile f = GgufFile::parse(bytes, "x", no_owner(bytes));
  EXPECT_EQ(f.tensors()[0].ne[0], 3);
  EXPECT_EQ(f.tensors()[0].ne[1], 2);
  EXPECT_EQ(f.tensor("x").shape(), (Dims{2, 3}));
  EXPECT_EQ(f.tensor("x").at({1, 2}), 6.0);
}

TEST(GgufWriter, keeps_pinned_offsets_gaps_and_a_short_tail_when_re_emitting) {
  GgufBuilder b;  // tensors out of offset order, with a gap, and no padding after the last one
  b.header(3, 2, 0).tensor_info("late", {1}, 0, 64).tensor_info("early", {1}, 0, 0).pad().f32(1).zeros(60).f32(2);
  const GgufFile f = GgufFile::parse(b.bytes(), "odd", no_owner(b.bytes()));
  EXPECT_EQ(f.tensor("late").at({0}), 2.0);
  EXPECT_EQ(GgufWriter::from(f).to_bytes(), b.bytes());
}

TEST(GgufWriter, keeps_a_metadata_only_file_without_trailing_padding) {
  GgufBuilder b;
  b.header(3, 0, 1).kv_u32("x", 5);
  const GgufFile f = GgufFile::parse(b.bytes(), "meta", no_owner(b.bytes()));
  EXPECT_EQ(GgufWriter::from(f).to_bytes(), b.bytes());
}

TEST(GgufWriter, rejects_bad_tensors_naming_them) {
  const float v[4] = {};
  const int64_t ne4[] = {4}, ne33[] = {33};
  {
    GgufWriter w;
    w.add_tensor("short", 0, ne4, std::as_bytes(std::span(v)).first(8));
    EXPECT_EQ(tempra::testing::error_message([&] { (void)w.to_bytes(); }),
              "[gguf] writer: tensor 'short' needs 16 bytes, got 8");
  }
  {
    GgufWriter w;
    w.add_tensor("a", 0, ne4, std::as_bytes(std::span(v)));
    w.add_tensor("a", 0, ne4, std::as_bytes(std::span(v)));
    EXPECT_NE(tempra::testing::error_message([&] { (void)w.to_bytes(); }).find("'a' is empty or repeated"),
              std::string::npos);
  }
  {
    GgufWriter w;
    w.add_tensor("q", 8, ne33, {});
    EXPECT_NE(tempra::testing::error_message([&] { (void)w.to_bytes(); }).find("not a multiple of the q8_0 block"),
              std::string::npos);
  }
  {
    GgufWriter w;
    w.metadata().add("general.alignment", {uint32_t{48}});
    EXPECT_NE(tempra::testing::error_message([&] { (void)w.to_bytes(); }).find("power of two"), std::string::npos);
  }
  EXPECT_NE(tempra::testing::error_message([] { GgufWriter w(1); }).find("version 1"), std::string::npos);
}

TEST(GgufWriter, a_failed_write_leaves_no_file_behind) {
  GgufWriter w;
  const float v[1] = {};
  const int64_t ne[] = {2};  // needs 8 bytes, has 4: layout fails after the temp file opened
  w.add_tensor("bad", 0, ne, std::as_bytes(std::span(v)));
  const auto path = temp_path("failed");
  EXPECT_THROW(w.write(path), Error);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp-" + std::to_string(::getpid())));
}

TEST(GgufWriter, write_replaces_an_existing_file) {
  const auto path = temp_path("replace");
  std::ofstream(path) << "old contents";
  GgufWriter w;
  w.metadata().add("k", {uint8_t{1}});
  w.write(path);
  EXPECT_EQ(read_file(path), w.to_bytes());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tempra::io
