// bench/qwen3_bench.cpp: tempra's engine against llama.cpp (the oracle's libllama) on the same
// GGUF of any supported architecture (load_model; named for the first one), for docs/BENCHMARK.md. A benchmark, not a test: it prints figures and checks only
// that both engines ran.
//
//   qwen3_bench speed MODEL.gguf [--threads 2] [--prompt 512] [--gen 128] [--reps 3] [--ubatch 512]
//     One paired run: each repetition times tempra then llama.cpp on the same token ids, a
//     prefill of --prompt tokens (forward passes of --ubatch tokens, llama-bench's default
//     n_ubatch; logits of the last position only, as llama.cpp's llama_batch_get_one gives) and
//     --gen decode steps of one token each after it (so at a depth of --prompt; a fixed id
//     sequence, no sampling, so both do identical work). Prints the median tok/s of each and
//     tempra's ratio to llama.cpp. Both use an f16 KV cache of prompt + gen positions; llama.cpp
//     runs with its default context parameters otherwise (flash attention "auto", which on the
//     CPU means on; n_threads = n_threads_batch = --threads).
//   qwen3_bench rss tempra|llama MODEL.gguf [--threads 2] [--prompt 512] [--gen 128] [--moe-cache-mb N]
//     Loads, prefills and decodes with one engine only, then prints the process's peak resident
//     set (VmHWM from /proc/self/status) and the prefill and decode tok/s of that one run: run
//     once per engine, each in its own process (bench/run_moe_stream.sh runs them under a memory
//     limit), and each engine's load time. --moe-cache-mb: tempra streams the routed experts
//     through a cache of N MiB (--moe-usage FILE: with that usage histogram).
//   qwen3_bench tokenize MODEL.gguf TEXT_FILE [--reps 5]
//     tempra's Tokenizer::encode against llama_tokenize on the file's bytes (the model's own
//     vocab for both, special tokens parsed, no BOS), median of --reps; checks the ids agree.
//
// Parity of what is timed: the token ids are the same; the weights are the same file, mapped
// by both. What differs is each engine's own arithmetic, which tests/llm hold to each other.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "llama.h"
#include "tempra/core/error.h"
#include "tempra/io/gguf_reader.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/model/expert_cache.h"
#include "tempra/llm/runtime/session.h"
#include "tempra/llm/tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Options {
  int threads = 2, prompt = 512, gen = 128, reps = 3, ubatch = 512;
  int moe_cache_mb = 0;  // > 0: tempra streams a mixture of experts' routed experts (--moe-stream)
  std::string moe_usage;  // the expert usage file of a streaming run
};

Options parse(int argc, char** argv, int first) {
  Options o;
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "qwen3_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoi(argv[++i]);
    };
    if (a == "--threads") o.threads = value();
    else if (a == "--prompt") o.prompt = value();
    else if (a == "--gen") o.gen = value();
    else if (a == "--reps") o.reps = value();
    else if (a == "--ubatch") o.ubatch = value();
    else if (a == "--moe-cache-mb") o.moe_cache_mb = value();
    else if (a == "--moe-usage" && i + 1 < argc) o.moe_usage = argv[++i];
    else {
      std::fprintf(stderr, "qwen3_bench: unknown flag %s\n", a.c_str());
      std::exit(2);
    }
  }
  if (o.threads < 1 || o.prompt < 2 || o.gen < 1 || o.reps < 1 || o.ubatch < 1) {
    std::fprintf(stderr, "qwen3_bench: --threads, --gen, --reps, --ubatch must be >= 1 and --prompt >= 2\n");
    std::exit(2);
  }
  return o;
}

// Seeded ids in [0, n_vocab): the prompt, then the decode steps' inputs.
std::vector<int32_t> token_ids(int count, int64_t n_vocab, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(count), 0);
  uint64_t s = seed;
  for (int32_t& id : ids) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    id = int32_t((s >> 33) % uint64_t(n_vocab));
  }
  return ids;
}

struct Timing {
  double prefill_s = 0, decode_s = 0;
  float checksum = 0;
};

// ---- tempra ----

struct TempraEngine {
  tempra::ExecContext ctx;
  std::unique_ptr<tempra::llm::Model> loaded;  // any supported architecture (load_model)
  const tempra::llm::Model& model;
  int64_t ubatch;
  uint64_t misses_after_prefill = 0;  // streaming: the expert cache's misses when the decode began
  TempraEngine(const char* path, int threads, int64_t ubatch, int moe_cache_mb = 0, const std::string& moe_usage = "")
      : ctx({.threads = threads}), loaded(tempra::llm::load_model(path, load_options(moe_cache_mb, moe_usage))),
        model(*loaded), ubatch(ubatch) {}

  static tempra::llm::LoadOptions load_options(int moe_cache_mb, const std::string& moe_usage) {
    tempra::llm::LoadOptions o;
    if (moe_cache_mb > 0)
      o.moe_stream = tempra::llm::ExpertStreaming{
          .cache_bytes = uint64_t(moe_cache_mb) << 20, .usage_file = moe_usage, .prefetch = true};
    return o;
  }

  Timing run(const std::vector<int32_t>& prompt, const std::vector<int32_t>& steps) {
    using namespace tempra::llm;
    Session session(ctx, model,
                         {.context = int64_t(prompt.size() + steps.size()), .cache_type = KvCacheType::f16,
                          .batch = std::min<int64_t>(ubatch, int64_t(prompt.size()))});
    Timing t;
    auto t0 = Clock::now();
    t.checksum += session.prefill(ctx, prompt)[0];
    t.prefill_s = seconds_since(t0);
    if (const tempra::llm::ExpertCache* cache = model.expert_cache()) misses_after_prefill = cache->stats().misses;
    t0 = Clock::now();
    for (int32_t id : steps) t.checksum += session.decode(ctx, id)[0];
    t.decode_s = seconds_since(t0);
    return t;
  }
};

// ---- llama.cpp ----

void init_llama() {
  llama_log_set([](ggml_log_level level, const char* text, void*) {
    if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
  }, nullptr);
  // LLAMA_CPU_VARIANT=haswell (say) loads that one CPU variant of the oracle's libraries instead
  // of the best one for this CPU: llama.cpp's AVX2 arm on an AVX-512 machine, beside tempra's avx2
  // build.
  if (const char* variant = std::getenv("LLAMA_CPU_VARIANT"); variant != nullptr && *variant != '\0') {
    const std::string path = std::string(TEMPRA_ORACLE_BINS) + "/libggml-cpu-" + variant + ".so";
    if (ggml_backend_load(path.c_str()) == nullptr) {
      std::fprintf(stderr, "qwen3_bench: cannot load %s (LLAMA_CPU_VARIANT)\n", path.c_str());
      std::exit(2);
    }
  } else {
    ggml_backend_load_all_from_path(TEMPRA_ORACLE_BINS);
  }
  llama_backend_init();
}

struct LlamaEngine {
  llama_model* model = nullptr;
  llama_context* ctx = nullptr;
  int64_t n_vocab = 0;
  LlamaEngine(const char* path, int threads, int n_ctx, int n_batch, int n_ubatch) {
    llama_model_params mp = llama_model_default_params();
    model = llama_model_load_from_file(path, mp);
    if (!model) throw tempra::Error(std::string("llama.cpp could not load ") + path);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = uint32_t(n_ctx);
    cp.n_batch = uint32_t(n_batch);
    cp.n_ubatch = uint32_t(std::min(n_ubatch, n_batch));
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.no_perf = true;
    ctx = llama_init_from_model(model, cp);
    if (!ctx) throw tempra::Error("llama.cpp could not create a context");
    n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  }
  ~LlamaEngine() {
    llama_free(ctx);
    llama_model_free(model);
  }

  Timing run(std::vector<int32_t> prompt, const std::vector<int32_t>& steps) {
    llama_memory_clear(llama_get_memory(ctx), true);
    Timing t;
    auto t0 = Clock::now();
    if (llama_decode(ctx, llama_batch_get_one(prompt.data(), int32_t(prompt.size()))) != 0)
      throw tempra::Error("llama_decode failed on the prompt");
    t.checksum += llama_get_logits_ith(ctx, -1)[0];
    t.prefill_s = seconds_since(t0);
    t0 = Clock::now();
    for (int32_t id : steps) {
      if (llama_decode(ctx, llama_batch_get_one(&id, 1)) != 0) throw tempra::Error("llama_decode failed on a step");
      t.checksum += llama_get_logits_ith(ctx, -1)[0];
    }
    t.decode_s = seconds_since(t0);
    return t;
  }
};

int speed(const char* path, const Options& o) {
  TempraEngine tempra_engine(path, o.threads, o.ubatch);
  LlamaEngine llama_engine(path, o.threads, o.prompt + o.gen, o.prompt, o.ubatch);
  const int64_t n_vocab = tempra_engine.model.info().n_vocab;
  const std::vector<int32_t> prompt = token_ids(o.prompt, n_vocab, 1), steps = token_ids(o.gen, n_vocab, 2);
  std::vector<double> tp, td, lp, ld;
  for (int r = 0; r < o.reps; ++r) {
    const Timing a = tempra_engine.run(prompt, steps);
    const Timing b = llama_engine.run(prompt, steps);
    tp.push_back(o.prompt / a.prefill_s);
    td.push_back(o.gen / a.decode_s);
    lp.push_back(o.prompt / b.prefill_s);
    ld.push_back(o.gen / b.decode_s);
    std::fprintf(stderr, "rep %d: tempra pp %.1f tg %.2f | llama.cpp pp %.1f tg %.2f tok/s (checksums %.3g %.3g)\n", r,
                 tp.back(), td.back(), lp.back(), ld.back(), double(a.checksum), double(b.checksum));
  }
  std::printf("prefill %d tok: tempra %.1f tok/s, llama.cpp %.1f tok/s, ratio %.2f\n", o.prompt, median(tp),
              median(lp), median(tp) / median(lp));
  std::printf("decode %d tok: tempra %.2f tok/s, llama.cpp %.2f tok/s, ratio %.2f\n", o.gen, median(td), median(ld),
              median(td) / median(ld));
  return 0;
}

long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

int rss(const std::string& engine, const char* path, const Options& o) {
  if (engine == "tempra") {
    const auto t0 = Clock::now();
    TempraEngine e(path, o.threads, o.ubatch, o.moe_cache_mb, o.moe_usage);
    const double load_s = seconds_since(t0);
    const int64_t n_vocab = e.model.info().n_vocab;
    const Timing t = e.run(token_ids(o.prompt, n_vocab, 1), token_ids(o.gen, n_vocab, 2));
    std::printf("tempra peak RSS %.1f MiB (prefill %d + decode %d, checksum %.3g) load %.2f s pp %.2f tg %.2f tok/s\n",
                peak_rss_kib() / 1024.0, o.prompt, o.gen, double(t.checksum), load_s, o.prompt / t.prefill_s,
                o.gen / t.decode_s);
    if (const tempra::llm::ExpertCache* cache = e.model.expert_cache()) {
      const tempra::llm::ExpertCache::Stats s = cache->stats();
      std::printf("expert cache: %lld slots (%lld pinned), %llu hits, %llu misses (%llu while decoding), %.0f MiB read\n",
                  (long long)s.slots, (long long)s.pinned, (unsigned long long)s.hits, (unsigned long long)s.misses,
                  (unsigned long long)(s.misses - e.misses_after_prefill), double(s.bytes_read) / (1 << 20));
    }
  } else if (engine == "llama") {
    const auto t0 = Clock::now();
    LlamaEngine e(path, o.threads, o.prompt + o.gen, o.prompt, o.ubatch);
    const double load_s = seconds_since(t0);
    const Timing t = e.run(token_ids(o.prompt, e.n_vocab, 1), token_ids(o.gen, e.n_vocab, 2));
    std::printf("llama.cpp peak RSS %.1f MiB (prefill %d + decode %d, checksum %.3g) load %.2f s pp %.2f tg %.2f tok/s\n",
                peak_rss_kib() / 1024.0, o.prompt, o.gen, double(t.checksum), load_s, o.prompt / t.prefill_s,
                o.gen / t.decode_s);
  } else {
    std::fprintf(stderr, "qwen3_bench rss: engine must be tempra or llama, got %s\n", engine.c_str());
    return 2;
  }
  return 0;
}

int tokenize(const char* path, const char* text_path, const Options& o) {
  std::ifstream in(text_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "qwen3_bench tokenize: cannot read %s\n", text_path);
    return 2;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const tempra::llm::Tokenizer tokenizer = tempra::llm::Tokenizer::from_gguf(tempra::io::GgufFile::open(path));
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(path, mp);
  if (!model) throw tempra::Error(std::string("llama.cpp could not load the vocab of ") + path);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::vector<double> ours, theirs;
  std::vector<int32_t> ids_ours, ids_theirs(text.size() + 16);
  int32_t n_theirs = 0;
  for (int r = 0; r < o.reps; ++r) {
    auto t0 = Clock::now();
    ids_ours = tokenizer.encode(text, {.parse_special = true, .add_special = false});
    ours.push_back(seconds_since(t0));
    t0 = Clock::now();
    n_theirs = llama_tokenize(vocab, text.data(), int32_t(text.size()), ids_theirs.data(), int32_t(ids_theirs.size()),
                              false, true);
    theirs.push_back(seconds_since(t0));
  }
  ids_theirs.resize(size_t(std::max(n_theirs, 0)));
  const bool same = ids_ours == ids_theirs;
  const double mb = double(text.size()) / 1e6;
  std::printf("tokenize %.2f MB (%zu tokens): tempra %.1f ms (%.1f MB/s), llama.cpp %.1f ms (%.1f MB/s), ratio %.2f, "
              "ids %s\n",
              mb, ids_ours.size(), 1e3 * median(ours), mb / median(ours), 1e3 * median(theirs), mb / median(theirs),
              median(theirs) / median(ours), same ? "identical" : "DIFFER");
  llama_model_free(model);
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "speed" && argc >= 3) {
      init_llama();
      return speed(argv[2], parse(argc, argv, 3));
    }
    if (mode == "rss" && argc >= 4) {
      if (std::string(argv[2]) == "llama") init_llama();
      return rss(argv[2], argv[3], parse(argc, argv, 4));
    }
    if (mode == "tokenize" && argc >= 4) {
      init_llama();
      Options o = parse(argc, argv, 4);
      if (o.reps == 3) o.reps = 5;
      return tokenize(argv[2], argv[3], o);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qwen3_bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: qwen3_bench speed MODEL.gguf [--threads N] [--prompt N] [--gen N] [--reps N] [--ubatch N]\n"
               "       qwen3_bench rss tempra|llama MODEL.gguf [--threads N] [--prompt N] [--gen N] [--moe-cache-mb N]\n"
               "       qwen3_bench tokenize MODEL.gguf TEXT_FILE [--reps N]\n");
  return 2;
}
