// apps/tempra/finetune.cpp: see finetune.h.
#include "finetune.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <string>

#include "llm_cli.h"
#include "tempra/core/error.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/llm/tokenizer/tokenizer.h"
#include "tempra/train/adapter.h"
#include "tempra/train/finetune.h"

namespace tempra::app {
namespace {

constexpr int kExitInterrupted = 130;

std::atomic<bool> g_stop{false};
extern "C" void request_stop(int) { g_stop.store(true); }

// SIGINT and SIGTERM ask the loop to stop while in scope; the default handlers come back after,
// however the scope is left.
struct StopOnSignal {
  StopOnSignal() {
    g_stop = false;
    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
  }
  ~StopOnSignal() {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
};

std::string duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = int64_t(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
  else std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  return buf;
}

cli::Option int_option(const char* spelling, const char* help, const char* fallback) {
  return {.spellings = {spelling}, .kind = cli::Kind::Int, .help = help, .default_value = fallback, .metavar = "N"};
}

}  // namespace

cli::Command finetune_command() {
  return {.name = "finetune",
          .summary = "Train a LoRA adapter on a Qwen3 GGUF (any weight type) from chat or text data.",
          .options = {{.spellings = {"-m", "--model"}, .kind = cli::Kind::String, .help = "the base .gguf model",
                       .required = true, .metavar = "FILE"},
                      {.spellings = {"--data"}, .kind = cli::Kind::String,
                       .help = ".jsonl of {\"messages\": [...]} (loss on the assistant's tokens) or {\"text\": ...}; "
                               "any other file: plain text",
                       .required = true, .metavar = "FILE"},
                      {.spellings = {"-o", "--output"}, .kind = cli::Kind::String,
                       .help = "the adapter .gguf to write (llama.cpp's LoRA format)", .required = true,
                       .metavar = "FILE"},
                      int_option("--lora-r", "adapter rank", "8"),
                      {.spellings = {"--lora-alpha"}, .kind = cli::Kind::Float, .help = "adapter alpha (scale alpha / r)",
                       .default_value = "16", .metavar = "X"},
                      {.spellings = {"--lora-dropout"}, .kind = cli::Kind::Float, .help = "dropout on the adapters' input",
                       .default_value = "0", .metavar = "P"},
                      {.spellings = {"--targets"}, .kind = cli::Kind::String,
                       .help = "projections to adapt: q,k,v,o,gate,up,down or all", .default_value = "q,k,v,o",
                       .metavar = "LIST"},
                      int_option("--steps", "optimizer steps", "100"),
                      {.spellings = {"--lr"}, .kind = cli::Kind::Float, .help = "AdamW learning rate",
                       .default_value = "1e-4", .metavar = "X"},
                      int_option("--batch", "examples per step", "4"),
                      int_option("--ctx", "the longest example in tokens (longer ones are an error)", "256"),
                      {.spellings = {"--eval-split"}, .kind = cli::Kind::Float,
                       .help = "fraction of the examples held out for the eval loss", .default_value = "0",
                       .metavar = "F"},
                      int_option("--eval-every", "eval loss every N steps (0: at the end only)", "0"),
                      int_option("--seed", "adapter initialization, data order, dropout and eval split", "0"),
                      {.spellings = {"--checkpoint"}, .kind = cli::Kind::String,
                       .help = "training checkpoint to write (default: OUTPUT.ckpt)", .metavar = "FILE"},
                      int_option("--checkpoint-every", "write the checkpoint every N steps (0: at the end only)", "0"),
                      {.spellings = {"--resume"}, .kind = cli::Kind::String,
                       .help = "continue from this checkpoint (bit for bit)", .metavar = "FILE"},
                      {.spellings = {"-t", "--threads"}, .kind = cli::Kind::Int,
                       .help = "threads; 0: TEMPRA_THREADS or the physical cores", .default_value = "0", .metavar = "N"},
                      {.spellings = {"--no-checkpoint-activations"}, .kind = cli::Kind::Flag,
                       .help = "keep every block's activations for the backward pass (more memory, less compute)"}}};
}

int run_finetune(const cli::Args& args) {
  const auto positive = [&](const char* name) {
    const int64_t v = args.integer(name);
    if (v < 1) throw cli::UsageError(std::string(name) + " must be at least 1, got " + std::to_string(v));
    return v;
  };
  const int64_t steps = positive("--steps"), ctx_tokens = positive("--ctx");
  const int64_t eval_every = args.integer("--eval-every"), checkpoint_every = args.integer("--checkpoint-every");
  if (eval_every < 0 || checkpoint_every < 0) throw cli::UsageError("--eval-every and --checkpoint-every must be >= 0");
  train::FinetuneOptions options;
  try {
    options.lora = {.rank = positive("--lora-r"),
                    .alpha = args.number("--lora-alpha"),
                    .dropout = args.number("--lora-dropout"),
                    .targets = train::parse_targets(args.string("--targets"))};
    options.lora.validate();
  } catch (const Error& e) {
    throw cli::UsageError(e.what());
  }
  options.lr = args.number("--lr");
  options.batch = positive("--batch");
  options.seed = uint64_t(args.integer("--seed"));
  options.checkpoint_activations = !args.flag("--no-checkpoint-activations");
  const std::string output = args.string("--output");
  const std::string checkpoint = args.given("--checkpoint") ? args.string("--checkpoint") : output + ".ckpt";
  const int64_t threads = args.integer("--threads");
  if (threads < 0 || threads > 4096) throw cli::UsageError("-t/--threads must be in [0, 4096]");

  ExecContext ctx(ExecOptions{.threads = int(threads)});
  const std::string path = args.string("--model");
  const io::GgufModel gguf = io::GgufModel::open(path);
  const llm::Qwen3Model model = llm::Qwen3Model::load(gguf);
  const llm::Tokenizer tokenizer = llm::Tokenizer::from_gguf(gguf.metadata());
  const std::string chat_template = nonempty_string(gguf.metadata(), "tokenizer.chat_template");
  std::string warning;
  train::Split data = train::split_examples(
      train::read_examples(args.string("--data"), tokenizer, chat_template, ctx_tokens, &warning),
      args.number("--eval-split"), options.seed);
  if (!warning.empty()) std::fprintf(stderr, "warning: %s\n", warning.c_str());
  const train::Qwen3Weights weights = train::Qwen3Weights::of(model);
  std::fprintf(stderr, "finetune: %s, %zu training and %zu eval examples, LoRA r %lld alpha %g on %s, %lld steps\n",
               path.c_str(), data.train.size(), data.eval.size(), (long long)options.lora.rank, options.lora.alpha,
               args.string("--targets").c_str(), (long long)steps);
  train::Finetuner tuner(ctx, weights, std::move(data.train), std::move(data.eval), options);
  if (args.given("--resume")) {
    tuner.load(args.string("--resume"));
    std::fprintf(stderr, "resumed from %s at step %lld\n", args.string("--resume").c_str(),
                 (long long)tuner.steps_done());
  }

  const auto start = std::chrono::steady_clock::now();
  const int64_t first = tuner.steps_done();
  int64_t tokens = 0;
  double eval = NAN;
  bool interrupted = false;
  {
    const StopOnSignal stop_on_signal;
    while (tuner.steps_done() < steps) {
      const train::StepResult r = tuner.train_step();
      tokens += r.tokens;
      const int64_t done = tuner.steps_done();
      if (tuner.has_eval() && ((eval_every > 0 && done % eval_every == 0) || done == steps)) eval = tuner.eval_loss();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double per_step = seconds / double(done - first);
      std::fprintf(stderr, "step %lld/%lld  loss %.4f  eval %s  %.0f tok/s  ETA %s\n", (long long)done, (long long)steps,
                   r.loss, std::isnan(eval) ? "-" : std::to_string(eval).substr(0, 6).c_str(), double(tokens) / seconds,
                   duration(per_step * double(steps - done)).c_str());
      if (checkpoint_every > 0 && done % checkpoint_every == 0 && done < steps) tuner.save(checkpoint);
      if (g_stop) {
        interrupted = true;
        break;
      }
    }
  }
  if (!interrupted && tuner.has_eval() && std::isnan(eval)) eval = tuner.eval_loss();  // resumed at the end
  tuner.save(checkpoint);
  if (interrupted) {
    std::fprintf(stderr, "interrupted at step %lld: checkpoint %s (continue with --resume)\n",
                 (long long)tuner.steps_done(), checkpoint.c_str());
    return kExitInterrupted;
  }
  train::write_lora_gguf(output, tuner.adapter(), "qwen3");
  std::printf("%s: LoRA adapter after %lld steps%s; checkpoint %s\n", output.c_str(), (long long)tuner.steps_done(),
              tuner.has_eval() ? (", eval loss " + std::to_string(eval)).c_str() : "", checkpoint.c_str());
  return 0;
}

}  // namespace tempra::app
