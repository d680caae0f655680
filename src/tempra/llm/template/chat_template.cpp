// tempra/llm/template/chat_template.cpp: the chat layer over the Jinja engine: builds the variables
// transformers' apply_chat_template passes, renders, and falls back to ChatML.
#include "tempra/llm/template/chat_template.h"

#include "tempra/core/error.h"
#include "tempra/llm/template/jinja_parser.h"

namespace tempra::llm {

nlohmann::ordered_json to_json(const ChatMessage& message) {
  nlohmann::ordered_json m = nlohmann::ordered_json::object();
  m["role"] = message.role;
  m["content"] = message.content;
  if (message.reasoning_content) m["reasoning_content"] = *message.reasoning_content;
  if (!message.tool_calls.empty()) {
    nlohmann::ordered_json calls = nlohmann::ordered_json::array();
    for (const ToolCall& call : message.tool_calls) {
      nlohmann::ordered_json c = nlohmann::ordered_json::object();
      if (!call.id.empty()) c["id"] = call.id;
      c["type"] = "function";
      c["function"] = {{"name", call.name}, {"arguments", call.arguments}};
      calls.push_back(std::move(c));
    }
    m["tool_calls"] = std::move(calls);
  }
  if (!message.name.empty()) m["name"] = message.name;
  if (!message.tool_call_id.empty()) m["tool_call_id"] = message.tool_call_id;
  return m;
}

std::string render_template(const std::string& template_source, const nlohmann::ordered_json& variables,
                            const jinja::SandboxLimits& limits) {
  check(variables.is_object(), "chat_template", "template variables must be a JSON object, got ", variables.type_name());
  jinja::Value context = jinja::from_json(variables);
  jinja::Body program = jinja::parse(template_source);
  return jinja::render(program, *context.dict, limits);
}

std::string render_chat(const std::string& template_source, const std::vector<ChatMessage>& messages,
                        const ChatTemplateOptions& options) {
  check(options.tools.is_array() || options.tools.is_null(), "chat_template", "tools must be a JSON array, got ",
        options.tools.type_name());
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) list.push_back(to_json(m));
  variables["messages"] = std::move(list);
  // transformers passes tools=None when the caller gave none.
  variables["tools"] = options.tools.is_array() && !options.tools.empty() ? options.tools : nlohmann::ordered_json();
  variables["add_generation_prompt"] = options.add_generation_prompt;
  if (options.enable_thinking) variables["enable_thinking"] = *options.enable_thinking;
  variables["bos_token"] = options.bos_token;
  variables["eos_token"] = options.eos_token;
  return render_template(template_source, variables, options.limits);
}

std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

const std::string& chatml_template_source() {
  static const std::string source =
      "{%- for message in messages %}"
      "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
      "{%- endfor %}"
      "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
  return source;
}

RenderedChat render_chat_or_chatml(const std::string& template_source, const std::vector<ChatMessage>& messages,
                                   const ChatTemplateOptions& options) {
  RenderedChat out;
  if (template_source.empty()) {
    out.prompt = render_chatml(messages, options.add_generation_prompt);
    out.warning = "the model has no chat template; using ChatML";
  } else {
    try {
      out.prompt = render_chat(template_source, messages, options);
    } catch (const Error& e) {
      out.prompt = render_chatml(messages, options.add_generation_prompt);
      out.warning = std::string("chat template not usable, falling back to ChatML: ") + e.what();
    }
  }
  // A template can leave thinking open or closed (Qwen3's closes it when enable_thinking is
  // false); the last tag decides.
  const size_t open = out.prompt.rfind("<think>"), close = out.prompt.rfind("</think>");
  out.ends_in_thinking = open != std::string::npos && (close == std::string::npos || close < open);
  return out;
}

}  // namespace tempra::llm
