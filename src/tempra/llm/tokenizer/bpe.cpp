// tempra/llm/tokenizer/bpe.cpp: see bpe.h. The merge loop is a priority queue of candidate pairs with lazy
// deletion: a popped pair is applied only if both symbols still have the lengths it was ranked
// with (a symbol only grows by absorbing its right neighbour, so equal lengths mean equal text).
#include "tempra/llm/tokenizer/bpe.h"

#include "tempra/llm/tokenizer/unicode.h"

#include <queue>

namespace tempra::llm {
namespace {

struct Symbol {
  size_t offset;
  size_t length;  // 0 once merged into its left neighbour
  int prev;
  int next;
};

struct Pair {
  int32_t rank;
  int left;
  int right;
  size_t left_length;
  size_t right_length;
};

struct PairAfter {  // the priority queue's "less": lower rank first, then the leftmost
  bool operator()(const Pair& a, const Pair& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

std::string merge_key(std::string_view left, std::string_view right) {
  std::string key;
  key.reserve(left.size() + 1 + right.size());
  key.append(left).push_back('\0');
  key.append(right);
  return key;
}

}  // namespace

BpeModel::BpeModel(const std::vector<std::string>& tokens, const std::vector<std::string>& merges) {
  token_ids_.reserve(tokens.size());
  for (size_t id = 0; id < tokens.size(); ++id) token_ids_.insert_or_assign(tokens[id], int32_t(id));
  merge_ranks_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& merge = merges[i];
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos) continue;  // llama.cpp: an unsplittable merge never applies
    merge_ranks_.emplace(merge_key(std::string_view(merge).substr(0, space), std::string_view(merge).substr(space + 1)),
                         int32_t(i));
  }
}

int32_t BpeModel::find(std::string_view text) const {
  const auto it = token_ids_.find(text);
  return it == token_ids_.end() ? -1 : it->second;
}

int32_t BpeModel::rank(std::string_view left, std::string_view right) const {
  const auto it = merge_ranks_.find(merge_key(left, right));
  return it == merge_ranks_.end() ? -1 : it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  for (size_t offset = 0; offset < word.size();) {
    const size_t length = std::min(word.size() - offset, utf8_sequence_length(static_cast<unsigned char>(word[offset])));
    const int index = int(symbols.size());
    symbols.push_back({offset, length, index - 1, offset + length == word.size() ? -1 : index + 1});
    offset += length;
  }
  const auto text = [&](int i) { return word.substr(symbols[i].offset, symbols[i].length); };

  std::priority_queue<Pair, std::vector<Pair>, PairAfter> queue;
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int32_t r = rank(text(left), text(right));
    if (r >= 0) queue.push({r, left, right, symbols[left].length, symbols[right].length});
  };
  for (int i = 1; i < int(symbols.size()); ++i) consider(i - 1, i);

  while (!queue.empty()) {
    const Pair pair = queue.top();
    queue.pop();
    Symbol& left = symbols[pair.left];
    Symbol& right = symbols[pair.right];
    if (left.length != pair.left_length || right.length != pair.right_length || left.next != pair.right) continue;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = pair.left;
    consider(left.prev, pair.left);
    consider(pair.left, left.next);
  }

  for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    const std::string_view piece = text(i);
    const int32_t id = find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (const char byte : piece) {
      const int32_t byte_id = find(std::string_view(&byte, 1));
      if (byte_id >= 0) out.push_back(byte_id);
    }
  }
}

}  // namespace tempra::llm
