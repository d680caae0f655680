// apps/tempra/corpus.cpp: see corpus.h.
#include "corpus.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "llm_cli.h"
#include "tempra/core/error.h"
#include "tempra/train/corpus.h"

namespace tempra::app {
namespace {

namespace fs = std::filesystem;

// The files of a path: itself, or every regular file below a folder, sorted.
std::vector<fs::path> files_of(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return {fs::path(path)};
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(path))
    if (entry.is_regular_file()) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

bool is_brown_file(const fs::path& p) {
  const std::string n = p.filename().string();
  return n.size() == 4 && std::islower(static_cast<unsigned char>(n[0])) &&
         std::islower(static_cast<unsigned char>(n[1])) && std::isdigit(static_cast<unsigned char>(n[2])) &&
         std::isdigit(static_cast<unsigned char>(n[3]));
}

train::TextFormat format_of(const fs::path& p) {
  const std::string n = p.filename().string();
  return n.ends_with(".rst") || n.ends_with(".rst.txt") ? train::TextFormat::rest : train::TextFormat::plain;
}

}  // namespace

cli::Command corpus_command() {
  return {.name = "corpus",
          .summary = "Clean, deduplicate and split texts into training and validation shards for `tempra train`.",
          .options = {{.spellings = {"--text"},
                       .kind = cli::Kind::StringList,
                       .help = "a text file or a folder of them (*.rst, *.rst.txt: reStructuredText)",
                       .metavar = "PATH"},
                      {.spellings = {"--brown"},
                       .kind = cli::Kind::StringList,
                       .help = "a Brown corpus file or folder (tagged word/tag files: ca01 ... cr09)",
                       .metavar = "PATH"},
                      {.spellings = {"--val-fraction"},
                       .kind = cli::Kind::Float,
                       .help = "the share of documents held out for validation",
                       .default_value = "0.05",
                       .metavar = "F"},
                      {.spellings = {"--shard-mb"},
                       .kind = cli::Kind::Int,
                       .help = "the largest shard, in MiB",
                       .default_value = "16",
                       .metavar = "N"}},
          .positionals = {{.name = "output", .help = "the folder to write the shards into"}}};
}

int run_corpus(const cli::Args& args) {
  const std::vector<std::string>& texts = args.strings("--text");
  const std::vector<std::string>& browns = args.strings("--brown");
  if (texts.empty() && browns.empty()) throw cli::UsageError("give at least one --text or --brown source");
  const double val_fraction = args.number("--val-fraction");
  if (val_fraction < 0 || val_fraction >= 1) throw cli::UsageError("--val-fraction must be in [0, 1)");
  const int64_t shard_mb = args.integer("--shard-mb");
  if (shard_mb < 1 || shard_mb > 4096) throw cli::UsageError("--shard-mb must be between 1 and 4096");

  train::CorpusBuilder builder({.val_fraction = val_fraction, .shard_bytes = shard_mb << 20});
  int64_t files = 0, bytes = 0;
  const auto add = [&](const fs::path& file, train::TextFormat format) {
    const std::string raw = read_file(file.string());
    builder.add(file.string(), raw, format);
    ++files;
    bytes += int64_t(raw.size());
  };
  for (const std::string& t : texts)
    for (const fs::path& f : files_of(t)) add(f, format_of(f));
  for (const std::string& b : browns) {
    const bool folder = fs::is_directory(b);
    for (const fs::path& f : files_of(b))
      if (!folder || is_brown_file(f)) add(f, train::TextFormat::brown);
  }
  const train::CorpusStats s = builder.write(args.positional("output"));
  std::printf(
      "%lld files (%.1f MiB): %lld documents kept, %lld left empty; %lld of %lld paragraphs dropped as "
      "duplicates\n",
      (long long)files, double(bytes) / (1 << 20), (long long)s.documents, (long long)s.dropped_documents,
      (long long)s.duplicate_paragraphs, (long long)s.paragraphs);
  std::printf("train: %lld documents, %.2f MiB; validation: %lld documents, %.2f MiB; %zu shards in %s\n",
              (long long)s.train_documents, double(s.train_bytes) / (1 << 20), (long long)s.val_documents,
              double(s.val_bytes) / (1 << 20), s.files.size(), args.positional("output").c_str());
  return 0;
}

}  // namespace tempra::app
