// apps/tempra/bench.cpp: see bench.h.
#include "bench.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "build_info.h"
#include "llm_cli.h"
#include "quantize.h"
#include "tempra/backend/kernels.h"
#include "tempra/backend/quant_dot.h"
#include "tempra/core/error.h"
#include "tempra/llm/runtime/session.h"

namespace tempra::app {
namespace {

using cli::Kind;
using Clock = std::chrono::steady_clock;

// "512", "128,256" -> {512}, {128, 256}; every value >= minimum.
std::vector<int64_t> int_list(const std::string& text, const std::string& option, int64_t minimum) {
  std::vector<int64_t> values;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      throw cli::UsageError(option + " takes a comma-separated list of integers, got '" + text + "'");
    if (v < minimum)
      throw cli::UsageError(option + " values must be >= " + std::to_string(minimum) + ", got " + std::to_string(v));
    values.push_back(v);
    start = comma + 1;
  }
  return values;
}

llm::KvCacheType cache_type(const std::string& name, const std::string& option) {
  if (name == "f16") return llm::KvCacheType::f16;
  if (name == "f32") return llm::KvCacheType::f32;
  if (name == "q8_0") return llm::KvCacheType::q8_0;
  throw cli::UsageError(option + " takes f16, f32 or q8_0, got '" + name + "'");
}

// What llama-bench prints of a model: "qwen3 0.6B Q8_0", its tensor bytes and parameters.
struct ModelFacts {
  std::string path, description;
  uint64_t bytes = 0, params = 0;
};

ModelFacts describe(const std::string& path, const io::GgufModel& gguf, const llm::ModelInfo& info) {
  ModelFacts f;
  f.path = path;
  for (const auto& at : gguf.tensors()) {
    f.bytes += gguf.info(at).nbytes;
    f.params += uint64_t(gguf.info(at).numel());
  }
  std::string type = "unknown type";
  if (const io::GgufValue* v = gguf.metadata().find("general.file_type"); v != nullptr) {
    int64_t ftype = -1;
    std::visit(
        [&](const auto& x) {
          if constexpr (std::is_integral_v<std::decay_t<decltype(x)>>) ftype = int64_t(x);
        },
        v->value);
    type = "ftype " + std::to_string(ftype);
    for (const FileType& t : file_types())
      if (t.ftype == ftype) type = std::string(t.name);
  }
  char size[32];
  const double billions = double(f.params) / 1e9;
  std::snprintf(size, sizeof size, billions < 10 ? "%.1fB" : "%.0fB", billions);
  f.description = info.architecture + " " + size + " " + type;
  return f;
}

std::string human_bytes(uint64_t bytes) {
  char out[32];
  const double mib = double(bytes) / (1024.0 * 1024.0);
  if (mib < 1024)
    std::snprintf(out, sizeof out, "%.2f MiB", mib);
  else
    std::snprintf(out, sizeof out, "%.2f GiB", mib / 1024.0);
  return out;
}

std::string human_params(uint64_t params) {
  char out[32];
  if (params < 1'000'000'000)
    std::snprintf(out, sizeof out, "%.2f M", double(params) / 1e6);
  else
    std::snprintf(out, sizeof out, "%.2f B", double(params) / 1e9);
  return out;
}

// The kernels the native backend runs here, e.g. "native/avx512vnni".
std::string backend_name() {
  std::string name = kernels_for(Backend::native).name;
  const auto arms = native::quant_dot_arms();
  if (!arms.empty()) name += std::string("/") + arms.front().name;
  return name;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

struct Test {
  bool prompt;  // pp (a prefill) or tg (decode steps)
  int64_t n;
  std::string name(int64_t depth) const {
    return (prompt ? "pp" : "tg") + std::to_string(n) + (depth > 0 ? " @ d" + std::to_string(depth) : "");
  }
};

struct Result {
  std::vector<double> seconds;  // one per repetition
  double mean = 0, sd = 0;      // of n / seconds
};

// Times `test` `reps` times over a session filled to `depth`.
Result run_test(ExecContext& ctx, const llm::Model& model, const Test& test, int64_t depth, int64_t reps,
                const llm::SessionOptions& options, bool warmup, std::mt19937_64& rng) {
  llm::SessionOptions o = options;
  o.context = depth + test.n;
  llm::Session session(ctx, model, o);
  const int64_t n_vocab = model.info().n_vocab;
  auto random_tokens = [&](int64_t count) {
    std::vector<int32_t> ids(static_cast<size_t>(count), 0);
    for (int32_t& id : ids) id = int32_t(rng() % uint64_t(n_vocab));
    return ids;
  };
  const std::vector<int32_t> context = random_tokens(depth);
  if (depth > 0) session.prefill(ctx, context);
  const std::vector<int32_t> tokens = random_tokens(test.n);
  // Back to `depth` positions, untimed: a rewind, or for a recurrent model (whose state cannot
  // forget positions: KvCache::can_truncate) the context again from an empty cache.
  auto rewind = [&] {
    if (session.cache().can_truncate(depth)) {
      session.truncate(depth);
    } else {
      session.truncate(0);
      if (depth > 0) session.prefill(ctx, context);
    }
  };
  auto once = [&](int64_t count) {
    if (test.prompt)
      session.prefill(ctx, std::span(tokens).first(size_t(count)));
    else
      for (int64_t i = 0; i < count; ++i) session.decode(ctx, tokens[size_t(i)]);
  };
  if (warmup) once(test.prompt ? test.n : 1);  // llama-bench's warm-up: the whole prompt, or one step
  Result r;
  for (int64_t rep = 0; rep < reps; ++rep) {
    rewind();
    const auto t0 = Clock::now();
    once(test.n);
    r.seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::vector<double> rates;
  for (double s : r.seconds) rates.push_back(double(test.n) / s);
  for (double v : rates) r.mean += v / double(rates.size());
  if (rates.size() > 1) {
    double sum = 0;
    for (double v : rates) sum += (v - r.mean) * (v - r.mean);
    r.sd = std::sqrt(sum / double(rates.size() - 1));
  }
  return r;
}

// llama-bench's markdown table: one header, then a row per test as it finishes.
struct MarkdownTable {
  static constexpr int kModel = 30, kSize = 10, kParams = 10, kBackend = 18, kThreads = 7, kTest = 15, kRate = 20;
  void header() const {
    std::printf("| %-*s | %*s | %*s | %-*s | %*s | %*s | %*s |\n", kModel, "model", kSize, "size", kParams, "params",
                kBackend, "backend", kThreads, "threads", kTest, "test", kRate, "t/s");
    std::printf("| %s | %s: | %s: | %s | %s: | %s: | %s: |\n", std::string(kModel, '-').c_str(),
                std::string(kSize - 1, '-').c_str(), std::string(kParams - 1, '-').c_str(),
                std::string(kBackend, '-').c_str(), std::string(kThreads - 1, '-').c_str(),
                std::string(kTest - 1, '-').c_str(), std::string(kRate - 1, '-').c_str());
    std::fflush(stdout);
  }
  void row(const ModelFacts& m, const std::string& backend, int threads, const std::string& test,
           const Result& r) const {
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.2f ± %.2f", r.mean, r.sd);
    // "±" is two bytes and one column: pad by one more.
    std::printf("| %-*s | %*s | %*s | %-*s | %*d | %*s | %*s |\n", kModel, m.description.c_str(), kSize,
                human_bytes(m.bytes).c_str(), kParams, human_params(m.params).c_str(), kBackend, backend.c_str(),
                kThreads, threads, kTest, test.c_str(), kRate + 1, rate);
    std::fflush(stdout);
  }
};

nlohmann::json json_row(const ModelFacts& m, const std::string& backend, int threads, const Test& t, int64_t depth,
                        int64_t n_batch, const llm::SessionOptions& o, const Result& r) {
  std::vector<double> ns, ts;
  for (double s : r.seconds) {
    ns.push_back(std::round(s * 1e9));
    ts.push_back(double(t.n) / s);
  }
  return {{"build_commit", build_info::version()},
          {"cpu_info", cpu_model()},
          {"backends", backend},
          {"model_filename", m.path},
          {"model_type", m.description},
          {"model_size", m.bytes},
          {"model_n_params", m.params},
          {"n_batch", n_batch},
          {"n_ubatch", o.batch},
          {"n_threads", threads},
          {"type_k", o.cache_type == llm::KvCacheType::f16   ? "f16"
                     : o.cache_type == llm::KvCacheType::f32 ? "f32"
                                                             : "q8_0"},
          {"n_prompt", t.prompt ? t.n : 0},
          {"n_gen", t.prompt ? 0 : t.n},
          {"n_depth", depth},
          {"test", t.name(depth)},
          {"avg_ns", std::round(1e9 *
                                [&] {
                                  double sum = 0;
                                  for (double s : r.seconds) sum += s;
                                  return sum / double(r.seconds.size());
                                }())},
          {"avg_ts", r.mean},
          {"stddev_ts", r.sd},
          {"samples_ns", ns},
          {"samples_ts", ts}};
}

}  // namespace

cli::Command bench_command() {
  cli::Command c{
      .name = "bench",
      .summary = "Measure prefill and decode speed with llama-bench's flags and table (pp512, tg128, t/s).",
      .options =
          {
              {.spellings = {"-m", "--model"},
               .kind = Kind::StringList,
               .help = "a .gguf model (repeat for several)",
               .required = true,
               .metavar = "FILE"},
              {.spellings = {"-p", "--n-prompt"},
               .kind = Kind::String,
               .help = "prompt lengths to prefill, comma-separated; 0: none",
               .default_value = "512",
               .metavar = "N[,N...]"},
              {.spellings = {"-n", "--n-gen"},
               .kind = Kind::String,
               .help = "tokens to decode, comma-separated; 0: none",
               .default_value = "128",
               .metavar = "N[,N...]"},
              {.spellings = {"-d", "--n-depth"},
               .kind = Kind::String,
               .help = "tokens already in the cache when a test starts, comma-separated",
               .default_value = "0",
               .metavar = "N[,N...]"},
              {.spellings = {"-t", "--threads"},
               .kind = Kind::String,
               .help = "thread counts, comma-separated; 0: TEMPRA_THREADS or the physical cores",
               .default_value = "0",
               .metavar = "N[,N...]"},
              {.spellings = {"-r", "--repetitions"},
               .kind = Kind::Int,
               .help = "timed repetitions of each test",
               .default_value = "5"},
              {.spellings = {"-b", "--batch-size"},
               .kind = Kind::Int,
               .help = "logical batch (llama-bench's); a forward pass takes min(-b, -ub) tokens",
               .default_value = "2048"},
              {.spellings = {"-ub", "--ubatch-size"},
               .kind = Kind::Int,
               .help = "prompt tokens per forward pass",
               .default_value = "512"},
              {.spellings = {"-ctk", "--cache-type-k"},
               .kind = Kind::String,
               .help = "KV cache type: f16, f32 or q8_0",
               .default_value = "f16",
               .metavar = "TYPE"},
              {.spellings = {"-ctv", "--cache-type-v"},
               .kind = Kind::String,
               .help = "must equal -ctk (one cache type for keys and values)",
               .metavar = "TYPE"},
              {.spellings = {"-o", "--output"},
               .kind = Kind::String,
               .help = "md (a table), json (an array at the end) or jsonl (an object per test)",
               .default_value = "md",
               .metavar = "FORMAT"},
              {.spellings = {"--no-warmup"}, .kind = Kind::Flag, .help = "skip the untimed pass before each test"},
              {.spellings = {"-ngl", "--n-gpu-layers"},
               .kind = Kind::String,
               .help = "accepted for llama-bench compatibility and ignored (CPU engine)",
               .metavar = "N"},
              {.spellings = {"-fa", "--flash-attn"},
               .kind = Kind::String,
               .help = "accepted for llama-bench compatibility and ignored",
               .metavar = "0|1"},
          },
  };
  for (cli::Option& o : expert_stream_option_rows()) c.options.push_back(std::move(o));
  return c;
}

int run_bench(const cli::Args& args) {
  // Everything the command line says is checked before the first model loads.
  const std::vector<int64_t> prompts = int_list(args.string("-p"), "-p/--n-prompt", 0);
  const std::vector<int64_t> gens = int_list(args.string("-n"), "-n/--n-gen", 0);
  const std::vector<int64_t> depths = int_list(args.string("-d"), "-d/--n-depth", 0);
  const std::vector<int64_t> threads = int_list(args.string("-t"), "-t/--threads", 0);
  for (int64_t t : threads)
    if (t > 1024) throw cli::UsageError("-t/--threads values must be <= 1024, got " + std::to_string(t));
  const int64_t reps = args.integer("-r");
  if (reps < 1) throw cli::UsageError("-r/--repetitions must be >= 1, got " + std::to_string(reps));
  const int64_t batch = args.integer("-b"), ubatch = args.integer("-ub");
  if (batch < 1 || ubatch < 1) throw cli::UsageError("-b and -ub must be >= 1");
  llm::SessionOptions session{.batch = std::min(batch, ubatch)};
  session.cache_type = cache_type(args.string("-ctk"), "-ctk/--cache-type-k");
  if (args.given("-ctv") && cache_type(args.string("-ctv"), "-ctv/--cache-type-v") != session.cache_type)
    throw cli::UsageError("-ctv must equal -ctk: tempra's cache has one type for keys and values");
  const std::string& format = args.string("-o");
  if (format != "md" && format != "json" && format != "jsonl")
    throw cli::UsageError("-o/--output takes md, json or jsonl, got '" + format + "'");
  std::vector<Test> tests;
  for (int64_t p : prompts)
    if (p > 0) tests.push_back({true, p});
  for (int64_t n : gens)
    if (n > 0) tests.push_back({false, n});
  if (tests.empty()) throw cli::UsageError("nothing to measure: every -p and -n value is 0");
  if (args.given("-ngl")) std::cerr << "note: -ngl/--n-gpu-layers ignored: tempra runs on the CPU\n";
  if (args.given("-fa")) {
    const std::string& v = args.string("-fa");
    if (v != "0" && v != "1" && v != "on" && v != "off" && v != "auto")
      throw cli::UsageError("-fa/--flash-attn takes 0, 1, on, off or auto, got '" + v + "'");
    std::cerr << "note: -fa/--flash-attn ignored: tempra has one attention path\n";
  }

  const std::string backend = backend_name();
  MarkdownTable table;
  nlohmann::json rows = nlohmann::json::array();
  if (format == "md") table.header();
  std::mt19937_64 rng(1234);
  for (const std::string& path : args.strings("-m")) {
    const llm::LoadOptions options = load_options(args, path);
    const io::GgufModel gguf = io::GgufModel::open(path, options.tensor_mapping());
    const std::unique_ptr<llm::Model> model = llm::load_model(gguf, options);
    report_expert_cache(*model);
    const ModelFacts facts = describe(path, gguf, model->info());
    for (int64_t t : threads) {
      ExecContext ctx({.threads = int(t)});
      const int used = ctx.threads().size();
      for (int64_t depth : depths)
        for (const Test& test : tests) {
          const Result r = run_test(ctx, *model, test, depth, reps, session, !args.flag("--no-warmup"), rng);
          if (format == "md") table.row(facts, backend, used, test.name(depth), r);
          nlohmann::json row = json_row(facts, backend, used, test, depth, batch, session, r);
          if (format == "jsonl") {
            std::printf("%s\n", row.dump().c_str());
            std::fflush(stdout);
          }
          rows.push_back(std::move(row));
        }
    }
  }
  if (format == "json") std::printf("%s\n", rows.dump(2).c_str());
  std::fprintf(stderr, "\nbuild: tempra %s (%s), %s; CPU: %s\n", build_info::version().c_str(),
               build_info::build_flags().c_str(), backend.c_str(), cpu_model().c_str());
  return 0;
}

}  // namespace tempra::app
