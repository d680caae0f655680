// tempra/llm/template/jinja_builtins.h: what a template can call: filters, tests, string and dict
// methods, global functions, and attribute/item access under the sandbox's rules.
//
// Contract: every function either returns a Value or throws tempra::Error naming the template
// line/column (from `site`) and what was wrong ("filter 'length': object of type 'int' has no
// len()"). Nothing here reaches files, the environment or the process: attributes are dict keys
// and a fixed list of methods; a name starting with '_' that is not a dict key is refused.
// Strings built here never exceed site.max_string_bytes.
//
// Parity: jinja2 3.1 filters.py/tests.py/sandbox.py (ImmutableSandboxedEnvironment: no list or
// dict mutation) and Python's str/dict methods, with transformers' `tojson` (json.dumps with
// ensure_ascii=False, key order kept unless sort_keys).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "tempra/llm/template/jinja_value.h"

namespace tempra::llm::jinja {

struct Site {
  int line = 0, column = 0;
  std::size_t max_string_bytes = 0;
};

struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

[[noreturn]] void fail_site(const Site& site, const std::string& message);

Value get_attribute(const Value& object, const std::string& name, const Site& site);
Value get_item(const Value& object, const Value& key, const Site& site);
Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step, const Site& site);
Value apply_filter(const std::string& name, const Value& input, const Args& args, const Site& site);
bool apply_test(const std::string& name, const Value& input, const Args& args, const Site& site);
// Calls a Callable value (a global function or a bound method).
Value call(const Value& callee, const Args& args, const Site& site);
// The global functions every template sees: namespace, range, dict, raise_exception.
void add_global_functions(Dict& globals);

// Binary operators (+ - * / // % ** ~ and comparisons) with Python's semantics.
Value binary_op(const std::string& op, const Value& a, const Value& b, const Site& site);
bool compare_op(const std::string& op, const Value& a, const Value& b, const Site& site);
// Iteration as Python's `for` sees the value: list items, string code points, dict keys;
// undefined is empty.
List iterate(const Value& v, const Site& site);

}  // namespace tempra::llm::jinja
