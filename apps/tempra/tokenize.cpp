// apps/tempra/tokenize.cpp: see tokenize.h.
#include "tokenize.h"

#include <iostream>
#include <iterator>
#include <string>

#include "llm_cli.h"
#include "tempra/core/error.h"

namespace tempra::app {

cli::Command tokenize_command() {
  return {
      .name = "tokenize",
      .summary = "Print the token ids of a text under a model's tokenizer.",
      .options = {model_option(),
                  {.spellings = {"-p", "--prompt"}, .kind = cli::Kind::String, .help = "the text", .metavar = "TEXT"},
                  {.spellings = {"--stdin"}, .kind = cli::Kind::Flag, .help = "read the text from standard input"},
                  {.spellings = {"--no-parse-special"},
                   .kind = cli::Kind::Flag,
                   .help = "tokenize special-token text like <|im_start|> as plain text"}}};
}

int run_tokenize(const cli::Args& args) {
  if (args.given("--prompt") == args.flag("--stdin"))
    throw cli::UsageError("give the text as exactly one of -p TEXT or --stdin");
  const std::string text = args.flag("--stdin")
                               ? std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>())
                               : args.string("--prompt");
  if (const auto bad = invalid_utf8_at(text)) fail("tokenize", "the text is not valid UTF-8 (byte ", *bad, ")");
  const llm::Tokenizer tokenizer = load_tokenizer(args.string("--model"));
  const std::vector<int32_t> ids =
      tokenizer.encode(text, {.parse_special = !args.flag("--no-parse-special"), .add_special = true});
  std::cout << format_ids(ids) << "\n";
  return 0;
}

}  // namespace tempra::app
