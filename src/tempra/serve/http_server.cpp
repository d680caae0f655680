// tempra/serve/http_server.cpp: see http_server.h. The one file that includes httplib.h.
#include "tempra/serve/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tempra/core/error.h"
#include "tempra/core/timing.h"

namespace tempra::serve {

namespace {

thread_local std::chrono::steady_clock::time_point request_start;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

void apply(const HttpResponse& from, httplib::Response& to) {
  to.status = from.status;
  for (const auto& [name, value] : from.headers) to.set_header(name, value);
  if (!from.stream) {
    to.set_content(from.body, from.content_type.c_str());
    return;
  }
  // The provider runs once, on this connection's thread, after the headers went out.
  to.set_chunked_content_provider(from.content_type, [stream = from.stream](size_t, httplib::DataSink& sink) {
    const ChunkWriter write = [&sink](std::string_view chunk) {
      return chunk.empty() || sink.write(chunk.data(), chunk.size());
    };
    stream(write);
    sink.done();
    return true;
  });
}

}  // namespace

struct HttpServer::Impl {
  httplib::Server server;
  std::thread thread;
};

HttpServer::HttpServer(HttpServerOptions options, Handler handler, ErrorFormatter on_error, Logger on_log)
    : impl_(std::make_unique<Impl>()) {
  httplib::Server& s = impl_->server;
  const int threads = std::max(1, options.threads);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  s.set_payload_max_length(options.max_body);
  s.set_read_timeout(options.timeout);
  s.set_write_timeout(options.timeout);
  s.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    request_start = std::chrono::steady_clock::now();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  const auto route = [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    HttpRequest r;
    r.method = req.method;
    r.path = req.path;
    for (const auto& [name, value] : req.headers) r.headers.emplace(lower(name), value);
    r.body = req.body;
    apply(handler(r), res);
  };
  s.Get(".*", route);
  s.Post(".*", route);
  s.Put(".*", route);
  s.Delete(".*", route);
  s.Patch(".*", route);
  s.Options(".*", route);
  // Requests the handler never saw (a body over the limit, a malformed request): the API's
  // own error shape instead of the library's empty body.
  s.set_error_handler(httplib::Server::HandlerWithResponse([on_error = std::move(on_error)](
                                                            const httplib::Request&, httplib::Response& res) {
    // Called for every status >= 400: the handler's own errors already carry their body.
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const char* what = res.status == 413   ? "request body too large"
                       : res.status == 400 ? "malformed HTTP request"
                       : res.status == 404 ? "not found"
                                           : "request failed";
    apply(on_error(res.status, what), res);
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_logger([on_log = std::move(on_log)](const httplib::Request& req, const httplib::Response& res) {
    if (!on_log) return;
    const double ms = ms_since(request_start);
    char line[512];
    std::snprintf(line, sizeof line, "%s %s %d %.1f ms %s", req.method.c_str(), req.path.substr(0, 200).c_str(),
                  res.status, ms, req.remote_addr.c_str());
    on_log(line);
  });
  options_ = std::move(options);
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  httplib::Server& s = impl_->server;
  if (options_.port == 0) {
    port_ = s.bind_to_any_port(options_.host);
    check(port_ > 0, "serve", "cannot bind ", options_.host, " to any port");
  } else {
    check(s.bind_to_port(options_.host, options_.port), "serve", "cannot bind ", options_.host, ":", options_.port,
          " (in use, or not an address of this machine)");
    port_ = options_.port;
  }
  impl_->thread = std::thread([&s] { s.listen_after_bind(); });
}

void HttpServer::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

}  // namespace tempra::serve
