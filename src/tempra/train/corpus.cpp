// tempra/train/corpus.cpp: see corpus.h.
#include "tempra/train/corpus.h"

#include <cctype>
#include <cstdio>
#include <optional>

#include "tempra/core/error.h"
#include "tempra/core/fnv1a.h"
#include "tempra/core/utf8.h"
#include "tempra/io/atomic_write.h"

namespace tempra::train {
namespace {

constexpr const char* kOp = "corpus";
constexpr const char* kSpecials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
constexpr std::string_view kSeparator = "<|endoftext|>";

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A reST section adornment: one punctuation character repeated, at least 3 times.
bool is_adornment(std::string_view line) {
  const std::string_view t = trim(line);
  if (t.size() < 3 || !std::ispunct(static_cast<unsigned char>(t[0]))) return false;
  return t.find_first_not_of(t[0]) == std::string_view::npos;
}

// Explicit markup (a line starting ".."): the prose it carries, or nothing. Comments, targets,
// index entries and directives without an argument carry none; "..  function:: len(s)" carries
// its argument.
std::optional<std::string> explicit_markup(std::string_view line) {
  const std::string_view t = trim(line);
  if (!t.starts_with("..") || (t.size() > 2 && t[2] != ' ')) return std::nullopt;  // not markup
  const size_t colons = t.find("::");
  if (colons == std::string_view::npos || t.starts_with(".. _") || t.starts_with(".. |")) return std::string();
  const std::string_view name = trim(t.substr(2, colons - 2));
  if (name == "index" || name == "highlight" || name == "sectionauthor" || name == "moduleauthor") return std::string();
  return std::string(trim(t.substr(colons + 2)));
}

// ":role:`text <target>`" -> "text"; "``x``" -> "x".
std::string strip_inline_markup(std::string_view line) {
  std::string out;
  size_t i = 0;
  while (i < line.size()) {
    if (line.substr(i).starts_with("``")) {
      const size_t end = line.find("``", i + 2);
      if (end != std::string_view::npos) {
        out += line.substr(i + 2, end - i - 2);
        i = end + 2;
        continue;
      }
    }
    if (line[i] == ':') {  // a role: ":name:`" with name of letters, digits, ':', '-', '+'
      size_t j = i + 1;
      while (j < line.size() &&
             (std::isalnum(static_cast<unsigned char>(line[j])) || line[j] == ':' || line[j] == '-' || line[j] == '+'))
        ++j;
      if (j > i + 2 && line[j - 1] == ':' && j < line.size() && line[j] == '`') {
        const size_t end = line.find('`', j + 1);
        if (end != std::string_view::npos) {
          std::string_view text = line.substr(j + 1, end - j - 1);
          if (!text.empty() && (text[0] == '~' || text[0] == '!')) text.remove_prefix(1);
          if (text.ends_with('>'))
            if (const size_t lt = text.rfind(" <"); lt != std::string_view::npos) text = text.substr(0, lt);
          out += text;
          i = end + 1;
          continue;
        }
      }
    }
    out += line[i++];
  }
  return out;
}

std::string clean_rest(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) {
    if (is_adornment(line)) continue;
    if (const std::optional<std::string> prose = explicit_markup(line)) {
      if (prose->empty()) continue;
      out += strip_inline_markup(*prose) + "\n";
      continue;
    }
    out += strip_inline_markup(line) + "\n";
  }
  return out;
}

bool attaches_left(std::string_view w) {  // no space before it
  return w == "." || w == "," || w == ";" || w == ":" || w == "?" || w == "!" || w == ")" || w == "]" || w == "}" ||
         w == "''" || w == "'" || w == "--" || w == "...";
}
bool attaches_right(std::string_view w) {
  return w == "``" || w == "(" || w == "[" || w == "{" || w == "`";
}

std::string clean_brown(const std::vector<std::string>& lines) {
  std::string out, paragraph;
  const auto flush = [&] {
    if (!paragraph.empty()) out += paragraph + "\n\n";
    paragraph.clear();
  };
  for (const std::string& line : lines) {
    const std::string_view t = trim(line);
    if (t.empty()) {
      flush();
      continue;
    }
    bool glue = paragraph.empty();
    size_t i = 0;
    while (i < t.size()) {
      const size_t end = std::min(t.find_first_of(" \t", i), t.size());
      const std::string_view token = t.substr(i, end - i);
      i = t.find_first_not_of(" \t", end);
      if (i == std::string_view::npos) i = t.size();
      if (token.empty()) continue;
      const size_t slash = token.rfind('/');
      const std::string_view word = slash == std::string_view::npos || slash == 0 ? token : token.substr(0, slash);
      if (!glue && !attaches_left(word)) paragraph += ' ';
      paragraph += word == "``" || word == "''" ? std::string_view("\"") : word;
      glue = attaches_right(word);
    }
  }
  flush();
  return out;
}

void remove_specials(std::string& text) {
  for (bool changed = true; changed;) {
    changed = false;
    for (const char* special : kSpecials)
      for (size_t at; (at = text.find(special)) != std::string::npos; changed = true)
        text.erase(at, std::string_view(special).size());
  }
}

// Trailing whitespace off every line, blank-line runs to one, no blank lines at either end.
std::string tidy(std::string_view text) {
  std::string out;
  bool pending_blank = false;
  for (const std::string& line : split_lines(text)) {
    std::string_view l = line;
    while (!l.empty() && std::isspace(static_cast<unsigned char>(l.back()))) l.remove_suffix(1);
    if (l.empty()) {
      pending_blank = !out.empty();
      continue;
    }
    if (pending_blank) out += "\n";
    pending_blank = false;
    out += l;
    out += "\n";
  }
  return out;
}

std::string collapse_whitespace(std::string_view s) {
  std::string out;
  bool space = false;
  for (const char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::vector<std::filesystem::path> write_shards(const std::filesystem::path& dir, const std::string& prefix,
                                                const std::vector<std::string>& docs, int64_t shard_bytes) {
  std::vector<std::filesystem::path> files;
  std::string shard;
  const auto flush = [&] {
    char name[64];
    std::snprintf(name, sizeof name, "%s_%03zu.txt", prefix.c_str(), files.size());
    const std::filesystem::path path = dir / name;
    io::write_atomically(path, kOp, [&](std::FILE* f, const std::string& name) {
      if (std::fwrite(shard.data(), 1, shard.size(), f) != shard.size()) fail(kOp, name, ": cannot write");
    });
    files.push_back(path);
    shard.clear();
  };
  for (const std::string& doc : docs) {
    if (!shard.empty() && int64_t(shard.size() + kSeparator.size() + doc.size()) > shard_bytes) flush();
    if (!shard.empty()) shard += kSeparator;
    shard += doc;
  }
  if (!shard.empty()) flush();
  return files;
}

}  // namespace

std::string clean_text(std::string_view raw, TextFormat format) {
  if (const auto bad = invalid_utf8_at(raw)) fail(kOp, "the text is not valid UTF-8 (byte ", *bad, ")");
  std::string text;
  text.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r') {
      text += '\n';
      if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
    } else {
      text += raw[i];
    }
  }
  const std::vector<std::string> lines = split_lines(text);
  if (format == TextFormat::rest) text = clean_rest(lines);
  if (format == TextFormat::brown) text = clean_brown(lines);
  remove_specials(text);
  return tidy(text);
}

CorpusBuilder::CorpusBuilder(CorpusOptions options) : options_(options) {
  check(options_.val_fraction >= 0 && options_.val_fraction < 1, kOp, "the validation fraction ", options_.val_fraction,
        " must be in [0, 1)");
  check(options_.shard_bytes >= 1, kOp, "the shard size must be at least 1 byte");
}

void CorpusBuilder::add(const std::string& name, std::string_view raw, TextFormat format) {
  std::string cleaned;
  try {
    cleaned = clean_text(raw, format);
  } catch (const Error& e) {
    fail(kOp, name, ": ", e.what());
  }
  std::string kept;
  size_t start = 0;
  while (start < cleaned.size()) {
    size_t end = cleaned.find("\n\n", start);
    if (end == std::string::npos) end = cleaned.size();
    const std::string_view paragraph = std::string_view(cleaned).substr(start, end - start);
    start = end + 2;
    ++stats_.paragraphs;
    if (!seen_.insert(collapse_whitespace(paragraph)).second) {
      ++stats_.duplicate_paragraphs;
      continue;
    }
    if (!kept.empty()) kept += "\n\n";
    kept += paragraph;
  }
  if (trim(kept).empty()) {
    ++stats_.dropped_documents;
    return;
  }
  if (!kept.ends_with('\n')) kept += '\n';
  ++stats_.documents;
  // The split hashes the cleaned text, before deduplication: which paragraphs survive depends on
  // the documents added earlier, the document itself does not.
  Fnv1a hash;
  hash.mix_bytes(cleaned);
  const bool val = double(hash.value % 10000) < options_.val_fraction * 10000.0;
  (val ? val_ : train_).push_back(std::move(kept));
}

CorpusStats CorpusBuilder::write(const std::filesystem::path& dir) {
  check(stats_.documents > 0, kOp, "no text is left after cleaning and deduplication");
  check(!train_.empty(), kOp, "every document went to validation: lower the validation fraction or add text");
  check(!val_.empty() || options_.val_fraction == 0, kOp,
        "no document went to validation: raise the validation fraction or add documents");
  std::filesystem::create_directories(dir);
  // An earlier corpus's shards would be read as this one's: remove them first.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if ((name.starts_with("train_") || name.starts_with("val_")) && name.ends_with(".txt"))
      std::filesystem::remove(entry.path());
  }
  stats_.train_documents = int64_t(train_.size());
  stats_.val_documents = int64_t(val_.size());
  for (const std::string& d : train_) stats_.train_bytes += int64_t(d.size());
  for (const std::string& d : val_) stats_.val_bytes += int64_t(d.size());
  stats_.files = write_shards(dir, "train", train_, options_.shard_bytes);
  for (const auto& f : write_shards(dir, "val", val_, options_.shard_bytes)) stats_.files.push_back(f);
  return stats_;
}

}  // namespace tempra::train
