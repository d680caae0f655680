// tempra/llm/template/jinja_lexer.cpp: the tokenizer. Parity: jinja2/lexer.py Lexer.tokeniter, with the
// trim_blocks/lstrip_blocks rules of transformers' chat-template environment (see the header).
#include "tempra/llm/template/jinja_lexer.h"

#include <string_view>

#include "tempra/core/error.h"
#include "tempra/llm/template/jinja_value.h"

namespace tempra::llm::jinja {

void fail_at(int line, int column, const std::string& message) {
  fail("chat_template", "line ", line, ", column ", column, ": ", message);
}

namespace {

// Jinja normalizes \r\n and \r to \n and drops one trailing newline (keep_trailing_newline=False).
std::string normalize_newlines(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Length in bytes of the Python-whitespace run (`\s*`) starting at pos.
std::size_t space_run(std::string_view s, std::size_t pos) {
  std::size_t end = pos;
  while (end < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[end]);
    if (c < 0x80) {
      if (!is_python_space(c)) break;
      ++end;
      continue;
    }
    std::size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    auto cps = decode_utf8(s.substr(end, len));
    if (cps.size() != 1 || !is_python_space(cps[0])) break;
    end += len;
  }
  return end - pos;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) : src_(normalize_newlines(source)) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      std::size_t open = find_tag(pos_);
      if (open == std::string::npos) {
        emit(Token::Type::text, src_.substr(pos_), pos_);
        break;
      }
      char kind = src_[open + 1];
      char sign = open + 2 < src_.size() && (src_[open + 2] == '-' || src_[open + 2] == '+') ? src_[open + 2] : 0;
      std::string text = src_.substr(pos_, open - pos_);
      strip_text(text, sign, kind != '{');
      if (!text.empty()) emit(Token::Type::text, text, pos_);
      std::size_t after = open + 2 + (sign ? 1 : 0);
      if (kind == '%' && lex_raw(open, after)) continue;
      if (kind == '#') {
        lex_comment(open, after);
      } else {
        lex_tag(open, after, kind == '%');
      }
    }
    emit(Token::Type::eof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  std::string src_;
  std::vector<std::size_t> line_starts_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  bool line_starting_ = true;  // did the last match end with a newline (lstrip_blocks needs it)

  std::pair<int, int> where(std::size_t offset) const {
    std::size_t line = 0;
    for (std::size_t lo = 0, hi = line_starts_.size(); lo < hi;) {
      std::size_t mid = (lo + hi) / 2;
      if (line_starts_[mid] <= offset) {
        line = mid;
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return {static_cast<int>(line) + 1, static_cast<int>(offset - line_starts_[line]) + 1};
  }

  [[noreturn]] void fail_here(std::size_t offset, const std::string& message) const {
    auto [line, column] = where(offset);
    fail_at(line, column, message);
  }

  void emit(Token::Type type, std::string value, std::size_t offset) {
    auto [line, column] = where(offset);
    tokens_.push_back(Token{type, std::move(value), line, column});
  }

  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return std::string::npos;
  }

  // The whitespace control on the text before a tag: `-` strips all trailing whitespace;
  // otherwise lstrip_blocks drops the indentation of a block or comment tag that starts a line.
  void strip_text(std::string& text, char sign, bool is_block_or_comment) {
    if (sign == '-') {
      text = python_strip(text, nullptr, false, true);
    } else if (sign != '+' && is_block_or_comment) {
      std::size_t nl = text.rfind('\n');
      std::size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && l_pos < text.size() &&
          space_run(text, l_pos) == text.size() - l_pos)
        text.resize(l_pos);
    }
  }

  // `{% raw %}...{% endraw %}`: the body is text. Returns false when the tag is not `raw`.
  bool lex_raw(std::size_t open, std::size_t after) {
    std::size_t p = after + space_run(src_, after);
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    p += space_run(src_, p);
    if (src_.compare(p, 3, "-%}") == 0) {
      p += 3;
      p += space_run(src_, p);
    } else if (src_.compare(p, 2, "%}") == 0) {
      p += 2;
    } else {
      return false;  // e.g. `{% rawx %}`: an ordinary (unknown) tag
    }
    for (std::size_t q = src_.find("{%", p); q != std::string::npos; q = src_.find("{%", q + 1)) {
      char sign = q + 2 < src_.size() && (src_[q + 2] == '-' || src_[q + 2] == '+') ? src_[q + 2] : 0;
      std::size_t r = q + 2 + (sign ? 1 : 0);
      r += space_run(src_, r);
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      r += space_run(src_, r);
      std::size_t end;
      if (src_.compare(r, 3, "+%}") == 0) end = r + 3;
      else if (src_.compare(r, 3, "-%}") == 0) end = r + 3 + space_run(src_, r + 3);
      else if (src_.compare(r, 2, "%}") == 0) end = r + 2 + (r + 2 < src_.size() && src_[r + 2] == '\n' ? 1 : 0);
      else continue;
      line_starting_ = src_[p - 1] == '\n';
      std::string body = src_.substr(p, q - p);
      strip_text(body, sign, true);
      if (!body.empty()) emit(Token::Type::text, body, p);
      line_starting_ = src_[end - 1] == '\n';
      pos_ = end;
      return true;
    }
    fail_here(open, "missing end of raw directive ({% endraw %})");
  }

  void lex_comment(std::size_t open, std::size_t after) {
    std::size_t close = src_.find("#}", after);
    if (close == std::string::npos) fail_here(open, "missing end of comment tag '#}'");
    char sign = close > after && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : 0;
    std::size_t end = close + 2;
    if (sign == '-') end += space_run(src_, end);
    else if (sign == 0 && end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
    line_starting_ = src_[end - 1] == '\n';
    pos_ = end;
  }

  void lex_tag(std::size_t open, std::size_t p, bool block) {
    emit(block ? Token::Type::block_begin : Token::Type::variable_begin, block ? "{%" : "{{", open);
    std::vector<char> balance;
    while (true) {
      p += space_run(src_, p);
      if (p >= src_.size())
        fail_here(open, std::string("unexpected end of template: the tag opened here has no '") +
                            (block ? "%}" : "}}") + "'");
      if (balance.empty()) {
        std::size_t end = 0;
        const char* close = block ? "%}" : "}}";
        if (block && src_.compare(p, 3, "+%}") == 0) end = p + 3;
        else if (src_[p] == '-' && src_.compare(p + 1, 2, close) == 0) end = p + 3 + space_run(src_, p + 3);
        else if (src_.compare(p, 2, close) == 0) {
          end = p + 2;
          if (block && end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
        }
        if (end) {
          emit(block ? Token::Type::block_end : Token::Type::variable_end, close, p);
          line_starting_ = src_[end - 1] == '\n';
          pos_ = end;
          return;
        }
      }
      p = lex_one(p, balance);
    }
  }

  std::size_t lex_one(std::size_t p, std::vector<char>& balance) {
    char c = src_[p];
    if (is_digit(c)) {
      std::size_t q = p;
      auto digits = [&] {
        while (q < src_.size() && (is_digit(src_[q]) || (src_[q] == '_' && q + 1 < src_.size() && is_digit(src_[q + 1])))) ++q;
      };
      digits();
      bool is_float = false;
      if (q + 1 < src_.size() && src_[q] == '.' && is_digit(src_[q + 1])) {
        ++q;
        digits();
        is_float = true;
      }
      if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
        std::size_t e = q + 1;
        if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
        if (e < src_.size() && is_digit(src_[e])) {
          q = e;
          digits();
          is_float = true;
        }
      }
      std::string text;
      for (std::size_t i = p; i < q; ++i)
        if (src_[i] != '_') text += src_[i];
      emit(is_float ? Token::Type::floating : Token::Type::integer, text, p);
      return q;
    }
    if (is_name_start(c)) {
      std::size_t q = p;
      while (q < src_.size() && is_name_char(src_[q])) ++q;
      emit(Token::Type::name, src_.substr(p, q - p), p);
      return q;
    }
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* const two_char_ops[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : two_char_ops)
      if (src_.compare(p, 2, op) == 0) {
        emit(Token::Type::op, op, p);
        return p + 2;
      }
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos)
      fail_here(p, std::string("unexpected character '") + c + "'");
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail_here(p, std::string("unexpected '") + c + "'");
      if (balance.back() != c) fail_here(p, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
      balance.pop_back();
    }
    emit(Token::Type::op, std::string(1, c), p);
    return p + 1;
  }

  std::size_t lex_string(std::size_t p) {
    char quote = src_[p];
    std::size_t q = p + 1;
    while (q < src_.size() && src_[q] != quote) q += src_[q] == '\\' ? 2 : 1;
    if (q >= src_.size()) fail_here(p, "unterminated string literal");
    emit(Token::Type::string, unescape(p + 1, q), p);
    return q + 1;
  }

  // Python's unicode-escape decoding, as jinja applies it to string literals.
  std::string unescape(std::size_t begin, std::size_t end) const {
    std::string out;
    for (std::size_t i = begin; i < end; ++i) {
      if (src_[i] != '\\' || i + 1 >= end) {
        out += src_[i];
        continue;
      }
      char e = src_[++i];
      auto read_hex = [&](std::size_t count) {
        std::uint32_t cp = 0;
        for (std::size_t k = 0; k < count; ++k) {
          int h = i + 1 + k < end ? hex_value(src_[i + 1 + k]) : -1;
          if (h < 0) fail_here(i - 1, "truncated \\" + std::string(1, e) + " escape in string literal");
          cp = cp * 16 + static_cast<std::uint32_t>(h);
        }
        i += count;
        if (cp > 0x10FFFF) fail_here(i - 1, "escape in string literal is past U+10FFFF");
        append_utf8(out, cp);
      };
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case 'a': out += '\a'; break;
        case 'x': read_hex(2); break;
        case 'u': read_hex(4); break;
        case 'U': read_hex(8); break;
        default:
          if (e >= '0' && e <= '7') {
            std::uint32_t cp = static_cast<std::uint32_t>(e - '0');
            for (int k = 0; k < 2 && i + 1 < end && src_[i + 1] >= '0' && src_[i + 1] <= '7'; ++k)
              cp = cp * 8 + static_cast<std::uint32_t>(src_[++i] - '0');
            append_utf8(out, cp);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    return out;
  }
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace tempra::llm::jinja
