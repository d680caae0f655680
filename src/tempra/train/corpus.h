// tempra/train/corpus.h: text corpora for pretraining: cleaned, deduplicated, split into training
// and validation shards (nanochat's data stage, from texts that ship with Debian and npm).
//
// Contract:
// - clean_text(raw, format) checks that raw is well-formed UTF-8 (tempra::Error naming the byte
//   otherwise), then: CRLF and CR become LF; every line loses its trailing whitespace; runs of
//   blank lines become one; the special tokens' texts (<|endoftext|>, <|im_start|>, <|im_end|>)
//   are removed, so the corpus cannot smuggle them in. Per format:
//     plain: nothing more.
//     rest (reStructuredText, the Python docs' sources): section adornments (a line of one
//       repeated punctuation character, 3 or more) and explicit-markup lines that carry no prose
//       (".. _label:", ".. index::", ".. directive::" with nothing after, "..") are dropped;
//       roles keep their text (":func:`len`" -> "len", ":ref:`the tutorial <tut>`" -> "the
//       tutorial") and inline literals lose their backquotes ("``x``" -> "x").
//     brown (the Brown corpus's tagged files, "word/tag" tokens): the tags are dropped and the
//       words joined as running text: no space before closing punctuation or after an opening
//       quote or bracket, `` and '' as straight double quotes; each sentence (a line) follows the
//       previous one with a space, paragraphs (blank-line separated) stay apart.
// - CorpusBuilder::add(document) cleans it and drops each paragraph (blank-line separated block)
//   whose text, with whitespace runs collapsed, an earlier paragraph already had; a document left
//   empty is dropped. Whether a document goes to validation is a pure function of its cleaned
//   text before deduplication (FNV-1a modulo 10000 against val_fraction), so the split does not
//   depend on order or paths.
// - write(dir) writes train_000.txt, train_001.txt, ... and val_000.txt, ... of at most
//   shard_bytes each (a document never split; one larger than a shard gets a shard of its own),
//   documents in the order added, separated by "<|endoftext|>"; each file written atomically,
//   after removing the train_*.txt and val_*.txt an earlier corpus left there. Throws when no
//   document is left, when the training split is empty, or when the validation split is empty
//   though val_fraction is not 0 (naming it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace tempra::train {

enum class TextFormat { plain, rest, brown };

std::string clean_text(std::string_view raw, TextFormat format);

struct CorpusOptions {
  double val_fraction = 0.05;
  int64_t shard_bytes = int64_t(16) << 20;
};

struct CorpusStats {
  int64_t documents = 0, dropped_documents = 0;  // kept; left empty by cleaning or deduplication
  int64_t paragraphs = 0, duplicate_paragraphs = 0;
  int64_t train_documents = 0, val_documents = 0;
  int64_t train_bytes = 0, val_bytes = 0;
  std::vector<std::filesystem::path> files;  // written
};

class CorpusBuilder {
 public:
  explicit CorpusBuilder(CorpusOptions options);
  // `name` names the document in errors.
  void add(const std::string& name, std::string_view raw, TextFormat format);
  CorpusStats write(const std::filesystem::path& dir);
  const CorpusStats& stats() const { return stats_; }

 private:
  CorpusOptions options_;
  std::vector<std::string> train_, val_;
  std::unordered_set<std::string> seen_;
  CorpusStats stats_;
};

}  // namespace tempra::train
