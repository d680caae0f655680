// tests/llm/grammar_fuzz.cpp: libFuzzer over grammar text (scripts/fuzz.sh runs it). An input is
// a mode (its first byte: GBNF, JSON Schema or a regular expression) and the text (the rest).
// Whatever the bytes, compiling either succeeds or throws tempra::Error; a grammar that compiles
// is then run: a matcher over a vocabulary of every single byte and a few multi-byte tokens
// computes masks and accepts the allowed tokens it is offered, bounded in steps. Crashes,
// sanitizer reports, leaks and timeouts are the findings.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tempra/core/error.h"
#include "tempra/llm/decode/grammar_matcher.h"
#include "tempra/llm/decode/json_schema.h"

namespace {

using namespace tempra;

std::shared_ptr<const llm::GrammarVocab> vocab() {
  static const auto v = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, char(b)));
    for (const char* p : {"{\"", "\":", "true", "null", "\xc3\xa9", "\xe4\xb8", "\xad", "ab", "  ", "\n"})
      pieces.push_back(p);
    pieces.push_back("");
    const std::vector<int32_t> eog{int32_t(pieces.size() - 1)};
    return std::make_shared<const llm::GrammarVocab>(pieces, eog);
  }();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    std::string gbnf;
    switch (data[0] % 3) {
      case 0: gbnf = text; break;
      case 1: gbnf = llm::json_schema_to_gbnf(text); break;
      default: gbnf = llm::regex_to_gbnf(text); break;
    }
    llm::GrammarMatcher matcher(std::make_shared<const llm::Grammar>(llm::parse_grammar(gbnf)), vocab());
    llm::TokenMask mask;
    // Walk: at each step take the allowed token picked by the input's bytes, 64 steps at most.
    for (size_t step = 0; step < 64; ++step) {
      matcher.fill_mask(mask);
      if (mask.count() == 0) break;
      int32_t pick = int32_t(data[step % size]) % mask.size();
      while (!mask.allowed(pick)) pick = (pick + 1) % mask.size();
      if (!matcher.accept(pick)) __builtin_trap();  // an allowed token must be accepted
      if (matcher.ended()) break;
    }
  } catch (const Error&) {
    // refused with a message: the expected outcome for most inputs
  }
  return 0;
}
