// tests/llm/tokenizer_test.cpp: the byte-level BPE tokenizer (tempra/llm/tokenizer/tokenizer.h).
//
// Parity: against llama.cpp's llama_tokenize / llama_token_to_piece (the oracle, libllama from
// tools/oracle/install.sh) on a vocab-only GGUF of Qwen3's real tokenizer (qwen3_vocab.h) and on
// llama.cpp's own Llama 3 (BPE) and Llama 2 (SentencePiece) vocabs (ggml-vocab-llama-bpe.gguf,
// ggml-vocab-llama-spm.gguf, their .inp/.out vectors too), for
// every string in tokenizer_fixtures.json and every file in Debian's /usr/share/common-licenses,
// with parse_special both true and false: zero mismatches allowed. The rest are unit tests of
// the contract on a toy byte-level vocab: atomic special tokens, streaming decode that holds
// partial UTF-8, invalid UTF-8, and linear time on long inputs.
#include "tempra/llm/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "llama.h"
#include "support/llama_oracle.h"
#include "llm/qwen3_vocab.h"
#include "tempra/core/error.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/llm/tokenizer/unicode.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;

using testing::last_llama_error;

// A vocab in both engines: tempra's tokenizer over it and llama.cpp's vocab-only model.
using Vocab = testing::Qwen3Vocab;

// Qwen3's, built from its tokenizer.json (qwen3_vocab.h), once per test process.
const Vocab& qwen3() {
  static const Vocab q = testing::load_qwen3_vocab(TEMPRA_QWEN3_TOKENIZER_JSON);
  return q;
}

// Qwen3.5's pre-tokenizer (qwen35: combining marks join the letters' words) over Qwen3's vocab.
const Vocab& qwen35() {
  static const Vocab q = testing::load_qwen3_vocab(TEMPRA_QWEN3_TOKENIZER_JSON, "qwen35");
  return q;
}

// Llama 3's (gpt2 model, llama-bpe pre-tokenizer, 128256 tokens): the vocab-only GGUF llama.cpp
// ships for its own tokenizer tests (models/ggml-vocab-llama-bpe.gguf in the oracle's source).
// The vocab-only GGUFs llama.cpp ships for its own tokenizer tests (models/ in the oracle's source),
// in both engines.
fs::path llama_cpp_vocab_file(const std::string& name) {
  return fs::path(TEMPRA_ORACLE_LLAMA_SRC) / ("models/ggml-vocab-" + name + ".gguf");
}
Vocab load_llama_cpp_vocab(const std::string& name) {
  testing::init_llama();
  const fs::path path = llama_cpp_vocab_file(name);
  Vocab l;
  l.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_gguf(io::GgufFile::open(path)));
  llama_model_params params = llama_model_default_params();
  params.vocab_only = true;
  l.model = llama_model_load_from_file(path.c_str(), params);
  if (l.model) l.vocab = llama_model_get_vocab(l.model);
  return l;
}
// Llama 3's: gpt2 model, llama-bpe pre-tokenizer, 128256 tokens.
const Vocab& llama_bpe() {
  static const Vocab v = load_llama_cpp_vocab("llama-bpe");
  return v;
}
// Llama 2's: the SentencePiece `llama` model, 32000 tokens with scores and <0xXX> byte tokens.
const Vocab& llama_spm() {
  static const Vocab v = load_llama_cpp_vocab("llama-spm");
  return v;
}

std::vector<int32_t> llama_ids(const Vocab& v, const std::string& text, bool parse_special) {
  std::vector<llama_token> ids(text.size() + 8);
  int32_t n =
      llama_tokenize(v.vocab, text.data(), int32_t(text.size()), ids.data(), int32_t(ids.size()), false, parse_special);
  if (n < 0) {
    ids.resize(size_t(-n));
    n = llama_tokenize(v.vocab, text.data(), int32_t(text.size()), ids.data(), int32_t(ids.size()), false,
                       parse_special);
  }
  ids.resize(size_t(std::max(n, 0)));
  return ids;
}

std::string llama_piece(const Vocab& v, llama_token id, bool special) {
  char buf[256];
  const int32_t n = llama_token_to_piece(v.vocab, id, buf, sizeof buf, 0, special);
  if (n >= 0) return std::string(buf, size_t(n));
  std::string big(size_t(-n), '\0');
  llama_token_to_piece(v.vocab, id, big.data(), int32_t(big.size()), 0, special);
  return big;
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (const int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

// Encodes `text` both ways; returns "" when they agree, else a description.
std::string mismatch(const Vocab& v, const std::string& label, const std::string& text, bool parse_special) {
  const std::vector<int32_t> ours = v.tokenizer->encode(text, {.parse_special = parse_special});
  const std::vector<int32_t> theirs = llama_ids(v, text, parse_special);
  if (ours == theirs) return {};
  return label + " (parse_special=" + (parse_special ? "true" : "false") + ")\n  tempra: " + show(ours) +
         "\n  llama:  " + show(theirs) + "\n";
}

std::vector<std::string> fixtures() {
  std::ifstream in(fs::path(TEMPRA_SOURCE_DIR) / "tests/llm/tokenizer_fixtures.json", std::ios::binary);
  return nlohmann::json::parse(in).at("strings").get<std::vector<std::string>>();
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The oracle cases, run on each byte-level vocab.
struct VocabCase {
  const char* name;
  const Vocab& (*vocab)();
  bool sentencepiece = false;
};
class VocabOracle : public ::testing::TestWithParam<VocabCase> {
 protected:
  void SetUp() override {
    ASSERT_NE(v().vocab, nullptr) << "llama.cpp did not load the vocab-only GGUF: " << last_llama_error();
  }
  const Vocab& v() const { return GetParam().vocab(); }
};
INSTANTIATE_TEST_SUITE_P(ByteLevel, VocabOracle,
                         ::testing::Values(VocabCase{"qwen3", qwen3}, VocabCase{"qwen35", qwen35},
                                           VocabCase{"llama_bpe", llama_bpe},
                                           VocabCase{"llama_spm", llama_spm, true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_P(VocabOracle, vocab_attributes_and_pieces_match_llama) {
  const Tokenizer& tok = *v().tokenizer;
  ASSERT_EQ(tok.size(), llama_vocab_n_tokens(v().vocab));
  int mismatches = 0;
  for (int32_t id = 0; id < tok.size(); ++id) {
    const uint32_t theirs = uint32_t(llama_vocab_get_attr(v().vocab, id));
    if (tok.attr(id) != theirs && ++mismatches <= 10)
      ADD_FAILURE() << "token " << id << " '" << tok.text(id) << "': attr " << tok.attr(id) << " vs llama " << theirs;
    for (const bool special : {true, false})
      if (tok.piece(id, special) != llama_piece(v(), id, special) && ++mismatches <= 10)
        ADD_FAILURE() << "token " << id << " piece (special=" << special << ") differs from llama's";
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(tok.bos(), llama_vocab_bos(v().vocab));
  EXPECT_EQ(tok.eos(), llama_vocab_eos(v().vocab));
  // With add_special, both engines add (or leave out) the same BOS.
  const std::vector<int32_t> ours = tok.encode("Hello", {.add_special = true});
  std::vector<llama_token> theirs(16);
  theirs.resize(size_t(llama_tokenize(v().vocab, "Hello", 5, theirs.data(), 16, true, true)));
  EXPECT_EQ(ours, theirs);
}

TEST_P(VocabOracle, fixtures_encode_exactly_as_llama_and_round_trip) {
  const std::vector<std::string> strings = fixtures();
  ASSERT_GE(strings.size(), 300u);
  std::string report;
  int mismatches = 0, round_trip_failures = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    for (const bool parse_special : {true, false}) {
      const std::string m = mismatch(v(), "fixture " + std::to_string(i), strings[i], parse_special);
      if (!m.empty() && ++mismatches <= 20) report += m;
      // SentencePiece adds a space before the text (add_space_prefix): no round trip there.
      if (GetParam().sentencepiece) continue;
      const std::string back = v().tokenizer->decode(v().tokenizer->encode(strings[i], {.parse_special = parse_special}));
      if (back != strings[i] && ++round_trip_failures <= 20)
        report += "round trip of fixture " + std::to_string(i) + "\n";
    }
  }
  EXPECT_EQ(mismatches, 0) << report;
  EXPECT_EQ(round_trip_failures, 0) << report;
}

TEST_P(VocabOracle, debian_license_files_encode_exactly_as_llama) {
  const fs::path licenses = "/usr/share/common-licenses";
  ASSERT_TRUE(fs::is_directory(licenses));
  std::string report;
  int files = 0, mismatches = 0;
  for (const auto& entry : fs::directory_iterator(licenses)) {
    if (!fs::is_regular_file(entry.path())) continue;  // follows symlinks (GPL -> GPL-3)
    const std::string text = read_file(entry.path());
    ++files;
    for (const bool parse_special : {true, false}) {
      const std::string m = mismatch(v(), entry.path().string(), text, parse_special);
      if (!m.empty()) {
        ++mismatches;
        report += m.substr(0, 2000);
      }
    }
    if (!GetParam().sentencepiece)
      EXPECT_TRUE(v().tokenizer->decode(v().tokenizer->encode(text)) == text) << entry.path() << " does not round-trip";
  }
  EXPECT_GE(files, 10);
  EXPECT_EQ(mismatches, 0) << report;
}

TEST_P(VocabOracle, invalid_utf8_encodes_exactly_as_llama) {
  // Code points above U+10FFFF (leads 0xF5-0xF7 with three continuation bytes) are left out:
  // llama.cpp throws on them (tempra writes U+FFFD; see invalid_utf8_never_throws).
  const std::vector<std::string> cases = {"\xff",
                                          "\xfe\xff",
                                          "abc\x80",
                                          "\x80\x80\x80",
                                          "\xc3",
                                          "\xc3(",
                                          "\xe4\xb8",
                                          "\xe4\xb8 ok",
                                          "\xf0\x9f\x98",
                                          "\xf0\x9f\x98 tail",
                                          "\xed\xa0\x80 surrogate",
                                          "\xc0\xaf overlong",
                                          "\xe0\x80\xaf",
                                          "\xf8\x88\x80\x80\x80",
                                          "mid\xff"
                                          "dle",
                                          "\xef\xbf\xbd vs \xff",
                                          "<|im_end|>\xff<|im_end|>",
                                          "\xe2\x82",
                                          "\xe2\x82\xac\xe2\x82",
                                          "'\xff",
                                          "\xff's",
                                          "  \xff  ",
                                          "\n\xff\n",
                                          "1\xff"
                                          "2",
                                          "12345\xff"
                                          "6789",
                                          "\xc2\xa0\xc2"};
  std::string report;
  for (size_t i = 0; i < cases.size(); ++i)
    for (const bool parse_special : {true, false})
      report += mismatch(v(), "invalid case " + std::to_string(i), cases[i], parse_special);
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string s(size_t(rng() % 24), '\0');
    for (char& c : s) {
      do c = char(rng() & 0xFF);
      while (static_cast<unsigned char>(c) >= 0xF5 && static_cast<unsigned char>(c) <= 0xF7);
    }
    report += mismatch(v(), "random bytes " + std::to_string(i), s, true);
  }
  EXPECT_EQ(report, "");
}

// llama.cpp's own test vectors for its vocab files (ggml-vocab-NAME.gguf.inp/.out, which its
// test-tokenizer-0 encodes without BOS and without parsing special tokens).
class VocabVectors : public ::testing::TestWithParam<VocabCase> {};
INSTANTIATE_TEST_SUITE_P(LlamaCpp, VocabVectors,
                         ::testing::Values(VocabCase{"llama-bpe", llama_bpe}, VocabCase{"llama-spm", llama_spm, true}),
                         [](const auto& info) {
                           std::string name = info.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });
TEST_P(VocabVectors, llama_cpp_test_vectors_encode_as_their_expected_ids) {
  const std::string file = llama_cpp_vocab_file(GetParam().name).string();
  const std::string inp = read_file(file + ".inp"), out = read_file(file + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts, expected;
  for (size_t from = 0, at; (at = inp.find(sep, from)) != std::string::npos; from = at + sep.size())
    texts.push_back(inp.substr(from, at - from));
  for (size_t from = 0, at; from < out.size() && (at = out.find('\n', from)) != std::string::npos; from = at + 1)
    expected.push_back(out.substr(from, at - from));
  ASSERT_GE(texts.size(), 30u);
  ASSERT_EQ(texts.size(), expected.size());
  const Tokenizer& tok = *GetParam().vocab().tokenizer;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::string ours;
    for (const int32_t id : tok.encode(texts[i], {.parse_special = false})) ours += " " + std::to_string(id);
    std::string want = expected[i];  // " id id ...", or "" for no tokens
    if (!want.empty() && want.front() != ' ') want = " " + want;
    EXPECT_EQ(ours, want) << "vector " << i << ": '" << texts[i] << "'";
  }
}

class Qwen3Oracle : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(qwen3().vocab, nullptr) << "llama.cpp did not load the vocab-only GGUF: " << last_llama_error();
  }
};

TEST_F(Qwen3Oracle, special_tokens_are_atomic_and_parse_special_false_keeps_them_as_text) {
  const Tokenizer& tok = *qwen3().tokenizer;
  // Anchors that the oracle itself is live: Qwen's published ids.
  EXPECT_EQ(llama_ids(qwen3(), "Hello world", true), (std::vector<int32_t>{9707, 1879}));
  EXPECT_EQ(llama_ids(qwen3(), "<|im_start|>", true), (std::vector<int32_t>{151644}));
  EXPECT_NE(llama_ids(qwen3(), "<|im_start|>", false), (std::vector<int32_t>{151644}));
  const std::string chat = "<|im_start|>user\nhi<|im_end|>";
  const std::vector<int32_t> ids = tok.encode(chat);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_EQ(ids.back(), 151645);
  for (const int32_t id : tok.encode(chat, {.parse_special = false})) {
    EXPECT_NE(id, 151644);
    EXPECT_NE(id, 151645);
  }
  // <think> is USER_DEFINED: cut out even without parse_special, as in llama.cpp and HF.
  EXPECT_EQ(tok.encode("a<think>b", {.parse_special = false}).at(1), 151667);
  EXPECT_EQ(tok.decode(tok.encode(chat), false), "user\nhi");
}

// A byte-level vocab of the 256 single bytes plus "ab" and the special "<s>", built directly.
Tokenizer toy_tokenizer() {
  TokenizerVocab v;
  for (int b = 0; b < 256; ++b) {
    std::string t;
    append_utf8(t, byte_to_codepoint(uint8_t(b)));
    v.tokens.push_back(t);
  }
  v.tokens.push_back("ab");
  v.merges.push_back("a b");
  v.tokens.push_back("<s>");
  v.types.assign(v.tokens.size(), TokenType::normal);
  v.types.back() = TokenType::control;
  v.bos = 257;
  return Tokenizer(std::move(v));
}

TEST(Tokenizer, streaming_decoder_holds_partial_utf8_until_complete) {
  const Tokenizer tok = toy_tokenizer();
  const std::string text =
      "a\xf0\x9f\x98\x80"
      "b\xe4\xb8\xad";  // a😀b中
  const std::vector<int32_t> ids = tok.encode(text);
  ASSERT_EQ(ids.size(), 9u);  // one token per byte ("a" and "b" are not adjacent)
  StreamingDecoder stream(tok);
  std::vector<std::string> out;
  for (const int32_t id : ids) out.push_back(stream.push(id));
  const std::vector<std::string> expected = {"a", "", "", "", "\xf0\x9f\x98\x80", "b", "", "", "\xe4\xb8\xad"};
  EXPECT_EQ(out, expected);
  EXPECT_FALSE(stream.has_pending());
  EXPECT_EQ(stream.finish(), "");
}

TEST(Tokenizer, streaming_decoder_passes_invalid_bytes_and_flushes_a_truncated_tail) {
  const Tokenizer tok = toy_tokenizer();
  StreamingDecoder stream(tok);
  std::string all;
  // a lone continuation byte, a lead followed by ASCII, then a truncated 3-byte sequence
  // (ids = bytes in the toy vocab; encode would have replaced the invalid bytes by U+FFFD).
  for (const int32_t id : std::vector<int32_t>{0x80, 'x', 0xE4, 'y', 0xE4, 0xB8}) all += stream.push(id);
  EXPECT_EQ(all, "\x80x\xe4y");
  EXPECT_TRUE(stream.has_pending());
  EXPECT_EQ(stream.finish(), "\xe4\xb8");
}

TEST(Tokenizer, special_token_is_matched_atomically_inside_text) {
  const Tokenizer tok = toy_tokenizer();
  EXPECT_EQ(tok.encode("ab<s>ab"), (std::vector<int32_t>{256, 257, 256}));
  EXPECT_EQ(tok.encode("ab<s>ab", {.parse_special = false}).size(), 5u);
  EXPECT_EQ(tok.decode(tok.encode("x<s>y")), "x<s>y");
  EXPECT_EQ(tok.decode(tok.encode("x<s>y"), false), "xy");
}

TEST(Tokenizer, invalid_utf8_never_throws_and_reads_as_replacement_characters) {
  const Tokenizer tok = toy_tokenizer();
  // One U+FFFD (EF BF BD) per byte that does not start a valid sequence.
  EXPECT_EQ(tok.decode(tok.encode("\xff")), "\xef\xbf\xbd");
  EXPECT_EQ(tok.decode(tok.encode("a\xe4\xb8"
                                  "b")),
            "a\xef\xbf\xbd\xef\xbf\xbd"
            "b");
  EXPECT_EQ(tok.decode(tok.encode("\xf5\x80\x80\x80")), "\xef\xbf\xbd");  // above U+10FFFF
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::string s(size_t(rng() % 40), '\0');
    for (char& c : s) c = char(rng() & 0xFF);
    EXPECT_NO_THROW(tok.encode(s));
  }
}

TEST(Tokenizer, long_inputs_take_linear_time) {
  const Tokenizer tok = toy_tokenizer();
  for (const std::string unit : {" ", "a", "ab", "\n ", "1", "!", "\xe4\xb8\xad"}) {
    std::string text;
    while (text.size() < 100000) text += unit;  // quadratic would be ~10^10 steps
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int32_t> ids = tok.encode(text);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 5.0) << "unit '" << unit << "'";
    EXPECT_EQ(tok.decode(ids), text);
  }
}

TEST(Tokenizer, from_gguf_rejects_other_tokenizers_naming_the_key) {
  io::GgufMetadata m;
  m.add("tokenizer.ggml.model", {std::string("bert")});
  m.add("tokenizer.ggml.tokens", {io::GgufArray{std::vector<std::string>{"a"}}});
  try {
    Tokenizer::from_gguf(m);
    FAIL() << "expected tempra::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.model"), std::string::npos) << e.what();
  }
  io::GgufMetadata qwen;
  qwen.add("tokenizer.ggml.model", {std::string("gpt2")});
  qwen.add("tokenizer.ggml.pre", {std::string("deepseek-llm")});
  qwen.add("tokenizer.ggml.tokens", {io::GgufArray{std::vector<std::string>{"a"}}});
  try {
    Tokenizer::from_gguf(qwen);
    FAIL() << "expected tempra::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pre-tokenizer 'deepseek-llm' is not supported"), std::string::npos)
        << e.what();
  }
  io::GgufMetadata missing;
  EXPECT_THROW(Tokenizer::from_gguf(missing), Error);
}

TEST(Tokenizer, ids_outside_the_vocab_throw) {
  const Tokenizer tok = toy_tokenizer();
  EXPECT_THROW(tok.piece(-1), Error);
  EXPECT_THROW(tok.decode(std::vector<int32_t>{tok.size()}), Error);
}

}  // namespace
}  // namespace tempra::llm
