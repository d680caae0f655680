// tempra/serve/http_server.h: an HTTP/1.1 server that hands every request to one handler. The
// adapter over cpp-httplib (Debian's libcpp-httplib-dev): this is the only file pair that
// includes the library.
//
// Contract: start() binds host:port (port 0: any free port, port() says which) and serves on a
// pool of `threads` connection threads until stop(). A body over max_body bytes is answered 413
// without calling the handler; so is a malformed request line (400) or an unknown route shape,
// each as `on_error` formats it. `on_log` gets one line per request (method, path, status,
// milliseconds, peer).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "tempra/serve/http.h"

namespace tempra::serve {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 16;                 // connections served at once (each streams one response)
  size_t max_body = 8 << 20;        // bytes
  std::chrono::seconds timeout{600};  // read and write timeout of a connection
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // (status, message) -> the response to send for a request the handler never saw.
  using ErrorFormatter = std::function<HttpResponse(int status, const std::string& message)>;
  using Logger = std::function<void(const std::string& line)>;

  HttpServer(HttpServerOptions options, Handler handler, ErrorFormatter on_error, Logger on_log);
  ~HttpServer();

  // Binds and starts serving on a background thread; throws tempra::Error naming host and port
  // when it cannot bind.
  void start();
  void stop();
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  HttpServerOptions options_;
  int port_ = 0;
};

}  // namespace tempra::serve
