// tempra/llm/decode/grammar_matcher.cpp: the pushdown automaton and the walk over the token trie.
#include "tempra/llm/decode/grammar_matcher.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "tempra/core/error.h"
#include "tempra/llm/tokenizer/tokenizer.h"
#include "tempra/llm/tokenizer/unicode.h"

namespace tempra::llm {

namespace {
constexpr size_t kMaskCacheEntries = 256;
constexpr size_t kMaxStates = 500'000;
constexpr size_t kMaxStackNodes = 20'000'000;
// Parses at once: an ambiguous grammar can double them with every character (two alternatives
// that both recurse); past this it is refused rather than growing without bound. (Masks cost
// what the distinct classes on top of the stacks cost, not the stacks: see step().)
constexpr size_t kMaxStacksPerState = 65536;
}  // namespace

DecodedPiece decode_piece(std::string_view bytes, PartialUtf8 start) {
  // llama.cpp's decode_utf8 (src/llama-grammar.cpp), byte for byte: text ends at a NUL; a lead
  // byte's continuation bytes are taken as they come (their top bits are checked only when a
  // character is carried over from the previous token).
  static constexpr int kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4};
  if (const size_t nul = bytes.find('\0'); nul != std::string_view::npos) bytes = bytes.substr(0, nul);
  DecodedPiece out;
  uint32_t value = start.value;
  int32_t n_remain = start.n_remain;
  size_t pos = 0;
  while (pos < bytes.size() && n_remain > 0) {
    const auto byte = static_cast<uint8_t>(bytes[pos]);
    if ((byte >> 6) != 2) {
      out.invalid = true;
      out.partial = {0, -1};
      return out;
    }
    value = (value << 6) + (byte & 0x3F);
    ++pos;
    --n_remain;
  }
  if (start.n_remain > 0 && n_remain == 0) out.code_points.push_back(value);
  while (pos < bytes.size()) {
    const auto first = static_cast<uint8_t>(bytes[pos]);
    n_remain = kLength[first >> 4] - 1;
    if (n_remain < 0) {
      out.code_points.clear();
      out.invalid = true;
      out.partial = {0, n_remain};
      return out;
    }
    value = first & ((1u << (7 - n_remain)) - 1);
    ++pos;
    while (pos < bytes.size() && n_remain > 0) {
      value = (value << 6) + (static_cast<uint8_t>(bytes[pos]) & 0x3F);
      ++pos;
      --n_remain;
    }
    if (n_remain == 0) out.code_points.push_back(value);
  }
  out.partial = {value, n_remain};
  return out;
}

// --- the vocabulary trie ---------------------------------------------------------------------

GrammarVocab::GrammarVocab(const std::vector<std::string>& pieces, std::span<const int32_t> eog)
    : pieces_(pieces), is_eog_(pieces.size(), false) {
  for (int32_t id : eog) {
    check(id >= 0 && size_t(id) < pieces.size(), "grammar", "end-of-generation id ", id, " is outside the vocabulary");
    is_eog_[size_t(id)] = true;
    eog_.push_back(id);
  }
  struct Entry {
    std::vector<uint32_t> code_points;
    int32_t id;
    PartialUtf8 partial;
  };
  std::vector<Entry> entries;
  for (size_t id = 0; id < pieces.size(); ++id) {
    const std::string& piece = pieces[id];
    // Never allowed: no text, a NUL byte (llama.cpp's decoder stops there, so the grammar would
    // not see the rest), or bytes that cannot be part of well-formed UTF-8.
    if (is_eog_[id] || piece.empty() || piece.find('\0') != std::string::npos) continue;
    if ((static_cast<uint8_t>(piece[0]) >> 6) == 2) {  // only ever the end of a character begun earlier
      continuation_tokens_.push_back(int32_t(id));
      continue;
    }
    if (!well_formed_utf8_prefix(piece)) continue;
    DecodedPiece decoded = decode_piece(piece);
    if (decoded.invalid) continue;
    entries.push_back({std::move(decoded.code_points), int32_t(id), decoded.partial});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.code_points < b.code_points; });

  // Entries [lo, hi) share their first `depth` code points: the ones that end there belong to
  // `node`, the rest go to its children, one per next code point, laid out side by side.
  nodes_.emplace_back();
  code_point_.push_back(0);
  auto build = [&](auto&& self, uint32_t node, size_t lo, size_t hi, size_t depth) -> void {
    size_t i = lo;
    nodes_[node].tokens_begin = uint32_t(tokens_.size());
    nodes_[node].partial_begin = uint32_t(partials_.size());
    for (; i < hi && entries[i].code_points.size() == depth; ++i) {
      if (entries[i].partial.n_remain == 0) {
        tokens_.push_back(entries[i].id);
      } else {
        partials_.push_back({entries[i].id, entries[i].partial});
      }
    }
    nodes_[node].tokens_end = uint32_t(tokens_.size());
    nodes_[node].partial_end = uint32_t(partials_.size());
    std::vector<std::pair<size_t, size_t>> groups;
    for (size_t j = i; j < hi;) {
      size_t k = j + 1;
      while (k < hi && entries[k].code_points[depth] == entries[j].code_points[depth]) ++k;
      groups.emplace_back(j, k);
      j = k;
    }
    const uint32_t first = uint32_t(nodes_.size());
    nodes_[node].first_child = first;
    nodes_[node].child_count = uint32_t(groups.size());
    nodes_.resize(nodes_.size() + groups.size());
    for (const auto& [a, b] : groups) code_point_.push_back(entries[a].code_points[depth]);
    for (size_t g = 0; g < groups.size(); ++g) {
      const uint32_t child = first + uint32_t(g);
      self(self, child, groups[g].first, groups[g].second, depth + 1);
      Node& n = nodes_[node];
      const Node& c = nodes_[child];
      const uint32_t cp = code_point_[child];
      if (cp < 128) {
        n.below_ascii[cp >> 6] |= uint64_t(1) << (cp & 63);
      } else {
        n.below_non_ascii = true;
      }
      n.below_ascii[0] |= c.below_ascii[0];
      n.below_ascii[1] |= c.below_ascii[1];
      n.below_non_ascii = n.below_non_ascii || c.below_non_ascii;
    }
    nodes_[node].subtree_tokens_end = uint32_t(tokens_.size());
    nodes_[node].subtree_partial_end = uint32_t(partials_.size());
  };
  build(build, 0, 0, entries.size(), 0);
}

std::shared_ptr<const GrammarVocab> GrammarVocab::from_tokenizer(const Tokenizer& tokenizer,
                                                                 std::span<const int32_t> eog) {
  std::vector<std::string> pieces(size_t(tokenizer.size()));
  for (int32_t id = 0; id < tokenizer.size(); ++id) pieces[size_t(id)] = tokenizer.piece(id, false);
  return std::make_shared<const GrammarVocab>(pieces, eog);
}

// --- the automaton ---------------------------------------------------------------------------

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocab> vocab)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)) {
  check(grammar_ != nullptr && vocab_ != nullptr, "grammar", "a matcher needs a grammar and a vocabulary");
  for (const CharClass& cc : grammar_->classes) {
    std::array<uint64_t, 2> bits{0, 0};
    for (uint32_t c = 0; c < 128; ++c)
      if (cc.matches(c)) bits[c >> 6] |= uint64_t(1) << (c & 63);
    ascii_.push_back(bits);
  }
  stack_nodes_.push_back({0, UINT32_MAX});  // id 0: the empty stack
  std::vector<uint32_t> start;
  for (uint32_t alternative : grammar_->rules[grammar_->root].alternatives) {
    const bool empty = grammar_->elements[alternative].kind == GrammarElement::Kind::end;
    expand(empty ? 0 : push(0, alternative), start);
  }
  state_ = intern_state(std::move(start));
}

uint32_t GrammarMatcher::push(uint32_t stack, uint32_t pos) {
  const uint64_t key = (uint64_t(stack) << 32) | pos;
  const auto [it, inserted] = stack_ids_.emplace(key, uint32_t(stack_nodes_.size()));
  if (inserted) {
    check(stack_nodes_.size() < kMaxStackNodes, "grammar", "the grammar's parse stacks exceed ", kMaxStackNodes,
          " (deeply nested or ambiguous rules)");
    stack_nodes_.push_back({stack, pos});
  }
  return it->second;
}

// Replaces rule calls on top of `stack` by their alternatives until every stack's top is a
// character element (or the stack is empty); appends those stacks to `out`.
void GrammarMatcher::expand(uint32_t stack, std::vector<uint32_t>& out) {
  const auto& elements = grammar_->elements;
  std::vector<uint32_t> todo{stack};
  std::unordered_set<uint32_t> seen;
  while (!todo.empty()) {
    const uint32_t s = todo.back();
    todo.pop_back();
    if (!seen.insert(s).second) continue;
    if (s == 0 || elements[stack_nodes_[s].pos].kind == GrammarElement::Kind::character) {
      out.push_back(s);
      continue;
    }
    const StackNode node = stack_nodes_[s];
    const GrammarElement call = elements[node.pos];
    uint32_t below = node.parent;
    if (elements[node.pos + 1].kind != GrammarElement::Kind::end) below = push(below, node.pos + 1);
    for (uint32_t alternative : grammar_->rules[call.value].alternatives)
      todo.push_back(elements[alternative].kind == GrammarElement::Kind::end ? below : push(below, alternative));
  }
}

// The stacks after `stack`'s top character element has matched a character.
const std::vector<uint32_t>& GrammarMatcher::after_top(uint32_t stack) {
  if (after_top_done_.size() <= stack) {
    after_top_done_.resize(stack_nodes_.size(), false);
    after_top_.resize(stack_nodes_.size());
  }
  if (!after_top_done_[stack]) {
    const StackNode node = stack_nodes_[stack];
    uint32_t rest = node.parent;
    if (grammar_->elements[node.pos + 1].kind != GrammarElement::Kind::end) rest = push(rest, node.pos + 1);
    std::vector<uint32_t> out;
    expand(rest, out);
    if (after_top_done_.size() <= stack) {  // push() may have grown the node table
      after_top_done_.resize(stack_nodes_.size(), false);
      after_top_.resize(stack_nodes_.size());
    }
    after_top_[stack] = std::move(out);
    after_top_done_[stack] = true;
  }
  return after_top_[stack];
}

uint32_t GrammarMatcher::intern_state(std::vector<uint32_t> stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  std::string key(reinterpret_cast<const char*>(stacks.data()), stacks.size() * sizeof(uint32_t));
  const auto [it, inserted] = state_ids_.emplace(std::move(key), uint32_t(states_.size()));
  if (!inserted) return it->second;
  check(states_.size() < kMaxStates, "grammar", "the grammar's parse states exceed ", kMaxStates);
  check(stacks.size() <= kMaxStacksPerState, "grammar", "the grammar is too ambiguous: ", stacks.size(),
        " parses at once (at most ", kMaxStacksPerState, ")");
  State state;
  state.can_end = !stacks.empty() && stacks.front() == 0;
  for (uint32_t s : stacks) {
    if (s == 0) continue;
    const uint32_t cls = grammar_->elements[stack_nodes_[s].pos].value;
    auto at = std::find(state.classes.begin(), state.classes.end(), cls);
    if (at == state.classes.end()) {
      state.classes.push_back(cls);
      state.by_class.emplace_back();
      at = state.classes.end() - 1;
    }
    state.by_class[size_t(at - state.classes.begin())].push_back(s);
  }
  state.stacks = std::move(stacks);
  states_.push_back(std::move(state));
  return it->second;
}

// A step keys its memo by which of the state's distinct top classes match `c`: stacks with the
// same top class move together, so an ambiguous grammar's many stacks cost no more per character
// than their few classes.
uint32_t GrammarMatcher::step(uint32_t state, uint32_t c) {
  const size_t n = states_[state].classes.size();
  auto matches = [&](size_t i) {
    const uint32_t cls = states_[state].classes[i];
    return c < 128 ? bool((ascii_[cls][c >> 6] >> (c & 63)) & 1) : grammar_->classes[cls].matches(c);
  };
  auto union_of = [&](auto&& matched) {
    std::vector<uint32_t> stacks;
    for (size_t i = 0; i < n; ++i)
      if (matched(i))
        for (uint32_t s : states_[state].by_class[i]) {
          const std::vector<uint32_t>& after = after_top(s);
          stacks.insert(stacks.end(), after.begin(), after.end());
        }
    return stacks.empty() ? kDead : intern_state(std::move(stacks));
  };
  if (n > 64) {  // the memo keyed by the matched classes' bits, spelled as bytes
    std::string key((n + 7) / 8, '\0');
    for (size_t i = 0; i < n; ++i)
      if (matches(i)) key[i / 8] = char(key[i / 8] | (1 << (i % 8)));
    if (key.find_first_not_of('\0') == std::string::npos) return kDead;
    if (const auto it = states_[state].wide_next.find(key); it != states_[state].wide_next.end()) return it->second;
    const uint32_t next = union_of([&](size_t i) { return (key[i / 8] >> (i % 8)) & 1; });
    states_[state].wide_next.emplace(std::move(key), next);
    return next;
  }
  uint64_t bits = 0;
  for (size_t i = 0; i < n; ++i)
    if (matches(i)) bits |= uint64_t(1) << i;
  if (bits == 0) return kDead;
  for (const auto& [key, next] : states_[state].next)
    if (key == bits) return next;
  const uint32_t next = union_of([&](size_t i) { return (bits >> i) & 1; });
  states_[state].next.emplace_back(bits, next);
  return next;
}

uint32_t GrammarMatcher::walk(uint32_t state, std::span<const uint32_t> code_points) {
  for (uint32_t c : code_points) {
    if (state == kDead) break;
    state = step(state, c);
  }
  return state;
}

// llama.cpp's llama_grammar_match_partial_char over every stack of the state.
bool GrammarMatcher::partial_allowed(uint32_t state, PartialUtf8 partial) const {
  if (partial.n_remain < 0 || (partial.n_remain == 1 && partial.value < 2)) return false;  // invalid, overlong
  uint32_t low = partial.value << (partial.n_remain * 6);
  const uint32_t high = low | ((1u << (partial.n_remain * 6)) - 1);
  if (low == 0 && partial.n_remain == 2) low = 1u << 11;
  if (low == 0 && partial.n_remain == 3) low = 1u << 16;
  for (uint32_t cls : states_[state].classes)
    if (grammar_->classes[cls].may_match_range(low, high)) return true;
  return false;
}

// Whether a class matches every code point past ASCII, or none of them.
static bool same_beyond_ascii(const CharClass& cc) {
  if (cc.any) return true;
  std::vector<std::pair<uint32_t, uint32_t>> ranges = cc.ranges;
  std::sort(ranges.begin(), ranges.end());
  bool touches = false;
  uint32_t covered = 0x80;  // [0x80, covered) is in the ranges
  for (const auto& [low, high] : ranges) {
    if (high < 0x80) continue;
    touches = true;
    if (low <= covered && high >= covered) covered = high + 1;
  }
  return !touches || covered > 0x10FFFF;
}

// Which characters lead from `state` back to itself. Non-ASCII characters count only when every
// class on top of a stack treats them all alike (all in, or all out), so one of them stands for all.
void GrammarMatcher::find_loop(uint32_t state) {
  std::array<uint64_t, 2> ascii{0, 0};
  for (uint32_t c = 0; c < 128; ++c)
    if (step(state, c) == state) ascii[c >> 6] |= uint64_t(1) << (c & 63);
  bool uniform = true;
  for (uint32_t cls : states_[state].classes) uniform = uniform && same_beyond_ascii(grammar_->classes[cls]);
  const bool non_ascii = uniform && step(state, 0x80) == state;
  State& st = states_[state];
  st.loop_ascii = ascii;
  st.loop_non_ascii = non_ascii;
  st.loop_known = true;
}

void GrammarMatcher::walk_trie(uint32_t node, uint32_t state, TokenMask& mask) {
  const GrammarVocab& v = *vocab_;
  const GrammarVocab::Node& n = v.nodes_[node];
  for (uint32_t child = n.first_child; child < n.first_child + n.child_count; ++child) {
    const uint32_t next = step(state, v.code_point_[child]);
    if (next == kDead) continue;
    const GrammarVocab::Node& c = v.nodes_[child];
    if (!states_[next].loop_known) find_loop(next);
    const State& loop = states_[next];
    if ((c.below_ascii[0] & ~loop.loop_ascii[0]) == 0 && (c.below_ascii[1] & ~loop.loop_ascii[1]) == 0 &&
        (!c.below_non_ascii || loop.loop_non_ascii)) {
      // Every path below stays in `next`: its whole subtree at once.
      for (uint32_t t = c.tokens_begin; t < c.subtree_tokens_end; ++t) mask.allow(v.tokens_[t]);
      for (uint32_t p = c.partial_begin; p < c.subtree_partial_end; ++p)
        if (partial_allowed(next, v.partials_[p].partial)) mask.allow(v.partials_[p].id);
      continue;
    }
    for (uint32_t t = c.tokens_begin; t < c.tokens_end; ++t) mask.allow(v.tokens_[t]);
    for (uint32_t p = c.partial_begin; p < c.partial_end; ++p)
      if (partial_allowed(next, v.partials_[p].partial)) mask.allow(v.partials_[p].id);
    if (c.child_count > 0) walk_trie(child, next, mask);
  }
}

// A token after a character left unfinished by the previous one: decoded from that character on.
bool GrammarMatcher::allowed_after_partial(int32_t id) const {
  auto& self = const_cast<GrammarMatcher&>(*this);  // walking interns states: a cache, not the position
  if (!well_formed_utf8_prefix(pending_ + vocab_->piece(id))) return false;
  const DecodedPiece decoded = decode_piece(vocab_->piece(id), partial_);
  if (decoded.invalid) return false;
  const uint32_t end = self.walk(state_, decoded.code_points);
  if (end == kDead) return false;
  return decoded.partial.n_remain == 0 || partial_allowed(end, decoded.partial);
}

void GrammarMatcher::fill_mask(TokenMask& mask) {
  mask.reset(vocab_->size());
  if (ended_) return;
  if (partial_.n_remain == 0) {
    if (const auto cached = mask_cache_.find(state_); cached != mask_cache_.end()) {
      mask = cached->second;
      return;
    }
    const GrammarVocab::Node& root = vocab_->nodes_[0];
    for (uint32_t p = root.partial_begin; p < root.partial_end; ++p)
      if (partial_allowed(state_, vocab_->partials_[p].partial)) mask.allow(vocab_->partials_[p].id);
    walk_trie(0, state_, mask);
  } else {
    for (int32_t id : vocab_->continuation_tokens_)
      if (allowed_after_partial(id)) mask.allow(id);
  }
  if (can_end())
    for (int32_t id : vocab_->eog_) mask.allow(id);
  if (partial_.n_remain == 0) {
    if (mask_cache_.size() >= kMaskCacheEntries) mask_cache_.clear();
    mask_cache_.emplace(state_, mask);
  }
}

bool GrammarMatcher::can_end() const { return !ended_ && partial_.n_remain == 0 && states_[state_].can_end; }

bool GrammarMatcher::accept(int32_t id) {
  check(id >= 0 && id < vocab_->size(), "grammar", "token ", id, " is outside the vocabulary of ", vocab_->size());
  if (ended_) return false;
  if (vocab_->is_eog(id)) {
    if (!can_end()) return false;
    ended_ = true;
    return true;
  }
  const std::string& piece = vocab_->piece(id);
  if (piece.empty() || piece.find('\0') != std::string::npos) return false;
  std::string text = pending_ + piece;
  if (!well_formed_utf8_prefix(text)) return false;
  const DecodedPiece decoded = decode_piece(piece, partial_);
  if (decoded.invalid) return false;
  const uint32_t end = walk(state_, decoded.code_points);
  if (end == kDead) return false;
  if (decoded.partial.n_remain != 0 && !partial_allowed(end, decoded.partial)) return false;
  state_ = end;
  partial_ = decoded.partial;
  // Keep the bytes of a character the token left unfinished (at most 3).
  pending_.clear();
  if (partial_.n_remain > 0) {
    size_t start = text.size();
    while (start > 0 && (static_cast<uint8_t>(text[start - 1]) >> 6) == 2) --start;
    pending_ = text.substr(start > 0 ? start - 1 : 0);
  }
  return true;
}

void GrammarMatcher::restore(const Position& position) {
  check(position.state < states_.size(), "grammar", "a position from another matcher");
  state_ = position.state;
  partial_ = position.partial;
  pending_ = position.pending;
  ended_ = position.ended;
}

std::unique_ptr<GrammarMatcher> make_grammar_matcher(std::string_view gbnf, std::shared_ptr<const GrammarVocab> vocab) {
  auto grammar = std::make_shared<const Grammar>(parse_grammar(gbnf));
  return std::make_unique<GrammarMatcher>(std::move(grammar), std::move(vocab));
}

}  // namespace tempra::llm
