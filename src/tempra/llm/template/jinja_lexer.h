// tempra/llm/template/jinja_lexer.h: splits a Jinja template into text and tag tokens.
//
// Contract: tokenize() returns the token stream of a template (text, `{{ }}`, `{% %}` with their
// expression tokens; comments dropped; `{% raw %}` bodies as text) ending in an eof token, or
// throws tempra::Error "[chat_template] line L, column C: ..." for an unterminated tag, comment
// or string, an unexpected character, or unbalanced brackets. Every token carries its line and
// column (1-based; columns count bytes).
//
// Parity: jinja2/lexer.py (3.1) configured as transformers renders chat templates:
// trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False, newlines normalized to
// "\n"; whitespace control `-` and `+` on both sides; string literals decoded like Python's
// unicode-escape.
#pragma once

#include <string>
#include <vector>

namespace tempra::llm::jinja {

struct Token {
  enum class Type { text, variable_begin, variable_end, block_begin, block_end, name, string, integer, floating, op, eof };
  Type type;
  std::string value;  // text, name, decoded string, digits, or the operator ("==", "(", "|", ...)
  int line = 1;
  int column = 1;
};

std::vector<Token> tokenize(const std::string& source);

// "[chat_template] line L, column C: message" as tempra::Error.
[[noreturn]] void fail_at(int line, int column, const std::string& message);

}  // namespace tempra::llm::jinja
