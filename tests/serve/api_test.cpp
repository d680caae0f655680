// tests/serve/api_test.cpp: the server's routes in process (serve/api.h), on a small scripted
// model: every refusal is the right status in the route's dialect and names what was wrong;
// the API key guards every route but /health and the page; CORS only when asked; a client that
// leaves mid-stream cancels its request and frees the slot; a full queue is 429 with
// Retry-After; a draining server refuses new generations.
#include "tempra/serve/api.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/files.h"
#include "tempra/io/gguf_model.h"
#include "tempra/io/gguf_value.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/model/synth.h"

namespace tempra::serve {
namespace {

namespace fs = std::filesystem;

// A 1-layer, 64-wide model on Qwen3's tokenizer that answers a chat prompt with thinking
// "<think>Let me think</think>" and then, as it answers one without thinking, a get_weather tool
// call; and continues "Answer:" with " Hello from tempra."
struct ScriptedModel {
  io::GgufModel gguf;
  std::unique_ptr<llm::Model> model;
  llm::Tokenizer tokenizer;
  std::string chat_template;
};

const ScriptedModel& scripted() {
  static const ScriptedModel m = [] {
    const fs::path path = testing::scratch_dir("tempra_serve_api_test") / "scripted.gguf";
    if (!fs::exists(path)) {
      llm::SynthSpec spec{.n_layer = 1, .n_embd = 64, .n_ff = 64, .n_head = 2, .n_head_kv = 1, .head_dim = 32,
                               .n_vocab = 151936, .tied_embeddings = false, .context_length = 4096,
                               .tokenizer_dir = TEMPRA_QWEN3_TOKENIZER_DIR};
      io::GgufMetadata metadata;
      llm::add_qwen3_tokenizer_metadata(metadata, spec.tokenizer_dir, spec.n_vocab);
      const llm::Tokenizer t = llm::Tokenizer::from_gguf(metadata);
      for (const char* text : {"\n<think>Let me think</think>\n\n<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"n\":42}}</tool_call>",
                               "Answer: Hello from tempra."}) {
        std::vector<int32_t> chain = t.encode(text, {.parse_special = true, .add_special = false});
        chain.push_back(t.eos());
        spec.scripts.push_back(chain);
      }
      llm::write_synthetic_model(path, spec);
    }
    io::GgufModel gguf = io::GgufModel::open(path);
    std::unique_ptr<llm::Model> model = llm::load_model(gguf);
    llm::Tokenizer tokenizer = llm::Tokenizer::from_gguf(gguf.metadata());
    const io::GgufValue* tmpl = gguf.metadata().find("tokenizer.chat_template");
    std::string chat_template = tmpl != nullptr ? std::get<std::string>(tmpl->value) : "";
    return ScriptedModel{std::move(gguf), std::move(model), std::move(tokenizer), std::move(chat_template)};
  }();
  return m;
}

// A server without sockets: engine, model and routes.
struct Server {
  explicit Server(ApiOptions options = {}, llm::SchedulerOptions scheduler = {.slots = 2, .context = 256,
                                                                             .batch = 64, .chunk = 32})
      : ctx({.threads = 2}),
        engine(ctx, *scripted().model, scripted().tokenizer, scheduler),
        api(ServedModel{.name = "scripted",
                        .tokenizer = &scripted().tokenizer,
                        .chat_template = scripted().chat_template,
                        .architecture = "qwen3",
                        .n_vocab = scripted().model->info().n_vocab,
                        .context = scheduler.context,
                        .engine = &engine},
            std::move(options)) {}

  HttpResponse call(const std::string& method, const std::string& path, const std::string& body = "",
                    std::map<std::string, std::string> headers = {}) const {
    return api.handle({method, path, std::move(headers), body});
  }
  // Runs a streamed body to the end (or until `keep_going` says stop) and returns what it wrote.
  static std::string drain(const HttpResponse& r, const std::function<bool(const std::string&)>& keep_going = {}) {
    std::string out;
    if (!r.stream) return r.body;
    r.stream([&](std::string_view chunk) {
      out.append(chunk);
      return !keep_going || keep_going(out);
    });
    return out;
  }

  ExecContext ctx;
  Engine engine;
  Api api;
};

json body_of(const HttpResponse& r) { return json::parse(r.body); }

std::string header(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "";
}

TEST(ServeApi, health_models_and_the_page_answer) {
  const Server s;
  EXPECT_EQ(body_of(s.call("GET", "/health")), json({{"status", "ok"}}));
  const HttpResponse models = s.call("GET", "/v1/models");
  EXPECT_EQ(body_of(models)["data"][0]["id"], "scripted");
  const HttpResponse page = s.call("GET", "/");
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<title>tempra</title>"), std::string::npos);
  EXPECT_NE(s.call("GET", "/metrics").body.find("tempra_slots_total 2"), std::string::npos);
}

TEST(ServeApi, a_chat_answer_is_parsed_into_a_tool_call) {
  const Server s;
  const json r = body_of(s.call("POST", "/v1/chat/completions", R"({
    "messages": [{"role": "user", "content": "weather?"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
    "chat_template_kwargs": {"enable_thinking": false}})"));
  const json& choice = r["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"n", 42}}));
}

struct Refusal {
  std::string method, path, body;
  int status;
  std::string message;  // a part of the error's message
  std::string param;    // OpenAI's param, when the route is OpenAI's
};

TEST(ServeApi, every_refusal_names_what_was_wrong_in_the_routes_dialect) {
  const Server s;
  const std::string long_prompt = "{\"prompt\": \"" + std::string(4000, 'x') + " y\"}";
  const std::vector<Refusal> cases = {
      {"POST", "/v1/chat/completions", "{bad", 400, "not valid JSON", ""},
      {"POST", "/v1/chat/completions", "[1, 2]", 400, "must be a JSON object, got array", ""},
      {"POST", "/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}", 400,
       "not valid JSON", ""},
      {"POST", "/v1/chat/completions", "{}", 400, "'messages' is required", "messages"},
      {"POST", "/v1/chat/completions", R"({"messages": []})", 400, "non-empty array", "messages"},
      {"POST", "/v1/chat/completions", R"({"messages": [{"role": "robot", "content": "x"}]})", 400,
       "got 'robot'", "messages[0].role"},
      {"POST", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})", 400,
       "'image_url' is not supported", "messages[0].content[0].type"},
      {"POST", "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "temperature": 500})",
       400, "'temperature' must be in [0, 100], got 500", "temperature"},
      {"POST", "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1.5})", 400,
       "'max_tokens' must be an integer, got 1.5", "max_tokens"},
      {"POST", "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", 400,
       "'n' must be 1", "n"},
      {"POST", "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", 400,
       "'stop[0]' must be a string", "stop"},
      {"POST", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", 400,
       "tool_choice forces a call but 'tools' is empty", "tool_choice"},
      {"POST", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}],
           "tool_choice": {"type": "function", "function": {"name": "g"}}})", 400,
       "tool_choice names 'g', which is not among the tools", "tool_choice"},
      {"POST", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}})", 400,
       "must be text, json_object or json_schema, got 'xml'", "response_format.type"},
      {"POST", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
           "json_schema": {"name": "n", "schema": {"type": "integer", "minimum": 1}}}})", 400,
       "[json-schema] at /: 'minimum' is not supported", "response_format.json_schema.schema"},
      {"POST", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required", "tools": [{"type": "function",
           "function": {"name": "f", "parameters": {"type": "object", "properties": {"d": {"type": "string",
           "format": "email"}}}}}]})", 400,
       "at /properties/d: format 'email' is not supported", "tools[0].function.parameters"},
      {"POST", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
           "json_schema": {"name": "n", "schema": {"type": "string", "pattern": "^(a*)*$"}}}})", 400,
       "left-recursive", "response_format.json_schema.schema"},
      {"POST", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
           "json_schema": {"name": "n", "schema": {"type": "integer", "enum": [1, 2], "maximum": 1}}}})", 400,
       "'maximum' is not supported", "response_format.json_schema.schema"},
      {"POST", "/v1/chat/completions", R"({"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]})", 404,
       "the model 'gpt-9' does not exist", "model"},
      {"POST", "/v1/completions", long_prompt, 400, "tokens but the context holds 256", "messages"},
      {"POST", "/v1/completions", R"({"prompt": [1, 999999]})", 400, "outside the vocab", "prompt"},
      {"POST", "/v1/responses", R"({"input": 5})", 400, "'input' must be a string or an array", "input"},
      {"POST", "/tokenize", "{}", 400, "'content' is required", "content"},
      {"POST", "/detokenize", R"({"tokens": [-1]})", 400, "outside the vocab", "tokens"},
      {"GET", "/v1/chat/completions", "", 405, "GET is not allowed on /v1/chat/completions; use POST", ""},
      {"GET", "/etc/passwd", "", 404, "no route GET /etc/passwd", ""},
      {"GET", "/../../etc/passwd", "", 404, "no route", ""},
  };
  for (const Refusal& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path + " " + c.body.substr(0, 80));
    const HttpResponse r = s.call(c.method, c.path, c.body);
    EXPECT_EQ(r.status, c.status);
    const json e = body_of(r)["error"];
    EXPECT_NE(e["message"].get<std::string>().find(c.message), std::string::npos) << e.dump();
    if (!c.param.empty()) EXPECT_EQ(e["param"], c.param);
  }
  const json too_long = body_of(s.call("POST", "/v1/completions", long_prompt));
  EXPECT_EQ(too_long["error"]["code"], "context_length_exceeded");

  // Anthropic's route answers in Anthropic's shape.
  const HttpResponse a = s.call("POST", "/v1/messages", R"({"messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(a.status, 400);
  const json ae = body_of(a);
  EXPECT_EQ(ae["type"], "error");
  EXPECT_EQ(ae["error"]["type"], "invalid_request_error");
  EXPECT_EQ(ae["error"]["message"], "'max_tokens' is required");
  const HttpResponse b = s.call("POST", "/v1/messages",
                                R"({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image"}]}]})");
  EXPECT_NE(body_of(b)["error"]["message"].get<std::string>().find("'messages.0.content.0.type' 'image' is not supported"),
            std::string::npos);
  EXPECT_EQ(header(s.call("GET", "/v1/messages"), "Allow"), "POST");
}

const char* const kWeatherAndLookup = R"(
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
                "properties": {"n": {"type": "integer"}}, "required": ["n"]}}},
              {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object",
                "properties": {"q": {"enum": ["alpha", "beta"]}}, "required": ["q"], "additionalProperties": false}}}])";

TEST(ServeApi, a_required_tool_call_that_fits_the_schema_is_the_models_own) {
  // The scripted model calls get_weather with {"n": 42}: every one of its tokens is allowed, so
  // forcing a call changes nothing.
  const Server s;
  const json r = body_of(s.call("POST", "/v1/chat/completions", std::string(R"({
    "messages": [{"role": "user", "content": "weather?"}], "tool_choice": "required", "seed": 1,
    "chat_template_kwargs": {"enable_thinking": false},)") + kWeatherAndLookup + "}"));
  const json& call = r["choices"][0]["message"]["tool_calls"][0]["function"];
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(json::parse(call["arguments"].get<std::string>()), json({{"n", 42}}));
}

TEST(ServeApi, with_auto_a_tool_schema_tempra_cannot_compile_leaves_its_arguments_any_object) {
  const Server s;
  const json r = body_of(s.call("POST", "/v1/chat/completions", R"({"seed": 1,
    "messages": [{"role": "user", "content": "weather?"}], "chat_template_kwargs": {"enable_thinking": false},
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"n": {"type": "integer", "minimum": 0}}}}}]})"));
  const json& call = r["choices"][0]["message"]["tool_calls"][0]["function"];
  EXPECT_EQ(call["name"], "get_weather") << r.dump();
  EXPECT_EQ(json::parse(call["arguments"].get<std::string>()), json({{"n", 42}}));
}

TEST(ServeApi, a_named_tool_choice_forces_that_tool_with_schema_valid_arguments) {
  const Server s;
  for (int seed = 0; seed < 4; ++seed) {
    SCOPED_TRACE(seed);
    const json r = body_of(s.call("POST", "/v1/chat/completions", std::string(R"({
      "messages": [{"role": "user", "content": "weather?"}], "max_tokens": 120, "seed": )") +
                                  std::to_string(seed) + R"(,
      "tool_choice": {"type": "function", "function": {"name": "lookup"}},
      "chat_template_kwargs": {"enable_thinking": false},)" + kWeatherAndLookup + "}"));
    const json& choice = r["choices"][0];
    ASSERT_EQ(choice["finish_reason"], "tool_calls") << r.dump();
    for (const json& c : choice["message"]["tool_calls"]) {
      EXPECT_EQ(c["function"]["name"], "lookup");
      const json args = json::parse(c["function"]["arguments"].get<std::string>());
      EXPECT_EQ(args.size(), 1u);
      EXPECT_TRUE(args["q"] == "alpha" || args["q"] == "beta") << args.dump();
    }
  }
  // Anthropic's spelling: {"type": "tool", "name": ...}.
  const json a = body_of(s.call("POST", "/v1/messages", R"({"max_tokens": 200, "seed": 1, "messages": [{"role": "user",
    "content": "weather?"}], "tool_choice": {"type": "tool", "name": "lookup"}, "tools": [
    {"name": "get_weather", "input_schema": {"type": "object"}},
    {"name": "lookup", "input_schema": {"type": "object", "properties": {"q": {"const": "gamma"}}, "required": ["q"],
                                        "additionalProperties": false}}]})"));
  ASSERT_EQ(a["stop_reason"], "tool_use") << a.dump();
  const json& use = a["content"].back();
  EXPECT_EQ(use["name"], "lookup");
  EXPECT_EQ(use["input"], json({{"q", "gamma"}}));
}

TEST(ServeApi, response_formats_constrain_chat_completions_and_responses) {
  const Server s;
  const char* schema = R"({"type": "object", "properties": {"ok": {"type": "boolean"}, "tag": {"enum": ["x", "y"]}},
                          "required": ["ok", "tag"], "additionalProperties": false})";
  for (int seed = 0; seed < 3; ++seed) {
    SCOPED_TRACE(seed);
    const json chat = body_of(s.call("POST", "/v1/chat/completions", std::string(R"({"messages": [{"role": "user",
      "content": "Answer:"}], "max_tokens": 100, "seed": )") + std::to_string(seed) + R"(,
      "chat_template_kwargs": {"enable_thinking": false},
      "response_format": {"type": "json_schema", "json_schema": {"name": "r", "strict": true, "schema": )" + schema + "}}}"));
    ASSERT_EQ(chat["choices"][0]["finish_reason"], "stop") << chat.dump();
    const json doc = json::parse(chat["choices"][0]["message"]["content"].get<std::string>());
    EXPECT_TRUE(doc["ok"].is_boolean());
    EXPECT_TRUE(doc["tag"] == "x" || doc["tag"] == "y");
    EXPECT_EQ(doc.size(), 2u);

    const json any = body_of(s.call("POST", "/v1/completions", R"({"prompt": "Answer:", "max_tokens": 200, "seed": )" +
                                                                  std::to_string(seed) + R"(,
      "response_format": {"type": "json_object"}})"));
    if (any["choices"][0]["finish_reason"] == "stop") {
      EXPECT_TRUE(json::parse(any["choices"][0]["text"].get<std::string>()).is_object()) << any.dump();
    }
  }
  const json resp = body_of(s.call("POST", "/v1/responses", std::string(R"({"input": "Answer:", "max_output_tokens": 100, "seed": 1,
    "reasoning": {"effort": "none"}, "text": {"format": {"type": "json_schema", "name": "r", "schema": )") + schema + "}}}"));
  const json doc = json::parse(resp["output"][0]["content"][0]["text"].get<std::string>());
  EXPECT_TRUE(doc["ok"].is_boolean()) << resp.dump();
}

TEST(ServeApi, an_api_key_guards_every_route_but_health_and_the_page) {
  const Server s({.api_key = "sekrit"});
  EXPECT_EQ(s.call("GET", "/health").status, 200);
  EXPECT_EQ(s.call("GET", "/").status, 200);
  const HttpResponse none = s.call("GET", "/v1/models");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(body_of(none)["error"]["code"], "invalid_api_key");
  EXPECT_EQ(s.call("GET", "/v1/models", "", {{"authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(s.call("GET", "/v1/models", "", {{"authorization", "Bearer sekrit2"}}).status, 401);
  EXPECT_EQ(s.call("GET", "/metrics", "", {{"authorization", "sekrit"}}).status, 401);
  EXPECT_EQ(s.call("GET", "/v1/models", "", {{"authorization", "Bearer sekrit"}}).status, 200);
  EXPECT_EQ(s.call("GET", "/v1/models", "", {{"x-api-key", "sekrit"}}).status, 200);
  const HttpResponse anthropic = s.call("POST", "/v1/messages", "{}");
  EXPECT_EQ(anthropic.status, 401);
  EXPECT_EQ(body_of(anthropic)["error"]["type"], "authentication_error");
}

TEST(ServeApi, cors_headers_only_when_an_origin_is_configured) {
  const Server closed;
  EXPECT_EQ(header(closed.call("GET", "/health"), "Access-Control-Allow-Origin"), "");
  EXPECT_EQ(closed.call("OPTIONS", "/v1/chat/completions").status, 405);
  const Server open({.cors_origin = "https://example.org"});
  EXPECT_EQ(header(open.call("GET", "/health"), "Access-Control-Allow-Origin"), "https://example.org");
  const HttpResponse preflight = open.call("OPTIONS", "/v1/chat/completions");
  EXPECT_EQ(preflight.status, 204);
  EXPECT_NE(header(preflight, "Access-Control-Allow-Headers").find("Authorization"), std::string::npos);
}

bool wait_until(const std::function<bool()>& done) {
  for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

// A prompt the scripts do not continue: the model then samples freely, so it runs until max_tokens.
// A request that cannot end before its 200 tokens: the scripted model, left to itself, soon walks
// into its tool-call chain and ends (often within a few tokens), so a grammar holds the end back.
constexpr const char* kLongRun = R"({"prompt": "zq", "max_tokens": 200, "stream": true, "temperature": 1.0,
  "response_format": {"type": "json_schema", "json_schema": {"name": "long", "schema": {"type": "string",
  "minLength": 5000}}}})";

TEST(ServeApi, a_client_that_leaves_mid_stream_cancels_its_request_and_frees_the_slot) {
  const Server s({}, {.slots = 1, .context = 256, .batch = 64, .chunk = 32, .max_queue = 4});
  const HttpResponse r = s.call("POST", "/v1/completions", kLongRun);
  ASSERT_TRUE(r.stream);
  int chunks = 0;
  const std::string written = Server::drain(r, [&](const std::string&) { return ++chunks < 3; });
  EXPECT_EQ(written.find("[DONE]"), std::string::npos);
  EXPECT_TRUE(wait_until([&] { return s.engine.stats().scheduler.busy_slots == 0; })) << "the slot stayed busy";
  const EngineStats stats = s.engine.stats();
  EXPECT_LT(stats.scheduler.generated_tokens, 200) << "the request ran to its end instead of stopping";
  // The freed slot serves the next request.
  const json next = body_of(s.call("POST", "/v1/completions", R"({"prompt": "Answer:", "max_tokens": 8})"));
  EXPECT_EQ(next["choices"][0]["text"], " Hello from tempra.");
}

TEST(ServeApi, a_full_queue_is_429_with_retry_after_and_a_draining_server_503) {
  const Server s({}, {.slots = 1, .context = 256, .batch = 64, .chunk = 32, .max_queue = 0});
  // The first request holds the only slot (queued or running: it needs tens of milliseconds);
  // with no queue, the second is refused at once.
  const HttpResponse running = s.call("POST", "/v1/completions", kLongRun);
  ASSERT_TRUE(running.stream);
  const HttpResponse refused = s.call("POST", "/v1/completions", R"({"prompt": "Answer:", "max_tokens": 8})");
  EXPECT_EQ(refused.status, 429);
  EXPECT_EQ(header(refused, "Retry-After"), "1");
  EXPECT_EQ(body_of(refused)["error"]["type"], "rate_limit_error");
  Server::drain(running, [](const std::string&) { return false; });  // the client leaves
  ASSERT_TRUE(wait_until([&] { return s.engine.stats().scheduler.busy_slots == 0; }));

  const_cast<Api&>(s.api).stop_accepting();
  const HttpResponse draining = s.call("POST", "/v1/completions", R"({"prompt": "Answer:"})");
  EXPECT_EQ(draining.status, 503);
  EXPECT_EQ(s.call("GET", "/health").status, 200);
  EXPECT_EQ(Api::loading({"GET", "/health", {}, ""}).status, 503);
}

TEST(ServeApi, streamed_chat_chunks_end_with_usage_and_done) {
  const Server s;
  const std::string out = Server::drain(s.call("POST", "/v1/chat/completions", R"({
    "messages": [{"role": "user", "content": "hi"}], "stream": true, "stream_options": {"include_usage": true},
    "chat_template_kwargs": {"enable_thinking": false}})"));
  EXPECT_TRUE(out.ends_with("data: [DONE]\n\n"));
  std::string content;
  json usage;
  for (size_t at = 0; (at = out.find("data: {", at)) != std::string::npos;) {
    const size_t end = out.find("\n\n", at);
    const json chunk = json::parse(out.substr(at + 6, end - at - 6));
    if (chunk.contains("usage")) usage = chunk["usage"];
    if (!chunk["choices"].empty()) content += chunk["choices"][0]["delta"].value("content", "");
    at = end;
  }
  EXPECT_EQ(content, "<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"n\":42}}</tool_call>");
  EXPECT_EQ(usage["completion_tokens"], 16);  // 15 tokens and <|im_end|>
}

TEST(ServeApi, constant_time_equal_compares_whole_strings) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "ab"));
  EXPECT_FALSE(constant_time_equal("ab", "abc"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  EXPECT_FALSE(constant_time_equal(std::string("a\0b", 3), "a"));
}

}  // namespace
}  // namespace tempra::serve
