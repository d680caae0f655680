// tempra/llm/template/jinja_ast.h: the syntax tree the parser builds and the evaluator walks.
//
// Contract: plain data. An Expr or Stmt owns its children; every node keeps the line and column
// of the token it started at, so evaluation errors can name where they happened.
// Parity: the node kinds of jinja2/nodes.py that chat templates use.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tempra/llm/template/jinja_value.h"

namespace tempra::llm::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    constant,   // value
    name,       // name
    getattr,    // args[0].name
    getitem,    // args[0][args[1]]
    slice,      // args[0][args[1]:args[2]:args[3]] (null parts omitted)
    call,       // args[0](args[1..], kwargs)
    filter,     // args[0] | name(args[1..], kwargs)
    test,       // args[0] is [not] name(args[1..]); negated
    unary,      // op args[0]: "-", "+", "not"
    binary,     // args[0] op args[1]: + - * / // % ** ~ and or
    compare,    // args[0] ops[i] args[i+1]: == != < <= > >= in notin
    condition,  // args[1] if args[0] else args[2] (args[2] null: undefined)
    list,       // [args...]; a tuple (a, b) when name == "tuple"
    dict,       // {kwargs...} with keys as expressions in args (key, value pairs)
  };
  Kind kind;
  int line = 0, column = 0;
  Value value;
  std::string name;
  std::vector<std::string> ops;
  bool negated = false;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    text,       // text
    output,     // {{ expr }}
    if_,        // branches (cond, body); else_body
    for_,       // for targets in expr [if filter] body [else else_body]
    set,        // set targets = expr, or set ns.attr = expr (attribute non-empty)
    set_block,  // {% set name %}body{% endset %}
    break_,
    continue_,
  };
  Kind kind;
  int line = 0, column = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::string> targets;
  std::string attribute;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
};

}  // namespace tempra::llm::jinja
