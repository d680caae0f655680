// apps/tempra/serve.cpp: see serve.h. Parses flags and wires the library together; the server
// itself is src/tempra/serve.
#include "serve.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "llm_cli.h"
#include "tempra/serve/api.h"
#include "tempra/serve/engine.h"
#include "tempra/serve/http_server.h"

namespace tempra::app {

using cli::Kind;

cli::Command serve_command() {
  cli::Command c{.name = "serve",
                 .summary = "Serve a model over HTTP: OpenAI and Anthropic APIs, batched streams, a web chat page."};
  c.options.push_back(model_option());
  for (cli::Option o : session_option_rows()) c.options.push_back(std::move(o));
  c.options.insert(c.options.end(), {
      {.spellings = {"--host"}, .kind = Kind::String, .help = "address to bind", .default_value = "127.0.0.1",
       .metavar = "ADDR"},
      {.spellings = {"--port"}, .kind = Kind::Int, .help = "port to listen on (0: any free port)",
       .default_value = "8080"},
      {.spellings = {"-np", "--parallel"}, .kind = Kind::Int, .help = "slots: requests decoded together",
       .default_value = "4"},
      {.spellings = {"-a", "--alias"}, .kind = Kind::String, .help = "the model's name in the API (default: the file's)",
       .metavar = "NAME"},
      {.spellings = {"--api-key"}, .kind = Kind::String,
       .help = "require 'Authorization: Bearer KEY' (or x-api-key) on every route but /health and /",
       .metavar = "KEY"},
      {.spellings = {"--queue"}, .kind = Kind::Int, .help = "requests that may wait for a slot; more get 429",
       .default_value = "64"},
      {.spellings = {"--chunk"}, .kind = Kind::Int, .help = "prompt tokens of one request per step (chunked prefill)",
       .default_value = "256"},
      {.spellings = {"--timeout"}, .kind = Kind::Int, .help = "connection read/write timeout in seconds",
       .default_value = "600"},
      {.spellings = {"--cors"}, .kind = Kind::String,
       .help = "send CORS headers allowing this origin ('*' for any); none by default", .metavar = "ORIGIN"},
  });
  return c;
}

namespace {

int64_t positive(const cli::Args& args, const std::string& flag, int64_t min, int64_t max) {
  const int64_t v = args.integer(flag);
  if (v < min || v > max)
    throw cli::UsageError(flag + " must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                          std::to_string(v));
  return v;
}

}  // namespace

int run_serve(const cli::Args& args) {
  note_ignored_gpu_options(args);
  const auto port = int(positive(args, "--port", 0, 65535));
  const auto slots = int(positive(args, "-np", 1, 256));
  const int64_t queue = positive(args, "--queue", 0, 1 << 20);
  const int64_t chunk = positive(args, "--chunk", 1, 1 << 20);
  const auto timeout = positive(args, "--timeout", 1, 86400);

  // Signals go to the main thread only (sigwait below): block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // The server answers (503 on /health) while the model loads.
  std::atomic<const serve::Api*> ready{nullptr};
  serve::HttpServer http(
      // A connection thread per request in flight (each waits on its own generation), so every
      // slot and every queued request has one, and a few more answer /health, /metrics and 429s.
      {.host = args.string("--host"), .port = port, .threads = int(std::min<int64_t>(slots + queue + 8, 4096)),
       .timeout = std::chrono::seconds(timeout)},
      [&ready](const serve::HttpRequest& request) {
        const serve::Api* api = ready.load();
        return api != nullptr ? api->handle(request) : serve::Api::loading(request);
      },
      serve::Api::transport_error, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  http.start();
  std::fprintf(stderr, "listening on http://%s:%d (loading the model)\n", args.string("--host").c_str(), http.port());

  const LoadedModel m = load_model(args);
  ExecContext ctx(exec_options(args));
  const llm::SessionOptions session = session_options(args, m.model->info());
  llm::SchedulerOptions options{.slots = slots,
                                .context = session.context,
                                .cache_type = session.cache_type,
                                .batch = std::max(session.batch, int64_t(slots) - 1 + std::min(chunk, session.batch)),
                                .chunk = std::min(chunk, session.batch),
                                .max_queue = queue};
  serve::Engine engine(ctx, *m.model, m.tokenizer, options);
  const std::string path = args.string("--model");
  serve::ServedModel served{.name = args.given("--alias") ? args.string("--alias")
                                                          : std::filesystem::path(path).filename().string(),
                            .tokenizer = &m.tokenizer,
                            .chat_template = m.chat_template,
                            .architecture = m.model->info().architecture,
                            .n_vocab = m.model->info().n_vocab,
                            .context = engine.options().context,
                            .engine = &engine};
  serve::Api api(served, {.api_key = args.given("--api-key") ? args.string("--api-key") : "",
                          .cors_origin = args.given("--cors") ? args.string("--cors") : ""});
  ready.store(&api);
  std::fprintf(stderr, "ready: model '%s', %d slots of %lld tokens, batch %lld, chunk %lld, queue %lld\n",
               served.name.c_str(), slots, static_cast<long long>(served.context),
               static_cast<long long>(options.batch), static_cast<long long>(options.chunk),
               static_cast<long long>(queue));

  int signal = 0;
  sigwait(&signals, &signal);
  std::fprintf(stderr, "%s: finishing the requests in flight, then exiting\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
  api.stop_accepting();
  engine.drain();
  http.stop();
  return 0;
}

}  // namespace tempra::app
