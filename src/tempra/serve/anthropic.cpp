// tempra/serve/anthropic.cpp: see anthropic.h. Shapes follow Anthropic's Messages API
// reference (streaming events included).
#include "tempra/serve/anthropic.h"

#include "tempra/serve/constraints.h"

#include "tempra/serve/openai.h"

namespace tempra::serve {
namespace {

std::string error_type(int status) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
      return "overloaded_error";
    default:
      return "api_error";
  }
}

// A block list's text, or a plain string (system, tool_result content).
std::string blocks_text(const json& content, const std::string& path) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw ApiError(400, "'" + path + "' must be a string or an array of blocks", path);
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const std::string where = path + "[" + std::to_string(j) + "]";
    const json& block = content[j];
    if (!block.is_object() || string_field(block, "type", where + ".type").value_or("") != "text")
      throw ApiError(400, "'" + where + "' must be a text block", where);
    text += string_field(block, "text", where + ".text").value_or("");
  }
  return text;
}

std::vector<llm::ChatMessage> messages_of(const json& body) {
  std::vector<llm::ChatMessage> out;
  if (const json* system = field(body, "system")) out.push_back({"system", blocks_text(*system, "system")});
  const json& messages = required_field(body, "messages");
  if (!messages.is_array() || messages.empty())
    throw ApiError(400, "'messages' must be a non-empty array", "messages");
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string path = "messages." + std::to_string(i);
    if (!m.is_object()) throw ApiError(400, "'" + path + "' must be an object", path);
    const std::string role = string_field(m, "role", path + ".role").value_or("");
    if (role != "user" && role != "assistant")
      throw ApiError(400, "'" + path + ".role' must be user or assistant, got '" + role + "'", path + ".role");
    const json& content = required_field(m, "content", path + ".content");
    llm::ChatMessage msg{role, ""};
    if (content.is_string()) {
      msg.content = content.get<std::string>();
      out.push_back(std::move(msg));
      continue;
    }
    if (!content.is_array())
      throw ApiError(400, "'" + path + ".content' must be a string or an array of blocks", path + ".content");
    for (size_t j = 0; j < content.size(); ++j) {
      const json& block = content[j];
      const std::string where = path + ".content." + std::to_string(j);
      if (!block.is_object()) throw ApiError(400, "'" + where + "' must be an object", where);
      const std::string type = string_field(block, "type", where + ".type").value_or("");
      if (type == "text") {
        msg.content += string_field(block, "text", where + ".text").value_or("");
      } else if (type == "thinking" && role == "assistant") {
        msg.reasoning_content = msg.reasoning_content.value_or("") +
                                string_field(block, "thinking", where + ".thinking").value_or("");
      } else if (type == "redacted_thinking" && role == "assistant") {
        // Opaque to this server: nothing to show the template.
      } else if (type == "tool_use" && role == "assistant") {
        llm::ToolCall call;
        call.id = string_field(block, "id", where + ".id").value_or("");
        call.name = string_field(block, "name", where + ".name").value_or("");
        call.arguments = field(block, "input") ? block["input"] : json::object();
        msg.tool_calls.push_back(std::move(call));
      } else if (type == "tool_result" && role == "user") {
        // Each result is a tool message of its own, where the template expects it.
        if (!msg.content.empty()) out.push_back(std::exchange(msg, llm::ChatMessage{role, ""}));
        llm::ChatMessage result{"tool", ""};
        result.tool_call_id = string_field(block, "tool_use_id", where + ".tool_use_id").value_or("");
        if (const json* c = field(block, "content")) result.content = blocks_text(*c, where + ".content");
        out.push_back(std::move(result));
      } else {
        throw ApiError(400, "'" + where + ".type' '" + type + "' is not supported in a " + role + " message",
                       where + ".type");
      }
    }
    if (!msg.content.empty() || msg.reasoning_content || !msg.tool_calls.empty() || role == "assistant")
      out.push_back(std::move(msg));
  }
  return out;
}

// Anthropic tools ({name, description, input_schema}) in the OpenAI form the template reads;
// tool_choice auto, none, any (a call is required) or {"type": "tool", "name"} (into `constraint`).
json tools_of(const json& body, OutputConstraint& constraint) {
  json tools = json::array();
  if (const json* t = field(body, "tools")) {
    if (!t->is_array()) throw ApiError(400, "'tools' must be an array", "tools");
    for (size_t i = 0; i < t->size(); ++i) {
      const json& tool = (*t)[i];
      const std::string path = "tools." + std::to_string(i);
      if (!tool.is_object()) throw ApiError(400, "'" + path + "' must be an object", path);
      const std::string name = string_field(tool, "name", path + ".name").value_or("");
      if (name.empty()) throw ApiError(400, "'" + path + ".name' is required", path + ".name");
      json fn = {{"name", name}};
      if (const auto d = string_field(tool, "description", path + ".description")) fn["description"] = *d;
      fn["parameters"] = field(tool, "input_schema") ? tool["input_schema"] : json::object();
      tools.push_back({{"type", "function"}, {"function", fn}});
    }
  }
  constraint.tool_choice = ToolChoice::auto_;
  if (const json* choice = field(body, "tool_choice")) {
    const std::string type =
        choice->is_object() ? string_field(*choice, "type", "tool_choice.type").value_or("auto") : "";
    if (type == "none") {
      constraint.tool_choice = ToolChoice::none;
      return json::array();
    }
    if (type == "any") {
      constraint.tool_choice = ToolChoice::required;
    } else if (type == "tool") {
      constraint.tool_choice = ToolChoice::named;
      constraint.tool_name = string_field(*choice, "name", "tool_choice.name").value_or("");
      if (constraint.tool_name.empty()) throw ApiError(400, "'tool_choice.name' is required", "tool_choice.name");
    } else if (type != "auto") {
      throw ApiError(400, "'tool_choice.type' must be auto, any, tool or none", "tool_choice.type");
    }
    if (constraint.tool_choice != ToolChoice::auto_ && tools.empty())
      throw ApiError(400, "tool_choice forces a tool but 'tools' is empty", "tool_choice");
  }
  return tools;
}

std::string stop_reason(const JobResult& r) {
  if (!r.tool_calls.empty()) return "tool_use";
  switch (r.result.reason) {
    case llm::StopReason::stop_string:
      return "stop_sequence";
    case llm::StopReason::max_tokens:
    case llm::StopReason::context_full:
      return "max_tokens";
    default:
      return "end_turn";
  }
}

json stop_sequence(const JobResult& r) {
  return r.result.reason == llm::StopReason::stop_string ? json(r.result.stop_string) : json(nullptr);
}

json message(const std::string& id, const std::string& model, json content, json reason, json sequence,
             int64_t input, int64_t output, int64_t cached) {
  return json{{"id", id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", model},
              {"content", std::move(content)},
              {"stop_reason", std::move(reason)},
              {"stop_sequence", std::move(sequence)},
              {"usage", {{"input_tokens", input}, {"output_tokens", output}, {"cache_read_input_tokens", cached}}}};
}

// Anthropic's id of a parsed call: its random part under "toolu_" instead of "call_".
std::string tool_use_id(const ParsedToolCall& call) { return "toolu_" + call.id.substr(std::string("call_").size()); }

json parsed_input(const std::string& arguments) {
  try {
    json input = json::parse(arguments);
    if (input.is_object()) return input;
  } catch (const json::parse_error&) {
  }
  return json::object();
}

}  // namespace

HttpResponse anthropic_error(const ApiError& error) {
  HttpResponse r;
  r.status = error.status;
  r.body = dump({{"type", "error"}, {"error", {{"type", error_type(error.status)}, {"message", error.what()}}}});
  if (error.status == 429) r.headers.push_back({"Retry-After", "1"});
  return r;
}

HttpResponse anthropic_messages(const ServedModel& model, const json& body) {
  check_model_name(model, body);
  Job job;
  const std::optional<int64_t> max_tokens = integer_field(body, "max_tokens", 1, int64_t(1) << 40);
  if (!max_tokens) throw ApiError(400, "'max_tokens' is required", "max_tokens");
  job.options.max_new_tokens = *max_tokens;
  parse_sampling(body, job.options, "stop_sequences");
  if (const auto t = number_field(body, "temperature", 0, 1)) job.options.sampling.temperature = float(*t);
  std::optional<bool> thinking = false;  // the Messages API thinks only when asked
  if (const json* t = field(body, "thinking")) {
    const std::string type = t->is_object() ? string_field(*t, "type", "thinking.type").value_or("") : "";
    if (type != "enabled" && type != "disabled")
      throw ApiError(400, "'thinking.type' must be enabled or disabled", "thinking.type");
    thinking = type == "enabled";
  }
  const bool stream = bool_field(body, "stream").value_or(false);
  OutputConstraint constraint;
  const json tools = tools_of(body, constraint);
  job.parse_tools = !tools.empty();
  const llm::ChatPrompt prompt = chat_prompt(model, messages_of(body), tools, thinking);
  job.prompt = prompt.ids;
  job.options.start_in_thinking = prompt.ends_in_thinking;
  constraint.tools = &tools;
  constraint.in_thinking = prompt.ends_in_thinking;
  constraint.allow_thinking = thinking != false;
  job.options.grammar = output_grammar(constraint);
  RunningJob running = start_job(*model.engine, std::move(job));
  const std::string id = random_id("msg_");

  if (!stream) {
    const JobResult r = follow(running, {});
    json content = json::array();
    if (!r.reasoning.empty()) content.push_back({{"type", "thinking"}, {"thinking", r.reasoning}, {"signature", ""}});
    if (!r.content.empty() || r.tool_calls.empty()) content.push_back({{"type", "text"}, {"text", r.content}});
    for (const ParsedToolCall& c : r.tool_calls)
      content.push_back({{"type", "tool_use"}, {"id", tool_use_id(c)}, {"name", c.name},
                         {"input", parsed_input(c.arguments)}});
    HttpResponse response;
    response.body = dump(message(id, model.name, content, stop_reason(r), stop_sequence(r), r.prompt_tokens,
                                 int64_t(r.result.ids.size()), r.result.reused_tokens));
    return response;
  }
  return sse_response([id, name = model.name, running = std::move(running)](const ChunkWriter& write) mutable {
    auto event = [&](const std::string& type, json data) {
      json typed = {{"type", type}};
      typed.update(data);
      return write("event: " + type + "\n" + sse_data(typed));
    };
    const int64_t input_tokens = int64_t(running.job.prompt.size());
    if (!event("message_start",
               {{"message", message(id, name, json::array(), nullptr, nullptr, input_tokens, 0, 0)}})) {
      return;  // the client has gone: RunningJob's guard cancels the request
    }
    // One open block at a time: thinking, then text; a tool call is a block of its own.
    int index = -1;
    std::string open;  // "thinking", "text" or ""
    auto close = [&] {
      if (open.empty()) return true;
      open.clear();
      return event("content_block_stop", {{"index", index}});
    };
    auto start = [&](const std::string& type, json block) {
      if (!close()) return false;
      open = type;
      return event("content_block_start", {{"index", ++index}, {"content_block", std::move(block)}});
    };
    const JobResult r = follow(
        running,
        [&](const JobEvent& e) {
          switch (e.kind) {
            case JobEvent::Kind::reasoning:
              if (open != "thinking" && !start("thinking", {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}))
                return false;
              return event("content_block_delta",
                           {{"index", index}, {"delta", {{"type", "thinking_delta"}, {"thinking", e.text}}}});
            case JobEvent::Kind::content:
              if (open != "text" && !start("text", {{"type", "text"}, {"text", ""}})) return false;
              return event("content_block_delta",
                           {{"index", index}, {"delta", {{"type", "text_delta"}, {"text", e.text}}}});
            case JobEvent::Kind::tool_call:
              return start("tool_use", {{"type", "tool_use"},
                                        {"id", tool_use_id(e.tool_call)},
                                        {"name", e.tool_call.name},
                                        {"input", json::object()}}) &&
                     event("content_block_delta",
                           {{"index", index},
                            {"delta", {{"type", "input_json_delta"}, {"partial_json", e.tool_call.arguments}}}}) &&
                     close();
            case JobEvent::Kind::logprob:
              return true;
          }
          return true;
        },
        [&] { return write("event: ping\ndata: {\"type\": \"ping\"}\n\n"); });
    if (r.client_gone) return;
    if (index < 0 && !start("text", {{"type", "text"}, {"text", ""}})) return;
    if (!close()) return;
    if (!event("message_delta", {{"delta", {{"stop_reason", stop_reason(r)}, {"stop_sequence", stop_sequence(r)}}},
                                 {"usage", {{"output_tokens", int64_t(r.result.ids.size())}}}}))
      return;
    event("message_stop", json::object());
  });
}

}  // namespace tempra::serve
