// apps/tempra/finetune.cpp: see finetune.h.
#include "finetune.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "llm_cli.h"
#include "tempra/core/error.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/llm/tokenizer/tokenizer.h"
#include "tempra/train/adapter.h"
#include "tempra/train/es_trainer.h"
#include "tempra/train/finetune.h"
#include "merge.h"
#include "train_cli.h"

namespace tempra::app {

cli::Command finetune_command() {
  return {.name = "finetune",
          .summary = "Train a LoRA adapter (or, by evolution strategies, every weight) of a Qwen3 GGUF of any weight "
                     "type from chat or text data; under mpirun over several processes.",
          .options = {{.spellings = {"-m", "--model"}, .kind = cli::Kind::String, .help = "the base .gguf model",
                       .required = true, .metavar = "FILE"},
                      {.spellings = {"--data"}, .kind = cli::Kind::String,
                       .help = ".jsonl of {\"messages\": [...]} (loss on the assistant's tokens) or {\"text\": ...}; "
                               "any other file: plain text",
                       .required = true, .metavar = "FILE"},
                      {.spellings = {"-o", "--output"}, .kind = cli::Kind::String,
                       .help = "the adapter .gguf to write (llama.cpp's LoRA format); with --full, the model .gguf",
                       .required = true,
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
                      {.spellings = {"--lr"}, .kind = cli::Kind::Float,
                       .help = "AdamW's learning rate, or evolution strategies' step size",
                       .default_value = "1e-4", .metavar = "X"},
                      int_option("--batch", "examples per step", "4"),
                      int_option("--ctx", "the longest example in tokens (longer ones are an error)", "256"),
                      {.spellings = {"--eval-split"}, .kind = cli::Kind::Float,
                       .help = "fraction of the examples held out for the eval loss", .default_value = "0",
                       .metavar = "F"},
                      int_option("--eval-every", "eval loss every N steps (0: at the end only)", "0"),
                      int_option("--seed", "adapter initialization, data order, dropout, eval split and ES noise", "0"),
                      {.spellings = {"--checkpoint"}, .kind = cli::Kind::String,
                       .help = "training checkpoint to write (default: OUTPUT.ckpt)", .metavar = "FILE"},
                      int_option("--checkpoint-every", "write the checkpoint every N steps (0: at the end only)", "0"),
                      {.spellings = {"--resume"}, .kind = cli::Kind::String,
                       .help = "continue from this checkpoint (bit for bit)", .metavar = "FILE"},
                      {.spellings = {"-t", "--threads"}, .kind = cli::Kind::Int,
                       .help = "threads; 0: TEMPRA_THREADS or the physical cores", .default_value = "0", .metavar = "N"},
                      {.spellings = {"--no-checkpoint-activations"}, .kind = cli::Kind::Flag,
                       .help = "keep every block's activations for the backward pass (more memory, less compute)"},
                      {.spellings = {"--lean-checkpoints"}, .kind = cli::Kind::Flag,
                       .help = "checkpoint a block's input alone and rerun its frozen-weight products too "
                               "(least memory, most compute)"},
                      {.spellings = {"--method"}, .kind = cli::Kind::String,
                       .help = "adamw (gradients) or es (evolution strategies: forward passes only)",
                       .default_value = "adamw", .metavar = "NAME"},
                      int_option("--population", "es: members per generation (even: antithetic pairs)", "16"),
                      {.spellings = {"--sigma"}, .kind = cli::Kind::Float, .help = "es: the perturbations' std",
                       .default_value = "1e-3", .metavar = "X"},
                      {.spellings = {"--reward"}, .kind = cli::Kind::String,
                       .help = "es: loss, exact (greedy answers) or regex:PATTERN (on greedy continuations)",
                       .default_value = "loss", .metavar = "SPEC"},
                      int_option("--max-new-tokens", "es, regex reward: the continuation's length limit", "32"),
                      {.spellings = {"--full"}, .kind = cli::Kind::Flag,
                       .help = "es: train every weight (as f32) instead of adapters; -o is then a whole model .gguf "
                               "(each tensor in the base's type)"}}};
}

namespace {

// What the loop below needs of a trainer, whichever the method: one step (its progress fields
// back), the eval score, the checkpoint, the result file.
struct Run {
  std::function<std::string(int64_t* tokens)> step;
  std::function<double()> eval;  // empty without eval examples
  std::function<int64_t()> steps_done;
  std::function<void(const std::string&)> save, load, write_output;
  const char* eval_name = "eval";          // in the progress line
  const char* summary_name = "eval loss";  // in the summary
};

// Whether any rank was asked to stop (each rank's flag gathered): all stop after the same step.
bool any_rank_stopping(train::Communicator& comm) {
  const double mine = stop_requested() ? 1.0 : 0.0;
  for (double v : comm.allgather(std::vector<double>{mine}))
    if (v != 0) return true;
  return false;
}

}  // namespace

int run_finetune(const cli::Args& args) {
  const auto positive = [&](const char* name) {
    const int64_t v = args.integer(name);
    if (v < 1) throw cli::UsageError(std::string(name) + " must be at least 1, got " + std::to_string(v));
    return v;
  };
  const int64_t steps = positive("--steps"), ctx_tokens = positive("--ctx");
  const int64_t eval_every = args.integer("--eval-every"), checkpoint_every = args.integer("--checkpoint-every");
  if (eval_every < 0 || checkpoint_every < 0) throw cli::UsageError("--eval-every and --checkpoint-every must be >= 0");
  const std::string method = args.string("--method");
  if (method != "adamw" && method != "es") throw cli::UsageError("--method must be adamw or es, got '" + method + "'");
  const bool es = method == "es", full = args.flag("--full");
  if (full && !es) throw cli::UsageError("--full trains every weight by evolution strategies: add --method es");
  train::FinetuneOptions options;
  train::EsTrainOptions es_options;
  try {
    options.lora = {.rank = positive("--lora-r"),
                    .alpha = args.number("--lora-alpha"),
                    .dropout = args.number("--lora-dropout"),
                    .targets = train::parse_targets(args.string("--targets"))};
    options.lora.validate();
    es_options = {.es = {.population = args.integer("--population"),
                         .sigma = args.number("--sigma"),
                         .lr = args.number("--lr"),
                         .seed = uint64_t(args.integer("--seed"))},
                  .reward = train::Reward::parse(args.string("--reward"), args.integer("--max-new-tokens")),
                  .batch = positive("--batch")};
    es_options.es.validate();
  } catch (const Error& e) {
    throw cli::UsageError(e.what());
  }
  options.lr = args.number("--lr");
  options.batch = positive("--batch");
  options.seed = uint64_t(args.integer("--seed"));
  options.checkpoint_activations = !args.flag("--no-checkpoint-activations");
  options.recompute_products = args.flag("--lean-checkpoints");
  const std::string output = args.string("--output");
  const std::string checkpoint = args.given("--checkpoint") ? args.string("--checkpoint") : output + ".ckpt";
  const int64_t threads = args.integer("--threads");
  if (threads < 0 || threads > 4096) throw cli::UsageError("-t/--threads must be in [0, 4096]");

  train::Communicator& comm = train::world();
  const bool rank0 = comm.rank() == 0;  // the one that prints and writes
  // An error on one rank alone would leave the others waiting in an exchange: it ends them all.
  const auto train = [&]() -> int {
    ExecContext ctx(ExecOptions{.threads = int(threads)});
    const std::string path = args.string("--model");
    io::GgufModel gguf = io::GgufModel::open(path);
    std::vector<optim::Param> full_params;
    if (full) full_params = train::full_weights(ctx, gguf);  // before the model is loaded: it reads these
    const llm::Qwen3Model model = llm::Qwen3Model::load(gguf);
    const llm::Tokenizer tokenizer = llm::Tokenizer::from_gguf(gguf.metadata());
    const std::string chat_template = nonempty_string(gguf.metadata(), "tokenizer.chat_template");
    std::string warning;
    train::Split data = train::split_examples(
        train::read_examples(args.string("--data"), tokenizer, chat_template, ctx_tokens, &warning),
        args.number("--eval-split"), options.seed);
    if (!warning.empty() && rank0) std::fprintf(stderr, "warning: %s\n", warning.c_str());
    const train::Qwen3Weights weights = train::Qwen3Weights::of(model);
    if (rank0) {
      std::fprintf(stderr, "finetune: %s, %zu training and %zu eval examples, ", path.c_str(), data.train.size(),
                   data.eval.size());
      if (es)
        std::fprintf(stderr, "evolution strategies (population %lld, sigma %g, reward %s) on %s",
                     (long long)es_options.es.population, es_options.es.sigma, es_options.reward.name().c_str(),
                     full ? "every weight" : ("LoRA r " + std::to_string(options.lora.rank) + " on " +
                                              args.string("--targets")).c_str());
      else
        std::fprintf(stderr, "LoRA r %lld alpha %g on %s", (long long)options.lora.rank, options.lora.alpha,
                     args.string("--targets").c_str());
      std::fprintf(stderr, ", %lld steps%s\n", (long long)steps,
                   comm.size() > 1 ? (", " + std::to_string(comm.size()) + " processes").c_str() : "");
    }

    Run run;
    std::unique_ptr<train::Finetuner> tuner;
    std::unique_ptr<train::EsTrainer> evolver;
    train::LoraAdapter es_lora;
    if (!es) {
      tuner = std::make_unique<train::Finetuner>(ctx, weights, std::move(data.train), std::move(data.eval), options, comm);
      run.step = [&](int64_t* tokens) {
        const train::StepResult r = tuner->train_step();
        *tokens += r.tokens;
        return "loss " + std::to_string(r.loss).substr(0, 6);
      };
      if (tuner->has_eval()) run.eval = [&] { return tuner->eval_loss(); };
      run.steps_done = [&] { return tuner->steps_done(); };
      run.save = [&](const std::string& f) { tuner->save(f); };
      run.load = [&](const std::string& f) { tuner->load(f); };
      run.write_output = [&](const std::string& f) { train::write_lora_gguf(f, tuner->adapter(), "qwen3"); };
    } else {
      std::vector<optim::Param> params = full_params;
      if (!full) {
        train::LoraConfig lora = options.lora;
        lora.seed = options.seed;
        es_lora = train::make_lora(ctx, weights, lora);
        params = es_lora.parameters();
      }
      evolver = std::make_unique<train::EsTrainer>(ctx, weights, params, full ? nullptr : &es_lora,
                                                   std::move(data.train), std::move(data.eval), es_options, tokenizer,
                                                   comm);
      run.step = [&](int64_t* tokens) {
        const train::EsStepResult r = evolver->train_step(tokens);
        return "reward mean " + std::to_string(r.mean).substr(0, 7) + " best " + std::to_string(r.best).substr(0, 7);
      };
      if (evolver->has_eval()) run.eval = [&] { return evolver->eval_reward(); };
      run.eval_name = run.summary_name = "eval reward";
      run.steps_done = [&] { return evolver->steps_done(); };
      run.save = [&](const std::string& f) { evolver->save(f); };
      run.load = [&](const std::string& f) { evolver->load(f); };
      run.write_output = [&](const std::string& f) {
        if (!full) return train::write_lora_gguf(f, es_lora, "qwen3");
        std::map<std::string, Array> trained;
        for (const optim::Param& p : full_params) trained.emplace(p.name, p.value);
        write_model_replacing(gguf, trained, f);
      };
    }
    if (args.given("--resume")) {
      run.load(args.string("--resume"));
      if (rank0)
        std::fprintf(stderr, "resumed from %s at step %lld\n", args.string("--resume").c_str(),
                     (long long)run.steps_done());
    }

    const auto start = std::chrono::steady_clock::now();
    const int64_t first = run.steps_done();
    int64_t tokens = 0;
    double eval = NAN;
    bool interrupted = false;
    {
      const StopOnSignal stop_on_signal;
      while (run.steps_done() < steps) {
        const std::string progress = run.step(&tokens);
        const int64_t done = run.steps_done();
        if (run.eval && ((eval_every > 0 && done % eval_every == 0) || done == steps)) eval = run.eval();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double per_step = seconds / double(done - first);
        if (rank0)
          std::fprintf(stderr, "step %lld/%lld  %s  %s %s  %.0f tok/s  ETA %s\n", (long long)done, (long long)steps,
                       progress.c_str(), run.eval_name, std::isnan(eval) ? "-" : std::to_string(eval).substr(0, 6).c_str(),
                       double(tokens) / seconds, duration(per_step * double(steps - done)).c_str());
        if (checkpoint_every > 0 && done % checkpoint_every == 0 && done < steps && rank0) run.save(checkpoint);
        if (any_rank_stopping(comm)) {
          interrupted = true;
          break;
        }
      }
    }
    if (!interrupted && run.eval && std::isnan(eval)) eval = run.eval();  // resumed at the end
    if (rank0) run.save(checkpoint);
    if (interrupted) {
      if (rank0)
        std::fprintf(stderr, "interrupted at step %lld: checkpoint %s (continue with --resume)\n",
                     (long long)run.steps_done(), checkpoint.c_str());
      return kExitInterrupted;
    }
    if (!rank0) return 0;
    run.write_output(output);
    std::printf("%s: %s after %lld steps%s; checkpoint %s\n", output.c_str(),
                full ? "the model trained" : "LoRA adapter", (long long)run.steps_done(),
                run.eval ? (", " + std::string(run.summary_name) + " " + std::to_string(eval)).c_str() : "",
                checkpoint.c_str());
    return 0;
  };
  try {
    return train();
  } catch (const std::exception& e) {
    if (comm.size() == 1) throw;
    std::fprintf(stderr, "tempra finetune: error on rank %d of %d: %s\n", comm.rank(), comm.size(), e.what());
    comm.abort(1);
    throw;
  }
}

}  // namespace tempra::app
