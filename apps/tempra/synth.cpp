// apps/tempra/synth.cpp: see synth.h.
#include "synth.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <string>

#include "quantize.h"
#include "tempra/core/error.h"
#include "tempra/io/gguf_value.h"
#include "tempra/llm/model/architectures.h"
#include "tempra/llm/model/synth.h"
#include "tempra/llm/tokenizer/tokenizer.h"

namespace tempra::app {
namespace {

namespace fs = std::filesystem;

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// An integer option that must be positive and at most `max` (GGUF stores these as u32).
int64_t positive(const cli::Args& args, const char* option, int64_t max = 0xffffffff) {
  const int64_t v = args.integer(option);
  if (v <= 0 || v > max)
    throw cli::UsageError(std::string(option) + " must be between 1 and " + std::to_string(max) + ", got " +
                          std::to_string(v));
  return v;
}

const char* dtype_label(DType t) { return t == DType::f32 ? "F32" : t == DType::bf16 ? "BF16" : "F16"; }

}  // namespace

cli::Command synth_command() {
  const auto shape = [](const char* spelling, const char* help) {
    return cli::Option{.spellings = {spelling}, .kind = cli::Kind::Int, .help = help, .metavar = "N"};
  };
  std::string tokenizer_help = "Hugging Face tokenizer folder (tokenizer.json, tokenizer_config.json); 'none': a "
                               "synthetic byte-level vocab";
#ifdef TEMPRA_DEFAULT_TOKENIZER_DIR
  tokenizer_help += std::string("; default ") + TEMPRA_DEFAULT_TOKENIZER_DIR;
#endif
  return {.name = "synth",
          .summary = "Write a model of a supported architecture with seeded random weights (any weight format).",
          .options = {{.spellings = {"--arch"},
                       .kind = cli::Kind::String,
                       .help = "the architecture: " + llm::supported_architectures(),
                       .default_value = "qwen3"},
                      {.spellings = {"--preset"},
                       .kind = cli::Kind::String,
                       .help = "tiny (2 layers, hidden 256); qwen3 0.6b (Qwen3-0.6B's shape); llama 1b (Llama 3.2 "
                               "1B's); gemma3 1b (Gemma 3 1B's); qwen3moe a3b-8l (Qwen3-30B-A3B cut to 8 layers); deepseek2 "
                               "lite-4l (DeepSeek-V2-Lite cut to 4 layers); qwen35 0.8b (Qwen3.5-0.8B's)",
                       .default_value = "tiny"},
                      {.spellings = {"--type"},
                       .kind = cli::Kind::String,
                       .help = "F32, F16, BF16, or a quantized type of `tempra quantize` (Q8_0, Q4_K_M, ...)",
                       .default_value = "F16"},
                      {.spellings = {"--seed"}, .kind = cli::Kind::Int, .help = "weight seed", .default_value = "0"},
                      {.spellings = {"--tokenizer"}, .kind = cli::Kind::String, .help = tokenizer_help, .metavar = "DIR"},
                      {.spellings = {"--vocab-from"},
                       .kind = cli::Kind::String,
                       .help = "copy the tokenizer.* keys of this GGUF (llama.cpp's models/ggml-vocab-*.gguf, a "
                               "model); the vocab size becomes its token count",
                       .metavar = "GGUF"},
                      shape("--layers", "override the layer count"),
                      shape("--embd", "override the hidden size"),
                      shape("--ff", "override the feed-forward size"),
                      shape("--heads", "override the query head count"),
                      shape("--heads-kv", "override the key/value head count"),
                      shape("--head-dim", "override the head dimension"),
                      shape("--vocab", "override the vocab size (at least the tokenizer's)"),
                      shape("--ctx", "override the context length"),
                      {.spellings = {"--untied"},
                       .kind = cli::Kind::Flag,
                       .help = "write a separate output.weight instead of reusing the token embedding"},
                      {.spellings = {"--script"},
                       .kind = cli::Kind::StringList,
                       .help = "a scripted model for API tests (repeatable): a prompt ending in TEXT's first token "
                               "continues with the rest of TEXT, then the end-of-turn token (implies --untied)",
                       .metavar = "TEXT"}},
          .positionals = {{.name = "output", .help = "the .gguf to write (via a temporary file)"}}};
}

int run_synth(const cli::Args& args) {
  const std::string arch = args.string("--arch");
  if (llm::find_architecture(arch) == nullptr)
    throw cli::UsageError("--arch '" + arch + "' is not one of " + llm::supported_architectures());
  llm::SynthSpec spec;
  try {
    spec = llm::SynthSpec::preset(arch, args.string("--preset"));
  } catch (const Error& e) {
    throw cli::UsageError(std::string("--preset: ") + e.what());
  }

  const std::string type_name = upper(args.string("--type"));
  const FileType* quantized = nullptr;
  if (type_name == "F32") {
    spec.weight_type = DType::f32;
  } else if (type_name == "F16") {
    spec.weight_type = DType::f16;
  } else if (type_name == "BF16") {
    spec.weight_type = DType::bf16;
  } else {
    quantized = find_file_type(type_name);
    if (quantized == nullptr)
      throw cli::UsageError("--type '" + args.string("--type") + "' is not F32, F16, BF16 or one of " +
                            file_type_names());
    spec.weight_type = DType::f16;  // the source llama-quantize is usually given
  }
  spec.seed = static_cast<uint64_t>(args.integer("--seed"));
  if (args.given("--layers")) spec.n_layer = static_cast<int>(positive(args, "--layers", 4096));
  if (args.given("--embd")) spec.n_embd = positive(args, "--embd");
  if (args.given("--ff")) spec.n_ff = positive(args, "--ff");
  if (args.given("--heads")) spec.n_head = positive(args, "--heads");
  if (args.given("--heads-kv")) spec.n_head_kv = positive(args, "--heads-kv");
  if (args.given("--head-dim")) spec.head_dim = positive(args, "--head-dim");
  if (args.given("--vocab")) spec.n_vocab = positive(args, "--vocab", 0x7fffffff);
  if (args.given("--ctx")) spec.context_length = positive(args, "--ctx");
  if (args.flag("--untied")) spec.tied_embeddings = false;

  std::string tokenizer = args.has("--tokenizer") ? args.string("--tokenizer") : std::string();
  if (args.has("--vocab-from")) {
    if (!tokenizer.empty()) throw cli::UsageError("--vocab-from and --tokenizer are exclusive");
    spec.vocab_gguf = args.string("--vocab-from");
    try {
      spec.n_vocab = llm::gguf_vocab_size(spec.vocab_gguf);
    } catch (const Error& e) {
      throw cli::UsageError(std::string("--vocab-from: ") + e.what());
    }
    if (args.given("--vocab")) throw cli::UsageError("--vocab-from sets the vocab size; --vocab cannot");
    tokenizer = "none";
  }
  // Qwen3's tokenizer is the default only for qwen3; other architectures default to the
  // synthetic vocab (or --vocab-from).
  if (tokenizer.empty() && arch != "qwen3") tokenizer = "none";
#ifdef TEMPRA_DEFAULT_TOKENIZER_DIR
  if (tokenizer.empty() && fs::is_directory(TEMPRA_DEFAULT_TOKENIZER_DIR)) tokenizer = TEMPRA_DEFAULT_TOKENIZER_DIR;
#endif
  if (tokenizer.empty())
    throw cli::UsageError("--tokenizer DIR is required (no default tokenizer folder was found at configure time); "
                          "'--tokenizer none' writes a synthetic vocab");
  if (tokenizer != "none") {
    if (!fs::is_regular_file(fs::path(tokenizer) / "tokenizer.json") ||
        !fs::is_regular_file(fs::path(tokenizer) / "tokenizer_config.json"))
      throw cli::UsageError("--tokenizer " + tokenizer + " does not hold tokenizer.json and tokenizer_config.json");
    spec.tokenizer_dir = tokenizer;
    const int64_t size = llm::hf_tokenizer_size(spec.tokenizer_dir);
    if (spec.n_vocab < size)
      throw cli::UsageError("--vocab " + std::to_string(spec.n_vocab) + " is smaller than the tokenizer's " +
                            std::to_string(size) + " tokens");
  }
  if (args.given("--script")) {
    if (spec.tokenizer_dir.empty() && spec.vocab_gguf.empty())
      throw cli::UsageError("--script needs a tokenizer (--tokenizer DIR or --vocab-from GGUF)");
    spec.tied_embeddings = false;
    io::GgufMetadata metadata;
    if (!spec.vocab_gguf.empty())
      llm::copy_tokenizer_metadata(metadata, spec.vocab_gguf);
    else
      llm::add_qwen3_tokenizer_metadata(metadata, spec.tokenizer_dir, spec.n_vocab);
    const llm::Tokenizer tokenizer = llm::Tokenizer::from_gguf(metadata);
    for (const std::string& text : args.strings("--script")) {
      std::vector<int32_t> chain = tokenizer.encode(text, {.parse_special = true, .add_special = false});
      if (chain.size() < 2) throw cli::UsageError("--script '" + text + "' needs at least two tokens");
      chain.push_back(tokenizer.eos());
      spec.scripts.push_back(std::move(chain));
    }
  }
  try {
    llm::validate(spec);
  } catch (const Error& e) {  // every field here came from the command line
    throw cli::UsageError(e.what());
  }

  const fs::path out = args.positional("output");
  if (quantized == nullptr) {
    llm::write_synthetic_model(out, spec);
  } else {
    const fs::path source = out.string() + ".f16-" + std::to_string(::getpid());
    try {
      llm::write_synthetic_model(source, spec);
      quantize_model(source, out, *quantized);
    } catch (...) {
      std::error_code ignored;
      fs::remove(source, ignored);
      throw;
    }
    fs::remove(source);
  }
  const std::string vocab = !spec.vocab_gguf.empty()     ? spec.vocab_gguf.filename().string()
                            : spec.tokenizer_dir.empty() ? "synthetic"
                                                         : "Qwen3 tokenizer";
  std::printf("%s: %s, %d layers, hidden %lld, FFN %lld, %lld/%lld heads of %lld, vocab %lld (%s), %s, seed %llu; "
              "%.2f MiB\n",
              out.c_str(), spec.architecture.c_str(), spec.n_layer, static_cast<long long>(spec.n_embd), static_cast<long long>(spec.n_ff),
              static_cast<long long>(spec.n_head), static_cast<long long>(spec.n_head_kv),
              static_cast<long long>(spec.head_dim), static_cast<long long>(spec.n_vocab),
              vocab.c_str(),
              quantized ? std::string(quantized->name).c_str() : dtype_label(spec.weight_type),
              static_cast<unsigned long long>(spec.seed), static_cast<double>(fs::file_size(out)) / (1024.0 * 1024.0));
  return 0;
}

}  // namespace tempra::app
