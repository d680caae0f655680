// tests/llm/grammar_test.cpp: GBNF parsing, the matcher, JSON Schema and regex compilation.
//
// Unit tests of the contracts in decode/grammar.h, grammar_matcher.h and json_schema.h on small
// vocabularies: errors that name the place, repetition counts, UTF-8 split across tokens, the end
// allowed exactly at the end, the constrained sampler, and schema features refused by name. The
// masks themselves are held to llama.cpp's on Qwen3's vocabulary by grammar_oracle_test.cpp, and
// generated documents to ajv by json_schema/validate.mjs.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "support/errors.h"
#include "tempra/llm/decode/grammar.h"
#include "tempra/llm/decode/grammar_matcher.h"
#include "tempra/llm/decode/json_schema.h"
#include "tempra/llm/decode/sampler.h"
#include "tempra/llm/tokenizer/unicode.h"

namespace tempra::llm {
namespace {

// Every byte is a token (id = byte value) and 256 ends generation.
std::shared_ptr<const GrammarVocab> byte_vocab() {
  static const auto vocab = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, char(b)));
    pieces.push_back("");
    const std::vector<int32_t> eog{256};
    return std::make_shared<const GrammarVocab>(pieces, eog);
  }();
  return vocab;
}

// Whether the grammar accepts `text` whole, fed one byte at a time.
bool accepts(const std::string& gbnf, const std::string& text) {
  GrammarMatcher m(std::make_shared<const Grammar>(parse_grammar(gbnf)), byte_vocab());
  for (unsigned char c : text)
    if (!m.accept(c)) return false;
  return m.accept(256);
}

std::string error_of(const std::string& gbnf) {
  try {
    parse_grammar(gbnf);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Grammar, errors_name_line_column_and_rule) {
  EXPECT_EQ(error_of("root ::= \"a\" (\n"), "[grammar] line 2, column 1 (rule 'root'): expecting ')'");
  EXPECT_EQ(error_of("root ::= x\nx ::= [ab"), "[grammar] line 2, column 10 (rule 'x'): unterminated character class");
  EXPECT_EQ(error_of("root ::= foo"), "[grammar] undefined rule 'foo'");
  EXPECT_EQ(error_of("main ::= \"a\""), "[grammar] the grammar has no rule named 'root'");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "[grammar] line 2, column 10 (rule 'root'): rule 'root' is defined twice");
  EXPECT_NE(error_of("root ::= \"\\q\"").find("unknown escape '\\q'"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{20000}").find("repetition counts past 10000"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{3,2}").find("maximum below its minimum"), std::string::npos);
  EXPECT_NE(error_of("root ::= <[12]>").find("token references"), std::string::npos);
  EXPECT_NE(error_of("root ::= * \"a\"").find("nothing before it to repeat"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\xZZ\"").find("expecting 2 hex digits"), std::string::npos);
  EXPECT_NE(error_of(std::string("root ::= \"\xff\"")).find("invalid UTF-8"), std::string::npos);
}

TEST(Grammar, left_recursion_is_refused_with_its_path) {
  EXPECT_EQ(error_of("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\""),
            "[grammar] rule 'expr' is left-recursive: 'expr' -> 'expr'");
  // Through a rule that can match nothing.
  const std::string e = error_of("root ::= a\na ::= b a \"x\" | \"y\"\nb ::= c\nc ::= \"z\" | ");
  EXPECT_NE(e.find("left-recursive"), std::string::npos) << e;
  // Right recursion is fine.
  EXPECT_TRUE(accepts("root ::= \"x\" root | \"y\"", "xxy"));
}

TEST(Grammar, repetitions_match_exactly_their_counts) {
  const std::string g = "root ::= \"a\"{2,3} \"b\"* \"c\"+ \"d\"? [0-9]{2} \"e\"{2,}";
  EXPECT_TRUE(accepts(g, "aac42ee"));
  EXPECT_TRUE(accepts(g, "aaabbbccd42eee"));
  EXPECT_FALSE(accepts(g, "ac42ee"));      // one a
  EXPECT_FALSE(accepts(g, "aaaac42ee"));   // four
  EXPECT_FALSE(accepts(g, "aa42ee"));      // no c
  EXPECT_FALSE(accepts(g, "aacdd42ee"));   // two d
  EXPECT_FALSE(accepts(g, "aac4ee"));      // one digit
  EXPECT_FALSE(accepts(g, "aac42e"));      // one e
  // A group repeated, with an empty alternative inside.
  EXPECT_TRUE(accepts("root ::= ( \"x\" | \"\" ){3} \"!\"", "xx!"));
  EXPECT_TRUE(accepts("root ::= ( \"ab\" | \"c\" )+", "abcab"));
  EXPECT_FALSE(accepts("root ::= ( \"ab\" | \"c\" )+", "abb"));
}

TEST(Grammar, classes_negation_any_and_escapes) {
  const std::string g = "root ::= [^a-c\\]] [\\x41-\\x43] . [\\u00e9\\U0001F600] \"\\n\\t\\\\\\\"\"";
  EXPECT_TRUE(accepts(g, "dA\x01\xc3\xa9\n\t\\\""));
  EXPECT_TRUE(accepts(g, "zC\xe4\xb8\xad\xf0\x9f\x98\x80\n\t\\\""));
  EXPECT_FALSE(accepts(g, "bA.\xc3\xa9\n\t\\\""));  // b is excluded
  EXPECT_FALSE(accepts(g, "]A.\xc3\xa9\n\t\\\""));  // so is ]
  EXPECT_FALSE(accepts(g, "dD.\xc3\xa9\n\t\\\""));  // D is past C
  EXPECT_FALSE(accepts(g, "dA.\xc3\xa8\n\t\\\""));  // è is not é
}

TEST(Grammar, to_gbnf_reads_back_as_the_same_language) {
  const std::string g = "root ::= ( [a-z]+ \"=\" val ){1,2}\nval ::= [0-9]+ | \"\\\"\" [^\"\\n]* \"\\\"\"";
  const Grammar parsed = parse_grammar(g);
  const std::string printed = parsed.to_gbnf();
  SCOPED_TRACE(printed);
  for (const std::string text : {"a=1", "ab=\"x y\"cd=22", "", "a=", "a=1b=2c=3", "a=\"\n\""})
    EXPECT_EQ(accepts(g, text), accepts(printed, text)) << text << "\n" << printed;
}

TEST(GrammarMatcher, masks_allow_exactly_the_continuations_and_the_end_at_the_end) {
  // Tokens: "a", "b", "ab", "abc", "c", end.
  const std::vector<std::string> pieces = {"a", "b", "ab", "abc", "c", ""};
  const std::vector<int32_t> eog = {5};
  auto vocab = std::make_shared<const GrammarVocab>(pieces, eog);
  GrammarMatcher m(std::make_shared<const Grammar>(parse_grammar("root ::= \"ab\" | \"abc\" \"c\"?")), vocab);
  TokenMask mask;
  m.fill_mask(mask);
  EXPECT_TRUE(mask.allowed(0));   // a
  EXPECT_FALSE(mask.allowed(1));  // b
  EXPECT_TRUE(mask.allowed(2));   // ab
  EXPECT_TRUE(mask.allowed(3));   // abc
  EXPECT_FALSE(mask.allowed(5));  // not the end yet
  ASSERT_TRUE(m.accept(2));
  m.fill_mask(mask);
  EXPECT_EQ(mask.count(), 2);  // "c" and the end
  EXPECT_TRUE(mask.allowed(4) && mask.allowed(5));
  EXPECT_FALSE(m.accept(0));  // refused, and nothing changed
  const GrammarMatcher::Position before = m.position();
  ASSERT_TRUE(m.accept(4));
  ASSERT_TRUE(m.accept(4));
  m.fill_mask(mask);
  EXPECT_EQ(mask.count(), 1);  // only the end
  m.restore(before);
  m.fill_mask(mask);
  EXPECT_EQ(mask.count(), 2);
  ASSERT_TRUE(m.accept(5));
  EXPECT_TRUE(m.ended());
  m.fill_mask(mask);
  EXPECT_EQ(mask.count(), 0);
}

TEST(GrammarMatcher, utf8_split_across_tokens_and_malformed_bytes) {
  // "é" is C3 A9; "中" is E4 B8 AD. Tokens: the lead bytes, continuation pieces, an invalid lead
  // (F8), an overlong lead (C0), and whole characters.
  const std::vector<std::string> pieces = {"\xc3", "\xa9", "\xe4", "\xb8", "\xad", "\xb8\xad", "\xf8", "\xc0",
                                           "\xc3\xa9", "x", ""};
  const std::vector<int32_t> eog = {10};
  auto vocab = std::make_shared<const GrammarVocab>(pieces, eog);
  GrammarMatcher m(std::make_shared<const Grammar>(parse_grammar("root ::= [\\u00e9\\u4e2d]+")), vocab);
  TokenMask mask;
  m.fill_mask(mask);
  EXPECT_TRUE(mask.allowed(0) && mask.allowed(2) && mask.allowed(8));  // leads that can complete
  EXPECT_FALSE(mask.allowed(1) || mask.allowed(3) || mask.allowed(5));  // continuations need a lead
  EXPECT_FALSE(mask.allowed(6) || mask.allowed(7) || mask.allowed(9));  // malformed, and "x"
  ASSERT_TRUE(m.accept(2));  // E4: now only continuation bytes that can become 中
  m.fill_mask(mask);
  EXPECT_TRUE(mask.allowed(3) && mask.allowed(5));
  EXPECT_FALSE(mask.allowed(1) || mask.allowed(4) || mask.allowed(0) || mask.allowed(10));
  ASSERT_TRUE(m.accept(3));
  ASSERT_TRUE(m.accept(4));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.accept(6));
}

TEST(Sampler, constrained_sampling_only_returns_allowed_tokens_and_ends_where_the_grammar_does) {
  const std::vector<std::string> pieces = {"0", "1", "2", "x", "-", ""};
  const std::vector<int32_t> eog = {5};
  auto vocab = std::make_shared<const GrammarVocab>(pieces, eog);
  auto grammar = std::make_shared<const Grammar>(parse_grammar("root ::= \"-\"? [0-2]{1,3}"));
  for (uint64_t seed = 0; seed < 50; ++seed) {
    Sampler s({.temperature = 1.5f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = seed});
    s.constrain(std::make_unique<GrammarMatcher>(grammar, vocab));
    std::string text;
    std::vector<int32_t> history;
    for (int step = 0; step < 10; ++step) {
      // "x" has by far the largest logit, and the end the smallest: the grammar decides.
      const std::vector<float> logits = {0.0f, 0.1f, 0.2f, 9.0f, 0.3f, -1.0f};
      const int32_t id = s.sample(logits, history);
      history.push_back(id);
      if (id == 5) break;
      text += pieces[size_t(id)];
    }
    EXPECT_TRUE(accepts("root ::= \"-\"? [0-2]{1,3}", text)) << text;
    EXPECT_EQ(history.back(), 5) << text;
  }
  // Greedy picks the best allowed token.
  Sampler greedy({.temperature = 0.0f});
  greedy.constrain(std::make_unique<GrammarMatcher>(grammar, vocab));
  EXPECT_EQ(greedy.sample(std::vector<float>{0.0f, 0.1f, 0.2f, 9.0f, 0.3f, -1.0f}, {}), 4);
}

TEST(Unicode, well_formed_utf8_prefixes) {
  EXPECT_TRUE(well_formed_utf8_prefix("abc\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80"));
  EXPECT_TRUE(well_formed_utf8_prefix("a\xe4\xb8"));  // cut short
  EXPECT_TRUE(well_formed_utf8_prefix("\xf0\x9f"));
  EXPECT_FALSE(well_formed_utf8_prefix("\xa9"));           // a continuation first
  EXPECT_FALSE(well_formed_utf8_prefix("\xc0\x80"));       // overlong
  EXPECT_FALSE(well_formed_utf8_prefix("\xe0\x80"));       // overlong, caught at the second byte
  EXPECT_FALSE(well_formed_utf8_prefix("\xed\xa0\x80"));   // a surrogate
  EXPECT_FALSE(well_formed_utf8_prefix("\xf4\x90"));       // past U+10FFFF
  EXPECT_FALSE(well_formed_utf8_prefix("\xf8"));
  EXPECT_FALSE(well_formed_utf8_prefix("\xc3" "a"));       // a lead without its continuation
}

std::string schema_error(const std::string& schema) {
  try {
    json_schema_to_gbnf(schema);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JsonSchema, unsupported_features_are_refused_by_name_and_place) {
  EXPECT_EQ(schema_error(R"({"type":"object","properties":{"age":{"type":"integer","minimum":0}}})"),
            "[json-schema] at /properties/age: 'minimum' is not supported");
  EXPECT_EQ(schema_error(R"({"type":"string","pattern":"abc"})"),
            "[json-schema] at /: 'pattern' must be anchored with '^' and '$' (a pattern matches anywhere in the string otherwise)");
  EXPECT_EQ(schema_error(R"({"type":"string","format":"email"})"),
            "[json-schema] at /: format 'email' is not supported (date, time, date-time and uuid are)");
  EXPECT_EQ(schema_error(R"({"$ref":"https://example.com/s.json"})"),
            "[json-schema] at /: '$ref' to 'https://example.com/s.json' is not supported (only #/$defs/NAME and "
            "#/definitions/NAME of this schema)");
  EXPECT_EQ(schema_error(R"({"type":"integer","maxItems":3})"), "[json-schema] at /: 'maxItems' does not apply to type \"integer\"");
  EXPECT_EQ(schema_error(R"({"not":{}})"), "[json-schema] at /: 'not' is not supported");
  EXPECT_EQ(schema_error("{"), schema_error("{").substr(0, 0) + schema_error("{"));  // named below
  EXPECT_NE(schema_error("{").find("[json-schema] not valid JSON"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type":"string","pattern":"^(?=a)$"})").find("lookaround"), std::string::npos);
}

TEST(JsonSchema, objects_keep_required_members_and_refuse_repeated_declared_keys) {
  const std::string g = json_schema_to_gbnf(
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string","maxLength":2}},"required":["b"],
          "additionalProperties":{"type":"boolean"}})");
  EXPECT_TRUE(accepts(g, R"({"b": "xy"})"));
  EXPECT_TRUE(accepts(g, R"({"a": 1, "b": "", "c": true, "bb": false})"));
  EXPECT_FALSE(accepts(g, R"({"a": 1})"));                  // b is required
  EXPECT_FALSE(accepts(g, R"({"b": "xyz"})"));              // too long
  EXPECT_FALSE(accepts(g, R"({"b": "x", "a": 1})"));        // a declared key as an extra
  EXPECT_FALSE(accepts(g, R"({"b": "x", "c": 1})"));        // extras are booleans
  EXPECT_TRUE(accepts(json_object_gbnf(), R"( {"k": [1, {"z": null}], "e": "\u00e9"} )"));
  EXPECT_FALSE(accepts(json_object_gbnf(), "[1]"));
}

TEST(JsonSchema, keywords_beside_a_combinator_are_refused_or_applied_never_dropped) {
  // `type` beside `enum` filters the values; anything else beside a combinator is refused.
  const std::string g = json_schema_to_gbnf(R"({"type": "integer", "enum": [1, "x", 2.0, 2.5]})");
  EXPECT_TRUE(accepts(g, "1"));
  EXPECT_TRUE(accepts(g, "2.0"));
  EXPECT_FALSE(accepts(g, "\"x\""));
  EXPECT_FALSE(accepts(g, "2.5"));
  EXPECT_EQ(schema_error(R"({"type": "object", "required": ["a"], "anyOf": [{"required": ["b"]}]})"),
            "[json-schema] at /: 'type' beside 'anyOf' is not supported");
  EXPECT_EQ(schema_error(R"({"enum": ["a"], "maxLength": 3})"), "[json-schema] at /: 'maxLength' beside 'enum' is not supported");
  EXPECT_EQ(schema_error(R"({"type": "string", "const": 3})"),
            "[json-schema] at /: no value of 'enum'/'const' has the 'type' \"string\"");
  // A required name that `properties` lacks follows `additionalProperties`.
  const std::string extra = json_schema_to_gbnf(R"({"required": ["x"], "additionalProperties": {"type": "integer"}})");
  EXPECT_TRUE(accepts(extra, R"({"x": 3})"));
  EXPECT_FALSE(accepts(extra, R"({"x": "s"})"));
  EXPECT_FALSE(accepts(extra, R"({})"));
  EXPECT_EQ(schema_error(R"({"required": ["x"], "additionalProperties": false})"),
            "[json-schema] at /: 'required' names 'x', which 'properties' lacks and 'additionalProperties' forbids");
}

TEST(JsonSchema, hostile_inputs_are_errors_not_crashes) {
  std::string deep = "{}";
  for (int i = 0; i < 100; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_NE(schema_error(deep).find("nested deeper than 64"), std::string::npos);
  std::string open_groups(300, '('), close_groups(300, ')');
  std::string nested_pattern = R"({"type": "string", "pattern": "^)";
  nested_pattern += open_groups + "a" + close_groups + R"($"})";
  EXPECT_NE(schema_error(nested_pattern).find("groups nested deeper than 128"), std::string::npos);
  std::string nested_gbnf = "root ::= ";
  nested_gbnf += open_groups + "\"a\"" + close_groups;
  EXPECT_NE(error_of(nested_gbnf).find("nested deeper than 256"), std::string::npos);
  EXPECT_NE(schema_error(R"({"type": "string", "pattern": "^\\uD83D$"})").find("surrogate"), std::string::npos);
  // A 1,000-character property name compiles (one rule per character, no recursion); longer
  // ones are refused.
  const std::string name(1000, 'k');
  const std::string long_name = json_schema_to_gbnf(R"({"properties": {")" + name + R"(": {"type": "null"}}})");
  EXPECT_TRUE(accepts(long_name, R"({")" + name + R"(": null, ")" + name.substr(1) + R"(": 1})"));
  EXPECT_FALSE(accepts(long_name, R"({")" + name + R"(": null, ")" + name + R"(": 1})"));
  EXPECT_NE(schema_error(R"({"properties": {")" + std::string(2000, 'k') + R"(": {}}})").find("longer than 1024"),
            std::string::npos);
  // A chain of 100,000 rules is checked for left recursion without recursing.
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 100000; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  chain += "r100000 ::= \"y\"\n";
  EXPECT_TRUE(accepts(chain, "y"));
  // Parses that double with every character are refused once past 65,536, not slowed to a crawl.
  const std::string ambiguous = json_schema_to_gbnf(
      R"({"$defs": {"t": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/t"}},
                                    {"type": "array", "items": {"$ref": "#/$defs/t"}}]}}, "$ref": "#/$defs/t"})");
  GrammarMatcher m(std::make_shared<const Grammar>(parse_grammar(ambiguous)), byte_vocab());
  EXPECT_THROW(
      {
        for (int i = 0; i < 40; ++i) m.accept('[');
      },
      Error);
}

TEST(GrammarMatcher, the_end_waits_for_an_unfinished_character) {
  const std::vector<std::string> pieces = {"a", "\xc3", "\xa9", ""};
  const std::vector<int32_t> eog = {3};
  GrammarMatcher m(std::make_shared<const Grammar>(parse_grammar("root ::= [a\\u00e9]*")),
                   std::make_shared<const GrammarVocab>(pieces, eog));
  ASSERT_TRUE(m.accept(0));
  EXPECT_TRUE(m.can_end());
  ASSERT_TRUE(m.accept(1));  // the first byte of é
  EXPECT_FALSE(m.can_end());
  TokenMask mask;
  m.fill_mask(mask);
  EXPECT_FALSE(mask.allowed(3));
  EXPECT_TRUE(mask.allowed(2));
  ASSERT_TRUE(m.accept(2));
  EXPECT_TRUE(m.can_end());
}

TEST(Regex, compiles_to_a_grammar_matching_whole_texts) {
  const std::string g = regex_to_gbnf(R"(^[a-c]{3}-\d+(\.\d{1,2})?|x(?:yz)*\s?$)");
  EXPECT_TRUE(accepts(g, "abc-12"));
  EXPECT_TRUE(accepts(g, "cab-0.25"));
  EXPECT_TRUE(accepts(g, "xyzyz "));
  EXPECT_FALSE(accepts(g, "abd-1"));
  EXPECT_FALSE(accepts(g, "abc-1.234"));
  EXPECT_FALSE(accepts(g, "abc-12x"));
  EXPECT_TRUE(accepts(regex_to_gbnf("[^\\n]+"), "any thing"));
  EXPECT_FALSE(accepts(regex_to_gbnf(".+"), "two\nlines"));
  EXPECT_THROW(regex_to_gbnf("(a"), Error);
  EXPECT_THROW(regex_to_gbnf("a\\1"), Error);
  EXPECT_THROW(regex_to_gbnf("a^b"), Error);
}

}  // namespace
}  // namespace tempra::llm
