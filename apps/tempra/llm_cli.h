// apps/tempra/llm_cli.h: what `tempra generate`, `tempra chat` and `tempra tokenize` share: their
// option rows, loading a model with its tokenizer and chat template, the sampler settings, the
// progress line and llama.cpp's timing lines.
//
// Contract: the option spellings and defaults are llama.cpp's (common/arg.cpp, common.h) where
// llama.cpp has the option: -m -c -t -b -s --temp --top-k --top-p --min-p --repeat-penalty
// --repeat-last-n --presence-penalty --frequency-penalty --stop, and -ngl / -fa accepted and
// ignored with one line on stderr (a CPU engine). Values out of range throw cli::UsageError
// (exit 2); a model that cannot be loaded throws tempra::Error naming the file (exit 1).
// Everything here writes to stderr only: stdout belongs to the command's result.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "args.h"
#include "tempra/core/exec_context.h"
#include "tempra/core/utf8.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/template/chat_template.h"
#include "tempra/llm/runtime/chat_prompt.h"
#include "tempra/llm/runtime/generator.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/tokenizer/tokenizer.h"

namespace tempra::app {

// The string value of metadata `key`, or "" when it is absent or not a string (the chat template).
std::string nonempty_string(const io::GgufMetadata& m, std::string_view key);
// -m/--model (required).
cli::Option model_option();
// -c -t -b --cache-type -ngl -fa: what a session needs, and the expert streaming rows.
std::vector<cli::Option> session_option_rows();
// --moe-stream --moe-cache-mb --moe-usage --no-moe-prefetch (llm/model/expert_cache.h).
std::vector<cli::Option> expert_stream_option_rows();
// What those rows ask for, for the model at `path`: no streaming without --moe-stream; the
// budget defaults to half of MemAvailable; the usage file to
// $XDG_CACHE_HOME (or ~/.cache)/tempra/expert-usage/<file name>-<size>.json ("none": no file).
llm::LoadOptions load_options(const cli::Args& args, const std::string& path);
// MemAvailable from /proc/meminfo in bytes (0 when it cannot be read).
uint64_t available_memory();
// "12.3 MiB".
std::string mib(uint64_t bytes);
// One line on stderr about a streaming model's expert cache (nothing for other models).
void report_expert_cache(const llm::Model& model);
// -s --temp --top-k --top-p --min-p --repeat-penalty --repeat-last-n --presence-penalty
// --frequency-penalty --stop -n.
std::vector<cli::Option> sampling_option_rows();

struct LoadedModel {
  io::GgufModel gguf;
  std::unique_ptr<llm::Model> model;
  llm::Tokenizer tokenizer;
  std::string chat_template;  // tokenizer.chat_template; "" when the file has none
};

// Opens --model, reports on stderr (one line; a spinner-free "loading ..." first on a TTY).
LoadedModel load_model(const cli::Args& args);
// The tokenizer alone (tokenize needs no weights).
llm::Tokenizer load_tokenizer(const std::string& path);

// A conversation rendered with the model's chat template and tokenized (llm/runtime/chat_prompt.h);
// --no-think sets enable_thinking false.
llm::ChatPrompt render_chat_prompt(const LoadedModel& model, const std::vector<llm::ChatMessage>& messages,
                                   bool no_think);

// Prints the one-line notes for -ngl / -fa when given.
void note_ignored_gpu_options(const cli::Args& args);

ExecOptions exec_options(const cli::Args& args);
// Context (-c, 0: the model's; capped at the model's context length), cache type, batch.
llm::SessionOptions session_options(const cli::Args& args, const llm::ModelInfo& model);
// Sampling, stop strings and -n. A seed of -1 (the default) draws one; it is printed to stderr.
llm::GenerateOptions generate_options(const cli::Args& args);

// "1,2,3", "1 2 3" or "[1, 2, 3]" (llama-tokenize's --ids output) -> ids; UsageError otherwise.
std::vector<int32_t> parse_ids(std::string_view text, std::string_view option);
// "[1, 2, 3]".
std::string format_ids(const std::vector<int32_t>& ids);
// The whole of a file (throws tempra::Error naming it).
std::string read_file(const std::string& path);

// llama-server's lines: "prompt eval time = ...", "eval time = ...", "total time = ...".
void print_timings(std::ostream& out, const llm::GenerationTimings& t);

// The prefill progress: a bar redrawn in place on a TTY, a plain line per batch otherwise (only
// for prompts longer than one batch). Prints nothing for short prompts.
class PrefillProgress {
 public:
  explicit PrefillProgress(int64_t batch);
  void operator()(int64_t done, int64_t total);

 private:
  bool tty_;
  int64_t batch_;
};

}  // namespace tempra::app
