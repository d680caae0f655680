// tempra/llm/tokenizer/bpe_trainer.cpp: see bpe_trainer.h.
//
// The merge loop keeps, for every adjacent pair of symbols, its weighted count and the words it
// occurs in, plus a max-heap of (count, pair) entries. Entries go stale when a count changes; a
// popped entry counts only if it still equals the pair's count (every change pushes a fresh
// one), so the heap's first valid entry is the most frequent pair, ties to the smaller pair.
#include "tempra/llm/tokenizer/bpe_trainer.h"

#include <algorithm>
#include <queue>
#include <set>

#include "tempra/core/error.h"
#include "tempra/core/utf8.h"
#include "tempra/llm/tokenizer/unicode.h"

namespace tempra::llm {
namespace {

constexpr const char* kOp = "train_bpe";

using Pair = uint64_t;  // left id in the high half, right id in the low: ordered as (left, right)

Pair make_pair(int32_t left, int32_t right) {
  return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}
int32_t left_of(Pair p) {
  return int32_t(p >> 32);
}
int32_t right_of(Pair p) {
  return int32_t(p & 0xffffffffu);
}

struct PairStat {
  int64_t count = 0;
  std::vector<int32_t> words;  // indices of words that held the pair when it was counted (may repeat)
};

struct HeapEntry {
  int64_t count;
  Pair pair;
  // std::priority_queue puts the largest first: the higher count, then the smaller pair.
  bool operator<(const HeapEntry& o) const { return count != o.count ? count < o.count : pair > o.pair; }
};

// The vocab text of bytes: each byte as its code point in the byte-level alphabet.
std::string byte_level_text(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) append_utf8(out, byte_to_codepoint(static_cast<uint8_t>(c)));
  return out;
}

void check_options(const BpeTrainOptions& options) {
  check(!options.specials.empty(), kOp, "no special tokens: the first marks the end of a text");
  std::set<std::string> seen;
  for (const std::string& s : options.specials) {
    check(!s.empty(), kOp, "a special token is empty");
    check(seen.insert(s).second, kOp, "special token '", s, "' is listed twice");
  }
  const int64_t smallest = 256 + int64_t(options.specials.size());
  check(options.vocab_size >= smallest, kOp, "vocab size ", options.vocab_size,
        " is smaller than the 256 byte tokens + ", options.specials.size(), " special tokens (", smallest, ")");
  check(options.min_count >= 1, kOp, "min_count ", options.min_count, " must be at least 1");
}

class MergeState {
 public:
  explicit MergeState(const WordCounts& words) {
    // Sorted, so the run is the same whatever the hash map's order (ties are settled by ids, not
    // by word order, but the stats' word lists should not depend on it either).
    std::vector<std::pair<std::string, int64_t>> sorted(words.counts().begin(), words.counts().end());
    std::sort(sorted.begin(), sorted.end());
    for (auto& [bytes, count] : sorted) {
      std::vector<int32_t> symbols(bytes.size());
      for (size_t i = 0; i < bytes.size(); ++i) symbols[i] = static_cast<uint8_t>(bytes[i]);
      symbols_.push_back(std::move(symbols));
      counts_.push_back(count);
    }
    for (int32_t w = 0; w < int32_t(symbols_.size()); ++w) add_pairs(w);
    for (const auto& [pair, stat] : stats_) heap_.push({stat.count, pair});
  }

  // The most frequent pair and its count, or count 0 when none is left.
  HeapEntry best() {
    while (!heap_.empty()) {
      const HeapEntry top = heap_.top();
      const auto it = stats_.find(top.pair);
      if (it != stats_.end() && it->second.count == top.count) return top;
      heap_.pop();
    }
    return {0, 0};
  }

  // Replaces every occurrence of `pair` by `merged`.
  void merge(Pair pair, int32_t merged) {
    auto node = stats_.extract(pair);
    std::vector<int32_t>& words = node.mapped().words;
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    touched_.clear();
    const int32_t left = left_of(pair), right = right_of(pair);
    for (const int32_t w : words) {
      std::vector<int32_t>& s = symbols_[size_t(w)];
      bool holds = false;
      for (size_t i = 0; i + 1 < s.size() && !holds; ++i) holds = s[i] == left && s[i + 1] == right;
      if (!holds) continue;
      remove_pairs(w);
      std::vector<int32_t> next;
      next.reserve(s.size());
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == left && s[i + 1] == right) {
          next.push_back(merged);
          ++i;
        } else {
          next.push_back(s[i]);
        }
      }
      s = std::move(next);
      add_pairs(w);
    }
    stats_.erase(pair);  // add_pairs cannot recreate it: neither half is left beside the other
    for (const Pair p : touched_)
      if (const auto it = stats_.find(p); it != stats_.end() && it->second.count > 0) heap_.push({it->second.count, p});
  }

 private:
  void add_pairs(int32_t w) {
    const std::vector<int32_t>& s = symbols_[size_t(w)];
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const Pair p = make_pair(s[i], s[i + 1]);
      PairStat& stat = stats_[p];
      stat.count += counts_[size_t(w)];
      stat.words.push_back(w);
      touched_.push_back(p);
    }
  }
  void remove_pairs(int32_t w) {
    const std::vector<int32_t>& s = symbols_[size_t(w)];
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const Pair p = make_pair(s[i], s[i + 1]);
      if (const auto it = stats_.find(p); it != stats_.end()) {
        it->second.count -= counts_[size_t(w)];
        touched_.push_back(p);
      }
    }
  }

  std::vector<std::vector<int32_t>> symbols_;
  std::vector<int64_t> counts_;
  std::unordered_map<Pair, PairStat> stats_;
  std::priority_queue<HeapEntry> heap_;
  std::vector<Pair> touched_;
};

}  // namespace

std::string_view pre_tokenizer_name(PreTokenizer pre) {
  switch (pre) {
    case PreTokenizer::qwen2:
      return "qwen2";
    case PreTokenizer::qwen35:
      return "qwen35";
    case PreTokenizer::llama3:
      return "llama-bpe";
  }
  return "qwen2";
}

WordCounts::WordCounts(PreTokenizer pre, std::vector<std::string> specials)
    : pre_(pre), specials_(std::move(specials)) {
  // Longest first, so a special that contains another is cut out whole.
  std::sort(specials_.begin(), specials_.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const std::string& s : specials_) check(!s.empty(), "WordCounts", "a special token is empty");
}

void WordCounts::add(std::string_view text) {
  if (const auto bad = invalid_utf8_at(text)) fail("WordCounts", "the text is not valid UTF-8 (byte ", *bad, ")");
  // Each special's next occurrence, searched again only when the cut passes it: linear in the
  // text whatever the number of cuts.
  std::vector<size_t> next(specials_.size());
  for (size_t k = 0; k < specials_.size(); ++k) next[k] = text.find(specials_[k]);
  size_t start = 0;
  while (start < text.size()) {
    size_t cut = text.size(), cut_length = 0;
    for (size_t k = 0; k < specials_.size(); ++k) {
      if (next[k] != std::string_view::npos && next[k] < start) next[k] = text.find(specials_[k], start);
      if (next[k] < cut) cut = next[k], cut_length = specials_[k].size();  // longest first wins ties
    }
    add_fragment(text.substr(start, cut - start));
    start = cut + cut_length;
  }
}

void WordCounts::add_fragment(std::string_view fragment) {
  if (fragment.empty()) return;
  const std::vector<uint32_t> cpts = decode_utf8_lenient(fragment);
  size_t byte = 0;
  for (const size_t length : pretokenize(pre_, cpts)) {
    // The fragment is well-formed UTF-8, so each code point's bytes are its sequence length.
    size_t bytes = 0;
    for (size_t i = 0; i < length; ++i)
      bytes += utf8_sequence_length(static_cast<unsigned char>(fragment[byte + bytes]));
    ++counts_[std::string(fragment.substr(byte, bytes))];
    ++total_;
    byte += bytes;
  }
}

TokenizerVocab train_bpe(const WordCounts& words, const BpeTrainOptions& options, const BpeProgress& progress) {
  check_options(options);
  check(!words.counts().empty(), kOp, "the corpus is empty: there are no words to learn merges from");

  std::vector<std::string> token_bytes(256);
  for (int b = 0; b < 256; ++b) token_bytes[size_t(b)] = std::string(1, static_cast<char>(b));
  std::unordered_map<std::string, int32_t> id_of;
  for (int32_t b = 0; b < 256; ++b) id_of[token_bytes[size_t(b)]] = b;

  TokenizerVocab vocab;
  vocab.model = "gpt2";
  vocab.pre = std::string(pre_tokenizer_name(options.pre));
  const size_t regular = size_t(options.vocab_size) - options.specials.size();
  MergeState state(words);
  int32_t merges = 0;
  while (token_bytes.size() < regular) {
    const HeapEntry best = state.best();
    if (best.count < options.min_count) break;
    const int32_t left = left_of(best.pair), right = right_of(best.pair);
    const std::string bytes = token_bytes[size_t(left)] + token_bytes[size_t(right)];
    auto [it, added] = id_of.try_emplace(bytes, int32_t(token_bytes.size()));
    if (added) token_bytes.push_back(bytes);
    vocab.merges.push_back(byte_level_text(token_bytes[size_t(left)]) + " " +
                           byte_level_text(token_bytes[size_t(right)]));
    state.merge(best.pair, it->second);
    ++merges;
    if (progress) progress(merges, best.count);
  }

  for (const std::string& bytes : token_bytes) vocab.tokens.push_back(byte_level_text(bytes));
  vocab.types.assign(vocab.tokens.size(), TokenType::normal);
  for (const std::string& s : options.specials) {
    vocab.tokens.push_back(s);
    vocab.types.push_back(TokenType::control);
  }
  const auto first_special = int32_t(token_bytes.size());
  vocab.bos = vocab.pad = first_special;
  vocab.eos = int32_t(vocab.tokens.size()) - 1;
  vocab.add_bos = false;
  return vocab;
}

}  // namespace tempra::llm
