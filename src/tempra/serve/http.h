// tempra/serve/http.h: the HTTP vocabulary of the serve layer, independent of any HTTP library.
//
// An API handler takes an HttpRequest and returns an HttpResponse: a whole body, or a chunked
// one written by `stream` (server-sent events). Only http_server.cpp knows the library that
// puts these on a socket, so the whole API is testable, and fuzzable, without one.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tempra::serve {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  // The header's value, or "" when absent (`name` in lower case).
  const std::string& header(const std::string& name) const {
    static const std::string empty;
    const auto it = headers.find(name);
    return it == headers.end() ? empty : it->second;
  }
};

// Writes one chunk of a streamed body; false once the client has gone (stop writing then).
using ChunkWriter = std::function<bool(std::string_view)>;

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is streamed: called once, on the request's thread, after the status and
  // headers are sent; it returns when the body is complete or the writer reported the client
  // gone.
  std::function<void(const ChunkWriter&)> stream;
};

}  // namespace tempra::serve
