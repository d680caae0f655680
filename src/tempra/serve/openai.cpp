// tempra/serve/openai.cpp: see openai.h. Field names, response shapes and event sequences follow
// OpenAI's API reference and llama-server's mapping of it (tools/server/README.md).
#include "tempra/serve/openai.h"

#include "tempra/serve/constraints.h"

#include <chrono>
#include <random>

namespace tempra::serve {
namespace {

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The longest generation a request may ask for: max_tokens, max_completion_tokens (newer
// clients), n_predict (llama.cpp's), or Responses' max_output_tokens.
void parse_max_tokens(const json& body, llm::GenerateOptions& options) {
  for (const char* name : {"max_tokens", "max_completion_tokens", "n_predict", "max_output_tokens"})
    if (const auto n = integer_field(body, name, -1, int64_t(1) << 40)) options.max_new_tokens = *n;
}

void reject_unsupported(const json& body) {
  if (const auto n = integer_field(body, "n", 1, 1 << 20); n && *n != 1)
    throw ApiError(400, "'n' must be 1: one choice per request is supported", "n");
  if (const json* bias = field(body, "logit_bias"); bias && !(bias->is_object() && bias->empty()))
    throw ApiError(400, "'logit_bias' is not supported", "logit_bias");
  if (const json* format = field(body, "response_format"))
    if (!format->is_object() || !string_field(*format, "type", "response_format.type"))
      throw ApiError(400, "'response_format' must be an object with a 'type'", "response_format");
}

std::string finish_reason(const JobResult& r) {
  if (!r.tool_calls.empty()) return "tool_calls";
  switch (r.result.reason) {
    case llm::StopReason::max_tokens:
    case llm::StopReason::context_full:
      return "length";
    default:
      return "stop";
  }
}

json usage_json(const JobResult& r) {
  const auto completion = int64_t(r.result.ids.size());
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", completion},
          {"total_tokens", r.prompt_tokens + completion},
          {"prompt_tokens_details", {{"cached_tokens", r.result.reused_tokens}}}};
}

// One token's entry of chat logprobs: {"token", "logprob", "bytes", "top_logprobs"}.
json chat_logprob(const ServedModel& model, const TokenLogprob& lp) {
  const std::string piece = model.tokenizer->piece(lp.id, false);
  json top = json::array();
  for (const auto& [id, logprob] : lp.top) {
    const std::string p = model.tokenizer->piece(id, false);
    top.push_back({{"token", p}, {"logprob", logprob}, {"bytes", byte_array(p)}});
  }
  return {{"token", piece}, {"logprob", lp.logprob}, {"bytes", byte_array(piece)}, {"top_logprobs", top}};
}

json tool_calls_json(const std::vector<ParsedToolCall>& calls) {
  json out = json::array();
  for (const ParsedToolCall& c : calls)
    out.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  return out;
}

// "content": a string or an array of {"type": "text", "text"} parts (OpenAI's two forms).
std::string message_text(const json& content, const std::string& path) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw ApiError(400, "'" + path + "' must be a string or an array of content parts", path);
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    const std::string where = path + "[" + std::to_string(j) + "]";
    if (!part.is_object()) throw ApiError(400, "'" + where + "' must be an object", where);
    const std::string type = string_field(part, "type", where + ".type").value_or("text");
    if (type != "text" && type != "input_text" && type != "output_text")
      throw ApiError(400, "'" + where + ".type' '" + type + "' is not supported: text parts only", where + ".type");
    text += string_field(part, "text", where + ".text").value_or("");
  }
  return text;
}

std::vector<llm::ChatMessage> chat_messages(const json& body) {
  const json& messages = required_field(body, "messages");
  if (!messages.is_array() || messages.empty())
    throw ApiError(400, "'messages' must be a non-empty array", "messages");
  std::vector<llm::ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string path = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw ApiError(400, "'" + path + "' must be an object", path);
    llm::ChatMessage msg;
    msg.role = string_field(m, "role", path + ".role").value_or("");
    if (msg.role == "developer") msg.role = "system";
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool")
      throw ApiError(400,
                     "'" + path + ".role' must be system, developer, user, assistant or tool, got '" + msg.role + "'",
                     path + ".role");
    const auto content = m.find("content");
    if (content == m.end() && msg.role != "assistant")
      throw ApiError(400, "'" + path + ".content' is required", path + ".content");
    if (content != m.end()) msg.content = message_text(*content, path + ".content");
    msg.reasoning_content = string_field(m, "reasoning_content", path + ".reasoning_content");
    msg.name = string_field(m, "name", path + ".name").value_or("");
    msg.tool_call_id = string_field(m, "tool_call_id", path + ".tool_call_id").value_or("");
    if (const json* calls = field(m, "tool_calls")) {
      if (!calls->is_array()) throw ApiError(400, "'" + path + ".tool_calls' must be an array", path + ".tool_calls");
      for (size_t j = 0; j < calls->size(); ++j) {
        const json& c = (*calls)[j];
        const std::string where = path + ".tool_calls[" + std::to_string(j) + "]";
        const json& fn = required_field(c, "function", where + ".function");
        if (!fn.is_object()) throw ApiError(400, "'" + where + ".function' must be an object", where + ".function");
        llm::ToolCall call;
        call.id = string_field(c, "id", where + ".id").value_or("");
        call.name = string_field(fn, "name", where + ".function.name").value_or("");
        const std::string args = string_field(fn, "arguments", where + ".function.arguments").value_or("{}");
        // The template shows arguments as an object (tojson); a string that is not JSON stays one.
        try {
          call.arguments = json::parse(args);
        } catch (const json::parse_error&) {
          call.arguments = args;
        }
        msg.tool_calls.push_back(std::move(call));
      }
    }
    out.push_back(std::move(msg));
  }
  return out;
}

// OpenAI's tools, [{"type": "function", "function": {"name", "description", "parameters"}}],
// passed to the template as given; tool_choice "auto", "none", "required", or
// {"type": "function", "function": {"name": ...}} (into `constraint`).
json chat_tools(const json& body, bool& parse_tools, OutputConstraint& constraint) {
  json tools = json::array();
  if (const json* t = field(body, "tools")) {
    if (!t->is_array()) throw ApiError(400, "'tools' must be an array", "tools");
    for (size_t i = 0; i < t->size(); ++i) {
      const json& tool = (*t)[i];
      const std::string path = "tools[" + std::to_string(i) + "]";
      if (!tool.is_object() || string_field(tool, "type", path + ".type").value_or("function") != "function")
        throw ApiError(400, "'" + path + "' must be {\"type\": \"function\", \"function\": {...}}", path);
      const json& fn = required_field(tool, "function", path + ".function");
      if (!fn.is_object() || !string_field(fn, "name", path + ".function.name"))
        throw ApiError(400, "'" + path + ".function.name' is required", path + ".function.name");
      tools.push_back(tool);
    }
  }
  constraint.tool_choice = ToolChoice::auto_;
  if (const json* c = field(body, "tool_choice")) {
    const std::string choice = c->is_string() ? c->get<std::string>() : "";
    if (choice == "none") {
      constraint.tool_choice = ToolChoice::none;
    } else if (choice == "required") {
      constraint.tool_choice = ToolChoice::required;
    } else if (c->is_object() && field(*c, "function") && (*c)["function"].is_object() &&
               string_field((*c)["function"], "name", "tool_choice.function.name")) {
      constraint.tool_choice = ToolChoice::named;
      constraint.tool_name = (*c)["function"]["name"].get<std::string>();
    } else if (choice != "auto") {
      throw ApiError(400, "tool_choice must be 'auto', 'none', 'required' or {\"type\": \"function\", \"function\": "
                          "{\"name\": ...}}", "tool_choice");
    }
    if (constraint.tool_choice != ToolChoice::auto_ && constraint.tool_choice != ToolChoice::none && tools.empty())
      throw ApiError(400, "tool_choice forces a call but 'tools' is empty", "tool_choice");
  }
  if (constraint.tool_choice == ToolChoice::none) tools = json::array();
  parse_tools = !tools.empty();
  return tools;
}

std::optional<bool> enable_thinking(const json& body) {
  std::optional<bool> on;
  if (const json* kwargs = field(body, "chat_template_kwargs")) {
    if (!kwargs->is_object()) throw ApiError(400, "'chat_template_kwargs' must be an object", "chat_template_kwargs");
    if (const json* e = field(*kwargs, "enable_thinking")) {
      if (!e->is_boolean())
        throw ApiError(400, "'chat_template_kwargs.enable_thinking' must be a boolean, got " + type_name(*e),
                       "chat_template_kwargs.enable_thinking");
      on = e->get<bool>();
    }
  }
  return on;
}

bool split_reasoning(const json& body) {
  const std::string format = string_field(body, "reasoning_format").value_or("auto");
  if (format != "auto" && format != "none" && format != "deepseek")
    throw ApiError(400, "'reasoning_format' must be auto, deepseek or none, got '" + format + "'", "reasoning_format");
  return format != "none";
}

void parse_logprobs(const json& body, Job& job, bool completions) {
  if (completions) {
    // The legacy endpoint's "logprobs" is the number of alternatives (0 ... 5 in OpenAI's).
    if (const auto n = integer_field(body, "logprobs", 0, 20)) {
      job.logprobs = true;
      job.top_logprobs = int(*n);
    }
    return;
  }
  job.logprobs = bool_field(body, "logprobs").value_or(false);
  if (const auto n = integer_field(body, "top_logprobs", 0, 20)) {
    if (!job.logprobs) throw ApiError(400, "'top_logprobs' needs 'logprobs': true", "top_logprobs");
    job.top_logprobs = int(*n);
  }
}

bool include_usage(const json& body) {
  if (const json* o = field(body, "stream_options")) {
    if (!o->is_object()) throw ApiError(400, "'stream_options' must be an object", "stream_options");
    return bool_field(*o, "include_usage").value_or(false);
  }
  return false;
}

// The legacy completions' logprobs: {"tokens", "token_logprobs", "top_logprobs"}.
json legacy_logprobs(const ServedModel& model, bool enabled, const std::vector<TokenLogprob>& lps) {
  if (!enabled) return nullptr;
  json tokens = json::array(), token_logprobs = json::array(), top = json::array();
  for (const TokenLogprob& lp : lps) {
    tokens.push_back(model.tokenizer->piece(lp.id, false));
    token_logprobs.push_back(lp.logprob);
    json alternatives = json::object();
    for (const auto& [id, l] : lp.top) alternatives[model.tokenizer->piece(id, false)] = l;
    top.push_back(alternatives);
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}};
}

json completion_choice(const std::string& text, json finish, json logprobs) {
  return json::array({{{"text", text}, {"index", 0}, {"logprobs", std::move(logprobs)}, {"finish_reason", finish}}});
}

// A Responses API object: the message as output 0 (the streamed events say so before any
// reasoning is known), the reasoning, when there was some, after it.
struct ResponseIds {
  std::string id, message_id;
  int64_t created;
  std::string model;
};

json response_object(const ResponseIds& ids, const std::string& status, const JobResult* r) {
  json output = json::array();
  if (r != nullptr) {
    output.push_back({{"type", "message"},
                      {"id", ids.message_id},
                      {"status", "completed"},
                      {"role", "assistant"},
                      {"content", json::array({{{"type", "output_text"},
                                                {"text", r->content},
                                                {"annotations", json::array()}}})}});
    if (!r->reasoning.empty())
      output.push_back({{"type", "reasoning"},
                        {"id", random_id("rs_")},
                        {"summary", json::array()},
                        {"content", json::array({{{"type", "reasoning_text"}, {"text", r->reasoning}}})}});
  }
  json o = {{"id", ids.id},       {"object", "response"}, {"created_at", ids.created}, {"status", status},
            {"model", ids.model}, {"output", output},     {"incomplete_details", nullptr}};
  if (r != nullptr) {
    const auto out_tokens = int64_t(r->result.ids.size());
    o["usage"] = {{"input_tokens", r->prompt_tokens},
                  {"input_tokens_details", {{"cached_tokens", r->result.reused_tokens}}},
                  {"output_tokens", out_tokens},
                  {"output_tokens_details", {{"reasoning_tokens", 0}}},
                  {"total_tokens", r->prompt_tokens + out_tokens}};
    if (finish_reason(*r) == "length") {
      o["status"] = "incomplete";
      o["incomplete_details"] = {{"reason", "max_output_tokens"}};
    }
  }
  return o;
}

// Writes keep-alive comments while a streamed request waits (and notices a client that left).
bool keep_alive(const ChunkWriter& write) { return write(": keep-alive\n\n"); }

}  // namespace

std::string sse_data(const json& value) { return "data: " + dump(value) + "\n\n"; }

HttpResponse sse_response(std::function<void(const ChunkWriter&)> body) {
  HttpResponse r;
  r.content_type = "text/event-stream";
  r.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  r.stream = std::move(body);
  return r;
}

HttpResponse openai_error(const ApiError& error) {
  HttpResponse r;
  r.status = error.status;
  json e = {{"message", error.what()}, {"type", error.type}, {"param", nullptr}, {"code", nullptr}};
  if (!error.param.empty()) e["param"] = error.param;
  if (!error.code.empty()) e["code"] = error.code;
  r.body = dump({{"error", e}});
  if (error.status == 429) r.headers.push_back({"Retry-After", "1"});
  return r;
}

json timings_json(const JobResult& r) {
  const llm::GenerationTimings& t = r.result.timings;
  auto per_second = [](int64_t n, double ms) { return ms > 0 ? 1000.0 * double(n) / ms : 0.0; };
  return {{"cache_n", r.result.reused_tokens},
          {"prompt_n", t.prompt_tokens},
          {"prompt_ms", t.prompt_ms},
          {"prompt_per_second", per_second(t.prompt_tokens, t.prompt_ms)},
          {"predicted_n", t.eval_tokens},
          {"predicted_ms", t.eval_ms},
          {"predicted_per_second", per_second(t.eval_tokens, t.eval_ms)}};
}

void parse_sampling(const json& body, llm::GenerateOptions& options, const char* stop_field) {
  llm::SamplerParams& p = options.sampling;
  if (const auto v = number_field(body, "temperature", 0, 100)) p.temperature = float(*v);
  if (const auto v = number_field(body, "top_p", 0, 1)) p.top_p = *v == 0 ? 1e-9f : float(*v);
  if (const auto v = integer_field(body, "top_k", -1, 1 << 30)) p.top_k = int32_t(*v);
  if (const auto v = number_field(body, "min_p", 0, 1)) p.min_p = float(*v);
  if (const auto v = number_field(body, "presence_penalty", -2, 2)) p.presence_penalty = float(*v);
  if (const auto v = number_field(body, "frequency_penalty", -2, 2)) p.frequency_penalty = float(*v);
  if (const auto v = number_field(body, "repeat_penalty", 0, 100)) p.repeat_penalty = float(*v);
  if (const auto v = integer_field(body, "repeat_last_n", -1, 1 << 30)) p.repeat_last_n = int32_t(*v);
  if (const auto v = integer_field(body, "seed", INT64_MIN, INT64_MAX); v && *v != -1) {
    p.seed = uint64_t(*v);
  } else {  // absent, or llama-server's -1: a random seed
    thread_local std::mt19937_64 rng{std::random_device{}()};
    p.seed = rng();
  }
  options.stop = strings_field(body, stop_field, 16);
}

HttpResponse openai_chat_completions(const ServedModel& model, const json& body) {
  check_model_name(model, body);
  reject_unsupported(body);
  Job job;
  parse_max_tokens(body, job.options);
  parse_sampling(body, job.options);
  parse_logprobs(body, job, false);
  job.split_reasoning = split_reasoning(body);
  const bool stream = bool_field(body, "stream").value_or(false);
  const bool usage_chunk = include_usage(body);
  const std::vector<llm::ChatMessage> messages = chat_messages(body);
  OutputConstraint constraint;
  const json tools = chat_tools(body, job.parse_tools, constraint);
  const std::optional<bool> thinking = enable_thinking(body);
  const llm::ChatPrompt prompt = chat_prompt(model, messages, tools, thinking);
  job.prompt = prompt.ids;
  job.options.start_in_thinking = prompt.ends_in_thinking;
  constraint.response_format = field(body, "response_format");
  constraint.allow_thinking = thinking != false;
  constraint.tools = &tools;
  constraint.in_thinking = prompt.ends_in_thinking;
  job.options.grammar = output_grammar(constraint);
  RunningJob running = start_job(*model.engine, std::move(job));

  const std::string id = random_id("chatcmpl-");
  const int64_t created = now_seconds();
  auto message_logprobs = [&](const JobResult& r) -> json {
    if (!running.job.logprobs) return nullptr;
    json content = json::array();
    for (const TokenLogprob& lp : r.logprobs) content.push_back(chat_logprob(model, lp));
    return {{"content", content}};
  };
  if (!stream) {
    const JobResult r = follow(running, {});
    json message = {{"role", "assistant"}, {"content", r.content}};
    if (!r.reasoning.empty()) message["reasoning_content"] = r.reasoning;
    if (!r.tool_calls.empty()) {
      message["tool_calls"] = tool_calls_json(r.tool_calls);
      if (r.content.empty()) message["content"] = nullptr;
    }
    HttpResponse response;
    response.body = dump({{"id", id},
                          {"object", "chat.completion"},
                          {"created", created},
                          {"model", model.name},
                          {"system_fingerprint", "tempra"},
                          {"choices", json::array({{{"index", 0},
                                                    {"message", message},
                                                    {"logprobs", message_logprobs(r)},
                                                    {"finish_reason", finish_reason(r)}}})},
                          {"usage", usage_json(r)},
                          {"timings", timings_json(r)}});
    return response;
  }
  return sse_response([=, &model, running = std::move(running)](const ChunkWriter& write) mutable {
    auto chunk_json = [&](json delta, json finish, json logprobs = nullptr) {
      return json{{"id", id},
                  {"object", "chat.completion.chunk"},
                  {"created", created},
                  {"model", model.name},
                  {"system_fingerprint", "tempra"},
                  {"choices", json::array({{{"index", 0},
                                            {"delta", std::move(delta)},
                                            {"logprobs", std::move(logprobs)},
                                            {"finish_reason", std::move(finish)}}})}};
    };
    auto chunk = [&](json delta, json finish, json logprobs = nullptr) {
      return sse_data(chunk_json(std::move(delta), std::move(finish), std::move(logprobs)));
    };
    if (!write(chunk({{"role", "assistant"}, {"content", ""}}, nullptr))) {
      return;  // the client has gone: RunningJob's guard cancels the request
    }
    int tool_index = 0;
    const JobResult r = follow(
        running,
        [&](const JobEvent& e) {
          switch (e.kind) {
            case JobEvent::Kind::content:
              return write(chunk({{"content", e.text}}, nullptr));
            case JobEvent::Kind::reasoning:
              return write(chunk({{"reasoning_content", e.text}}, nullptr));
            case JobEvent::Kind::tool_call:
              return write(chunk({{"tool_calls", json::array({{{"index", tool_index++},
                                                               {"id", e.tool_call.id},
                                                               {"type", "function"},
                                                               {"function",
                                                                {{"name", e.tool_call.name},
                                                                 {"arguments", e.tool_call.arguments}}}}})}},
                                 nullptr));
            case JobEvent::Kind::logprob:
              return write(chunk(json::object(), nullptr, {{"content", json::array({chat_logprob(model, e.logprob)})}}));
          }
          return true;
        },
        [&] { return keep_alive(write); });
    if (r.client_gone) return;
    json last = chunk_json(json::object(), finish_reason(r));
    last["timings"] = timings_json(r);
    if (!write(sse_data(last))) return;
    if (usage_chunk) {
      json usage = last;
      usage["choices"] = json::array();
      usage["usage"] = usage_json(r);
      usage.erase("timings");
      if (!write(sse_data(usage))) return;
    }
    write("data: [DONE]\n\n");
  });
}

HttpResponse openai_completions(const ServedModel& model, const json& body) {
  check_model_name(model, body);
  reject_unsupported(body);
  if (bool_field(body, "echo").value_or(false)) throw ApiError(400, "'echo' is not supported", "echo");
  if (const auto suffix = string_field(body, "suffix"); suffix && !suffix->empty())
    throw ApiError(400, "'suffix' is not supported", "suffix");
  Job job;
  parse_max_tokens(body, job.options);
  if (!field(body, "max_tokens") && !field(body, "n_predict")) job.options.max_new_tokens = 16;  // OpenAI's default
  parse_sampling(body, job.options);
  parse_logprobs(body, job, true);
  job.split_reasoning = false;  // raw text: thinking tags stay in it
  const bool stream = bool_field(body, "stream").value_or(false);
  const bool usage_chunk = include_usage(body);
  // "prompt": a string, an array of token ids, or an array of one string.
  const json& prompt = required_field(body, "prompt");
  if (prompt.is_string()) {
    job.prompt = text_prompt(model, prompt.get<std::string>());
  } else if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_string()) {
    job.prompt = text_prompt(model, prompt[0].get<std::string>());
  } else if (prompt.is_array() && !prompt.empty() && prompt[0].is_number_integer()) {
    for (size_t i = 0; i < prompt.size(); ++i) {
      if (!prompt[i].is_number_integer())
        throw ApiError(400, "'prompt[" + std::to_string(i) + "]' must be a token id", "prompt");
      const int64_t t = prompt[i].get<int64_t>();
      if (t < 0 || t >= model.n_vocab)
        throw ApiError(400, "'prompt[" + std::to_string(i) + "]' is token id " + std::to_string(t) +
                                ", outside the vocab [0, " + std::to_string(model.n_vocab) + ")",
                       "prompt");
      job.prompt.push_back(int32_t(t));
    }
  } else {
    throw ApiError(400, "'prompt' must be a string, an array of one string, or an array of token ids", "prompt");
  }
  if (job.prompt.empty()) throw ApiError(400, "'prompt' is empty", "prompt");
  OutputConstraint constraint;
  constraint.response_format = field(body, "response_format");
  constraint.allow_thinking = false;  // a raw continuation: the constraint starts at once
  job.options.grammar = output_grammar(constraint);
  RunningJob running = start_job(*model.engine, std::move(job));

  const std::string id = random_id("cmpl-");
  const int64_t created = now_seconds();
  const bool logprobs = running.job.logprobs;
  if (!stream) {
    const JobResult r = follow(running, {});
    HttpResponse response;
    response.body = dump({{"id", id},
                          {"object", "text_completion"},
                          {"created", created},
                          {"model", model.name},
                          {"choices", completion_choice(r.content, finish_reason(r),
                                                        legacy_logprobs(model, logprobs, r.logprobs))},
                          {"usage", usage_json(r)},
                          {"timings", timings_json(r)}});
    return response;
  }
  return sse_response([=, &model, running = std::move(running)](const ChunkWriter& write) mutable {
    auto chunk = [&](const std::string& text, json finish, json lps) {
      return json{{"id", id},
                  {"object", "text_completion"},
                  {"created", created},
                  {"model", model.name},
                  {"choices", completion_choice(text, std::move(finish), std::move(lps))}};
    };
    const JobResult r = follow(
        running,
        [&](const JobEvent& e) {
          if (e.kind == JobEvent::Kind::content) return write(sse_data(chunk(e.text, nullptr, nullptr)));
          if (e.kind == JobEvent::Kind::logprob)
            return write(sse_data(chunk("", nullptr, legacy_logprobs(model, logprobs, {e.logprob}))));
          return true;
        },
        [&] { return keep_alive(write); });
    if (r.client_gone) return;
    json last = chunk("", finish_reason(r), nullptr);
    last["timings"] = timings_json(r);
    if (!write(sse_data(last))) return;
    if (usage_chunk) {
      json usage = chunk("", nullptr, nullptr);
      usage["choices"] = json::array();
      usage["usage"] = usage_json(r);
      if (!write(sse_data(usage))) return;
    }
    write("data: [DONE]\n\n");
  });
}

HttpResponse openai_responses(const ServedModel& model, const json& body) {
  check_model_name(model, body);
  for (const char* name : {"tools", "previous_response_id"})
    if (const json* f = field(body, name); f && !(f->is_array() && f->empty()))
      throw ApiError(400, std::string("'") + name + "' is not supported by this server's /v1/responses", name);
  const json* text_format = nullptr;  // text.format: {"type": "text" | "json_object" | "json_schema", ...}
  if (const json* text = field(body, "text")) {
    if (!text->is_object()) throw ApiError(400, "'text' must be an object", "text");
    text_format = field(*text, "format");
  }
  Job job;
  parse_max_tokens(body, job.options);
  parse_sampling(body, job.options);
  const bool stream = bool_field(body, "stream").value_or(false);
  std::vector<llm::ChatMessage> messages;
  if (const auto instructions = string_field(body, "instructions")) messages.push_back({"system", *instructions});
  const json& input = required_field(body, "input");
  if (input.is_string()) {
    messages.push_back({"user", input.get<std::string>()});
  } else if (input.is_array()) {
    for (size_t i = 0; i < input.size(); ++i) {
      const json& item = input[i];
      const std::string path = "input[" + std::to_string(i) + "]";
      if (!item.is_object()) throw ApiError(400, "'" + path + "' must be an object", path);
      const std::string type = string_field(item, "type", path + ".type").value_or("message");
      if (type != "message") throw ApiError(400, "'" + path + ".type' '" + type + "' is not supported", path + ".type");
      std::string role = string_field(item, "role", path + ".role").value_or("");
      if (role == "developer") role = "system";
      if (role != "system" && role != "user" && role != "assistant")
        throw ApiError(400, "'" + path + ".role' must be system, developer, user or assistant", path + ".role");
      messages.push_back({role, message_text(required_field(item, "content", path + ".content"), path + ".content")});
    }
  } else {
    throw ApiError(400, "'input' must be a string or an array of messages", "input");
  }
  std::optional<bool> thinking;
  if (const json* reasoning = field(body, "reasoning"); reasoning && reasoning->is_object())
    if (const auto effort = string_field(*reasoning, "effort", "reasoning.effort")) thinking = *effort != "none";
  const llm::ChatPrompt prompt = chat_prompt(model, messages, json::array(), thinking);
  job.prompt = prompt.ids;
  job.options.start_in_thinking = prompt.ends_in_thinking;
  OutputConstraint constraint;
  constraint.response_format = text_format;
  constraint.format_path = "text.format";
  constraint.in_thinking = prompt.ends_in_thinking;
  constraint.allow_thinking = thinking != false;
  job.options.grammar = output_grammar(constraint);
  RunningJob running = start_job(*model.engine, std::move(job));

  const std::string id = random_id("resp_"), message_id = random_id("msg_");
  const int64_t created = now_seconds();
  const ResponseIds ids{id, message_id, created, model.name};
  if (!stream) {
    const JobResult r = follow(running, {});
    HttpResponse response;
    response.body = dump(response_object(ids, "completed", &r));
    return response;
  }
  return sse_response([ids, message_id, running = std::move(running)](const ChunkWriter& write) mutable {
    int64_t sequence = 0;
    auto event = [&](const std::string& type, json data) {
      data["type"] = type;
      data["sequence_number"] = sequence++;
      return write("event: " + type + "\n" + sse_data(data));
    };
    const json part = {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}};
    const json item = {{"type", "message"}, {"id", message_id}, {"status", "in_progress"}, {"role", "assistant"},
                       {"content", json::array()}};
    const int output_index = 0;
    bool ok = event("response.created", {{"response", response_object(ids, "in_progress", nullptr)}}) &&
              event("response.in_progress", {{"response", response_object(ids, "in_progress", nullptr)}}) &&
              event("response.output_item.added", {{"output_index", output_index}, {"item", item}}) &&
              event("response.content_part.added",
                    {{"item_id", message_id}, {"output_index", output_index}, {"content_index", 0}, {"part", part}});
    if (!ok) {
      return;  // the client has gone: RunningJob's guard cancels the request
    }
    const JobResult r = follow(
        running,
        [&](const JobEvent& e) {
          if (e.kind != JobEvent::Kind::content) return true;
          return event("response.output_text.delta", {{"item_id", message_id},
                                                       {"output_index", output_index},
                                                       {"content_index", 0},
                                                       {"delta", e.text},
                                                       {"logprobs", json::array()}});
        },
        [&] { return keep_alive(write); });
    if (r.client_gone) return;
    json done_part = part;
    done_part["text"] = r.content;
    json done_item = item;
    done_item["status"] = "completed";
    done_item["content"] = json::array({done_part});
    const json final_response = response_object(ids, "completed", &r);
    ok = event("response.output_text.done", {{"item_id", message_id},
                                             {"output_index", output_index},
                                             {"content_index", 0},
                                             {"text", r.content},
                                             {"logprobs", json::array()}}) &&
         event("response.content_part.done",
               {{"item_id", message_id}, {"output_index", output_index}, {"content_index", 0}, {"part", done_part}}) &&
         event("response.output_item.done", {{"output_index", output_index}, {"item", done_item}});
    if (ok)
      event(final_response["status"] == "completed" ? "response.completed" : "response.incomplete",
            {{"response", final_response}});
  });
}

}  // namespace tempra::serve
