// apps/tempra/train.cpp: see train.h.
#include "train.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "llm_cli.h"
#include "merge.h"
#include "tempra/core/error.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/train/dataset.h"
#include "tempra/train/pretrain.h"
#include "train_cli.h"

namespace tempra::app {
namespace {

constexpr int64_t kWholeFile = int64_t(1) << 40;  // read_examples' limit: no example is cut

// The data files as one stream, each example and each file ended by end-of-text.
train::TokenStream read_stream(const std::vector<std::string>& files, const llm::Tokenizer& tokenizer,
                               const std::string& chat_template) {
  const int32_t end_of_text = tokenizer.bos() >= 0 ? tokenizer.bos() : tokenizer.pad();
  check(end_of_text >= 0, "train", "the vocab names no end-of-text token (tokenizer.ggml.bos_token_id)");
  train::TokenStream stream;
  for (const std::string& file : files) {
    std::string warning;
    for (const train::Example& e : train::read_examples(file, tokenizer, chat_template, kWholeFile, &warning)) {
      stream.tokens.insert(stream.tokens.end(), e.tokens.begin(), e.tokens.end());
      stream.trained.insert(stream.trained.end(), e.counted.begin(), e.counted.end());
      stream.tokens.push_back(end_of_text);
      // Predicting the end of a text is learned from plain text, not after a chat.
      stream.trained.push_back(e.counted.empty() ? 0 : e.counted.back());
    }
    if (!warning.empty()) std::fprintf(stderr, "warning: %s: %s\n", file.c_str(), warning.c_str());
  }
  return stream;
}

constexpr const char* kLogHeader = "step,loss,lr,grad_norm,val_bpb,seconds";

// The rows of an existing --log up to step `done` (a resumed run continues it; rows past the
// checkpoint were steps the resumed run redoes), and the seconds of the last of them.
std::vector<std::string> resumed_log_rows(const std::string& path, int64_t done, double* seconds) {
  std::vector<std::string> rows;
  *seconds = 0;
  if (done == 0) return rows;
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line != kLogHeader) return rows;  // none, or not ours: start over
  while (std::getline(in, line)) {
    const size_t comma = line.find(','), last = line.rfind(',');
    if (comma == std::string::npos) continue;
    try {
      if (std::stoll(line.substr(0, comma)) > done) break;
      *seconds = std::stod(line.substr(last + 1));
    } catch (const std::exception&) {
      break;  // a torn last line
    }
    rows.push_back(line);
  }
  return rows;
}

double trained_fraction(const train::TokenStream& s) {
  int64_t n = 0;
  for (const uint8_t m : s.trained) n += m;
  return s.tokens.empty() ? 0.0 : double(n) / double(s.tokens.size());
}

}  // namespace

cli::Command train_command() {
  const auto real = [](const char* spelling, const char* help, const char* fallback) {
    return cli::Option{
        .spellings = {spelling}, .kind = cli::Kind::Float, .help = help, .default_value = fallback, .metavar = "X"};
  };
  return {.name = "train",
          .summary =
              "Train every weight of a Qwen3 GGUF (pretraining from scratch, or full fine-tuning on chats) with "
              "Muon and AdamW.",
          .options = {
              {.spellings = {"-m", "--model"},
               .kind = cli::Kind::String,
               .help = "the initial .gguf (e.g. `tempra synth --type f32 --vocab-from VOCAB.gguf`)",
               .required = true,
               .metavar = "FILE"},
              {.spellings = {"--data"},
               .kind = cli::Kind::StringList,
               .help = "plain text, or .jsonl of {\"messages\": [...]} (assistant tokens trained) or {\"text\": ...}",
               .required = true,
               .metavar = "FILE"},
              {.spellings = {"--val"},
               .kind = cli::Kind::String,
               .help = "plain text scored as validation bits per byte",
               .metavar = "FILE"},
              {.spellings = {"-o", "--output"},
               .kind = cli::Kind::String,
               .help = "the trained model .gguf to write (f32)",
               .required = true,
               .metavar = "FILE"},
              int_option("--steps", "optimizer steps", "1000"),
              int_option("--batch", "windows per step", "8"),
              int_option("--seq", "tokens per window", "256"),
              int_option("--warmup", "steps of linear lr warmup before the cosine decay", "20"),
              real("--lr", "Muon's learning rate (the layers' matrices)", "0.02"),
              real("--lr-adam", "AdamW's learning rate (embedding, head, norms)", "0.004"),
              real("--min-lr-ratio", "the cosine decay's floor, as a fraction of the lr", "0"),
              real("--weight-decay", "Muon's decoupled weight decay", "0"),
              real("--clip", "clip the global gradient norm to this (0: no clipping)", "1"),
              int_option("--seed", "which windows each step takes", "0"),
              int_option("--eval-every", "validation bits per byte every N steps (0: at the end only)", "0"),
              int_option("--eval-windows", "validation windows scored (at most)", "64"),
              int_option("--log-every", "a progress line every N steps", "1"),
              {.spellings = {"--log"},
               .kind = cli::Kind::String,
               .help = "write every step as CSV (step,loss,lr,grad_norm,val_bpb,seconds)",
               .metavar = "FILE"},
              {.spellings = {"--checkpoint-activations"},
               .kind = cli::Kind::Flag,
               .help = "keep only each block's input and rerun it in the backward pass (less memory)"},
              {.spellings = {"--checkpoint"},
               .kind = cli::Kind::String,
               .help = "training checkpoint to write (default: OUTPUT.ckpt)",
               .metavar = "FILE"},
              int_option("--checkpoint-every", "write the checkpoint every N steps (0: at the end only)", "0"),
              {.spellings = {"--resume"},
               .kind = cli::Kind::String,
               .help = "continue from this checkpoint (bit for bit)",
               .metavar = "FILE"},
              int_option("--stop-at", "stop after this step with the checkpoint written, no model (0: run all)", "0"),
              {.spellings = {"-t", "--threads"},
               .kind = cli::Kind::Int,
               .help = "threads; 0: TEMPRA_THREADS or the physical cores",
               .default_value = "0",
               .metavar = "N"}}};
}

int run_train(const cli::Args& args) {
  train::PretrainOptions o;
  o.steps = args.integer("--steps");
  o.batch = args.integer("--batch");
  o.seq = args.integer("--seq");
  o.warmup = args.integer("--warmup");
  o.lr_matrix = args.number("--lr");
  o.lr_other = args.number("--lr-adam");
  o.min_lr_ratio = args.number("--min-lr-ratio");
  o.weight_decay = args.number("--weight-decay");
  o.clip = args.number("--clip");
  o.seed = uint64_t(args.integer("--seed"));
  o.checkpoint_activations = args.flag("--checkpoint-activations");
  if (o.steps < 1) throw cli::UsageError("--steps must be at least 1");
  if (o.batch < 1 || o.seq < 1 || o.batch > (int64_t(1) << 24) / o.seq)
    throw cli::UsageError("--batch and --seq must be at least 1, with --batch x --seq at most 16777216");
  if (o.warmup < 0) throw cli::UsageError("--warmup must not be negative");
  if (o.lr_matrix < 0 || o.lr_other < 0 || o.weight_decay < 0 || o.clip < 0)
    throw cli::UsageError("--lr, --lr-adam, --weight-decay and --clip must not be negative");
  if (o.min_lr_ratio < 0 || o.min_lr_ratio > 1) throw cli::UsageError("--min-lr-ratio must be in [0, 1]");
  const int64_t eval_every = args.integer("--eval-every"), eval_windows = args.integer("--eval-windows");
  const int64_t log_every = args.integer("--log-every"), checkpoint_every = args.integer("--checkpoint-every");
  if (eval_every < 0 || eval_windows < 1 || log_every < 1 || checkpoint_every < 0)
    throw cli::UsageError("--eval-every and --checkpoint-every must be >= 0, --eval-windows and --log-every >= 1");
  const int64_t threads = args.integer("--threads"), stop_at = args.integer("--stop-at");
  if (threads < 0 || threads > 4096) throw cli::UsageError("-t/--threads must be in [0, 4096]");
  if (stop_at < 0) throw cli::UsageError("--stop-at must not be negative");
  const int64_t last = stop_at > 0 ? std::min(stop_at, o.steps) : o.steps;
  const std::string output = args.string("--output");
  const std::string checkpoint = args.given("--checkpoint") ? args.string("--checkpoint") : output + ".ckpt";

  ExecContext ctx(ExecOptions{.threads = int(threads)});
  const std::string path = args.string("--model");
  const io::GgufModel gguf = io::GgufModel::open(path);
  const llm::Qwen3Model model = llm::Qwen3Model::load(gguf);
  const llm::Tokenizer tokenizer = llm::Tokenizer::from_gguf(gguf.metadata());
  const std::string chat_template = gguf.metadata().get_optional<std::string>("tokenizer.chat_template").value_or("");
  train::TrainableQwen3 trainable = train::TrainableQwen3::copy_of(ctx, train::Qwen3Weights::of(model));

  const train::TokenStream data = read_stream(args.strings("--data"), tokenizer, chat_template);
  train::TokenStream val;
  if (args.given("--val")) {
    // Checked now, not at the first evaluation, which may come after the whole run.
    const std::string& val_path = args.string("--val");
    val = read_stream({val_path}, tokenizer, chat_template);
    if (int64_t(val.tokens.size()) < o.seq + 1)
      fail("train", val_path, ": ", val.tokens.size(), " tokens, fewer than one window of --seq + 1 = ", o.seq + 1);
    bool scored = false;
    for (const int32_t id : val.tokens) scored = scored || (tokenizer.attr(id) & llm::kAttrNormal) != 0;
    if (!scored) fail("train", val_path, ": no text tokens to score (only special tokens)");
  }
  train::Pretrainer trainer(ctx, trainable, data, o);
  int64_t n_params = 0;
  for (const optim::Param& p : trainable.params()) n_params += p.value.numel();
  std::fprintf(stderr,
               "train: %s, %lld parameters (%s embeddings); %zu training tokens (%.0f%% trained)%s; %lld steps of "
               "%lld x %lld tokens\n",
               path.c_str(), (long long)n_params, trainable.tied ? "tied" : "untied", data.tokens.size(),
               100.0 * trained_fraction(data),
               val.tokens.empty() ? "" : (", " + std::to_string(val.tokens.size()) + " validation tokens").c_str(),
               (long long)o.steps, (long long)o.batch, (long long)o.seq);
  if (args.given("--resume")) {
    trainer.load(args.string("--resume"));
    std::fprintf(stderr, "resumed from %s at step %lld\n", args.string("--resume").c_str(),
                 (long long)trainer.steps_done());
  }
  std::unique_ptr<std::ofstream> log;
  double seconds_before = 0;  // a resumed run's time so far, from its log
  if (args.given("--log")) {
    const std::vector<std::string> kept = resumed_log_rows(args.string("--log"), trainer.steps_done(), &seconds_before);
    log = std::make_unique<std::ofstream>(args.string("--log"), std::ios::trunc);
    if (!*log) fail("train", args.string("--log"), ": cannot write");
    *log << kLogHeader << "\n";
    for (const std::string& row : kept) *log << row << "\n";
  }
  const auto evaluate = [&] { return val.tokens.empty() ? NAN : trainer.eval_bpb(val, tokenizer, eval_windows); };

  const auto start = std::chrono::steady_clock::now();
  const int64_t first = trainer.steps_done();
  double bpb = NAN;
  bool interrupted = false;
  {
    const StopOnSignal stop_on_signal;
    while (trainer.steps_done() < last) {
      const train::PretrainStep r = trainer.step();
      const int64_t done = trainer.steps_done();
      const bool evaluated = (eval_every > 0 && done % eval_every == 0) || done == o.steps;
      if (evaluated) bpb = evaluate();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double per_step = seconds / double(done - first);
      if (log) {
        *log << done << "," << r.loss << "," << r.lr_matrix << "," << r.grad_norm << ",";
        if (evaluated && !std::isnan(bpb)) *log << bpb;
        *log << "," << seconds_before + seconds << std::endl;  // flushed: the log is read while it grows
      }
      if (done % log_every == 0 || done == o.steps)
        std::fprintf(stderr, "step %lld/%lld | loss %.4f | lr %.4g | norm %.3f | %.0f tok/s | val bpb %s | ETA %s\n",
                     (long long)done, (long long)o.steps, r.loss, r.lr_matrix, r.grad_norm, double(r.tokens) / per_step,
                     std::isnan(bpb) ? "-" : std::to_string(bpb).substr(0, 6).c_str(),
                     duration(per_step * double(o.steps - done)).c_str());
      if (checkpoint_every > 0 && done % checkpoint_every == 0 && done < o.steps) trainer.save(checkpoint);
      if (stop_requested()) {
        interrupted = done < o.steps;
        break;
      }
    }
  }
  if (log) log->flush();
  trainer.save(checkpoint);
  if (interrupted || trainer.steps_done() < o.steps) {
    std::fprintf(stderr, "%s at step %lld: checkpoint %s (continue with --resume)\n",
                 interrupted ? "interrupted" : "stopped", (long long)trainer.steps_done(), checkpoint.c_str());
    return interrupted ? kExitInterrupted : 0;
  }
  if (std::isnan(bpb)) bpb = evaluate();  // resumed at the end
  write_model_replacing(gguf, trainable.by_name(), output);
  std::printf("%s: trained %lld steps%s; checkpoint %s\n", output.c_str(), (long long)trainer.steps_done(),
              std::isnan(bpb) ? "" : (", validation " + std::to_string(bpb) + " bits per byte").c_str(),
              checkpoint.c_str());
  return 0;
}

}  // namespace tempra::app
