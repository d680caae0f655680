// apps/tempra/chat.cpp: see chat.h. The REPL conventions (/exit, /reset, '\' continuation) are
// llama-cli's; the template rendering and prefix reuse are llama-server's.
#include "chat.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "llm_cli.h"
#include "tempra/core/error.h"

namespace tempra::app {
namespace {

using cli::Kind;

// One user turn: lines joined while they end in '\'. False at end of input with nothing read.
bool read_turn(std::string& turn, bool tty) {
  turn.clear();
  std::string line;
  bool any = false;
  while (std::getline(std::cin, line)) {
    any = true;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      turn += line + "\n";
      if (tty) std::cout << ". " << std::flush;
      continue;
    }
    turn += line;
    return true;
  }
  return any;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

// Prints the answer as it streams: thinking dim on a TTY, between its tags otherwise, or hidden.
class AnswerPrinter {
 public:
  AnswerPrinter(bool tty, bool hide_think) : tty_(tty), hide_(hide_think) {}
  void operator()(std::string_view text, llm::TextKind kind) {
    using K = llm::TextKind;
    if (kind == K::content) {
      if (skip_space_) {  // the blank lines that follow a hidden </think>
        const size_t b = text.find_first_not_of(" \n");
        if (b == std::string_view::npos) return;
        text.remove_prefix(b);
        skip_space_ = false;
      }
      put(text);
    } else if (hide_) {
      if (kind == K::think_close) skip_space_ = true;
    } else if (!tty_) {
      put(text);  // the literal tags mark the span
    } else if (kind == K::think_open) {
      put("\033[2m[thinking]");
    } else if (kind == K::thinking) {
      put(text);
    } else {
      put("[/thinking]\033[0m");
    }
  }

 private:
  static void put(std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  }
  bool tty_, hide_;
  bool skip_space_ = false;
};

}  // namespace

cli::Command chat_command() {
  cli::Command c{.name = "chat",
                 .summary = "Chat with a model: reads turns from stdin, streams answers (/exit, /reset)."};
  c.options.push_back(model_option());
  c.options.insert(
      c.options.end(),
      {{.spellings = {"--system"}, .kind = Kind::String, .help = "a system message", .metavar = "TEXT"},
       {.spellings = {"--no-think"}, .kind = Kind::Flag, .help = "render the template with thinking disabled"},
       {.spellings = {"--hide-think"}, .kind = Kind::Flag, .help = "do not print the thinking"}});
  for (auto& o : sampling_option_rows()) c.options.push_back(std::move(o));
  for (auto& o : session_option_rows()) c.options.push_back(std::move(o));
  return c;
}

int run_chat(const cli::Args& args) {
  const ExecOptions exec = exec_options(args);
  note_ignored_gpu_options(args);
  const std::string system = args.given("--system") ? args.string("--system") : std::string();
  if (const auto bad = invalid_utf8_at(system)) fail("chat", "--system is not valid UTF-8 (byte ", *bad, ")");
  const llm::GenerateOptions base_options = generate_options(args);  // before the load: a bad grammar fails fast
  const LoadedModel m = load_model(args);
  const llm::SessionOptions session_opts = session_options(args, m.model->info());
  const bool no_think = args.flag("--no-think");

  ExecContext ctx(exec);
  llm::Session session(ctx, *m.model, session_opts);
  llm::Generator generator(ctx, *m.model, m.tokenizer, session);
  std::vector<llm::ChatMessage> messages;
  if (!system.empty()) messages.push_back({.role = "system", .content = system});
  const size_t n_fixed = messages.size();

  const bool in_tty = ::isatty(STDIN_FILENO) == 1, out_tty = ::isatty(STDOUT_FILENO) == 1;
  if (in_tty) std::cerr << "type a message; a line ending in '\\' continues; /reset, /exit\n";
  bool warned = false;
  std::string turn;
  for (;;) {
    if (in_tty) std::cout << "> " << std::flush;
    if (!read_turn(turn, in_tty)) break;
    const std::string command = trim(turn);
    if (command.empty()) continue;
    if (command == "/exit" || command == "/quit") break;
    if (command == "/reset") {
      messages.resize(n_fixed);
      generator.reset();
      std::cerr << "(conversation reset)\n";
      continue;
    }
    if (const auto bad = invalid_utf8_at(turn)) {
      std::cerr << "error: the message is not valid UTF-8 (byte " << *bad << "); not sent\n";
      continue;
    }
    messages.push_back({.role = "user", .content = turn});
    const llm::ChatPrompt prompt = render_chat_prompt(m, messages, no_think);
    if (!prompt.warning.empty() && !warned) {
      std::cerr << "warning: " << prompt.warning << "\n";
      warned = true;
    }
    const std::vector<int32_t>& ids = prompt.ids;
    if (int64_t(ids.size()) > generator.context()) {
      std::cerr << "error: prompt has " << ids.size() << " tokens but the context holds " << generator.context()
                << "; /reset to start over, or use a larger -c\n";
      messages.pop_back();
      continue;
    }
    llm::GenerateOptions options = base_options;
    options.start_in_thinking = prompt.ends_in_thinking;
    AnswerPrinter printer(out_tty, args.flag("--hide-think"));
    PrefillProgress progress(options.batch);
    const llm::GenerationResult r =
        generator.generate(ids, options,
                           {.on_text = [&](std::string_view t, llm::TextKind k) { printer(t, k); },
                            .on_prefill = [&](int64_t done, int64_t total) { progress(done, total); }});
    std::cout << "\n" << std::flush;
    if (r.reason == llm::StopReason::context_full)
      std::cerr << "note: the context (" << generator.context() << " tokens) is full; /reset to start over\n";
    messages.push_back({.role = "assistant", .content = r.text});
    print_timings(std::cerr, r.timings);
  }
  return 0;
}

}  // namespace tempra::app
