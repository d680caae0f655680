// apps/tempra/generate.cpp: see generate.h. Flags follow llama.cpp's llama-completion; the
// timing lines are llama-server's.
#include "generate.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "llm_cli.h"
#include "tempra/core/error.h"
#include "tempra/io/atomic_write.h"

namespace tempra::app {
namespace {

using cli::Kind;

// Streams rows of float32 logits, after the .npy header, into `file`: the temporary file of
// io::write_atomically, renamed into place only when every row is in, so a failed run never
// leaves a partial .npy.
class NpyWriter {
 public:
  NpyWriter(std::FILE* file, std::string name, int64_t rows, int64_t cols)
      : file_(file), name_(std::move(name)), rows_(rows), cols_(cols) {
    static_assert(std::endian::native == std::endian::little, "the .npy header says little-endian '<f4'");
    const std::string header = npy_header_f32({rows, cols});
    put(header.data(), header.size());
  }
  void write_rows(int64_t first, const Array& logits) {
    check(first == written_ && logits.dtype() == DType::f32 && logits.rank() == 2 && logits.dim(1) == cols_ &&
              logits.is_contiguous(),
          "logits-out", "unexpected logits block at row ", first, " of shape ", logits.shape());
    put(logits.data<float>(), logits.nbytes());
    written_ += logits.dim(0);
  }
  void finish() const { check(written_ == rows_, "logits-out", "wrote ", written_, " rows of ", rows_); }

 private:
  void put(const void* data, size_t n) {
    if (n != 0 && std::fwrite(data, 1, n, file_) != n)
      fail("logits-out", name_, ": write failed: ", std::strerror(errno));
  }

  std::FILE* file_;
  std::string name_;
  int64_t rows_, cols_, written_ = 0;
};

}  // namespace

std::string npy_header_f32(const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dims.resize(dims.size() - 1 - 1);  // "(2, 3)"; a 1-tuple keeps "(2,)"
  else if (!dims.empty())
    dims.resize(dims.size() - 1);
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // magic (6) + version (2) + length (2) + dict + padding + '\n', a multiple of 64.
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string header("\x93NUMPY\x01\x00", 8);
  header += static_cast<char>(dict.size() & 0xFF);
  header += static_cast<char>(dict.size() >> 8);
  return header + dict;
}

cli::Command generate_command() {
  cli::Command c{.name = "generate",
                 .summary = "Generate text from a prompt (one shot); only the generated text goes to stdout."};
  c.options.push_back(model_option());
  c.options.insert(
      c.options.end(),
      {{.spellings = {"-p", "--prompt"}, .kind = Kind::String, .help = "the prompt text", .metavar = "TEXT"},
       {.spellings = {"-f", "--file"}, .kind = Kind::String, .help = "read the prompt from FILE", .metavar = "FILE"},
       {.spellings = {"--ids"}, .kind = Kind::String, .help = "the prompt as token ids: 1,2,3", .metavar = "IDS"},
       {.spellings = {"--chat"},
        .kind = Kind::Flag,
        .help = "wrap the prompt in the model's chat template (a user message)"},
       {.spellings = {"--system"}, .kind = Kind::String, .help = "with --chat: a system message", .metavar = "TEXT"},
       {.spellings = {"--no-think"},
        .kind = Kind::Flag,
        .help = "with --chat: render the template with thinking disabled"},
       {.spellings = {"--ids-out"},
        .kind = Kind::Flag,
        .help = "print the generated token ids, [a, b, c], instead of the text"},
       {.spellings = {"--logits-out"},
        .kind = Kind::String,
        .help = "write the logits of every prompt position, float32 [n_tokens, n_vocab], as .npy",
        .metavar = "FILE"}});
  for (auto& o : sampling_option_rows()) c.options.push_back(std::move(o));
  for (auto& o : session_option_rows()) c.options.push_back(std::move(o));
  return c;
}

int run_generate(const cli::Args& args) {
  const int sources = int(args.given("--prompt")) + int(args.given("--file")) + int(args.given("--ids"));
  if (sources != 1) throw cli::UsageError("give the prompt as exactly one of -p TEXT, -f FILE or --ids IDS");
  const bool chat = args.flag("--chat");
  if (chat && args.given("--ids")) throw cli::UsageError("--chat needs a text prompt, not --ids");
  if (!chat && (args.given("--system") || args.flag("--no-think")))
    throw cli::UsageError("--system and --no-think apply to --chat only");
  std::vector<int32_t> ids;
  if (args.given("--ids")) ids = parse_ids(args.string("--ids"), "--ids");
  const ExecOptions exec = exec_options(args);
  note_ignored_gpu_options(args);

  std::string text;
  if (!ids.empty()) {
  } else if (args.given("--file")) {
    text = read_file(args.string("--file"));
  } else {
    text = args.string("--prompt");
  }
  if (const auto bad = invalid_utf8_at(text))
    fail("generate", "the prompt is not valid UTF-8 (byte ", *bad, " is 0x", std::hex,
         int(static_cast<unsigned char>(text[*bad])), ")");

  llm::GenerateOptions options = generate_options(args);  // before the load: a bad grammar fails fast
  const LoadedModel m = load_model(args);
  const llm::SessionOptions session_opts = session_options(args, m.model->info());
  if (ids.empty()) {
    if (chat) {
      std::vector<llm::ChatMessage> messages;
      if (args.given("--system")) messages.push_back({.role = "system", .content = args.string("--system")});
      messages.push_back({.role = "user", .content = text});
      llm::ChatPrompt prompt = render_chat_prompt(m, messages, args.flag("--no-think"));
      if (!prompt.warning.empty()) std::cerr << "warning: " << prompt.warning << "\n";
      options.start_in_thinking = prompt.ends_in_thinking;
      ids = std::move(prompt.ids);
    } else {
      ids = m.tokenizer.encode(text, {.parse_special = true, .add_special = true});
    }
    check(!ids.empty(), "generate", "the prompt is empty (no tokens)");
  }
  check(int64_t(ids.size()) <= session_opts.context, "generate", "prompt has ", ids.size(),
        " tokens but the context holds ", session_opts.context);

  ExecContext ctx(exec);
  llm::Session session(ctx, *m.model, session_opts);
  llm::Generator generator(ctx, *m.model, m.tokenizer, session);
  const bool ids_out = args.flag("--ids-out");
  PrefillProgress progress(options.batch);
  llm::GenerateCallbacks callbacks;
  callbacks.on_prefill = [&](int64_t done, int64_t total) { progress(done, total); };
  if (!ids_out)
    callbacks.on_text = [](std::string_view piece, llm::TextKind) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    };
  llm::GenerationResult r;
  const auto run = [&] {
    std::cerr << "prompt: " << ids.size() << " tokens\n";
    r = generator.generate(ids, options, callbacks);
  };
  if (args.given("--logits-out")) {
    io::write_atomically(args.string("--logits-out"), "logits-out", [&](std::FILE* f, const std::string& temp) {
      NpyWriter logits_out(f, temp, int64_t(ids.size()), m.model->info().n_vocab);
      callbacks.on_prompt_logits = [&](int64_t first, const Array& logits) { logits_out.write_rows(first, logits); };
      run();
      logits_out.finish();
    });
  } else {
    run();
  }
  if (ids_out) std::cout << format_ids(r.ids) << "\n" << std::flush;

  std::cerr << "\n";
  if (r.reason == llm::StopReason::context_full)
    std::cerr << "note: the context (" << session_opts.context << " tokens) is full; use -c for a larger one\n";
  std::cerr << "generated " << r.ids.size() << " tokens, stopped by " << llm::to_string(r.reason) << "\n";
  print_timings(std::cerr, r.timings);
  return 0;
}

}  // namespace tempra::app
