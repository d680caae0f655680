// tempra/llm/template/jinja_parser.h: builds the syntax tree of a Jinja template.
//
// Contract: parse() returns the template's top-level statements or throws tempra::Error
// "[chat_template] line L, column C: ..." for anything it does not understand: an unknown tag, a
// block left open (`{% for %}` without `{% endfor %}`), a malformed expression, nesting deeper
// than the sandbox allows. Supported tags: if/elif/else, for (with `if` filter and `else`), set
// (names, tuples, `ns.attr`, block form), break/continue, generation (transformers' assistant
// mask marker, rendered as its body), raw (handled by the lexer).
// Parity: jinja2/parser.py (3.1): same precedence climb (or, and, not, compare, + -, ~, * / // %,
// **, unary, postfix, filters/tests).
#pragma once

#include <string>

#include "tempra/llm/template/jinja_ast.h"

namespace tempra::llm::jinja {

Body parse(const std::string& source);

}  // namespace tempra::llm::jinja
