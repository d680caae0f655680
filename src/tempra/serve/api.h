// tempra/serve/api.h: the server's routes: every HTTP request in, one HttpResponse out.
//
// Contract: handle() never throws and never crashes on any request (tests/serve and the fuzz
// target hold it to that). Routes:
//   POST /v1/chat/completions, /v1/completions, /v1/responses    OpenAI (openai.h)
//   POST /v1/messages                                          Anthropic (anthropic.h)
//   GET  /v1/models (and /models)                              the one model served
//   GET  /health                                               200 {"status": "ok"}; 503 while loading
//   GET  /metrics                                              Prometheus text
//   POST /tokenize, /detokenize                                llama-server's shapes
//   GET  /                                                     the web chat page (web_page.h)
// Errors come in the dialect of the route (OpenAI's shape, Anthropic's on /v1/messages), with
// the status: 400 bad field, 401 bad key, 404 unknown route or model, 405 wrong method, 413
// body too large, 429 queue full, 503 loading or draining. With an API key set, every route but
// /health and / needs "Authorization: Bearer KEY" (or Anthropic's "x-api-key: KEY"), compared
// in constant time. CORS headers are sent only when an origin is configured; OPTIONS
// preflights are answered then. No route reads a file.
#pragma once

#include <atomic>
#include <string>

#include "tempra/serve/http.h"
#include "tempra/serve/served_model.h"

namespace tempra::serve {

struct ApiOptions {
  std::string api_key;      // "" : no authentication
  std::string cors_origin;  // "" : no CORS headers; "*" or an origin
};

class Api {
 public:
  Api(ServedModel model, ApiOptions options);

  HttpResponse handle(const HttpRequest& request) const;
  // After this, generation routes answer 503 (the server drains before exiting).
  void stop_accepting() { accepting_ = false; }

  // The answer to any request while the model loads (/health: 503 "loading model").
  static HttpResponse loading(const HttpRequest& request);
  // A request the handler never saw (413, malformed): OpenAI's error shape.
  static HttpResponse transport_error(int status, const std::string& message);

 private:
  HttpResponse route(const HttpRequest& request) const;
  HttpResponse metrics() const;
  bool authorized(const HttpRequest& request) const;

  ServedModel model_;
  ApiOptions options_;
  std::atomic<bool> accepting_{true};
};

// a == b in time that depends on the lengths only, not on where they differ.
bool constant_time_equal(const std::string& a, const std::string& b);

}  // namespace tempra::serve
