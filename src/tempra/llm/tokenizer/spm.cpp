// tempra/llm/tokenizer/spm.cpp: see spm.h. The merge loop follows llama.cpp's
// llm_tokenizer_spm_session decision for decision: a queue of candidate pairs, stale entries
// skipped by their recorded size, neighbours re-offered after each merge.
#include "tempra/llm/tokenizer/spm.h"

#include <queue>
#include <utility>

#include "tempra/core/error.h"
#include "tempra/llm/tokenizer/unicode.h"

namespace tempra::llm {
namespace {

// A piece of the text being merged: a run of bytes, linked to its neighbours.
struct Symbol {
  size_t offset = 0, size = 0;  // size 0: merged into its left neighbour
  int prev = -1, next = -1;
};

struct Candidate {
  int left = 0, right = 0;
  float score = 0;
  size_t size = 0;  // the merged text's bytes when offered; a different sum means it is stale
};

// std::priority_queue pops the greatest: the highest score, then the leftmost.
struct Lower {
  bool operator()(const Candidate& l, const Candidate& r) const {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

}  // namespace

SpmModel::SpmModel(const std::vector<std::string>& tokens, std::vector<float> scores) : scores_(std::move(scores)) {
  check(scores_.size() == tokens.size(), "tokenizer", scores_.size(), " scores for ", tokens.size(), " tokens");
  token_ids_.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) token_ids_[tokens[i]] = int32_t(i);
}

int32_t SpmModel::find(std::string_view text) const {
  const auto it = token_ids_.find(text);
  return it == token_ids_.end() ? -1 : it->second;
}

int32_t SpmModel::byte_token(uint8_t byte) const {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const char name[6] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
  int32_t id = find(std::string_view(name, 6));
  if (id < 0) id = find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
  check(id >= 0, "tokenizer", "the vocab has no token for byte 0x", kHex[byte >> 4], kHex[byte & 15]);
  return id;
}

void SpmModel::encode(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  for (size_t offset = 0; offset < text.size();) {
    const size_t size = std::min(utf8_sequence_length(static_cast<unsigned char>(text[offset])), text.size() - offset);
    const int index = int(symbols.size());
    symbols.push_back({offset, size, index - 1, offset + size == text.size() ? -1 : index + 1});
    offset += size;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, Lower> queue;
  const auto offer = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view merged = text.substr(symbols[left].offset, symbols[left].size + symbols[right].size);
    const int32_t id = find(merged);
    if (id < 0) return;
    queue.push({left, right, scores_[size_t(id)], merged.size()});
  };
  for (int i = 1; i < int(symbols.size()); ++i) offer(i - 1, i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol &left = symbols[c.left], &right = symbols[c.right];
    if (left.size == 0 || right.size == 0 || left.size + right.size != c.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    offer(left.prev, c.left);
    offer(c.left, left.next);
  }
  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = text.substr(symbols[i].offset, symbols[i].size);
    const int32_t id = find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (const char byte : piece) out.push_back(byte_token(static_cast<uint8_t>(byte)));
  }
}

}  // namespace tempra::llm
