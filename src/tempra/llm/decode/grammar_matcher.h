// tempra/llm/decode/grammar_matcher.h: which tokens a grammar allows next, over a whole vocabulary.
//
// The matcher is the pushdown automaton of a Grammar (grammar.h), run over code points: a parse
// state is a set of stacks of grammar positions, each stack's top a character element (or the
// empty stack, which means the text so far is a whole sentence of the grammar). States are
// interned: the same set of stacks is the same small integer, so a step (state, character) ->
// state is remembered, and so is the mask of each state.
//
// Contract (the language is llama.cpp's llama_sampler_init_grammar, checked against it token for
// token on Qwen3's vocabulary by tests/llm/grammar_oracle_test.cpp):
// - fill_mask(mask) allows token t exactly when the text accepted so far followed by t's text is a
//   prefix of some sentence of the grammar. A token whose text ends inside a UTF-8 character is
//   allowed when some completion of that character could come next (llama.cpp's rule: for a
//   negated class, only when no excluded character could complete it). An end-of-generation token
//   is allowed exactly when the text so far is a whole sentence with no character left unfinished.
// - Where tempra refuses what llama.cpp allows, on purpose, so constrained output is valid as
//   printed: a token with no text (control tokens, unused ids; llama.cpp matches a control
//   token's spelling, `<|im_start|>`, as text, though generation prints nothing for it); a token
//   whose bytes, after what came before, are not well-formed UTF-8 (llama.cpp's decoder takes
//   0xF8-0xFF as lead bytes and does not check continuation bytes inside a token, so it lets
//   malformed text through any class that admits non-ASCII); a token with a NUL byte (llama.cpp
//   stops reading its text there); the end of generation while a character is unfinished
//   (llama.cpp allows it when the complete characters so far make a sentence).
// - accept(t) advances past t; it returns false and changes nothing when t is not allowed.
// - Bounded: an ambiguous grammar whose parses multiply past 65,536 at once, or whose states
//   or stacks pass 500k / 20M, throws tempra::Error naming the limit (the request fails; nothing
//   hangs).
// - The walk over the vocabulary follows a trie of the tokens' code points from the current
//   state, so a prefix shared by many tokens is matched once and a rejected prefix prunes its
//   whole subtree. A state's mask is kept (a bounded cache), so a grammar that loops through the
//   same state (inside a JSON string, for instance) pays for the walk once.
//
// The vocabulary (GrammarVocab) is immutable and shared by every matcher over one tokenizer; a
// matcher is one generation's state and is not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tempra/llm/decode/grammar.h"
#include "tempra/llm/decode/token_mask.h"

namespace tempra::llm {

class Tokenizer;

// A UTF-8 character still being decoded at the end of a token (llama.cpp's llama_partial_utf8):
// the bits so far and how many continuation bytes are missing; n_remain < 0 marks invalid UTF-8.
struct PartialUtf8 {
  uint32_t value = 0;
  int32_t n_remain = 0;
};

// Decodes `bytes` continuing `start` the way llama.cpp's grammar does: the complete code points,
// and the partial character left at the end. `invalid` is set on a malformed sequence.
struct DecodedPiece {
  std::vector<uint32_t> code_points;
  PartialUtf8 partial;
  bool invalid = false;
};
DecodedPiece decode_piece(std::string_view bytes, PartialUtf8 start = {});

class GrammarVocab {
 public:
  // pieces[id]: the text token id adds to the output ("" for none); eog: end-of-generation ids.
  GrammarVocab(const std::vector<std::string>& pieces, std::span<const int32_t> eog);
  // The tokenizer's pieces as generation prints them (control tokens render as nothing).
  static std::shared_ptr<const GrammarVocab> from_tokenizer(const Tokenizer& tokenizer, std::span<const int32_t> eog);

  int32_t size() const { return int32_t(pieces_.size()); }
  const std::string& piece(int32_t id) const { return pieces_[size_t(id)]; }
  bool is_eog(int32_t id) const { return is_eog_[size_t(id)]; }

 private:
  friend class GrammarMatcher;
  struct Node {
    uint32_t first_child = 0, child_count = 0;  // children are contiguous, ordered by code point
    uint32_t tokens_begin = 0, tokens_end = 0;  // tokens whose text ends exactly here
    uint32_t partial_begin = 0, partial_end = 0;  // tokens ending here plus a partial character
    // The whole subtree's tokens are tokens_[tokens_begin, subtree_tokens_end) (and likewise
    // the partial ones): the lists are laid out in depth-first order.
    uint32_t subtree_tokens_end = 0, subtree_partial_end = 0;
    // The characters on the subtree's edges below this node: ASCII ones as bits, and whether any
    // is beyond ASCII.
    std::array<uint64_t, 2> below_ascii{0, 0};
    bool below_non_ascii = false;
  };
  struct PartialToken {
    int32_t id;
    PartialUtf8 partial;
  };
  std::vector<std::string> pieces_;
  std::vector<bool> is_eog_;
  std::vector<int32_t> eog_;
  std::vector<Node> nodes_;           // nodes_[0] is the root (the empty text)
  std::vector<uint32_t> code_point_;  // of each node: the character on the edge into it
  std::vector<int32_t> tokens_;
  std::vector<PartialToken> partials_;
  std::vector<int32_t> continuation_tokens_;  // texts starting with a UTF-8 continuation byte
};

class GrammarMatcher {
 public:
  GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocab> vocab);

  // The tokens allowed next (mask is resized to the vocabulary).
  void fill_mask(TokenMask& mask);
  // Advances past `id`; false (nothing changed) when the grammar does not allow it.
  bool accept(int32_t id);
  // Whether the text so far is a whole sentence, no character unfinished (the end is allowed).
  bool can_end() const;
  // Whether an end-of-generation token was accepted.
  bool ended() const { return ended_; }

  // The state, to come back to (speculative drafts are checked ahead, then rolled back).
  struct Position {
    uint32_t state;
    PartialUtf8 partial;
    std::string pending;
    bool ended;
  };
  Position position() const { return {state_, partial_, pending_, ended_}; }
  void restore(const Position& position);

  const Grammar& grammar() const { return *grammar_; }

 private:
  static constexpr uint32_t kDead = UINT32_MAX;
  struct StackNode {
    uint32_t parent;  // the stack below; kNoParent for a one-element stack
    uint32_t pos;     // an index into grammar.elements
  };
  struct State {
    std::vector<uint32_t> stacks;              // sorted stack ids; 0 is the empty stack
    std::vector<uint32_t> classes;             // the distinct classes on top of the other stacks
    std::vector<std::vector<uint32_t>> by_class;  // per class: the stacks it tops
    std::vector<std::pair<uint64_t, uint32_t>> next;  // matched-class set -> next state
    std::unordered_map<std::string, uint32_t> wide_next;  // the same past 64 classes
    bool can_end = false;
    // The characters after which the state is itself again (inside a JSON string, say): ASCII
    // ones as bits, and every non-ASCII one or none. Computed at the state's first walk.
    bool loop_known = false;
    std::array<uint64_t, 2> loop_ascii{0, 0};
    bool loop_non_ascii = false;
  };

  uint32_t push(uint32_t stack, uint32_t pos);
  void expand(uint32_t stack, std::vector<uint32_t>& out);
  const std::vector<uint32_t>& after_top(uint32_t stack);
  uint32_t intern_state(std::vector<uint32_t> stacks);
  uint32_t step(uint32_t state, uint32_t code_point);
  bool partial_allowed(uint32_t state, PartialUtf8 partial) const;
  uint32_t walk(uint32_t state, std::span<const uint32_t> code_points);
  bool allowed_after_partial(int32_t id) const;
  void walk_trie(uint32_t node, uint32_t state, TokenMask& mask);
  void find_loop(uint32_t state);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const GrammarVocab> vocab_;
  std::vector<std::array<uint64_t, 2>> ascii_;  // per class: which ASCII characters it matches

  std::vector<StackNode> stack_nodes_;
  std::unordered_map<uint64_t, uint32_t> stack_ids_;
  std::vector<std::vector<uint32_t>> after_top_;  // per stack id: memo of after_top
  std::vector<bool> after_top_done_;
  std::vector<State> states_;
  std::unordered_map<std::string, uint32_t> state_ids_;  // key: the stack ids' bytes
  std::unordered_map<uint32_t, TokenMask> mask_cache_;

  uint32_t state_ = 0;
  PartialUtf8 partial_;
  std::string pending_;  // the bytes of partial_, to check the next token's UTF-8 against
  bool ended_ = false;
};

// A GBNF grammar matcher ready to use: parses `gbnf` (root rule `root`) over `vocab`.
std::unique_ptr<GrammarMatcher> make_grammar_matcher(std::string_view gbnf, std::shared_ptr<const GrammarVocab> vocab);

}  // namespace tempra::llm
