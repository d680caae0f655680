// tests/io/gguf_split_test.cpp: split models (name-00001-of-00003.gguf, ...) load from the first
// shard with tensors from every shard; inconsistent shard sets fail naming the shard.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/errors.h"
#include "tempra/io/gguf_model.h"
#include "tempra/io/gguf_writer.h"

namespace tempra::io {
namespace {

class GgufSplit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gguf-split-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path shard(int i, int n) const { return gguf_shard_path(dir_ / "m-00001-of-00001.gguf", i, n); }

  // Shard i of n holding tensor "t<i>" = {i}; the first also holds the model metadata.
  void write_shard(int i, int n, int64_t tensors_count = -1, uint16_t no = 0xffff, std::string tensor = "") {
    GgufWriter w;
    if (i == 0) w.metadata().add("general.architecture", {std::string("split")});
    w.metadata().add("split.no", {static_cast<uint16_t>(no == 0xffff ? i : no)});
    w.metadata().add("split.count", {static_cast<uint16_t>(n)});
    if (i == 0) w.metadata().add("split.tensors.count", {static_cast<int32_t>(tensors_count < 0 ? n : tensors_count)});
    values_.push_back(std::make_shared<float>(static_cast<float>(i)));
    const int64_t ne[] = {1};
    w.add_tensor(tensor.empty() ? "t" + std::to_string(i) : tensor, 0, ne,
                 std::as_bytes(std::span(values_.back().get(), 1)), values_.back());
    w.write(shard(i, n));
  }

  std::filesystem::path dir_;
  std::vector<std::shared_ptr<float>> values_;
};

TEST_F(GgufSplit, shard_paths_follow_llama_cpp_naming) {
  EXPECT_EQ(gguf_shard_path("/m/qwen-00001-of-00003.gguf", 2, 3), "/m/qwen-00003-of-00003.gguf");
  EXPECT_NE(tempra::testing::error_message([] { (void)gguf_shard_path("/m/qwen.gguf", 1, 2); }).find("<prefix>-00001"),
            std::string::npos);
}

TEST_F(GgufSplit, loads_tensors_from_every_shard_given_the_first) {
  for (int i = 0; i < 3; ++i) write_shard(i, 3);
  const GgufModel m = GgufModel::open(shard(0, 3));
  EXPECT_EQ(m.shards().size(), 3u);
  EXPECT_EQ(m.metadata().get<std::string>("general.architecture"), "split");
  ASSERT_EQ(m.tensors().size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(m.tensor("t" + std::to_string(i)).at({0}), i);
  EXPECT_EQ(m.info(m.tensors()[2]).name, "t2");
}

TEST_F(GgufSplit, a_single_unsplit_file_is_a_model_of_one_shard) {
  GgufWriter w;
  w.metadata().add("general.architecture", {std::string("one")});
  const float v[1] = {5};
  const int64_t ne[] = {1};
  w.add_tensor("w", 0, ne, std::as_bytes(std::span(v)));
  w.write(dir_ / "plain.gguf");
  const GgufModel m = GgufModel::open(dir_ / "plain.gguf");
  EXPECT_EQ(m.shards().size(), 1u);
  EXPECT_EQ(m.tensor("w").at({0}), 5.0);
}

TEST_F(GgufSplit, a_missing_shard_is_named) {
  write_shard(0, 3);
  write_shard(1, 3);
  const std::string msg = tempra::testing::error_message([&] { (void)GgufModel::open(shard(0, 3)); });
  EXPECT_NE(msg.find("m-00003-of-00003.gguf: cannot open"), std::string::npos) << msg;
}

TEST_F(GgufSplit, opening_a_later_shard_asks_for_the_first) {
  for (int i = 0; i < 2; ++i) write_shard(i, 2);
  const std::string msg = tempra::testing::error_message([&] { (void)GgufModel::open(shard(1, 2)); });
  EXPECT_NE(msg.find("this is shard 2 of 2; open the first shard"), std::string::npos) << msg;
}

TEST_F(GgufSplit, a_shard_with_the_wrong_number_is_rejected) {
  write_shard(0, 2);
  write_shard(1, 2, -1, /*no=*/0);
  const std::string msg = tempra::testing::error_message([&] { (void)GgufModel::open(shard(0, 2)); });
  EXPECT_NE(msg.find("split.no/split.count are 0/2, expected 1/2"), std::string::npos) << msg;
}

TEST_F(GgufSplit, a_tensor_in_two_shards_is_rejected) {
  write_shard(0, 2, -1, 0xffff, "same");
  write_shard(1, 2, -1, 0xffff, "same");
  const std::string msg = tempra::testing::error_message([&] { (void)GgufModel::open(shard(0, 2)); });
  EXPECT_NE(msg.find("tensor 'same' is also in"), std::string::npos) << msg;
}

TEST_F(GgufSplit, a_wrong_total_tensor_count_is_rejected) {
  write_shard(0, 2, /*tensors_count=*/5);
  write_shard(1, 2);
  const std::string msg = tempra::testing::error_message([&] { (void)GgufModel::open(shard(0, 2)); });
  EXPECT_NE(msg.find("split.tensors.count says 5 tensors, the shards hold 2"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tempra::io
