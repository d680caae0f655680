// tempra/serve/constraints.h: what a request constrains the answer to, as a grammar
// (llm/decode/grammar.h) the sampler enforces token by token.
//
// Contract:
// - The answer is what follows the model's reasoning: a grammar here lets a <think> ... </think>
//   block come first (or finish one the prompt opened, `in_thinking`), then constrains the rest.
//   The reasoning itself may be any text without "</think>".
// - response_format (OpenAI chat, `text.format` of Responses): "text" is free; "json_object" is
//   any JSON object; "json_schema" ({"name", "schema", "strict"}) is JSON its schema accepts
//   (llm/decode/json_schema.h; strict or not, the schema is enforced, and features it does not
//   support are a 400 naming them).
// - Tool calls, in Qwen3's format (`<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`,
//   what the Job's output splitter parses): with tool choice `auto` the answer is free text, but
//   once "<tool_call>" appears the call must name a given tool and its arguments must fit that
//   tool's parameter schema, and only more calls may follow; `required` makes the answer one or
//   more calls; `named` calls to that one tool. A response format and `auto` tools together
//   allow either a formatted answer or calls. With `auto`, a tool whose schema tempra cannot
//   compile gets any JSON object as arguments (the request asked for no shape, and worked before
//   constrained decoding existed); a forced call's schema must compile.
// Errors are ApiError 400 naming the field ("response_format.json_schema.schema: [json-schema]
// at /properties/age: 'minimum' is not supported"); schemas nested past 64 levels are refused.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "tempra/llm/decode/grammar.h"
#include "tempra/serve/request_fields.h"

namespace tempra::serve {

enum class ToolChoice { none, auto_, required, named };

struct OutputConstraint {
  const json* response_format = nullptr;  // the request's object, or null for free text
  std::string format_path = "response_format";
  const json* tools = nullptr;  // OpenAI-shaped tools [{"type": "function", "function": {...}}]
  ToolChoice tool_choice = ToolChoice::auto_;
  std::string tool_name;  // for ToolChoice::named
  bool in_thinking = false;    // the prompt opened a <think> block
  bool allow_thinking = true;  // false for raw completions: the constraint starts at once
};

// The grammar for `constraint`, or null when nothing constrains the answer (no format or
// "text", and no tools or tool choice `none`).
std::shared_ptr<const llm::Grammar> output_grammar(const OutputConstraint& constraint);

// The GBNF text output_grammar parses (for tests and `tempra`'s debugging).
std::optional<std::string> output_gbnf(const OutputConstraint& constraint);

}  // namespace tempra::serve
