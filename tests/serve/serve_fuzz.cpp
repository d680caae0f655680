// tests/serve/serve_fuzz.cpp: libFuzzer over the server's request parsing and dispatch
// (serve/api.h), scripts/fuzz.sh runs it. An input is a route selector (its first byte) and a
// request body (the rest); the response, streamed ones included, is produced in full. Whatever
// the bytes, handle() must return a response (ASan/UBSan, leaks and timeouts are the findings).
// The model is a small random one with a synthetic vocab and a 64-token context, so no request
// can generate for long.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <unistd.h>

#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/synth.h"
#include "tempra/serve/api.h"

namespace {

using namespace tempra;

struct Fixture {
  Fixture()
      : path(std::filesystem::temp_directory_path() / ("tempra_serve_fuzz_" + std::to_string(::getpid()) + ".gguf")) {
    llm::write_synthetic_model(path, {.n_layer = 1, .n_embd = 32, .n_ff = 32, .n_head = 2, .n_head_kv = 1,
                                      .head_dim = 16, .n_vocab = 300, .context_length = 64,
                                      .weight_type = DType::f32});
    gguf = std::make_unique<io::GgufModel>(io::GgufModel::open(path));
    std::filesystem::remove(path);  // the mapping outlives the name
    model = llm::load_model(*gguf);
    tokenizer = std::make_unique<llm::Tokenizer>(llm::Tokenizer::from_gguf(gguf->metadata()));
    engine = std::make_unique<serve::Engine>(ctx, *model, *tokenizer,
                                             llm::SchedulerOptions{.slots = 2, .context = 64, .batch = 40, .chunk = 16,
                                                                   .max_queue = 4});
    api = std::make_unique<serve::Api>(
        serve::ServedModel{.name = "fuzz", .tokenizer = tokenizer.get(), .chat_template = "",
                           .architecture = "qwen3", .n_vocab = model->info().n_vocab, .context = 64,
                           .engine = engine.get()},
        serve::ApiOptions{.api_key = "", .cors_origin = "*"});
  }
  std::filesystem::path path;
  ExecContext ctx{{.threads = 1}};
  std::unique_ptr<io::GgufModel> gguf;
  std::unique_ptr<llm::Model> model;
  std::unique_ptr<llm::Tokenizer> tokenizer;
  std::unique_ptr<serve::Engine> engine;
  std::unique_ptr<serve::Api> api;
};

constexpr const char* kRoutes[][2] = {
    {"POST", "/v1/chat/completions"}, {"POST", "/v1/completions"}, {"POST", "/v1/responses"},
    {"POST", "/v1/messages"},         {"POST", "/tokenize"},       {"POST", "/detokenize"},
    {"GET", "/v1/models"},            {"GET", "/metrics"},         {"OPTIONS", "/v1/chat/completions"},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture f;
  if (size == 0) return 0;
  const auto& route = kRoutes[data[0] % (sizeof kRoutes / sizeof kRoutes[0])];
  serve::HttpRequest request{route[0], route[1], {{"content-type", "application/json"}},
                             std::string(reinterpret_cast<const char*>(data + 1), size - 1)};
  const serve::HttpResponse response = f.api->handle(request);
  if (response.stream) {
    // Odd selectors leave after the first chunk, as a client that disconnects.
    const bool leave = (data[0] / 16) % 2 == 1;
    response.stream([&](std::string_view) { return !leave; });
  }
  return 0;
}
