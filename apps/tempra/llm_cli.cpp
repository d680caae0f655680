// apps/tempra/llm_cli.cpp: see llm_cli.h.
#include "llm_cli.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "tempra/core/error.h"
#include "tempra/core/timing.h"
#include "tempra/llm/decode/grammar.h"
#include "tempra/llm/decode/json_schema.h"
#include "tempra/llm/model/expert_cache.h"
#include "tempra/train/adapter.h"

namespace tempra::app {
namespace {

using cli::Kind;

}  // namespace

std::string nonempty_string(const io::GgufMetadata& m, std::string_view key) {
  const io::GgufValue* v = m.find(key);
  return v != nullptr && v->is<std::string>() ? std::get<std::string>(v->value) : std::string();
}

cli::Option model_option() {
  return {.spellings = {"-m", "--model"},
          .kind = Kind::String,
          .help = "the .gguf model",
          .required = true,
          .metavar = "FILE"};
}

std::vector<cli::Option> session_option_rows() {
  std::vector<cli::Option> rows = {
      {.spellings = {"-c", "--ctx-size"},
       .kind = Kind::Int,
       .help = "context size in tokens; 0: the model's (capped at its context length)",
       .default_value = "4096"},
      {.spellings = {"-t", "--threads"},
       .kind = Kind::Int,
       .help = "threads; 0: TEMPRA_THREADS or the physical cores",
       .default_value = "0"},
      {.spellings = {"-b", "--batch-size"},
       .kind = Kind::Int,
       .help = "prompt tokens per forward pass",
       .default_value = "512"},
      {.spellings = {"--cache-type"},
       .kind = Kind::String,
       .help = "KV cache type: f16, f32 or q8_0",
       .default_value = "f16",
       .metavar = "TYPE"},
      {.spellings = {"-ngl", "--n-gpu-layers", "--gpu-layers"},
       .kind = Kind::String,
       .help = "accepted for llama.cpp compatibility and ignored (CPU engine)",
       .metavar = "N"},
      {.spellings = {"-fa", "--flash-attn"},
       .kind = Kind::String,
       .help = "on|off|auto: accepted for llama.cpp compatibility and ignored",
       .metavar = "MODE"},
  };
  rows.push_back({.spellings = {"--lora"},
                  .kind = Kind::String,
                  .help = "a LoRA adapter GGUF (llama.cpp's format, `tempra finetune`'s output) folded into the "
                          "model's weights at load (each adapted weight becomes f32)",
                  .metavar = "FILE"});
  for (cli::Option& o : expert_stream_option_rows()) rows.push_back(std::move(o));
  return rows;
}

std::vector<cli::Option> expert_stream_option_rows() {
  return {
      {.spellings = {"--moe-stream"},
       .kind = Kind::Flag,
       .help = "mixture of experts: read routed experts from the file into a bounded cache (for models larger "
               "than memory)"},
      {.spellings = {"--moe-cache-mb"},
       .kind = Kind::Int,
       .help = "--moe-stream's expert cache in MiB; 0: half of the available memory",
       .default_value = "0",
       .metavar = "N"},
      {.spellings = {"--moe-usage"},
       .kind = Kind::String,
       .help = "--moe-stream's expert usage histogram, kept across runs to pin the most used experts; "
               "none: no file (default: under ~/.cache/tempra)",
       .metavar = "FILE"},
      {.spellings = {"--no-moe-prefetch"}, .kind = Kind::Flag, .help = "--moe-stream: do not read experts ahead"},
  };
}

std::vector<cli::Option> sampling_option_rows() {
  return {
      {.spellings = {"-n", "--n-predict", "--predict"},
       .kind = Kind::Int,
       .help = "tokens to generate; -1: until end of generation or a full context",
       .default_value = "-1"},
      {.spellings = {"-s", "--seed"},
       .kind = Kind::Int,
       .help = "sampling seed; -1: a random one (printed)",
       .default_value = "-1"},
      {.spellings = {"--temp", "--temperature"},
       .kind = Kind::Float,
       .help = "temperature; 0: greedy (ties to the lowest id)",
       .default_value = "0.8"},
      {.spellings = {"--top-k"}, .kind = Kind::Int, .help = "top-k; 0: off", .default_value = "40"},
      {.spellings = {"--top-p"}, .kind = Kind::Float, .help = "top-p; 1: off", .default_value = "0.95"},
      {.spellings = {"--min-p"}, .kind = Kind::Float, .help = "min-p; 0: off", .default_value = "0.05"},
      {.spellings = {"--repeat-penalty"},
       .kind = Kind::Float,
       .help = "repetition penalty; 1: off",
       .default_value = "1.0"},
      {.spellings = {"--repeat-last-n"},
       .kind = Kind::Int,
       .help = "tokens the penalties look back over; 0: none, -1: the whole context",
       .default_value = "64"},
      {.spellings = {"--presence-penalty"},
       .kind = Kind::Float,
       .help = "presence penalty; 0: off",
       .default_value = "0.0"},
      {.spellings = {"--frequency-penalty"},
       .kind = Kind::Float,
       .help = "frequency penalty; 0: off",
       .default_value = "0.0"},
      {.spellings = {"--stop"},
       .kind = Kind::StringList,
       .help = "stop at this text (never printed)",
       .metavar = "TEXT"},
      {.spellings = {"--grammar"},
       .kind = Kind::String,
       .help = "constrain the output to this GBNF grammar (llama.cpp's format; rule `root`)",
       .metavar = "TEXT"},
      {.spellings = {"--grammar-file"}, .kind = Kind::String, .help = "the GBNF grammar in file F", .metavar = "F"},
      {.spellings = {"-j", "--json-schema"},
       .kind = Kind::String,
       .help = "constrain the output to JSON this JSON Schema accepts ('{}': any JSON)",
       .metavar = "SCHEMA"},
      {.spellings = {"--json-schema-file"}, .kind = Kind::String, .help = "the JSON Schema in file F", .metavar = "F"},
      {.spellings = {"--spec"},
       .kind = Kind::Flag,
       .help = "speculative decoding from the context (the default): drafts verified when the gate finds it pays"},
      {.spellings = {"--no-spec"}, .kind = Kind::Flag, .help = "no speculative decoding"},
      {.spellings = {"--draft-max"},
       .kind = Kind::Int,
       .help = "tokens per speculative draft, 1 ... 31",
       .default_value = "16",
       .metavar = "K"},
      {.spellings = {"--regex"},
       .kind = Kind::String,
       .help = "constrain the output to text this regular expression matches whole",
       .metavar = "RE"},
  };
}

namespace {

// The grammar the flags ask for (at most one of them), or null.
std::shared_ptr<const llm::Grammar> grammar_option(const cli::Args& args) {
  std::vector<std::string> given;
  for (const char* flag : {"--grammar", "--grammar-file", "--json-schema", "--json-schema-file", "--regex"})
    if (args.given(flag)) given.push_back(flag);
  if (given.empty()) return nullptr;
  if (given.size() > 1) throw cli::UsageError(given[0] + " and " + given[1] + " cannot be used together");
  const std::string& flag = given[0];
  const std::string& value = args.string(flag);
  std::string gbnf;
  if (flag == "--grammar") gbnf = value;
  if (flag == "--grammar-file") gbnf = read_file(value);
  if (flag == "--json-schema") gbnf = llm::json_schema_to_gbnf(value);
  if (flag == "--json-schema-file") gbnf = llm::json_schema_to_gbnf(read_file(value));
  if (flag == "--regex") gbnf = llm::regex_to_gbnf(value);
  return std::make_shared<const llm::Grammar>(llm::parse_grammar(gbnf));
}

}  // namespace

LoadedModel load_model(const cli::Args& args) {
  const std::string& path = args.string("--model");
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  if (tty) std::cerr << "loading " << path << " ..." << std::flush;
  const auto start = std::chrono::steady_clock::now();
  const llm::LoadOptions options = load_options(args, path);
  io::GgufModel gguf = io::GgufModel::open(path, options.tensor_mapping());
  if (args.given("--lora")) {
    ExecContext ctx;
    const train::LoraAdapter adapter = train::read_lora_gguf(ctx, args.string("--lora"), gguf);
    train::merge_lora(ctx, gguf, adapter);
  }
  std::unique_ptr<llm::Model> model = llm::load_model(gguf, options);
  llm::Tokenizer tokenizer = llm::Tokenizer::from_gguf(gguf.metadata());
  const llm::ModelInfo& c = model->info();
  check(tokenizer.size() <= c.n_vocab, "model", path, ": the tokenizer has ", tokenizer.size(),
        " tokens but the embedding has ", c.n_vocab, " rows");
  std::string chat_template = nonempty_string(gguf.metadata(), "tokenizer.chat_template");
  const double ms = ms_since(start);
  if (tty) std::cerr << "\r\033[K";
  std::fprintf(stderr,
               "loaded %s: %s, %d layers, hidden %lld, %lld/%lld heads, vocab %lld, context %lld (%.0f ms)\n",
               path.c_str(), c.architecture.c_str(), c.cache.n_layer + c.cache.n_recurrent,
               static_cast<long long>(c.n_embd),
               static_cast<long long>(c.n_head), static_cast<long long>(c.cache.n_head_kv), static_cast<long long>(c.n_vocab),
               static_cast<long long>(c.context_length), ms);
  report_expert_cache(*model);
  return LoadedModel{std::move(gguf), std::move(model), std::move(tokenizer), std::move(chat_template)};
}

namespace {

std::filesystem::path default_usage_file(const std::string& model_path) {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::filesystem::path dir;
  if (cache != nullptr && *cache != '\0')
    dir = cache;
  else if (home != nullptr && *home != '\0')
    dir = std::filesystem::path(home) / ".cache";
  else
    return {};
  std::error_code ec;
  const auto size = std::filesystem::file_size(model_path, ec);
  return dir / "tempra" / "expert-usage" /
         (std::filesystem::path(model_path).filename().string() + "-" + std::to_string(ec ? 0 : size) + ".json");
}

}  // namespace

uint64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / double(1 << 20));
  return text;
}

llm::LoadOptions load_options(const cli::Args& args, const std::string& path) {
  llm::LoadOptions o;
  for (const char* flag : {"--moe-cache-mb", "--moe-usage", "--no-moe-prefetch"})
    if (args.given(flag) && !args.flag("--moe-stream"))
      throw cli::UsageError(std::string(flag) + " needs --moe-stream");
  if (!args.flag("--moe-stream")) return o;
  const int64_t mb = args.integer("--moe-cache-mb");
  if (mb < 0 || mb > (int64_t{1} << 30)) throw cli::UsageError("--moe-cache-mb must be in [0, 2^30], got " + std::to_string(mb));
  llm::ExpertStreaming s;
  s.cache_bytes = mb > 0 ? uint64_t(mb) << 20 : available_memory() / 2;
  if (s.cache_bytes == 0) throw cli::UsageError("--moe-cache-mb: the available memory cannot be read; give a size");
  const std::string usage = args.given("--moe-usage") ? args.string("--moe-usage") : "";
  if (args.given("--moe-usage") && usage.empty()) throw cli::UsageError("--moe-usage needs a file name (or none)");
  s.usage_file = usage == "none" ? std::filesystem::path() : usage.empty() ? default_usage_file(path) : std::filesystem::path(usage);
  s.prefetch = !args.flag("--no-moe-prefetch");
  o.moe_stream = s;
  return o;
}

void report_expert_cache(const llm::Model& model) {
  const llm::ExpertCache* cache = model.expert_cache();
  if (cache == nullptr) return;
  const llm::ExpertCache::Stats s = cache->stats();
  const uint64_t experts = cache->total_bytes() / cache->expert_bytes();
  std::fprintf(stderr, "moe-stream: experts %s (%llu of %s); cache %s = %lld experts (%.0f%%), %lld pinned\n",
               mib(cache->total_bytes()).c_str(), static_cast<unsigned long long>(experts),
               mib(cache->expert_bytes()).c_str(), mib(uint64_t(s.slots) * cache->expert_bytes()).c_str(),
               static_cast<long long>(s.slots), 100.0 * double(s.slots) / double(experts),
               static_cast<long long>(s.pinned));
  if (!cache->usage_note().empty()) std::fprintf(stderr, "note: %s\n", cache->usage_note().c_str());
}

llm::Tokenizer load_tokenizer(const std::string& path) {
  const io::GgufModel gguf = io::GgufModel::open(path);
  return llm::Tokenizer::from_gguf(gguf.metadata());
}

llm::ChatPrompt render_chat_prompt(const LoadedModel& model, const std::vector<llm::ChatMessage>& messages,
                                   bool no_think) {
  llm::ChatTemplateOptions options;
  if (no_think) options.enable_thinking = false;
  return llm::chat_prompt(model.chat_template, model.tokenizer, messages, options);
}

void note_ignored_gpu_options(const cli::Args& args) {
  if (args.given("-ngl")) std::cerr << "note: -ngl/--n-gpu-layers ignored: tempra runs on the CPU\n";
  if (args.given("-fa")) {
    const std::string& v = args.string("-fa");
    if (v != "on" && v != "off" && v != "auto")
      throw cli::UsageError("-fa/--flash-attn takes on, off or auto, got '" + v + "'");
    std::cerr << "note: -fa/--flash-attn ignored: tempra has one attention path\n";
  }
}

ExecOptions exec_options(const cli::Args& args) {
  const int64_t threads = args.integer("--threads");
  if (threads < 0 || threads > 1024)
    throw cli::UsageError("-t/--threads must be in [0, 1024], got " + std::to_string(threads));
  return ExecOptions{.threads = static_cast<int>(threads)};
}

llm::SessionOptions session_options(const cli::Args& args, const llm::ModelInfo& config) {
  llm::SessionOptions o;
  const int64_t ctx = args.integer("--ctx-size");
  if (ctx < 0) throw cli::UsageError("-c/--ctx-size must be >= 0, got " + std::to_string(ctx));
  o.context = ctx == 0 ? config.context_length : std::min(ctx, config.context_length);
  if (args.given("--ctx-size") && ctx > config.context_length)
    std::cerr << "note: -c " << ctx << " exceeds the model's context length; using " << config.context_length << "\n";
  const int64_t batch = args.integer("--batch-size");
  if (batch < 1) throw cli::UsageError("-b/--batch-size must be >= 1, got " + std::to_string(batch));
  o.batch = batch;
  const std::string& type = args.string("--cache-type");
  if (type == "f16")
    o.cache_type = llm::KvCacheType::f16;
  else if (type == "f32")
    o.cache_type = llm::KvCacheType::f32;
  else if (type == "q8_0")
    o.cache_type = llm::KvCacheType::q8_0;
  else
    throw cli::UsageError("--cache-type takes f16, f32 or q8_0, got '" + type + "'");
  return o;
}

llm::GenerateOptions generate_options(const cli::Args& args) {
  llm::GenerateOptions o;
  const int64_t n = args.integer("--n-predict");
  if (n < -1) throw cli::UsageError("-n/--n-predict must be >= -1, got " + std::to_string(n));
  o.max_new_tokens = n;
  o.stop = args.strings("--stop");
  o.batch = args.integer("--batch-size");
  o.grammar = grammar_option(args);
  if (args.given("--spec") && args.given("--no-spec")) throw cli::UsageError("--spec and --no-spec contradict");
  o.speculative.enabled = !args.given("--no-spec");
  const int64_t draft_max = args.integer("--draft-max");
  if (draft_max < 1 || draft_max > 31) throw cli::UsageError("--draft-max must be 1 ... 31, got " + std::to_string(draft_max));
  o.speculative.draft_max = int(draft_max);
  llm::SamplerParams& s = o.sampling;
  s.temperature = static_cast<float>(args.number("--temp"));
  const int64_t top_k = args.integer("--top-k");
  if (top_k < 0 || top_k > INT32_MAX) throw cli::UsageError("--top-k must be >= 0, got " + std::to_string(top_k));
  s.top_k = static_cast<int32_t>(top_k);
  s.top_p = static_cast<float>(args.number("--top-p"));
  if (!(s.top_p >= 0 && s.top_p <= 1)) throw cli::UsageError("--top-p must be in [0, 1]");
  s.min_p = static_cast<float>(args.number("--min-p"));
  if (!(s.min_p >= 0 && s.min_p <= 1)) throw cli::UsageError("--min-p must be in [0, 1]");
  s.repeat_penalty = static_cast<float>(args.number("--repeat-penalty"));
  if (!(s.repeat_penalty > 0)) throw cli::UsageError("--repeat-penalty must be > 0");
  const int64_t last_n = args.integer("--repeat-last-n");
  if (last_n < -1 || last_n > INT32_MAX)
    throw cli::UsageError("--repeat-last-n must be >= -1, got " + std::to_string(last_n));
  s.repeat_last_n = static_cast<int32_t>(last_n);
  s.presence_penalty = static_cast<float>(args.number("--presence-penalty"));
  s.frequency_penalty = static_cast<float>(args.number("--frequency-penalty"));
  const int64_t seed = args.integer("--seed");
  if (seed < -1) throw cli::UsageError("-s/--seed must be >= -1, got " + std::to_string(seed));
  if (seed == -1) {
    s.seed = std::random_device{}();
    std::cerr << "seed: " << s.seed << "\n";
  } else {
    s.seed = static_cast<uint64_t>(seed);
  }
  return o;
}

std::vector<int32_t> parse_ids(std::string_view text, std::string_view option) {
  std::vector<int32_t> ids;
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() &&
           (text[i] == ' ' || text[i] == ',' || text[i] == '\t' || text[i] == '\n' || text[i] == '[' || text[i] == ']'))
      ++i;
  };
  for (skip(); i < text.size(); skip()) {
    int32_t id = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), id);
    const size_t used = static_cast<size_t>(end - (text.data() + i));
    if (ec != std::errc() || id < 0 ||
        (i + used < text.size() && std::string_view(" ,\t\n]").find(text[i + used]) == std::string_view::npos)) {
      size_t stop = i;
      while (stop < text.size() && std::string_view(" ,\t\n[]").find(text[stop]) == std::string_view::npos) ++stop;
      throw cli::UsageError(std::string(option) + ": '" + std::string(text.substr(i, stop - i)) +
                            "' is not a token id (expected comma-separated non-negative integers)");
    }
    ids.push_back(id);
    i += used;
  }
  if (ids.empty()) throw cli::UsageError(std::string(option) + ": no token ids given");
  return ids;
}

std::string format_ids(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out.append(", ");
    out.append(std::to_string(ids[i]));
  }
  return out + "]";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "read", path, ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  check(!in.bad(), "read", path, ": read error");
  return text.str();
}

void print_timings(std::ostream& out, const llm::GenerationTimings& t) {
  auto line = [&](const char* label, double ms, int64_t n) {
    char buf[200];
    const double per_token = n > 0 ? ms / double(n) : 0.0;
    const double per_second = ms > 0 ? 1e3 * double(n) / ms : 0.0;
    std::snprintf(buf, sizeof buf, "%s = %10.2f ms / %5lld tokens (%8.2f ms per token, %8.2f tokens per second)\n",
                  label, ms, static_cast<long long>(n), per_token, per_second);
    out << buf;
  };
  line("prompt eval time", t.prompt_ms, t.prompt_tokens);
  line("       eval time", t.eval_ms, t.eval_tokens);
  char buf[200];
  if (t.verify_passes > 0) {  // llama-server's draft_n / draft_n_accepted, and the rate
    std::snprintf(buf, sizeof buf, "     speculative = %5lld drafted, %5lld accepted (%.1f%%) in %lld verify passes\n",
                  static_cast<long long>(t.draft_tokens), static_cast<long long>(t.draft_accepted),
                  t.draft_tokens > 0 ? 100.0 * double(t.draft_accepted) / double(t.draft_tokens) : 0.0,
                  static_cast<long long>(t.verify_passes));
    out << buf;
  }
  std::snprintf(buf, sizeof buf, "      total time = %10.2f ms / %5lld tokens\n", t.total_ms,
                static_cast<long long>(t.prompt_tokens + t.eval_tokens));
  out << buf << std::flush;
}

PrefillProgress::PrefillProgress(int64_t batch) : tty_(::isatty(STDERR_FILENO) == 1), batch_(batch) {}

void PrefillProgress::operator()(int64_t done, int64_t total) {
  if (total <= batch_) return;
  if (tty_) {
    constexpr int64_t kWidth = 24;
    const int64_t filled = done * kWidth / total;
    std::cerr << "\r\033[K[" << std::string(size_t(filled), '#') << std::string(size_t(kWidth - filled), '.')
              << "] prompt " << done << '/' << total << (done == total ? "\r\033[K" : "") << std::flush;
  } else {
    std::cerr << "prompt " << done << '/' << total << "\n";
  }
}

}  // namespace tempra::app
