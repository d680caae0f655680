// tests/llm/bpe_trainer_test.cpp: the byte-level BPE trainer (tempra/llm/tokenizer/bpe_trainer.h).
//
// Against its references: the merges equal tools/bpe_reference.py's (plain Python over the
// `regex` module, run with Debian's /usr/bin/python3) on Debian's license texts and on a
// mixed-script text; a model given the trained vocab tokenizes like llama.cpp's llama_tokenize
// (the oracle) on texts the vocab never saw. Then the contract's details: specials never learned
// from, input order irrelevant, merges whose bytes a token already has, the named errors, and
// the GGUF keys read back.
#include "tempra/llm/tokenizer/bpe_trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "llama.h"
#include "support/files.h"
#include "support/llama_oracle.h"
#include "tempra/core/error.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/llm/model/synth.h"
#include "tempra/llm/template/chat_template.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;

fs::path license(const char* name) {
  return fs::path("/usr/share/common-licenses") / name;
}

// Words, digits, punctuation runs, CRLF, several scripts, emoji, repeated letters (pairs that
// overlap: "aaaa"), and the special tokens between documents.
std::string mixed_text() {
  std::string s;
  for (int i = 0; i < 40; ++i) {
    s += "The quick brown fox jumps over the lazy dog " + std::to_string(i * 37) + " times.\r\n";
    s += "aaaa bbbbbb aaaaa -- ... !!! ?? \"quoted\" it's we'll they've I'm\n\n";
    s += "Grüße aus Köln, café crème; ελληνικά κείμενα; русский текст; 中文字符和标点。 😀🎉 ١٢٣ ٤٥\n";
    s += "def f(x):\n    return x * 2  # comment\n\t\tindent\n";
    if (i % 7 == 0) s += "<|endoftext|>";
  }
  return s;
}

struct TempDir {
  fs::path path;
  TempDir() {
    // A parameterized test's name holds a '/', which would make this two folders, of which only
    // the inner one would be removed.
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(test.begin(), test.end(), '/', '_');
    path = fs::temp_directory_path() / ("tempra_bpe_" + std::to_string(::getpid()) + "_" + test);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TokenizerVocab train_on(const std::vector<std::string>& texts, int32_t vocab_size, int64_t min_count) {
  BpeTrainOptions options;
  options.vocab_size = vocab_size;
  options.min_count = min_count;
  WordCounts words(options.pre, options.specials);
  for (const std::string& t : texts) words.add(t);
  return train_bpe(words, options);
}

std::vector<std::string> reference_merges(const std::vector<fs::path>& files, int32_t vocab_size, int64_t min_count) {
  std::string cmd = "/usr/bin/python3 '" + std::string(TEMPRA_SOURCE_DIR) + "/tools/bpe_reference.py' " +
                    std::to_string(vocab_size) + " " + std::to_string(min_count);
  for (const fs::path& f : files) cmd += " '" + f.string() + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(cmd.c_str(), "r"), ::pclose);
  if (!pipe) throw Error("cannot run " + cmd);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe.get())) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe.release());
  if (status != 0) throw Error("the reference failed (" + std::to_string(status) + "): " + cmd);
  std::vector<std::string> merges;
  for (size_t start = 0, end; (end = out.find('\n', start)) != std::string::npos; start = end + 1)
    merges.push_back(out.substr(start, end - start));
  return merges;
}

struct ReferenceCase {
  const char* name;
  int32_t vocab_size;
  int64_t min_count;
};
class BpeReference : public ::testing::TestWithParam<ReferenceCase> {};

// Merges that made no new token: their bytes were a token already.
size_t reused_merges(const TokenizerVocab& vocab) {
  return vocab.merges.size() + 256 + 3 - vocab.tokens.size();
}

TEST_P(BpeReference, merges_equal_the_python_reference) {
  const ReferenceCase c = GetParam();
  TempDir dir;
  const fs::path mixed = dir.path / "mixed.txt";
  std::ofstream(mixed, std::ios::binary) << mixed_text();
  const std::vector<fs::path> files = {license("GPL-3"), license("Apache-2.0"), mixed};
  std::vector<std::string> texts;
  for (const fs::path& f : files) texts.push_back(testing::read_text(f));

  const TokenizerVocab vocab = train_on(texts, c.vocab_size, c.min_count);
  const std::vector<std::string> expected = reference_merges(files, c.vocab_size, c.min_count);
  ASSERT_GT(expected.size(), 100u);
  ASSERT_EQ(vocab.merges.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(vocab.merges[i], expected[i]) << "merge " << i;
  std::printf("%s: %zu merges, %zu tokens (%zu merges reuse a token)\n", c.name, vocab.merges.size(),
              vocab.tokens.size(), reused_merges(vocab));
}

INSTANTIATE_TEST_SUITE_P(Corpora, BpeReference,
                         ::testing::Values(ReferenceCase{"vocab_600", 600, 2}, ReferenceCase{"to_exhaustion", 8000, 2},
                                           ReferenceCase{"min_count_1", 3000, 1}),
                         [](const auto& info) { return std::string(info.param.name); });

// No two tokens share a text (a merge whose bytes a token already has reuses that token).
TEST(BpeTrainer, token_texts_are_distinct) {
  const TokenizerVocab vocab = train_on({testing::read_text(license("GPL-3")), mixed_text()}, 8000, 1);
  const std::set<std::string> distinct(vocab.tokens.begin(), vocab.tokens.end());
  EXPECT_EQ(distinct.size(), vocab.tokens.size());
}

TEST(BpeTrainer, the_vocab_is_byte_level_with_the_specials_last) {
  const TokenizerVocab vocab = train_on({testing::read_text(license("GPL-3"))}, 400, 2);
  ASSERT_EQ(vocab.tokens.size(), 400u);
  EXPECT_EQ(vocab.model, "gpt2");
  EXPECT_EQ(vocab.pre, "qwen2");
  EXPECT_EQ(vocab.tokens[size_t('a')], "a");
  EXPECT_EQ(vocab.tokens[size_t(' ')], "\xC4\xA0");  // U+0120, GPT-2's space
  EXPECT_EQ(vocab.tokens[397], "<|endoftext|>");
  EXPECT_EQ(vocab.tokens[399], "<|im_end|>");
  EXPECT_EQ(vocab.types[398], TokenType::control);
  EXPECT_EQ(vocab.types[396], TokenType::normal);
  EXPECT_EQ(vocab.bos, 397);
  EXPECT_EQ(vocab.pad, 397);
  EXPECT_EQ(vocab.eos, 399);
  // The tokenizer built on it gives back the text it encodes, and the special tokens whole.
  const Tokenizer tokenizer(vocab);
  const std::string text = "This License applies to any program, 2026 times.";
  const std::vector<int32_t> ids = tokenizer.encode(text);
  EXPECT_LT(ids.size(), text.size() / 2);
  EXPECT_EQ(tokenizer.decode(ids), text);
  const std::vector<int32_t> chat = tokenizer.encode("<|im_start|>user");
  ASSERT_GE(chat.size(), 2u);
  EXPECT_EQ(chat[0], 398);
}

// Special-token texts are cut out before counting: no word holds a piece of one.
TEST(BpeTrainer, special_tokens_are_never_learned_from) {
  BpeTrainOptions options;
  WordCounts words(options.pre, options.specials);
  words.add("ab<|endoftext|>ab<|im_start|><|im_end|>ab");
  ASSERT_EQ(words.counts().size(), 1u);
  EXPECT_EQ(words.counts().at("ab"), 3);
  EXPECT_EQ(words.total_words(), 3);
}

// Ties go to the smaller (left id, right id), whatever order the texts come in.
TEST(BpeTrainer, ties_and_input_order_do_not_change_the_vocab) {
  const TokenizerVocab one = train_on({"xy xy", "ab ab", "cd cd"}, 1000, 2);
  const TokenizerVocab other = train_on({"cd cd", "ab ab", "xy xy"}, 1000, 2);
  EXPECT_EQ(one.merges, other.merges);
  EXPECT_EQ(one.tokens, other.tokens);
  // "ab", "cd" and "xy" are each seen twice (" a", " c", " x" once): the smallest pair first.
  EXPECT_EQ(one.merges, (std::vector<std::string>{"a b", "c d", "x y"}));
}

TEST(BpeTrainer, stops_when_no_pair_is_seen_min_count_times) {
  const TokenizerVocab vocab = train_on({"abc abd"}, 1000, 2);
  // "ab" is seen twice; then " ab" once: nothing else repeats.
  ASSERT_EQ(vocab.merges.size(), 1u);
  EXPECT_EQ(vocab.merges[0], "a b");
  EXPECT_EQ(vocab.tokens.size(), 256u + 1 + 3);
}

TEST(BpeTrainer, bad_input_is_a_named_error) {
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { train_on({"hello hello"}, 258, 2); }).find("smaller than the 256 byte tokens + 3"),
            std::string::npos);
  EXPECT_NE(message([] { train_on({}, 1000, 2); }).find("the corpus is empty"), std::string::npos);
  EXPECT_NE(message([] { train_on({"<|endoftext|>"}, 1000, 2); }).find("the corpus is empty"), std::string::npos);
  EXPECT_NE(message([] { train_on({std::string("ok \xFF no")}, 1000, 2); }).find("not valid UTF-8 (byte 3)"),
            std::string::npos);
  EXPECT_NE(message([] { train_on({std::string("cut \xE2\x82")}, 1000, 2); }).find("not valid UTF-8 (byte 4)"),
            std::string::npos);
  BpeTrainOptions twice;
  twice.specials = {"<|a|>", "<|a|>"};
  EXPECT_NE(message([&] { train_bpe(WordCounts(twice.pre, {}), twice); }).find("listed twice"), std::string::npos);
}

// Written as GGUF keys and read back, the vocab is the same tokenizer.
TEST(BpeTrainer, the_gguf_keys_read_back) {
  const TokenizerVocab vocab = train_on({testing::read_text(license("Apache-2.0"))}, 500, 2);
  io::GgufWriter writer;
  add_tokenizer_metadata(writer.metadata(), vocab, chatml_template_source());
  TempDir dir;
  writer.write(dir.path / "vocab.gguf");
  const io::GgufFile file = io::GgufFile::open(dir.path / "vocab.gguf");
  const Tokenizer read = Tokenizer::from_gguf(file);
  EXPECT_EQ(read.vocab().tokens, vocab.tokens);
  EXPECT_EQ(read.vocab().merges, vocab.merges);
  EXPECT_EQ(read.vocab().types, vocab.types);
  EXPECT_EQ(read.bos(), vocab.bos);
  EXPECT_EQ(read.eos(), vocab.eos);
  EXPECT_EQ(read.pad(), vocab.pad);
  EXPECT_EQ(file.metadata().get<std::string>("tokenizer.chat_template"), chatml_template_source());
}

// The oracle: a model carrying the trained vocab tokenizes, in llama.cpp, exactly as tempra does,
// on texts the vocab was not trained on, special tokens included.
TEST(BpeTrainerOracle, a_trained_vocab_tokenizes_like_llama_cpp) {
  TempDir dir;
  const TokenizerVocab vocab = train_on({testing::read_text(license("GPL-3")), mixed_text()}, 1500, 2);
  io::GgufWriter writer;
  writer.metadata().add("general.name", {std::string("trained vocab")});
  add_tokenizer_metadata(writer.metadata(), vocab, chatml_template_source());
  writer.write(dir.path / "vocab.gguf");
  SynthSpec spec = SynthSpec::tiny();
  spec.n_layer = 1;
  spec.n_vocab = int64_t(vocab.tokens.size());
  spec.vocab_gguf = dir.path / "vocab.gguf";
  write_synthetic_model(dir.path / "model.gguf", spec);

  testing::init_llama();
  llama_model_params params = llama_model_default_params();
  params.vocab_only = true;
  llama_model* model = llama_model_load_from_file((dir.path / "model.gguf").c_str(), params);
  ASSERT_NE(model, nullptr) << testing::last_llama_error();
  const llama_vocab* lv = llama_model_get_vocab(model);
  ASSERT_EQ(llama_vocab_n_tokens(lv), int32_t(vocab.tokens.size()));
  const Tokenizer tokenizer = Tokenizer::from_gguf(io::GgufFile::open(dir.path / "model.gguf"));

  std::vector<std::string> texts = {"<|im_start|>user\nWhat is 12+34?<|im_end|>\n<|im_start|>assistant\n46",
                                    mixed_text(), "   leading spaces and trailing   ", "\n\n\n", "x"};
  for (const auto& entry : fs::directory_iterator("/usr/share/common-licenses"))
    if (entry.is_regular_file()) texts.push_back(testing::read_text(entry.path()));
  size_t checked = 0, tokens = 0;
  for (const std::string& text : texts) {
    for (const bool parse_special : {true, false}) {
      std::vector<llama_token> theirs(text.size() + 8);
      const int32_t n = llama_tokenize(lv, text.data(), int32_t(text.size()), theirs.data(), int32_t(theirs.size()),
                                       false, parse_special);
      ASSERT_GE(n, 0);
      theirs.resize(size_t(n));
      const std::vector<int32_t> ours = tokenizer.encode(text, {.parse_special = parse_special});
      ASSERT_EQ(ours, theirs) << "text of " << text.size() << " bytes, parse_special " << parse_special;
      ++checked;
      tokens += ours.size();
    }
  }
  llama_model_free(model);
  std::printf("%zu texts, %zu tokens: identical ids\n", checked, tokens);
}

}  // namespace
}  // namespace tempra::llm
