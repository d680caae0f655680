// tests/llm/grammar_oracle_test.cpp: grammar masks against llama.cpp's grammar sampler.
//
// Parity: for every grammar in tests/llm/grammars/ and many token sequences walked through it, the
// set of tokens tempra's GrammarMatcher allows at every step equals the set llama.cpp's
// llama_sampler_init_grammar (the oracle's libllama) leaves unmasked, over Qwen3's real vocabulary
// (151,936 tokens, qwen3_vocab.h). The walks: each sample text of samples.json, tokenized as
// Qwen3 would; and seeded random walks that pick among the allowed tokens (half the time a
// one-byte token, so walks go deep into the grammar) until the grammar ends or 40 steps pass.
//
// Differences by design (grammar_matcher.h): tempra refuses a CONTROL token (llama.cpp matches
// its spelling, `<|im_start|>`, as text, though it prints nothing), a token with a NUL byte, and a
// token whose bytes after the text so far are not well-formed UTF-8 (llama.cpp's decoder lets
// some through). The test checks that every disagreement is one of these and that tempra is the
// one refusing.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"
#include "llm/qwen3_vocab.h"
#include "support/llama_oracle.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/llm/decode/grammar_matcher.h"
#include "tempra/llm/runtime/generator.h"
#include "tempra/llm/tokenizer/tokenizer.h"
#include "tempra/llm/tokenizer/unicode.h"

namespace tempra::llm {
namespace {

namespace fs = std::filesystem;

const fs::path kGrammarDir = fs::path(TEMPRA_SOURCE_DIR) / "tests/llm/grammars";

// Qwen3's vocab in both engines, and the grammar view of tempra's, once per test process.
struct Qwen3 : testing::Qwen3Vocab {
  std::shared_ptr<const GrammarVocab> grammar_vocab;
  Qwen3() : testing::Qwen3Vocab(testing::load_qwen3_vocab(TEMPRA_QWEN3_TOKENIZER_JSON)) {
    grammar_vocab = GrammarVocab::from_tokenizer(*tokenizer, end_of_generation_ids(*tokenizer));
  }
};

const Qwen3& qwen3() {
  static const Qwen3 q;
  return q;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// llama.cpp's grammar sampler over the whole vocabulary, and the tokens it leaves.
class LlamaGrammar {
 public:
  explicit LlamaGrammar(const std::string& gbnf) {
    sampler_ = llama_sampler_init_grammar(qwen3().vocab, gbnf.c_str(), "root");
    const int32_t n = llama_vocab_n_tokens(qwen3().vocab);
    data_.resize(size_t(n));
  }
  ~LlamaGrammar() {
    if (sampler_) llama_sampler_free(sampler_);
  }
  bool ok() const { return sampler_ != nullptr; }
  std::vector<bool> allowed() {
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = {llama_token(i), 0.0f, 0.0f};
    llama_token_data_array array{data_.data(), data_.size(), -1, false};
    llama_sampler_apply(sampler_, &array);
    std::vector<bool> out(data_.size(), false);
    for (size_t i = 0; i < array.size; ++i)
      if (std::isfinite(array.data[i].logit)) out[size_t(array.data[i].id)] = true;
    return out;
  }
  void accept(int32_t id) { llama_sampler_accept(sampler_, id); }

 private:
  llama_sampler* sampler_ = nullptr;
  std::vector<llama_token_data> data_;
};

struct Walker {
  std::string name;
  GrammarMatcher matcher;
  LlamaGrammar llama;
  TokenMask mask;
  std::string text;  // accepted so far
  int64_t steps = 0, allowed_total = 0, by_design = 0;

  Walker(const std::string& name, const std::string& gbnf)
      : name(name),
        matcher(std::make_shared<const Grammar>(parse_grammar(gbnf)), qwen3().grammar_vocab),
        llama(gbnf) {}

  // Compares the two masks at this step; returns false (with failures recorded) on a mismatch.
  bool compare(const std::string& where) {
    matcher.fill_mask(mask);
    const std::vector<bool> theirs = llama.allowed();
    const Tokenizer& tok = *qwen3().tokenizer;
    // The bytes of a character the text leaves unfinished.
    size_t cut = text.size();
    while (cut > 0 && text.size() - cut < 3 && (static_cast<uint8_t>(text[cut - 1]) >> 6) == 2) --cut;
    if (cut > 0 && static_cast<uint8_t>(text[cut - 1]) >= 0xC0) --cut;
    const std::string pending = well_formed_utf8_prefix(text.substr(cut)) ? text.substr(cut) : "";
    int reported = 0;
    for (int32_t id = 0; id < mask.size(); ++id) {
      const bool ours = mask.allowed(id);
      if (ours == theirs[size_t(id)]) continue;
      const std::string piece = tok.piece(id, false);
      const bool refused_by_design = (tok.attr(id) & kAttrControl) || piece.find('\0') != std::string::npos ||
                                     !well_formed_utf8_prefix(pending + piece);
      if (!ours && refused_by_design) {  // see the header
        ++by_design;
        continue;
      }
      if (reported++ < 5)
        ADD_FAILURE() << name << " " << where << ": token " << id << " '" << tok.piece(id, true) << "' tempra "
                      << (ours ? "allows" : "refuses") << ", llama.cpp " << (theirs[size_t(id)] ? "allows" : "refuses");
    }
    ++steps;
    allowed_total += mask.count();
    return reported == 0;
  }

  void accept(int32_t id) {
    ASSERT_TRUE(matcher.accept(id)) << name << ": token " << id;
    llama.accept(id);
    text += qwen3().tokenizer->piece(id, false);
  }
};

class GrammarOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(GrammarOracle, MasksEqualLlamaCppOnEveryStep) {
  ASSERT_NE(qwen3().vocab, nullptr) << testing::last_llama_error();
  const std::string name = GetParam();
  const std::string gbnf = read_file(kGrammarDir / (name + ".gbnf"));
  const nlohmann::json samples = nlohmann::json::parse(read_file(kGrammarDir / "samples.json")).at(name);
  const Tokenizer& tok = *qwen3().tokenizer;
  int64_t steps = 0, allowed = 0, by_design = 0;
  auto tally = [&](const Walker& w) {
    steps += w.steps;
    allowed += w.allowed_total;
    by_design += w.by_design;
  };

  // Each sample, token by token: every token allowed by both, and the end allowed at the end.
  for (const std::string sample : samples) {
    Walker w(name, gbnf);
    ASSERT_TRUE(w.llama.ok()) << "llama.cpp refused " << name;
    const std::vector<int32_t> ids = tok.encode(sample, {.parse_special = false});
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!w.compare("sample '" + sample + "' before token " + std::to_string(i))) break;
      ASSERT_TRUE(w.mask.allowed(ids[i])) << name << ": sample '" << sample << "' token " << i << " '"
                                          << tok.piece(ids[i]) << "' refused";
      w.accept(ids[i]);
    }
    EXPECT_TRUE(w.compare("after sample '" + sample + "'"));
    EXPECT_TRUE(w.matcher.can_end()) << name << ": sample '" << sample << "' is not a whole sentence";
    tally(w);
  }

  // Random walks among the allowed tokens.
  std::mt19937 rng(1234);
  for (int walk = 0; walk < 4; ++walk) {
    Walker w(name, gbnf);
    for (int step = 0; step < 40; ++step) {
      if (!w.compare("walk " + std::to_string(walk) + " step " + std::to_string(step))) break;
      std::vector<int32_t> choices, short_choices;
      for (int32_t id = 0; id < w.mask.size(); ++id) {
        if (!w.mask.allowed(id) || qwen3().grammar_vocab->is_eog(id)) continue;
        choices.push_back(id);
        if (tok.piece(id).size() == 1) short_choices.push_back(id);
      }
      if (choices.empty()) break;  // only the end is left
      const auto& pool = (!short_choices.empty() && rng() % 2 == 0) ? short_choices : choices;
      w.accept(pool[rng() % pool.size()]);
    }
    tally(w);
  }
  std::printf("[%s] %lld steps compared, %.0f tokens allowed per step on average, %lld tokens refused by "
              "design (control, NUL, malformed UTF-8)\n",
              name.c_str(), (long long)steps, double(allowed) / double(std::max<int64_t>(steps, 1)), (long long)by_design);
}

INSTANTIATE_TEST_SUITE_P(Corpus, GrammarOracle,
                         ::testing::Values("json", "arithmetic", "list", "utf8", "nested", "anychar", "words"));

}  // namespace
}  // namespace tempra::llm
