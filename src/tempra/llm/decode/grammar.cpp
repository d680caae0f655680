// tempra/llm/decode/grammar.cpp: the GBNF parser and its checks.
#include "tempra/llm/decode/grammar.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "tempra/core/error.h"
#include "tempra/llm/tokenizer/unicode.h"

namespace tempra::llm {

bool CharClass::matches(uint32_t c) const {
  if (any) return true;
  bool found = false;
  for (const auto& [low, high] : ranges) found = found || (low <= c && c <= high);
  return found != negated;
}

bool CharClass::may_match_range(uint32_t low, uint32_t high) const {
  if (any) return true;
  for (const auto& [a, b] : ranges)
    if (a <= high && low <= b) return !negated;
  return negated;
}

namespace {

constexpr uint64_t kMaxRepetition = 10000;
constexpr size_t kMaxElements = 4'000'000;  // after rewriting repetitions

using Sequence = std::vector<GrammarElement>;

struct RuleDraft {
  std::string name;
  std::vector<Sequence> alternatives;
  bool defined = false;
};

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Grammar parse(std::string_view root_name) {
    skip_space(true);
    while (!at_end()) parse_rule();
    for (const RuleDraft& rule : rules_)
      if (!rule.defined) fail_plain("undefined rule '", rule.name, "'");
    const auto root = names_.find(std::string(root_name));
    if (root == names_.end()) fail_plain("the grammar has no rule named '", root_name, "'");
    return lower(root->second);
  }

 private:
  // --- errors -----------------------------------------------------------------------------
  template <class... Parts>
  [[noreturn]] void fail_here(const Parts&... parts) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::ostringstream where;
    where << "line " << line << ", column " << column;
    if (!current_rule_.empty()) where << " (rule '" << current_rule_ << "')";
    fail("grammar", where.str(), ": ", parts...);
  }
  template <class... Parts>
  [[noreturn]] void fail_plain(const Parts&... parts) const {
    fail("grammar", parts...);
  }

  // --- characters -------------------------------------------------------------------------
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
      } else if (newline_ok && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_word_char(peek())) ++pos_;
    if (pos_ == start) fail_here("expecting a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  uint64_t parse_int() {
    const size_t start = pos_;
    uint64_t value = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      value = std::min<uint64_t>(value * 10 + uint64_t(peek() - '0'), kMaxRepetition + 1);
      ++pos_;
    }
    if (pos_ == start) fail_here("expecting an integer");
    return value;
  }

  uint32_t parse_hex(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int digit = -1;
      if (c >= '0' && c <= '9') digit = c - '0';
      if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
      if (digit < 0) fail_here("expecting ", digits, " hex digits");
      value = value * 16 + uint32_t(digit);
      ++pos_;
    }
    if (value > 0x10FFFF) fail_here("code point U+", std::hex, value, " is past U+10FFFF");
    return value;
  }

  // One character of a literal or a class: an escape or one UTF-8 sequence.
  uint32_t parse_char() {
    if (at_end()) fail_here("unexpected end of input");
    if (peek() == '\\') {
      const char escape = peek(1);
      pos_ += 2;
      switch (escape) {
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        case 't': return '\t';
        case 'r': return '\r';
        case 'n': return '\n';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-': return uint32_t(escape);
        default: pos_ -= 2; fail_here("unknown escape '\\", escape == '\0' ? std::string() : std::string(1, escape), "'");
      }
    }
    const auto lead = static_cast<unsigned char>(peek());
    const size_t length = lead < 0x80                    ? 1
                          : (lead >= 0xC2 && lead <= 0xDF) ? 2
                          : (lead >= 0xE0 && lead <= 0xEF) ? 3
                          : (lead >= 0xF0 && lead <= 0xF4) ? 4
                                                           : 0;
    if (length == 0) fail_here("invalid UTF-8 byte 0x", std::hex, int(lead));
    if (pos_ + length > text_.size() || !well_formed_utf8_prefix(text_.substr(pos_, length)))
      fail_here("invalid UTF-8 sequence");
    const std::vector<uint32_t> decoded = decode_utf8_lenient(text_.substr(pos_, length));
    pos_ += length;
    return decoded[0];
  }

  // --- rules --------------------------------------------------------------------------------
  uint32_t rule_id(const std::string& name) {
    const auto [it, inserted] = names_.emplace(name, uint32_t(rules_.size()));
    if (inserted) rules_.push_back({name, {}, false});
    return it->second;
  }
  // Helper rules (groups, repetitions) live outside the name table, so they never clash with a
  // rule of the text; lower() makes their printed names unique.
  uint32_t new_helper_rule(const std::string& base) {
    rules_.push_back({base + "-" + std::to_string(++helper_count_), {}, true});
    return uint32_t(rules_.size() - 1);
  }
  uint32_t class_id(CharClass cc) {
    const auto key = std::make_tuple(cc.ranges, cc.negated, cc.any);
    const auto [it, inserted] = class_ids_.emplace(key, uint32_t(classes_.size()));
    if (inserted) classes_.push_back(std::move(cc));
    return it->second;
  }
  GrammarElement char_element(CharClass cc) { return {GrammarElement::Kind::character, class_id(std::move(cc))}; }
  static GrammarElement rule_element(uint32_t id) { return {GrammarElement::Kind::rule, id}; }

  void parse_rule() {
    current_rule_.clear();
    const std::string name = parse_name();
    current_rule_ = name;
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail_here("expecting '::='");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name);
    if (rules_[id].defined) fail_here("rule '", name, "' is defined twice");
    rules_[id].defined = true;  // before its body: a rule may refer to itself
    std::vector<Sequence> alternatives = parse_alternatives(name, false);
    rules_[id].alternatives = std::move(alternatives);
    if (!at_end()) {
      if (peek() == '\r') ++pos_;
      if (peek() == '\n') {
        ++pos_;
      } else if (!at_end()) {
        fail_here("expecting the end of the line, found '", peek(), "'");
      }
    }
    skip_space(true);
  }

  std::vector<Sequence> parse_alternatives(const std::string& rule_name, bool nested) {
    std::vector<Sequence> alternatives;
    alternatives.push_back(parse_sequence(rule_name, nested));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(rule_name, nested));
    }
    return alternatives;
  }

  Sequence parse_sequence(const std::string& rule_name, bool nested) {
    Sequence sequence;
    size_t last_start = 0;  // where the item a repetition applies to starts
    bool have_item = false;
    auto begin_item = [&] {
      last_start = sequence.size();
      have_item = true;
    };
    while (!at_end()) {
      const char c = peek();
      if (c == '"') {
        ++pos_;
        begin_item();
        while (peek() != '"') {
          if (at_end()) fail_here("unterminated literal");
          const uint32_t ch = parse_char();
          sequence.push_back(char_element({{{ch, ch}}, false, false}));
        }
        ++pos_;
        skip_space(nested);
      } else if (c == '[') {
        ++pos_;
        CharClass cc;
        if (peek() == '^') {
          cc.negated = true;
          ++pos_;
        }
        while (peek() != ']') {
          if (at_end()) fail_here("unterminated character class");
          const uint32_t low = parse_char();
          uint32_t high = low;
          if (peek() == '-' && peek(1) != ']') {
            ++pos_;
            if (at_end()) fail_here("unterminated character class");
            high = parse_char();
            if (high < low) fail_here("range end U+", std::hex, high, " is below its start U+", low);
          }
          cc.ranges.emplace_back(low, high);
        }
        ++pos_;
        begin_item();
        sequence.push_back(char_element(std::move(cc)));
        skip_space(nested);
      } else if (c == '<' || c == '!') {
        fail_here("token references ('", c, "...') are not supported: tempra's grammars match text only");
      } else if (is_word_char(c)) {
        const std::string name = parse_name();
        begin_item();
        sequence.push_back(rule_element(rule_id(name)));
        skip_space(nested);
      } else if (c == '(') {
        if (++group_depth_ > kMaxGroupDepth) fail_here("groups nested deeper than ", kMaxGroupDepth, " are not supported");
        ++pos_;
        skip_space(true);
        const uint32_t group = new_helper_rule(rule_name);
        std::vector<Sequence> alternatives = parse_alternatives(rule_name, true);
        rules_[group].alternatives = std::move(alternatives);
        if (peek() != ')') fail_here("expecting ')'");
        ++pos_;
        --group_depth_;
        begin_item();
        sequence.push_back(rule_element(group));
        skip_space(nested);
      } else if (c == '.') {
        ++pos_;
        begin_item();
        sequence.push_back(char_element({{}, false, true}));
        skip_space(nested);
      } else if (c == '*' || c == '+' || c == '?') {
        if (!have_item) fail_here("'", c, "' has nothing before it to repeat");
        ++pos_;
        skip_space(nested);
        const uint64_t unbounded = UINT64_MAX;
        repeat(sequence, last_start, rule_name, c == '+' ? 1 : 0, c == '?' ? 1 : unbounded);
        have_item = false;
      } else if (c == '{') {
        if (!have_item) fail_here("'{' has nothing before it to repeat");
        ++pos_;
        skip_space(nested);
        const uint64_t min = parse_int();
        uint64_t max = min;
        skip_space(nested);
        if (peek() == ',') {
          ++pos_;
          skip_space(nested);
          max = (peek() >= '0' && peek() <= '9') ? parse_int() : UINT64_MAX;
          skip_space(nested);
        }
        if (peek() != '}') fail_here("expecting '}'");
        ++pos_;
        skip_space(nested);
        if (min > kMaxRepetition || (max != UINT64_MAX && max > kMaxRepetition))
          fail_here("repetition counts past ", kMaxRepetition, " are not supported");
        if (max < min) fail_here("repetition {", min, ",", max, "} has its maximum below its minimum");
        repeat(sequence, last_start, rule_name, min, max);
        have_item = false;
      } else {
        break;
      }
    }
    return sequence;
  }

  // Rewrites the item at sequence[start...] as min copies of it followed by helper rules:
  //   x{m,}  -> x...x (m times) R,  R ::= x R |
  //   x{m,n} -> x...x (m times) R1, R1 ::= x R2 | , ..., R(n-m) ::= x |
  // The helpers recurse to the right, so the matcher's stacks stay shallow.
  void repeat(Sequence& sequence, size_t start, const std::string& rule_name, uint64_t min, uint64_t max) {
    const Sequence item(sequence.begin() + std::ptrdiff_t(start), sequence.end());
    sequence.resize(start);
    element_budget(item.size() * std::max<uint64_t>(min, max == UINT64_MAX ? 1 : max));
    for (uint64_t i = 0; i < min; ++i) sequence.insert(sequence.end(), item.begin(), item.end());
    if (max == UINT64_MAX) {
      const uint32_t rest = new_helper_rule(rule_name);
      Sequence again = item;
      again.push_back(rule_element(rest));
      rules_[rest].alternatives = {again, {}};
      sequence.push_back(rule_element(rest));
      return;
    }
    uint32_t next = 0;
    for (uint64_t i = 0; i < max - min; ++i) {  // built from the innermost (last) optional copy out
      const uint32_t optional = new_helper_rule(rule_name);
      Sequence once = item;
      if (i > 0) once.push_back(rule_element(next));
      rules_[optional].alternatives = {once, {}};
      next = optional;
    }
    if (max > min) sequence.push_back(rule_element(next));
  }

  void element_budget(uint64_t more) {
    elements_used_ += more;
    if (elements_used_ > kMaxElements) fail_here("the grammar grows past ", kMaxElements, " elements once its repetitions are written out");
  }

  // --- checks and lowering --------------------------------------------------------------------
  Grammar lower(uint32_t root) {
    check_left_recursion();
    Grammar grammar;
    grammar.classes = std::move(classes_);
    grammar.root = root;
    std::map<std::string, int> printed;  // helper names made unique against the text's
    for (const auto& [name, id] : names_) printed[name] = 1;
    for (RuleDraft& draft : rules_) {
      Grammar::Rule rule{draft.name, {}};
      if (names_.count(draft.name) == 0 || names_.at(draft.name) != uint32_t(grammar.rules.size()))
        while (!printed.emplace(rule.name, 1).second) rule.name += "-h";
      for (const Sequence& alternative : draft.alternatives) {
        rule.alternatives.push_back(uint32_t(grammar.elements.size()));
        grammar.elements.insert(grammar.elements.end(), alternative.begin(), alternative.end());
        grammar.elements.push_back({GrammarElement::Kind::end, 0});
      }
      grammar.rules.push_back(std::move(rule));
    }
    return grammar;
  }

  // A rule that can reach itself without consuming a character would make the matcher loop:
  // refuse it, naming the rule and the path.
  void check_left_recursion() const {
    const size_t n = rules_.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {  // least fixed point: which rules can match ""
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (const Sequence& alternative : rules_[r].alternatives) {
          const bool all = std::all_of(alternative.begin(), alternative.end(), [&](const GrammarElement& e) {
            return e.kind == GrammarElement::Kind::rule && nullable[e.value];
          });
          if (all) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    // Edges r -> s where s can be the first thing r matches.
    std::vector<std::vector<uint32_t>> leftmost(n);
    for (size_t r = 0; r < n; ++r)
      for (const Sequence& alternative : rules_[r].alternatives)
        for (const GrammarElement& e : alternative) {
          if (e.kind != GrammarElement::Kind::rule) break;
          leftmost[r].push_back(e.value);
          if (!nullable[e.value]) break;
        }
    // Depth-first search for a cycle, with an explicit stack (a chain of many rules must not
    // exhaust the call stack): a rule is `active` while it is on the path.
    enum : uint8_t { unvisited, active, done };
    std::vector<uint8_t> mark(n, unvisited);
    std::vector<std::pair<uint32_t, size_t>> path;  // rule, index of its next edge to follow
    for (uint32_t start = 0; start < n; ++start) {
      if (mark[start] != unvisited) continue;
      mark[start] = active;
      path.emplace_back(start, 0);
      while (!path.empty()) {
        auto& [r, edge] = path.back();
        if (edge == leftmost[r].size()) {
          mark[r] = done;
          path.pop_back();
          continue;
        }
        const uint32_t s = leftmost[r][edge++];
        if (mark[s] == active) {
          std::string through;
          auto it = std::find_if(path.begin(), path.end(), [&](const auto& p) { return p.first == s; });
          for (; it != path.end(); ++it) through += "'" + rules_[it->first].name + "' -> ";
          fail_plain("rule '", rules_[s].name, "' is left-recursive: ", through, "'", rules_[s].name, "'");
        }
        if (mark[s] == unvisited) {
          mark[s] = active;
          path.emplace_back(s, 0);
        }
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string current_rule_;
  std::vector<RuleDraft> rules_;
  std::map<std::string, uint32_t> names_;
  std::vector<CharClass> classes_;
  std::map<std::tuple<std::vector<std::pair<uint32_t, uint32_t>>, bool, bool>, uint32_t> class_ids_;
  uint64_t helper_count_ = 0;
  uint64_t elements_used_ = 0;
  static constexpr int kMaxGroupDepth = 256;  // parentheses are parsed by recursion
  int group_depth_ = 0;
};

}  // namespace

Grammar parse_grammar(std::string_view text, std::string_view root) { return Parser(text).parse(root); }

void append_gbnf_char(std::string& out, uint32_t c, bool in_class) {
  static const char* hex = "0123456789ABCDEF";
  if (c == '"' || c == '\\' || (in_class && (c == ']' || c == '[' || c == '-'))) {
    out += '\\';
    out += char(c);
  } else if (c == '\n') {
    out += "\\n";
  } else if (c == '\t') {
    out += "\\t";
  } else if (c == '\r') {
    out += "\\r";
  } else if (c < 0x20 || c == 0x7F || (in_class && c == '^')) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  } else {
    append_utf8(out, c);
  }
}

std::string Grammar::to_gbnf() const {
  std::string out;
  auto print_element = [&](const GrammarElement& e) {
    if (e.kind == GrammarElement::Kind::rule) {
      out += rules[e.value].name;
      return;
    }
    const CharClass& cc = classes[e.value];
    if (cc.any) {
      out += '.';
      return;
    }
    if (!cc.negated && cc.ranges.size() == 1 && cc.ranges[0].first == cc.ranges[0].second) {
      out += '"';
      append_gbnf_char(out, cc.ranges[0].first, false);
      out += '"';
      return;
    }
    out += cc.negated ? "[^" : "[";
    for (const auto& [low, high] : cc.ranges) {
      append_gbnf_char(out, low, true);
      if (high != low) {
        out += '-';
        append_gbnf_char(out, high, true);
      }
    }
    out += ']';
  };
  for (const Rule& rule : rules) {
    out += rule.name + " ::=";
    for (size_t a = 0; a < rule.alternatives.size(); ++a) {
      if (a > 0) out += " |";
      // An empty alternative is spelled "": a bare `|` at the end of a line would continue the rule.
      if (elements[rule.alternatives[a]].kind == GrammarElement::Kind::end) out += " \"\"";
      for (uint32_t i = rule.alternatives[a]; elements[i].kind != GrammarElement::Kind::end; ++i) {
        out += ' ';
        print_element(elements[i]);
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace tempra::llm
