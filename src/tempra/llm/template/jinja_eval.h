// tempra/llm/template/jinja_eval.h: renders a parsed template against a context of values.
//
// Contract: render() walks the statements, writing text and printed values, and returns the
// output. It is sandboxed: it reads only the values in `context` and calls only the builtins of
// jinja_builtins.h, and it stops with tempra::Error "[chat_template] line L, column C: ..." when
// the template fails (undefined attribute reads, type errors, raise_exception) or exceeds a limit
// in `SandboxLimits` (loop iterations over the whole render, output bytes, nesting depth).
// Parity: jinja2 3.1 runtime semantics: for-loop scoping (assignments inside a loop body stay in
// it; namespaces carry values out), the `loop` variable, break/continue (transformers enables
// jinja2.ext.loopcontrols), default Undefined (prints empty, iterates empty, fails on access).
#pragma once

#include <cstddef>
#include <string>

#include "tempra/llm/template/jinja_ast.h"

namespace tempra::llm::jinja {

struct SandboxLimits {
  std::size_t max_loop_iterations = 100'000;  // all loops of one render together
  std::size_t max_output_bytes = 16u << 20;   // also the cap on any one string built
  int max_depth = 200;                        // nesting of statements and expressions
};

std::string render(const Body& program, const Dict& context, const SandboxLimits& limits);

}  // namespace tempra::llm::jinja
