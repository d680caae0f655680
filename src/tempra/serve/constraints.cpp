// tempra/serve/constraints.cpp: see constraints.h.
#include "tempra/serve/constraints.h"

#include <algorithm>
#include <set>
#include <vector>

#include "tempra/core/error.h"
#include "tempra/llm/decode/json_schema.h"
#include "tempra/llm/tokenizer/unicode.h"

namespace tempra::serve {
namespace {

using llm::gbnf_literal;

std::string char_literal(uint32_t c) {
  std::string out = "\"";
  llm::append_gbnf_char(out, c, false);
  return out + "\"";
}

// Rules for text in which `word` occurs first at its very end, followed by `then` ("" for
// nothing); with `may_end`, also any text that never contains `word`. The rules are the states of
// the Knuth-Morris-Pratt matcher of `word`: state i means the text ends with word's first i
// characters. Returns the name of the start rule.
std::string text_until(llm::JsonGrammarBuilder& b, const std::string& hint, const std::string& word_utf8,
                       const std::string& then, bool may_end) {
  const std::vector<uint32_t> word = llm::decode_utf8_lenient(word_utf8);
  const size_t n = word.size();
  std::vector<size_t> fail(n, 0);  // fail[i]: the longest proper border of word[0..i]
  for (size_t i = 1, k = 0; i < n; ++i) {
    while (k > 0 && word[i] != word[k]) k = fail[k - 1];
    if (word[i] == word[k]) ++k;
    fail[i] = k;
  }
  auto next = [&](size_t state, uint32_t c) {
    while (state > 0 && word[state] != c) state = fail[state - 1];
    return word[state] == c ? state + 1 : 0;
  };
  const std::set<uint32_t> letters(word.begin(), word.end());
  std::string others = "[^";
  for (uint32_t c : letters) llm::append_gbnf_char(others, c, true);
  others += "]";
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) names.push_back(b.add_rule(hint + "-" + std::to_string(i), "\"\""));
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::string> options;
    if (may_end) options.push_back("\"\"");
    options.push_back(others + " " + names[0]);
    for (uint32_t c : letters) {
      const size_t j = next(i, c);
      options.push_back(char_literal(c) + " " + (j == n ? (then.empty() ? std::string("\"\"") : then) : names[j]));
    }
    std::string body;
    for (size_t k = 0; k < options.size(); ++k) body += (k ? " | " : "") + options[k];
    b.set_rule(names[i], body);
  }
  return names[0];
}

// The JSON nesting depth of `value` (without recursion: a request may nest arrays a million deep).
size_t nesting_depth(const json& value) {
  size_t deepest = 0;
  std::vector<std::pair<const json*, size_t>> todo{{&value, 1}};
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    deepest = std::max(deepest, depth);
    if (v->is_structured())
      for (const json& child : *v) todo.emplace_back(&child, depth + 1);
  }
  return deepest;
}

// A schema's rules added to `b`, or an ApiError 400 naming `path`: every way the request's schema
// can fail (a feature tempra does not compile, a grammar the parser refuses, such as a pattern
// with a nullable repetition) is the request's error, found here rather than when the whole
// grammar is parsed.
std::string add_schema(llm::JsonGrammarBuilder& b, const json& schema, const std::string& hint, const std::string& path) {
  if (nesting_depth(schema) > 64) throw ApiError(400, "'" + path + "' is nested deeper than 64 levels", path);
  const std::string text = schema.dump();
  try {
    (void)llm::parse_grammar(llm::json_schema_to_gbnf(text));
    return b.add_schema(text, hint);
  } catch (const Error& e) {
    throw ApiError(400, "'" + path + "': " + e.what(), path);
  }
}

std::string response_format_value(llm::JsonGrammarBuilder& b, const json& format, const std::string& path) {
  if (!format.is_object()) throw ApiError(400, "'" + path + "' must be an object with a 'type'", path);
  const std::string type = string_field(format, "type", path + ".type").value_or("");
  if (type == "json_object") return "object";
  if (type != "json_schema")
    throw ApiError(400, "'" + path + ".type' must be text, json_object or json_schema, got '" + type + "'",
                   path + ".type");
  // Chat completions nest the schema in "json_schema"; Responses' text.format holds it directly.
  const json* holder = field(format, "json_schema");
  const std::string holder_path = holder ? path + ".json_schema" : path;
  if (holder == nullptr) holder = &format;
  if (!holder->is_object()) throw ApiError(400, "'" + holder_path + "' must be an object", holder_path);
  const json* schema = field(*holder, "schema");
  if (schema == nullptr) return "value";  // OpenAI: no schema means any JSON
  return add_schema(b, *schema, "answer", holder_path + ".schema");
}

// One call's JSON for each tool the choice allows: {"name": "<tool>", "arguments": <its schema>}.
std::string call_json(llm::JsonGrammarBuilder& b, const OutputConstraint& c) {
  std::vector<std::string> options;
  bool found = false;
  for (size_t i = 0; i < c.tools->size(); ++i) {
    const json& fn = (*c.tools)[i]["function"];
    const std::string name = fn["name"].get<std::string>();
    if (c.tool_choice == ToolChoice::named && name != c.tool_name) continue;
    found = true;
    std::string arguments = "object";
    if (const json* parameters = field(fn, "parameters")) {
      const std::string path = "tools[" + std::to_string(i) + "].function.parameters";
      try {
        arguments = add_schema(b, *parameters, "args-" + name, path);
      } catch (const ApiError&) {
        // With `auto` nothing asked for the shape: a schema tempra cannot compile leaves that
        // tool's arguments any JSON object (docs/SERVER.md). A forced call must fit, or fails.
        if (c.tool_choice != ToolChoice::auto_) throw;
      }
    }
    options.push_back("\"{\" ws \"\\\"name\\\"\" ws \":\" ws " + gbnf_literal(json(name).dump()) +
                      " ws \",\" ws \"\\\"arguments\\\"\" ws \":\" ws " + arguments + " ws \"}\"");
  }
  if (!found) throw ApiError(400, "tool_choice names '" + c.tool_name + "', which is not among the tools", "tool_choice");
  std::string body;
  for (size_t k = 0; k < options.size(); ++k) body += (k ? " | " : "") + options[k];
  return b.add_rule("call-json", body);
}

}  // namespace

std::optional<std::string> output_gbnf(const OutputConstraint& c) {
  const bool format = c.response_format != nullptr &&
                      string_field(*c.response_format, "type", c.format_path + ".type").value_or("") != "text";
  const bool tools = c.tools != nullptr && !c.tools->empty() && c.tool_choice != ToolChoice::none;
  if (!format && !tools) return std::nullopt;

  llm::JsonGrammarBuilder b;
  std::vector<std::string> answers;
  if (format) answers.push_back("ws " + response_format_value(b, *c.response_format, c.format_path) + " ws");
  if (tools) {
    const std::string json_call = call_json(b, c);
    const std::string call = b.add_rule("call", "\"<tool_call>\" ws " + json_call + " ws \"</tool_call>\"");
    const std::string more = "( ws " + call + " )* ws";
    if (c.tool_choice == ToolChoice::auto_ && !format) {
      // Free text, until a call begins.
      const std::string rest = b.add_rule("call-rest", "ws " + json_call + " ws \"</tool_call>\" " + more);
      answers.push_back(text_until(b, "text", "<tool_call>", rest, true));
    } else {
      answers.push_back("ws " + call + " " + more);
    }
  }
  std::string answer;
  for (size_t k = 0; k < answers.size(); ++k) answer += (k ? " | " : "") + answers[k];
  answer = b.add_rule("answer-start", answer);

  const std::string after_think = "[ \\t\\n]{0,4}";
  std::string root;
  if (!c.allow_thinking) {
    root = answer;
  } else if (c.in_thinking) {
    root = text_until(b, "thinking", "</think>", b.add_rule("after-thinking", after_think + " " + answer), false);
  } else {
    const std::string think = text_until(b, "thinking", "</think>", "", false);
    root = "( \"<think>\" " + think + " " + after_think + " )? " + answer;
  }
  return b.gbnf(root);
}

std::shared_ptr<const llm::Grammar> output_grammar(const OutputConstraint& c) {
  const std::optional<std::string> gbnf = output_gbnf(c);
  if (!gbnf) return nullptr;
  try {
    return std::make_shared<const llm::Grammar>(llm::parse_grammar(*gbnf));
  } catch (const Error& e) {  // a schema compiled to a grammar the parser refuses: ours to fix
    throw ApiError(500, std::string("the output constraint's grammar does not parse: ") + e.what(), "", "server_error");
  }
}

}  // namespace tempra::serve
