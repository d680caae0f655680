// tests/io/gguf_corrupt_test.cpp: every corrupt corpus file fails with a tempra::Error naming
// the file and the field (one test per case: GgufCorrupt.rejects/<case>).
#include <gtest/gtest.h>

#include <set>

#include "io/gguf_corpus.h"
#include "support/errors.h"
#include "tempra/io/gguf_reader.h"

namespace tempra::io {
namespace {

using testing::CorpusFile;

class GgufCorrupt : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(GgufCorrupt, rejects) {
  const CorpusFile& c = GetParam();
  const std::string name = "bad_" + c.name + ".gguf";
  const std::string msg = tempra::testing::error_message([&] {
    (void)GgufFile::parse(c.bytes, name, std::shared_ptr<const void>(c.bytes.data(), [](const void*) {}));
  });
  EXPECT_NE(msg.find("[gguf] " + name + ": "), std::string::npos) << msg;
  EXPECT_NE(msg.find(c.expected_error), std::string::npos) << "expected '" << c.expected_error << "' in: " << msg;
}

INSTANTIATE_TEST_SUITE_P(Corpus, GgufCorrupt, ::testing::ValuesIn(testing::corrupt_cases()),
                         [](const ::testing::TestParamInfo<CorpusFile>& info) { return info.param.name; });

TEST(GgufCorruptCorpus, covers_at_least_25_cases_with_unique_names) {
  const auto cases = testing::corrupt_cases();
  EXPECT_GE(cases.size(), 25u);
  std::set<std::string> names;
  for (const auto& c : cases) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

TEST(GgufCorruptCorpus, every_file_is_under_1_kib) {
  for (const auto& c : testing::corrupt_cases()) EXPECT_LT(c.bytes.size(), 1024u) << c.name;
  for (const auto& c : testing::good_cases()) EXPECT_LT(c.bytes.size(), 1024u) << c.name;
}

// Every proper prefix of a valid file is truncated somewhere: all must fail cleanly.
TEST(GgufCorruptCorpus, every_truncation_of_a_good_file_fails_cleanly) {
  for (const auto& good : testing::good_cases()) {
    // A prefix may parse only if it keeps every tensor's bytes (it loses trailing padding alone).
    const GgufFile whole =
        GgufFile::parse(good.bytes, good.name, std::shared_ptr<const void>(good.bytes.data(), [](const void*) {}));
    uint64_t content_end = 0;
    for (const auto& t : whole.tensors()) content_end = std::max(content_end, whole.data_offset() + t.offset + t.nbytes);
    for (size_t n = 0; n < good.bytes.size(); ++n) {
      std::vector<std::byte> prefix(good.bytes.begin(), good.bytes.begin() + static_cast<std::ptrdiff_t>(n));
      try {
        (void)GgufFile::parse(prefix, "prefix.gguf", std::shared_ptr<const void>(prefix.data(), [](const void*) {}));
        EXPECT_GE(n, content_end) << good.name << ": a prefix of " << n << " bytes parsed";
      } catch (const Error&) {
      }
    }
  }
}

// Flipping any single byte must never crash: the parse either succeeds or throws tempra::Error.
TEST(GgufCorruptCorpus, every_single_byte_flip_of_a_good_file_parses_or_throws_error) {
  for (const auto& good : testing::good_cases()) {
    for (size_t i = 0; i < good.bytes.size(); ++i) {
      for (int v : {0x00, 0xff, 0x80, 0x01}) {
        std::vector<std::byte> b = good.bytes;
        b[i] = static_cast<std::byte>(v);
        try {
          (void)GgufFile::parse(b, "flip.gguf", std::shared_ptr<const void>(b.data(), [](const void*) {}));
        } catch (const Error&) {
        }
      }
    }
  }
}

}  // namespace
}  // namespace tempra::io
