// tempra/llm/template/chat_template.h: turns a conversation into the prompt text a model was trained on,
// by rendering the model's own chat template (GGUF `tokenizer.chat_template`, a Jinja template).
//
// Contract:
// - render_chat() renders `template_source` with a small sandboxed Jinja subset (jinja_*.h: no
//   file, environment or process access; limits on loop iterations, output size and nesting)
//   and returns the prompt. It throws tempra::Error "[chat_template] line L, column C: ..." when
//   the template cannot be parsed or fails while rendering, never crashes, whatever the input
//   (invalid UTF-8 in messages included: it passes through byte for byte).
// - render_chat_or_chatml() never throws for a template problem: it falls back to built-in
//   ChatML (also for an empty template: a file without one) and says why in `warning` (the
//   library prints nothing).
// - The template sees what transformers' apply_chat_template passes: `messages` (each a dict of
//   role, content, and reasoning_content / tool_calls / name / tool_call_id when present),
//   `tools` (none when empty), `add_generation_prompt`, `enable_thinking` (only when set),
//   `bos_token`, `eos_token`, plus the globals namespace/range/dict/raise_exception.
//
// Parity: byte-exact with Python jinja2 3.1 (Debian python3-jinja2) in the environment
// transformers builds (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
// its own `tojson`), on the goldens tests/goldens/chat_templates.json made by
// tools/gen_chat_goldens.py (the official Qwen3 template and one template per feature).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tempra/llm/template/jinja_eval.h"

namespace tempra::llm {

// One function call an assistant message made (OpenAI layout: {"type": "function", "function":
// {"name", "arguments"}}, plus "id" when set).
struct ToolCall {
  std::string id;
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // an object, or a JSON string
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  std::optional<std::string> reasoning_content{};  // the assistant's thinking, when kept apart
  std::vector<ToolCall> tool_calls{};
  std::string name{};          // optional: the tool's name on a "tool" message
  std::string tool_call_id{};  // optional: which call a "tool" message answers
};

struct ChatTemplateOptions {
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;  // unset: the template's default (Qwen3: thinking on)
  // Tool schemas, each {"type": "function", "function": {...}}. Ordered: `tojson` keeps the key
  // order the caller gave, as Python's json.dumps does.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  std::string bos_token;
  std::string eos_token;
  jinja::SandboxLimits limits;
};

// The message as the template sees it (and as tools/gen_chat_goldens.py passes it to jinja2).
nlohmann::ordered_json to_json(const ChatMessage& message);

std::string render_chat(const std::string& template_source, const std::vector<ChatMessage>& messages,
                        const ChatTemplateOptions& options);

// Renders any template against a JSON object of variables (the engine without the chat layer).
std::string render_template(const std::string& template_source, const nlohmann::ordered_json& variables,
                            const jinja::SandboxLimits& limits = {});

// ChatML: "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then "<|im_start|>assistant\n"
// when add_generation_prompt.
std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
// The same ChatML as a Jinja template, for the GGUFs tempra writes with a vocab of its own
// (llama.cpp recognizes it as chatml by its <|im_start|>); it renders what render_chatml does.
const std::string& chatml_template_source();

struct RenderedChat {
  std::string prompt;
  std::string warning;            // empty when the template rendered; else why ChatML was used instead
  bool ends_in_thinking = false;  // the prompt leaves a <think> open (GenerateOptions::start_in_thinking)
};

RenderedChat render_chat_or_chatml(const std::string& template_source, const std::vector<ChatMessage>& messages,
                                   const ChatTemplateOptions& options);

}  // namespace tempra::llm
