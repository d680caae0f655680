// The `tempra` executable: a table of subcommands dispatched by name.
//
// Adding a subcommand is one row in subcommands() (name, one-line summary,
// options and positionals) plus its run function. Dispatch, `tempra --help`,
// `tempra <cmd> --help`, `tempra help <cmd>`, usage errors and "did you mean"
// hints all come from the table, so nothing else needs to change.
//
// Exit codes: 0 success, 1 the command failed, 2 the command line was wrong.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "amp.h"
#include "args.h"
#include "bench.h"
#include "build_info.h"
#include "finetune.h"
#include "chat.h"
#include "corpus.h"
#include "generate.h"
#include "info.h"
#include "merge.h"
#include "quantize.h"
#include "tokenize.h"
#include "train.h"
#include "train_tokenizer.h"
#include "serve.h"
#include "synth.h"

namespace {

namespace cli = tempra::cli;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

struct Subcommand {
  cli::Command command;
  int (*run)(const cli::Args&);
};

int run_help(const cli::Args& args);
int run_version(const cli::Args& args);

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> table = {
      {{.name = "help",
        .summary = "List the commands, or show one command's options.",
        .positionals = {{.name = "command", .help = "the command to describe", .required = false}}},
       run_help},
      {{.name = "version", .summary = "Print the version, build flags and the instruction sets compiled in."},
       run_version},
      {{.name = "info",
        .summary = "Describe a GGUF file: version, alignment, metadata and the tensor table.",
        .options = {{.spellings = {"--json"}, .kind = cli::Kind::Flag, .help = "print JSON instead of text"}},
        .positionals = {{.name = "file", .help = "the .gguf file to describe"}}},
       tempra::app::run_info},
      {{.name = "quantize",
        .summary = "Quantize a GGUF model as llama.cpp's llama-quantize does (same tensor types, same bytes).",
        .options = {{.spellings = {"--pure"},
                     .kind = cli::Kind::Flag,
                     .help = "every weight in TYPE's base type: no per-tensor mix (llama-quantize --pure)"},
                    {.spellings = {"-t", "--threads"},
                     .kind = cli::Kind::Int,
                     .help = "encoder threads; 0: TEMPRA_THREADS or the physical cores",
                     .default_value = "0"},
                    {.spellings = {"--progress"},
                     .kind = cli::Kind::Flag,
                     .help = "show progress on stderr even when it is not a terminal"}},
        .positionals = {{.name = "input", .help = "the f32/f16/bf16 .gguf model"},
                        {.name = "output", .help = "the .gguf to write (via a temporary file)"},
                        {.name = "type", .help = "one of " + tempra::app::file_type_names()}}},
       tempra::app::run_quantize},
      {tempra::app::generate_command(), tempra::app::run_generate},
      {tempra::app::chat_command(), tempra::app::run_chat},
      {tempra::app::tokenize_command(), tempra::app::run_tokenize},
      {tempra::app::corpus_command(), tempra::app::run_corpus},
      {tempra::app::train_tokenizer_command(), tempra::app::run_train_tokenizer},
      {tempra::app::synth_command(), tempra::app::run_synth},
      {tempra::app::serve_command(), tempra::app::run_serve},
      {tempra::app::bench_command(), tempra::app::run_bench},
      {tempra::app::amp_command(), tempra::app::run_amp},
      {tempra::app::amp_train_command(), tempra::app::run_amp_train},
      {tempra::app::finetune_command(), tempra::app::run_finetune},
      {tempra::app::train_command(), tempra::app::run_train},
      {tempra::app::merge_command(), tempra::app::run_merge},
  };
  return table;
}

const Subcommand* find_subcommand(const std::string& name) {
  for (const auto& s : subcommands())
    if (s.command.name == name) return &s;
  return nullptr;
}

std::string unknown_command_message(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& s : subcommands()) names.push_back(s.command.name);
  std::string msg = "unknown command '" + name + "'";
  if (auto guess = cli::closest(name, names); !guess.empty()) msg += "; did you mean '" + guess + "'?";
  return msg;
}

std::string usage() {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& s : subcommands()) rows.emplace_back(s.command.name, s.command.summary);
  return "usage: tempra <command> [options] [arguments]\n\ncommands:\n" + cli::align_columns(rows) +
         "\nRun 'tempra <command> --help' for a command's options.\n";
}

int run_help(const cli::Args& args) {
  const std::string& name = args.positional("command");
  if (name.empty()) {
    std::cout << usage();
    return 0;
  }
  const Subcommand* sub = find_subcommand(name);
  if (!sub) throw cli::UsageError(unknown_command_message(name));
  std::cout << cli::help(sub->command, "tempra");
  return 0;
}

int run_version(const cli::Args&) {
  namespace bi = tempra::build_info;
  std::string isa;
  for (const auto& f : bi::isa_features()) isa += (isa.empty() ? "" : " ") + f;
  std::cout << "tempra " << bi::version() << "\n"
            << "build: " << bi::build_flags() << "\n"
            << "isa: " << isa << "\n"
            << "compiler: " << bi::compiler() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::cout << usage();
    return 0;
  }
  // A two-word command ("amp train") before its one-word prefix ("amp").
  const bool two_words = args.size() >= 2 && find_subcommand(args[0] + " " + args[1]) != nullptr;
  const std::string name = two_words ? args[0] + " " + args[1] : args[0];
  const Subcommand* sub = find_subcommand(name);
  if (!sub) {
    std::cerr << "tempra: " << unknown_command_message(name) << "\nRun 'tempra --help' for the list of commands.\n";
    return kExitUsage;
  }
  try {
    const cli::Args parsed = cli::parse(sub->command, {args.begin() + (two_words ? 2 : 1), args.end()});
    if (parsed.help_requested) {
      std::cout << cli::help(sub->command, "tempra");
      return 0;
    }
    return sub->run(parsed);
  } catch (const cli::UsageError& e) {
    std::cerr << "tempra " << name << ": " << e.what() << "\nRun 'tempra " << name << " --help' for usage.\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "tempra " << name << ": error: " << e.what() << "\n";
    return kExitFailure;
  }
}
