// tempra/llm/template/jinja_parser.cpp: recursive descent over the lexer's tokens.
// Parity: jinja2/parser.py (3.1), method for method (parse_condexpr ... parse_unary, parse_postfix,
// parse_filter_expr, parse_subscribed, parse_test).
#include "tempra/llm/template/jinja_parser.h"

#include <cerrno>
#include <cstdlib>
#include <set>

#include "tempra/llm/template/jinja_lexer.h"

namespace tempra::llm::jinja {
namespace {

// Deep nesting would overflow the C++ stack in both the parser and the evaluator.
constexpr int kMaxNesting = 200;

const std::set<std::string> kKnownEndTags{"elif", "else", "endif", "endfor", "endset", "endgeneration", "endraw"};

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_template() {
    std::string stopped;
    return subparse({}, "", 0, 0, &stopped);
  }

 private:
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int depth_ = 0;

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.fail_here("nesting deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    ~DepthGuard() { --p.depth_; }
  };

  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(std::size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op) const { return cur().type == Token::Type::op && cur().value == op; }
  bool is_name(const char* name) const { return cur().type == Token::Type::name && cur().value == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case Token::Type::text: return "template text";
      case Token::Type::variable_begin: return "'{{'";
      case Token::Type::variable_end: return "end of print statement '}}'";
      case Token::Type::block_begin: return "'{%'";
      case Token::Type::block_end: return "end of statement block '%}'";
      case Token::Type::eof: return "end of template";
      case Token::Type::string: return "string literal";
      default: return "'" + t.value + "'";
    }
  }

  [[noreturn]] void fail_here(const std::string& message) const { fail_at(cur().line, cur().column, message); }
  [[noreturn]] void fail_unexpected(const std::string& expected) const {
    fail_here("expected " + expected + ", got " + describe(cur()));
  }

  void expect_op(const char* op) {
    if (!skip_op(op)) fail_unexpected(std::string("'") + op + "'");
  }
  void expect_block_end() {
    if (cur().type != Token::Type::block_end) fail_unexpected("end of statement block '%}'");
    next();
  }
  std::string expect_name() {
    if (cur().type != Token::Type::name) fail_unexpected("a name");
    return next().value;
  }

  ExprPtr make(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  StmtPtr make_stmt(Stmt::Kind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  // Statements until a block tag named in `end_tags`; the tag's name is consumed, the rest of it
  // is left to the caller. `opener` names the block for the error when the template ends first.
  Body subparse(const std::set<std::string>& end_tags, const std::string& opener, int open_line,
                int open_column, std::string* stopped) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      switch (t.type) {
        case Token::Type::text: {
          auto s = make_stmt(Stmt::Kind::text, t);
          s->text = t.value;
          body.push_back(std::move(s));
          next();
          break;
        }
        case Token::Type::variable_begin: {
          auto s = make_stmt(Stmt::Kind::output, t);
          next();
          s->expr = parse_tuple(true, {});
          if (cur().type != Token::Type::variable_end) fail_unexpected("end of print statement '}}'");
          next();
          body.push_back(std::move(s));
          break;
        }
        case Token::Type::block_begin: {
          next();
          if (cur().type != Token::Type::name) fail_unexpected("a tag name");
          const std::string& tag = cur().value;
          if (end_tags.count(tag)) {
            *stopped = tag;
            next();
            return body;
          }
          if (kKnownEndTags.count(tag))
            fail_here("unexpected tag '" + tag + "'" +
                      (opener.empty() ? std::string(" outside any block")
                                      : " inside '" + opener + "' (line " + std::to_string(open_line) + ")"));
          body.push_back(parse_statement());
          break;
        }
        case Token::Type::eof:
          if (!end_tags.empty())
            fail_at(open_line, open_column,
                    "tag '" + opener + "' is never closed: the template ends before its end tag");
          return body;
        default: fail_unexpected("template text or a tag");
      }
    }
  }

  StmtPtr parse_statement() {
    const Token& at = cur();
    std::string tag = next().value;
    if (tag == "if") return parse_if(at);
    if (tag == "for") return parse_for(at);
    if (tag == "set") return parse_set(at);
    if (tag == "break" || tag == "continue") {
      auto s = make_stmt(tag == "break" ? Stmt::Kind::break_ : Stmt::Kind::continue_, at);
      expect_block_end();
      return s;
    }
    if (tag == "generation") {  // transformers' AssistantTracker: a marker around assistant text
      expect_block_end();
      auto s = make_stmt(Stmt::Kind::if_, at);
      std::string stopped;
      Body body = subparse({"endgeneration"}, "generation", at.line, at.column, &stopped);
      expect_block_end();
      auto yes = make(Expr::Kind::constant, at);
      yes->value = Value::from(true);
      s->branches.emplace_back(std::move(yes), std::move(body));
      return s;
    }
    fail_at(at.line, at.column, "unknown tag '" + tag + "'");
  }

  StmtPtr parse_if(const Token& at) {
    auto s = make_stmt(Stmt::Kind::if_, at);
    while (true) {
      ExprPtr cond = parse_tuple(false, {});
      expect_block_end();
      std::string stopped;
      Body body = subparse({"elif", "else", "endif"}, "if", at.line, at.column, &stopped);
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (stopped == "elif") continue;
      if (stopped == "else") {
        expect_block_end();
        s->else_body = subparse({"endif"}, "if", at.line, at.column, &stopped);
      }
      expect_block_end();
      return s;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    bool paren = skip_op("(");
    do {
      names.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
    return names;
  }

  StmtPtr parse_for(const Token& at) {
    auto s = make_stmt(Stmt::Kind::for_, at);
    s->targets = parse_targets();
    if (!skip_name("in")) fail_unexpected("'in'");
    s->expr = parse_tuple(false, {"recursive"});
    if (skip_name("if")) s->filter = parse_expression(true);
    if (is_name("recursive")) fail_here("recursive for loops are not supported");
    expect_block_end();
    std::string stopped;
    s->body = subparse({"endfor", "else"}, "for", at.line, at.column, &stopped);
    if (stopped == "else") {
      expect_block_end();
      s->else_body = subparse({"endfor"}, "for", at.line, at.column, &stopped);
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(const Token& at) {
    auto s = make_stmt(Stmt::Kind::set, at);
    std::string first = expect_name();
    if (skip_op(".")) {
      s->targets = {first};
      s->attribute = expect_name();
    } else {
      s->targets = {first};
      while (skip_op(",")) s->targets.push_back(expect_name());
    }
    if (skip_op("=")) {
      s->expr = parse_tuple(true, {});
      expect_block_end();
      return s;
    }
    if (s->targets.size() != 1 || !s->attribute.empty()) fail_unexpected("'='");
    expect_block_end();
    s->kind = Stmt::Kind::set_block;
    std::string stopped;
    s->body = subparse({"endset"}, "set", at.line, at.column, &stopped);
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  bool is_tuple_end(const std::vector<std::string>& extra_end) const {
    if (cur().type == Token::Type::variable_end || cur().type == Token::Type::block_end ||
        cur().type == Token::Type::eof || is_op(")"))
      return true;
    for (const auto& name : extra_end)
      if (cur().type == Token::Type::name && cur().value == name) return true;
    return false;
  }

  ExprPtr parse_tuple(bool with_condexpr, const std::vector<std::string>& extra_end, bool explicit_parens = false) {
    const Token& at = cur();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) fail_unexpected("an expression");
    }
    auto e = make(Expr::Kind::list, at);
    e->name = "tuple";
    e->args = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    DepthGuard guard(*this);
    const Token& at = cur();
    ExprPtr expr = parse_or();
    while (skip_name("if")) {
      auto e = make(Expr::Kind::condition, at);
      e->args.push_back(parse_or());
      e->args.push_back(std::move(expr));
      e->args.push_back(skip_name("else") ? parse_condexpr() : nullptr);
      expr = std::move(e);
    }
    return expr;
  }

  ExprPtr binary(const Token& at, std::string op, ExprPtr left, ExprPtr right) {
    auto e = make(Expr::Kind::binary, at);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_or() {
    const Token& at = cur();
    ExprPtr left = parse_and();
    while (skip_name("or")) left = binary(at, "or", std::move(left), parse_and());
    return left;
  }

  ExprPtr parse_and() {
    const Token& at = cur();
    ExprPtr left = parse_not();
    while (skip_name("and")) left = binary(at, "and", std::move(left), parse_not());
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      auto e = make(Expr::Kind::unary, cur());
      next();
      e->name = "not";
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token& at = cur();
    ExprPtr first = parse_math1();
    auto e = make(Expr::Kind::compare, at);
    e->args.push_back(std::move(first));
    while (true) {
      if (cur().type == Token::Type::op &&
          (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
           cur().value == ">" || cur().value == ">=")) {
        e->ops.push_back(next().value);
      } else if (skip_name("in")) {
        e->ops.push_back("in");
      } else if (is_name("not") && peek().type == Token::Type::name && peek().value == "in") {
        next();
        next();
        e->ops.push_back("notin");
      } else {
        break;
      }
      e->args.push_back(parse_math1());
    }
    if (e->ops.empty()) return std::move(e->args[0]);
    return e;
  }

  ExprPtr parse_math1() {
    const Token& at = cur();
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = next().value;
      left = binary(at, op, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    const Token& at = cur();
    ExprPtr left = parse_math2();
    while (skip_op("~")) left = binary(at, "~", std::move(left), parse_math2());
    return left;
  }

  ExprPtr parse_math2() {
    const Token& at = cur();
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().value;
      left = binary(at, op, std::move(left), parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    const Token& at = cur();
    ExprPtr left = parse_unary(true);
    while (skip_op("**")) left = binary(at, "**", std::move(left), parse_unary(true));
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    const Token& at = cur();
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      node = make(Expr::Kind::unary, at);
      node->name = next().value;
      node->args.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& at = cur();
    switch (at.type) {
      case Token::Type::name: {
        next();
        auto e = make(Expr::Kind::constant, at);
        if (at.value == "true" || at.value == "True") e->value = Value::from(true);
        else if (at.value == "false" || at.value == "False") e->value = Value::from(false);
        else if (at.value == "none" || at.value == "None") e->value = Value::none();
        else {
          e->kind = Expr::Kind::name;
          e->name = at.value;
        }
        return e;
      }
      case Token::Type::string: {
        std::string text;
        while (cur().type == Token::Type::string) text += next().value;  // adjacent literals join
        auto e = make(Expr::Kind::constant, at);
        e->value = Value::from(std::move(text));
        return e;
      }
      case Token::Type::integer: {
        next();
        errno = 0;
        long long v = std::strtoll(at.value.c_str(), nullptr, 10);
        if (errno == ERANGE) fail_at(at.line, at.column, "integer literal " + at.value + " is too large");
        auto e = make(Expr::Kind::constant, at);
        e->value = Value::from(static_cast<std::int64_t>(v));
        return e;
      }
      case Token::Type::floating: {
        next();
        auto e = make(Expr::Kind::constant, at);
        e->value = Value::from(std::strtod(at.value.c_str(), nullptr));
        return e;
      }
      case Token::Type::op:
        if (at.value == "(") {
          next();
          ExprPtr e = parse_tuple(true, {}, true);
          expect_op(")");
          return e;
        }
        if (at.value == "[") {
          next();
          auto e = make(Expr::Kind::list, at);
          while (!is_op("]")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("]")) break;
            e->args.push_back(parse_expression(true));
          }
          expect_op("]");
          return e;
        }
        if (at.value == "{") {
          next();
          auto e = make(Expr::Kind::dict, at);
          while (!is_op("}")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("}")) break;
            e->args.push_back(parse_expression(true));
            expect_op(":");
            e->args.push_back(parse_expression(true));
          }
          expect_op("}");
          return e;
        }
        break;
      default: break;
    }
    fail_here("unexpected " + describe(at) + " where an expression should start");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      const Token& at = cur();
      if (skip_op(".")) {
        if (cur().type == Token::Type::name) {
          auto e = make(Expr::Kind::getattr, at);
          e->name = next().value;
          e->args.push_back(std::move(node));
          node = std::move(e);
        } else if (cur().type == Token::Type::integer) {
          auto e = make(Expr::Kind::getitem, at);
          e->args.push_back(std::move(node));
          e->args.push_back(parse_primary());
          node = std::move(e);
        } else {
          fail_unexpected("a name or number after '.'");
        }
      } else if (skip_op("[")) {
        node = parse_subscript(at, std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(const Token& at, ExprPtr node) {
    ExprPtr parts[3];
    bool is_slice = false;
    if (!is_op(":")) parts[0] = parse_expression(true);
    if (skip_op(":")) {
      is_slice = true;
      if (!is_op(":") && !is_op("]")) parts[1] = parse_expression(true);
      if (skip_op(":") && !is_op("]")) parts[2] = parse_expression(true);
    }
    if (is_op(",")) fail_here("tuple subscripts (x[a, b]) are not supported");
    expect_op("]");
    auto e = make(is_slice ? Expr::Kind::slice : Expr::Kind::getitem, at);
    e->args.push_back(std::move(node));
    if (!is_slice) {
      if (!parts[0]) fail_at(at.line, at.column, "empty subscript");
      e->args.push_back(std::move(parts[0]));
    } else {
      for (auto& p : parts) e->args.push_back(std::move(p));
    }
    return e;
  }

  // Arguments of a call, filter or test: positional, then name=value.
  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (cur().type == Token::Type::name && peek().type == Token::Type::op && peek().value == "=") {
        std::string key = next().value;
        next();
        e.kwargs.emplace_back(key, parse_expression(true));
      } else {
        if (!e.kwargs.empty()) fail_here("positional argument after a keyword argument");
        e.args.push_back(parse_expression(true));
      }
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(Expr::Kind::call, cur());
    e->args.push_back(std::move(node));
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      const Token& at = cur();
      if (skip_op("|")) {
        auto e = make(Expr::Kind::filter, at);
        e->name = expect_name();
        e->args.push_back(std::move(node));
        if (is_op("(")) parse_call_args(*e);
        node = std::move(e);
      } else if (skip_name("is")) {
        auto e = make(Expr::Kind::test, at);
        e->negated = skip_name("not");
        e->name = expect_name();
        e->args.push_back(std::move(node));
        if (is_op("(")) {
          parse_call_args(*e);
        } else if ((cur().type == Token::Type::name || cur().type == Token::Type::string ||
                    cur().type == Token::Type::integer || cur().type == Token::Type::floating || is_op("[") ||
                    is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          if (is_name("is")) fail_here("tests cannot be chained with 'is'");
          e->args.push_back(parse_postfix(parse_primary()));
        }
        node = std::move(e);
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }
};

}  // namespace

Body parse(const std::string& source) { return Parser(tokenize(source)).parse_template(); }

}  // namespace tempra::llm::jinja
