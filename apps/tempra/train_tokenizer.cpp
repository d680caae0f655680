// apps/tempra/train_tokenizer.cpp: see train_tokenizer.h.
#include "train_tokenizer.h"

#include <chrono>
#include <cstdio>
#include <iostream>

#include "llm_cli.h"
#include "tempra/core/error.h"
#include "tempra/io/gguf_writer.h"
#include "tempra/llm/template/chat_template.h"
#include "tempra/llm/tokenizer/bpe_trainer.h"

namespace tempra::app {

cli::Command train_tokenizer_command() {
  return {.name = "train-tokenizer",
          .summary = "Learn a byte-level BPE vocab from text and write it as a vocab-only GGUF.",
          .options = {{.spellings = {"-i", "--input"},
                       .kind = cli::Kind::StringList,
                       .help = "a UTF-8 text file to learn from",
                       .required = true,
                       .metavar = "FILE"},
                      {.spellings = {"--vocab-size"},
                       .kind = cli::Kind::Int,
                       .help = "tokens in all: 256 bytes, the merges' tokens and 3 specials",
                       .default_value = "4096"},
                      {.spellings = {"--min-count"},
                       .kind = cli::Kind::Int,
                       .help = "merge no pair seen fewer times",
                       .default_value = "2"},
                      {.spellings = {"--pre"},
                       .kind = cli::Kind::String,
                       .help = "the pre-tokenizer: qwen2 (single digits), llama-bpe (up to 3 digits) or qwen35",
                       .default_value = "qwen2"}},
          .positionals = {{.name = "output", .help = "the vocab .gguf to write"}}};
}

int run_train_tokenizer(const cli::Args& args) {
  llm::BpeTrainOptions options;
  const std::string& pre = args.string("--pre");
  if (pre == "qwen2") {
    options.pre = llm::PreTokenizer::qwen2;
  } else if (pre == "llama-bpe") {
    options.pre = llm::PreTokenizer::llama3;
  } else if (pre == "qwen35") {
    options.pre = llm::PreTokenizer::qwen35;
  } else {
    throw cli::UsageError("--pre must be qwen2, llama-bpe or qwen35, got '" + pre + "'");
  }
  const int64_t vocab_size = args.integer("--vocab-size");
  if (vocab_size < 1 || vocab_size > (int64_t(1) << 24))
    throw cli::UsageError("--vocab-size must be between 1 and 16777216, got " + std::to_string(vocab_size));
  options.vocab_size = int32_t(vocab_size);
  options.min_count = args.integer("--min-count");
  if (options.min_count < 1) throw cli::UsageError("--min-count must be at least 1");

  const auto start = std::chrono::steady_clock::now();
  llm::WordCounts words(options.pre, options.specials);
  int64_t bytes = 0;
  for (const std::string& path : args.strings("--input")) {
    const std::string text = read_file(path);
    try {
      words.add(text);
    } catch (const Error& e) {
      fail("train-tokenizer", path, ": ", e.what());
    }
    bytes += int64_t(text.size());
  }
  std::fprintf(stderr, "train-tokenizer: %lld bytes, %lld words (%zu distinct)\n", static_cast<long long>(bytes),
               static_cast<long long>(words.total_words()), words.counts().size());
  const llm::TokenizerVocab vocab = llm::train_bpe(words, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "train-tokenizer: %zu merges, %zu tokens in %.1f s\n", vocab.merges.size(), vocab.tokens.size(),
               seconds);
  if (int64_t(vocab.tokens.size()) < vocab_size)
    std::fprintf(stderr, "train-tokenizer: no pair is seen %lld times any more: the vocab has %zu tokens, not %lld\n",
                 static_cast<long long>(options.min_count), vocab.tokens.size(), static_cast<long long>(vocab_size));

  io::GgufWriter writer;
  writer.metadata().add("general.name", {std::string("tempra BPE tokenizer")});
  llm::add_tokenizer_metadata(writer.metadata(), vocab, llm::chatml_template_source());
  writer.write(args.positional("output"));
  return 0;
}

}  // namespace tempra::app
