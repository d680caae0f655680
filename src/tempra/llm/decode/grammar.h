// tempra/llm/decode/grammar.h: GBNF grammars (llama.cpp's format), parsed into a flat program.
//
// The language is llama.cpp's (grammars/README.md in its source), so the grammar files people
// already have work unchanged:
//   root  ::= object              # a rule per line: name ::= alternatives; `#` starts a comment
//   value ::= "lit\n" | [a-z0-9_] | [^"\\] | . | ( group ) | name
//   rep   ::= x* | x+ | x? | x{3} | x{2,} | x{2,5}
// Names are [a-zA-Z0-9-]+; a rule continues on the next line only inside parentheses or after
// `|`. Literals and classes take escapes \x41 \u00e9 \U0001F600 \t \r \n \\ \" \[ \] \-, and any
// UTF-8 text; `[^...]` negates a class; `.` is any character. llama.cpp's token references
// (`<[123]>`, `<think>`) are refused by name: tempra's grammars are over text only.
//
// Contract: parse_grammar never crashes on bad text; it throws tempra::Error naming the line,
// the column and the rule being parsed ("[grammar] line 3, column 9 (rule 'value'): expecting
// ')'"). It also refuses what cannot be matched: an undefined rule, no `root` rule (or the one
// named), repetition counts past 10,000, and left recursion ("rule 'expr' is left-recursive
// through 'expr'"), which a pushdown matcher could never leave.
//
// The program: every alternative of every rule is a run of elements ending in `end`; an element
// matches one character (a class) or calls a rule. Repetitions are rewritten into helper rules,
// x* as x_n ::= x x_n | (right recursion), so the matcher knows only sequence, alternation and
// calls. The matcher (grammar_matcher.h) walks it as a pushdown automaton.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tempra::llm {

// A set of code points: ranges (inclusive) or their complement; `.` is `any`.
struct CharClass {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  bool negated = false;
  bool any = false;

  bool matches(uint32_t c) const;
  // Whether some code point in [low, high] could match: for a positive class any overlap; for a
  // negated one, no overlap at all (llama.cpp's rule for a character still being decoded, which
  // is conservative: it never allows a token whose character cannot match).
  bool may_match_range(uint32_t low, uint32_t high) const;
};

struct GrammarElement {
  enum class Kind : uint8_t { character, rule, end };
  Kind kind = Kind::end;
  uint32_t value = 0;  // character: an index into Grammar::classes; rule: a rule index
};

struct Grammar {
  struct Rule {
    std::string name;
    std::vector<uint32_t> alternatives;  // where each alternative starts in `elements`
  };
  std::vector<GrammarElement> elements;
  std::vector<CharClass> classes;
  std::vector<Rule> rules;
  uint32_t root = 0;

  // The grammar back in GBNF, one line per rule (helper rules included): for `tempra grammar`
  // and error reports.
  std::string to_gbnf() const;
};

// Parses GBNF text; `root` names the start rule. Throws tempra::Error as described above.
Grammar parse_grammar(std::string_view text, std::string_view root = "root");

// Appends code point `c` as GBNF spells it inside a literal ("...") or, with `in_class`, inside
// a character class ([...]): escapes for \ " \n \r \t, class punctuation and control characters.
void append_gbnf_char(std::string& out, uint32_t c, bool in_class);

}  // namespace tempra::llm
