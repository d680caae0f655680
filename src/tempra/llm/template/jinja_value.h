// tempra/llm/template/jinja_value.h: the values a chat template computes with, and Python's view of them.
//
// Contract: a Value is what a Jinja expression yields: undefined, none, bool, int, float, string
// (UTF-8 bytes), list, dict (insertion-ordered, string keys), namespace (a mutable dict) or a
// callable (a builtin function or a bound string/dict method). Lists and dicts are shared and
// never mutated once built, except a namespace's attributes through `set ns.x = ...`.
//
// Parity: Python 3 as Jinja2 3.1 sees it. Strings are handled as code points the way Python does
// (len, slicing, strip, split), decoding UTF-8 with surrogateescape so that invalid bytes survive
// a round trip instead of crashing. str()/repr() and json.dumps (ensure_ascii=False, the form
// transformers' `tojson` uses) are reproduced byte for byte, floats included.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tempra::llm::jinja {

struct Value;
using List = std::vector<Value>;
struct Dict;
struct Callable;

struct Value {
  enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, callable };
  Kind kind = Kind::undefined;
  bool boolean = false;
  std::int64_t integer = 0;
  double floating = 0.0;
  std::string string;  // the text of a string; for undefined, the name that was missing
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;
  std::shared_ptr<Callable> callable;
  bool is_tuple = false;  // a list that Python would print as a tuple: (a, b)

  static Value undefined(std::string name = {});
  static Value none();
  static Value from(bool b);
  static Value from(std::int64_t i);
  static Value from(double f);
  static Value from(std::string s);
  static Value from(List items);
  static Value from(Dict d);
  static Value tuple(List items);

  bool is_undefined() const { return kind == Kind::undefined; }
  bool is_none() const { return kind == Kind::none; }
  bool is_string() const { return kind == Kind::string; }
  bool is_number() const { return kind == Kind::integer || kind == Kind::floating; }
  bool is_list() const { return kind == Kind::list; }
  bool is_dict() const { return kind == Kind::dict; }
  double as_double() const { return kind == Kind::integer ? static_cast<double>(integer) : floating; }
};

struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;  // namespace(): attributes may be assigned by `set ns.x = ...`

  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

// A builtin bound to its receiver: "startswith" on a string, "items" on a dict, "namespace"...
struct Callable {
  std::string name;
  Value self;  // undefined for global functions
};

// Python's bool(x); undefined is false.
bool truthy(const Value& v);
// Python's str(x) (what {{ x }} prints; undefined prints as nothing).
std::string to_str(const Value& v);
// Python's repr(x).
std::string repr(const Value& v);
// The type name Python would use in an error message ("str", "int", "list", ...).
std::string type_name(const Value& v);
// json.dumps(v, ensure_ascii=False, indent=indent (<0: none), sort_keys=sort_keys).
// Throws std::invalid_argument naming the type for undefined and callables.
std::string to_json(const Value& v, int indent = -1, bool sort_keys = false);
// Python's == between two values (1 == 1.0, lists and dicts element-wise).
bool equals(const Value& a, const Value& b);

Value from_json(const nlohmann::ordered_json& j);

// Python float repr ("1.0", "1e+20", "0.0001", "1e-05", "inf", "nan").
std::string python_float_repr(double f);

// Code points with surrogateescape (an invalid byte b becomes U+DC00 + b), and back.
std::vector<std::uint32_t> decode_utf8(std::string_view s);
std::string encode_utf8(const std::vector<std::uint32_t>& cps, std::size_t begin, std::size_t end);
void append_utf8(std::string& out, std::uint32_t cp);
// Python's str.isspace() for one code point (also what `\s` matches in Python's re).
bool is_python_space(std::uint32_t cp);
// Python's str.strip/lstrip/rstrip: `chars` null means whitespace.
std::string python_strip(std::string_view s, const std::string* chars, bool left, bool right);

}  // namespace tempra::llm::jinja
