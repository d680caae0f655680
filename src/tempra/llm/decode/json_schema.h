// tempra/llm/decode/json_schema.h: JSON Schema and regular expressions, compiled to GBNF.
//
// What a schema compiles to (json_schema_to_gbnf): a grammar whose sentences are JSON documents
// the schema accepts, written compactly (a space or a newline with indentation allowed between
// tokens, bounded so a model cannot pad forever). Supported (draft 2020-12 and draft-07 spellings):
// - type (one or a list): string, number, integer, boolean, null, object, array;
// - object: properties (generated in declaration order), required, additionalProperties
//   (false, true or a schema; absent means true, as the standard says: extra keys come after the
//   declared ones and never repeat a declared key);
// - array: items, minItems, maxItems; string: minLength, maxLength, pattern (anchored with ^...$,
//   see regex_to_gbnf), format date, time, date-time, uuid;
// - enum, const, anyOf, oneOf (as anyOf: generated documents are meant to fit one branch; the
//   branches are not checked for overlap), allOf with one member, $ref to #/$defs/... or
//   #/definitions/... (recursion allowed), true and {} (any JSON value);
// - annotations ($schema, $id, title, description, default, examples, $comment, deprecated,
//   readOnly, writeOnly) are ignored.
// Anything else is refused by name with its place in the schema: "[json-schema] at
// /properties/age: 'minimum' is not supported". Nothing is silently dropped.
//
// regex_to_gbnf: an ECMAScript-style regular expression (literals, escapes \d \w \s \D \W \S
// \t \n \r \uXXXX, classes with ranges and negation, `.` (not a line terminator), groups
// (...) and (?:...), alternation, * + ? {m} {m,} {m,n}, lazy suffixes) as a GBNF rule body
// matching the whole text. ^ and $ are allowed only at the ends; backreferences and lookaround
// are refused by name.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace tempra::llm {

// Several schemas and hand-written rules in one grammar (the server's tool calls): add_schema
// returns an expression matching the JSON the schema accepts, add_rule names a rule of its own,
// and gbnf writes `root ::= root_body`, every rule, and the shared primitives (ws, string,
// number, integer, boolean, null, value, object, array, char), which bodies may refer to.
class JsonGrammarBuilder {
 public:
  std::string add_schema(std::string_view schema_json, std::string_view hint);  // throws tempra::Error
  std::string add_rule(std::string_view hint, std::string body);                // returns the rule's name
  void set_rule(const std::string& name, std::string body);  // exactly this name (replaces)
  std::string gbnf(std::string_view root_body) const;

 private:
  std::map<std::string, std::string> rules_;
};

// `utf8` as a GBNF literal ("..." with escapes).
std::string gbnf_literal(std::string_view utf8);

// The schema's text (JSON) to a GBNF grammar with a `root` rule. Throws tempra::Error.
std::string json_schema_to_gbnf(std::string_view schema_json);

// The shorthand "any JSON object" (OpenAI's response_format json_object).
std::string json_object_gbnf();

// A regular expression to a GBNF grammar whose root matches the whole text. Throws tempra::Error.
std::string regex_to_gbnf(std::string_view pattern);

}  // namespace tempra::llm
