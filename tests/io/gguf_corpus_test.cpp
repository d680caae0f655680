// tests/io/gguf_corpus_test.cpp: the committed files in tests/io/corpus are what
// make_gguf_corpus writes, every bad_*.gguf fails through the mmap path (GgufFile::open) with
// its expected message, and every good_*.gguf opens.
#include <gtest/gtest.h>

#include "support/files.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/gguf_corpus.h"
#include "support/errors.h"
#include "tempra/io/gguf_reader.h"

namespace tempra::io {
namespace {

using tempra::testing::read_file;
using tempra::testing::temp_path;

const std::filesystem::path kCorpus = std::filesystem::path(TEMPRA_SOURCE_DIR) / "tests/io/corpus";

TEST(GgufCorpus, committed_files_match_the_generator) {
  size_t expected = 0;
  for (const auto& c : testing::corrupt_cases()) {
    ++expected;
    const auto path = kCorpus / ("bad_" + c.name + ".gguf");
    ASSERT_TRUE(std::filesystem::exists(path)) << path << ": run make_gguf_corpus tests/io/corpus";
    EXPECT_EQ(read_file(path), c.bytes) << path << " is stale: run make_gguf_corpus tests/io/corpus";
  }
  for (const auto& c : testing::good_cases()) {
    ++expected;
    const auto path = kCorpus / ("good_" + c.name + ".gguf");
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    EXPECT_EQ(read_file(path), c.bytes) << path << " is stale: run make_gguf_corpus tests/io/corpus";
  }
  size_t on_disk = 0;
  for (const auto& e : std::filesystem::directory_iterator(kCorpus)) on_disk += e.path().extension() == ".gguf";
  EXPECT_EQ(on_disk, expected) << "tests/io/corpus holds files the generator does not write";
}

TEST(GgufCorpus, every_bad_file_fails_to_open_with_its_message) {
  for (const auto& c : testing::corrupt_cases()) {
    const auto path = kCorpus / ("bad_" + c.name + ".gguf");
    const std::string msg = tempra::testing::error_message([&] { (void)GgufFile::open(path); });
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expected_error), std::string::npos) << c.name << ": " << msg;
  }
}

TEST(GgufCorpus, every_good_file_opens) {
  for (const auto& c : testing::good_cases()) {
    const GgufFile f = GgufFile::open(kCorpus / ("good_" + c.name + ".gguf"));
    EXPECT_FALSE(f.metadata().empty()) << c.name;
  }
}

}  // namespace
}  // namespace tempra::io
