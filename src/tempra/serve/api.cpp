// tempra/serve/api.cpp: see api.h.
#include "tempra/serve/api.h"

#include <cstdio>
#include <string_view>

#include "tempra/core/error.h"
#include "tempra/core/utf8.h"
#include "tempra/serve/anthropic.h"
#include "tempra/serve/openai.h"
#include "tempra/serve/web_page.h"

namespace tempra::serve {
namespace {

HttpResponse json_response(const json& value, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = dump(value);
  return r;
}

bool is_anthropic(const std::string& path) { return path == "/v1/messages"; }

HttpResponse error_for(const std::string& path, const ApiError& e) {
  return is_anthropic(path) ? anthropic_error(e) : openai_error(e);
}

// POST /tokenize {"content", "add_special", "with_pieces"} -> {"tokens": [...]}.
HttpResponse tokenize(const ServedModel& model, const json& body) {
  const std::optional<std::string> content = string_field(body, "content");
  if (!content) throw ApiError(400, "'content' is required", "content");
  const bool add_special = bool_field(body, "add_special").value_or(false);
  const bool parse_special = bool_field(body, "parse_special").value_or(true);
  const bool with_pieces = bool_field(body, "with_pieces").value_or(false);
  const std::vector<int32_t> ids =
      model.tokenizer->encode(*content, {.parse_special = parse_special, .add_special = add_special});
  json tokens = json::array();
  for (int32_t id : ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    const std::string piece = model.tokenizer->piece(id);
    // A piece that is not whole UTF-8 (a byte token) goes out as its bytes, as llama-server does.
    if (!invalid_utf8_at(piece)) {
      tokens.push_back({{"id", id}, {"piece", piece}});
    } else {
      tokens.push_back({{"id", id}, {"piece", byte_array(piece)}});
    }
  }
  return json_response({{"tokens", tokens}});
}

// POST /detokenize {"tokens": [...]} -> {"content"}.
HttpResponse detokenize(const ServedModel& model, const json& body) {
  const json& tokens = required_field(body, "tokens");
  if (!tokens.is_array()) throw ApiError(400, "'tokens' must be an array of token ids", "tokens");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!tokens[i].is_number_integer())
      throw ApiError(400, "'tokens[" + std::to_string(i) + "]' must be a token id, got " + type_name(tokens[i]),
                     "tokens");
    const int64_t id = tokens[i].get<int64_t>();
    if (id < 0 || id >= model.tokenizer->size())
      throw ApiError(400, "'tokens[" + std::to_string(i) + "]' is " + std::to_string(id) + ", outside the vocab [0, " +
                              std::to_string(model.tokenizer->size()) + ")",
                     "tokens");
    ids.push_back(int32_t(id));
  }
  return json_response({{"content", model.tokenizer->decode(ids)}});
}

HttpResponse models(const ServedModel& model) {
  return json_response(
      {{"object", "list"},
       {"data", json::array({{{"id", model.name},
                              {"object", "model"},
                              {"created", 0},
                              {"owned_by", "tempra"},
                              {"meta",
                               {{"architecture", model.architecture},
                                {"n_vocab", model.n_vocab},
                                {"n_ctx", model.context}}}}})}});
}

}  // namespace

bool constant_time_equal(const std::string& a, const std::string& b) {
  // Every byte of the longer string is read whatever matches: the time says only the lengths.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

Api::Api(ServedModel model, ApiOptions options) : model_(std::move(model)), options_(std::move(options)) {}

HttpResponse Api::loading(const HttpRequest& request) {
  ApiError e(503, "loading model", "", "unavailable_error");
  return error_for(request.path, e);
}

HttpResponse Api::transport_error(int status, const std::string& message) {
  return openai_error(ApiError(status, message));
}

bool Api::authorized(const HttpRequest& request) const {
  if (options_.api_key.empty()) return true;
  const std::string& auth = request.header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() > kBearer.size() && std::string_view(auth).substr(0, kBearer.size()) == kBearer)
    return constant_time_equal(auth.substr(kBearer.size()), options_.api_key);
  const std::string& key = request.header("x-api-key");
  return !key.empty() && constant_time_equal(key, options_.api_key);
}

HttpResponse Api::metrics() const {
  const EngineStats s = model_.engine->stats();
  const llm::SchedulerStats& q = s.scheduler;
  auto rate = [](int64_t n, double ms) { return ms > 0 ? 1000.0 * double(n) / ms : 0.0; };
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, double value) {
    char line[256];
    std::snprintf(line, sizeof line, "# HELP tempra_%s %s\n# TYPE tempra_%s %s\ntempra_%s %.6g\n", name, help, name,
                  type, name, value);
    out += line;
  };
  metric("requests_total", "counter", "Generation requests accepted.", double(s.requests));
  metric("prompt_tokens_total", "counter", "Prompt tokens prefilled (reused ones not counted).",
         double(q.prompt_tokens));
  metric("prompt_tokens_reused_total", "counter", "Prompt tokens found in a slot's cache.", double(q.reused_tokens));
  metric("tokens_generated_total", "counter", "Tokens sampled.", double(q.generated_tokens));
  metric("requests_queued", "gauge", "Requests waiting for a slot.", double(q.queued));
  metric("slots_busy", "gauge", "Slots running a request.", double(q.busy_slots));
  metric("slots_total", "gauge", "Slots.", double(model_.engine->options().slots));
  metric("prompt_tokens_per_second", "gauge", "Prefill rate over the steps that had prompt rows.",
         rate(q.prompt_tokens, q.prompt_ms));
  metric("decode_tokens_per_second", "gauge", "Aggregate decode rate over the steps that had decode rows only.",
         rate(q.decode_only_tokens, q.decode_ms));
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4";
  r.body = std::move(out);
  return r;
}

HttpResponse Api::route(const HttpRequest& request) const {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  const bool post = request.method == "POST";
  auto wrong_method = [&](const char* allowed) {
    HttpResponse r = error_for(path, ApiError(405, request.method + " is not allowed on " + path + "; use " + allowed));
    r.headers.push_back({"Allow", allowed});
    return r;
  };
  if (path == "/health" || path == "/v1/health") {
    if (!get) return wrong_method("GET");
    return json_response({{"status", "ok"}});
  }
  if (path == "/" || path == "/index.html") {
    if (!get) return wrong_method("GET");
    HttpResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = std::string(web_page());
    return r;
  }
  if (!authorized(request))
    return error_for(path, ApiError(401, "invalid or missing API key: send 'Authorization: Bearer KEY'", "",
                                    "authentication_error", "invalid_api_key"));
  if (path == "/v1/models" || path == "/models") return get ? models(model_) : wrong_method("GET");
  if (path == "/metrics") return get ? metrics() : wrong_method("GET");

  using Endpoint = HttpResponse (*)(const ServedModel&, const json&);
  Endpoint endpoint = nullptr;
  bool generates = true;
  if (path == "/v1/chat/completions" || path == "/chat/completions") endpoint = openai_chat_completions;
  else if (path == "/v1/completions" || path == "/completions") endpoint = openai_completions;
  else if (path == "/v1/responses") endpoint = openai_responses;
  else if (path == "/v1/messages") endpoint = anthropic_messages;
  else if (path == "/tokenize") endpoint = tokenize, generates = false;
  else if (path == "/detokenize") endpoint = detokenize, generates = false;
  if (endpoint == nullptr) return error_for(path, ApiError(404, "no route " + request.method + " " + path, "", "not_found_error"));
  if (!post) return wrong_method("POST");
  if (generates && !accepting_) return error_for(path, ApiError(503, "the server is shutting down", "", "unavailable_error"));
  return endpoint(model_, parse_body(request.body));
}

HttpResponse Api::handle(const HttpRequest& request) const {
  HttpResponse response;
  if (request.method == "OPTIONS" && !options_.cors_origin.empty()) {
    response.status = 204;
    response.headers = {{"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                        {"Access-Control-Allow-Headers", "Authorization, Content-Type, x-api-key, anthropic-version"},
                        {"Access-Control-Max-Age", "600"}};
  } else {
    try {
      response = route(request);
    } catch (const ApiError& e) {
      response = error_for(request.path, e);
    } catch (const Error& e) {
      // A library check the endpoint did not anticipate is still the request's fault (a value
      // the template, tokenizer or sampler refused): 400 with its message.
      response = error_for(request.path, ApiError(400, e.what()));
    } catch (const std::exception& e) {
      response = error_for(request.path, ApiError(500, std::string("internal error: ") + e.what(), "", "server_error"));
    }
  }
  if (!options_.cors_origin.empty()) response.headers.push_back({"Access-Control-Allow-Origin", options_.cors_origin});
  return response;
}

}  // namespace tempra::serve
