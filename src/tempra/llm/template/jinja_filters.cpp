// tempra/llm/template/jinja_filters.cpp: the filters (`x | name(...)`) and tests (`x is name`) a template
// may use. Parity: jinja2 3.1 filters.py and tests.py; `tojson` as transformers overrides it
// (json.dumps(x, ensure_ascii=False, indent=indent, sort_keys=sort_keys): no HTML escaping,
// key order kept).
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "tempra/llm/template/jinja_builtins.h"

namespace tempra::llm::jinja {
namespace {

const Value* arg(const Args& args, std::size_t index, const char* name) {
  for (const auto& [k, v] : args.keyword)
    if (k == name) return &v;
  return index < args.positional.size() ? &args.positional[index] : nullptr;
}

void check_size(std::size_t bytes, const Site& site) {
  if (bytes > site.max_string_bytes)
    fail_site(site, "a string of " + std::to_string(bytes) + " bytes exceeds the sandbox limit of " +
                        std::to_string(site.max_string_bytes) + " bytes");
}

bool is_int_like(const Value& v) { return v.kind == Value::Kind::integer || v.kind == Value::Kind::boolean; }
std::int64_t int_of(const Value& v) { return v.kind == Value::Kind::boolean ? (v.boolean ? 1 : 0) : v.integer; }

Value length(const Value& v, const Site& site) {
  switch (v.kind) {
    case Value::Kind::undefined: return Value::from(std::int64_t{0});
    case Value::Kind::string: return Value::from(static_cast<std::int64_t>(decode_utf8(v.string).size()));
    case Value::Kind::list: return Value::from(static_cast<std::int64_t>(v.list->size()));
    case Value::Kind::dict: return Value::from(static_cast<std::int64_t>(v.dict->items.size()));
    default: fail_site(site, "filter 'length': object of type '" + type_name(v) + "' has no len()");
  }
}

std::string ascii_case(std::string s, bool upper) {
  for (char& c : s) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// The item attribute a map/selectattr/join filter reads ("a.b" walks nested keys).
Value attribute_path(const Value& item, const std::string& path, const Site& site) {
  Value v = item;
  std::size_t begin = 0;
  while (true) {
    std::size_t dot = path.find('.', begin);
    std::string part = path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    v = get_item(v, Value::from(part), site);
    if (dot == std::string::npos) return v;
    begin = dot + 1;
  }
}

Value select(const std::string& name, const Value& input, const Args& args, const Site& site) {
  bool by_attribute = name == "selectattr" || name == "rejectattr";
  bool keep_when = name == "select" || name == "selectattr";
  std::size_t first_test_arg = by_attribute ? 1 : 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty() || !args.positional[0].is_string())
      fail_site(site, "filter '" + name + "' needs an attribute name");
    attribute = args.positional[0].string;
  }
  std::string test;
  Args test_args;
  if (args.positional.size() > first_test_arg) {
    if (!args.positional[first_test_arg].is_string()) fail_site(site, "filter '" + name + "': test name must be a string");
    test = args.positional[first_test_arg].string;
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(first_test_arg) + 1, args.positional.end());
  }
  List out;
  for (const Value& item : iterate(input, site)) {
    Value subject = by_attribute ? attribute_path(item, attribute, site) : item;
    bool pass = test.empty() ? truthy(subject) : apply_test(test, subject, test_args, site);
    if (pass == keep_when) out.push_back(item);
  }
  return Value::from(std::move(out));
}

}  // namespace

Value apply_filter(const std::string& name, const Value& input, const Args& args, const Site& site) {
  if (name == "length" || name == "count") return length(input, site);
  if (name == "tojson") {
    const Value* indent = arg(args, 0, "indent");
    const Value* sort_keys = arg(args, 3, "sort_keys");
    const Value* ensure_ascii = arg(args, 1, "ensure_ascii");
    if (ensure_ascii && truthy(*ensure_ascii)) fail_site(site, "filter 'tojson': ensure_ascii=true is not supported");
    if (arg(args, 2, "separators")) fail_site(site, "filter 'tojson': custom separators are not supported");
    if (indent && !indent->is_none() && !is_int_like(*indent)) fail_site(site, "filter 'tojson': indent must be an integer");
    try {
      std::string out = to_json(input, indent && !indent->is_none() ? static_cast<int>(int_of(*indent)) : -1,
                                sort_keys && truthy(*sort_keys));
      check_size(out.size(), site);
      return Value::from(out);
    } catch (const std::invalid_argument& e) {
      fail_site(site, std::string("filter 'tojson': ") + e.what());
    }
  }
  if (name == "trim") {
    const Value* chars = arg(args, 0, "chars");
    std::string set = chars && chars->is_string() ? chars->string : std::string();
    return Value::from(python_strip(to_str(input), chars && chars->is_string() ? &set : nullptr, true, true));
  }
  if (name == "string") return input.is_string() ? input : Value::from(to_str(input));
  if (name == "upper" || name == "lower") return Value::from(ascii_case(to_str(input), name == "upper"));
  if (name == "capitalize") {
    std::string s = ascii_case(to_str(input), false);
    if (!s.empty()) s[0] = ascii_case(s.substr(0, 1), true)[0];
    return Value::from(s);
  }
  if (name == "safe") return input;
  if (name == "first" || name == "last") {
    List items = iterate(input, site);
    if (items.empty()) return Value::undefined("filter '" + name + "' of an empty sequence");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "default" || name == "d") {
    const Value* fallback = arg(args, 0, "default_value");
    const Value* boolean = arg(args, 1, "boolean");
    bool use_fallback = input.is_undefined() || (boolean && truthy(*boolean) && !truthy(input));
    return use_fallback ? (fallback ? *fallback : Value::from(std::string())) : input;
  }
  if (name == "join") {
    const Value* sep = arg(args, 0, "d");
    const Value* attribute = arg(args, 1, "attribute");
    std::string separator = sep ? to_str(*sep) : std::string();
    std::string out;
    bool first = true;
    for (const Value& item : iterate(input, site)) {
      if (!first) out += separator;
      first = false;
      out += to_str(attribute ? attribute_path(item, to_str(*attribute), site) : item);
      check_size(out.size(), site);
    }
    return Value::from(out);
  }
  if (name == "list") return Value::from(iterate(input, site));
  if (name == "items") {
    if (input.is_undefined()) return Value::from(List{});
    if (!input.is_dict()) fail_site(site, "filter 'items': expected a mapping, got " + type_name(input));
    List out;
    for (const auto& [k, v] : input.dict->items) out.push_back(Value::tuple(List{Value::from(k), v}));
    return Value::from(std::move(out));
  }
  if (name == "reverse") {
    if (input.is_string()) return get_slice(input, Value::none(), Value::none(), Value::from(std::int64_t{-1}), site);
    List items = iterate(input, site);
    return Value::from(List(items.rbegin(), items.rend()));
  }
  if (name == "replace") {
    if (!input.is_string()) return apply_filter("replace", Value::from(to_str(input)), args, site);
    Value method = get_attribute(input, "replace", site);
    return call(method, args, site);
  }
  if (name == "int" || name == "float") {
    const Value* fallback = arg(args, 0, "default");
    Value failed = fallback ? *fallback : name == "int" ? Value::from(std::int64_t{0}) : Value::from(0.0);
    double d = 0.0;
    if (is_int_like(input)) d = static_cast<double>(int_of(input));
    else if (input.kind == Value::Kind::floating) d = input.floating;
    else if (input.is_string()) {
      std::string s = python_strip(input.string, nullptr, true, true);
      char* end = nullptr;
      d = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size()) return failed;
    } else {
      return failed;
    }
    if (name == "float") return Value::from(d);
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return failed;
    return Value::from(static_cast<std::int64_t>(d));
  }
  if (name == "abs") {
    if (is_int_like(input)) {
      std::int64_t v = int_of(input);
      if (v == INT64_MIN) fail_site(site, "filter 'abs': integer overflow");
      return Value::from(v < 0 ? -v : v);
    }
    if (input.kind == Value::Kind::floating) return Value::from(std::fabs(input.floating));
    fail_site(site, "filter 'abs': bad operand type '" + type_name(input) + "'");
  }
  if (name == "map") {
    const Value* attribute = arg(args, 99, "attribute");
    List out;
    if (attribute) {
      for (const Value& item : iterate(input, site)) out.push_back(attribute_path(item, to_str(*attribute), site));
      return Value::from(std::move(out));
    }
    if (args.positional.empty() || !args.positional[0].is_string()) fail_site(site, "filter 'map' needs a filter name or attribute=");
    Args rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    for (const Value& item : iterate(input, site)) out.push_back(apply_filter(args.positional[0].string, item, rest, site));
    return Value::from(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") return select(name, input, args, site);
  fail_site(site, "unknown filter '" + name + "'");
}

bool apply_test(const std::string& name, const Value& input, const Args& args, const Site& site) {
  using K = Value::Kind;
  const Value* other = arg(args, 0, "other");
  if (name == "defined") return !input.is_undefined();
  if (name == "undefined") return input.is_undefined();
  if (name == "none") return input.is_none();
  if (name == "string") return input.is_string();
  if (name == "boolean") return input.kind == K::boolean;
  if (name == "true") return input.kind == K::boolean && input.boolean;
  if (name == "false") return input.kind == K::boolean && !input.boolean;
  if (name == "number") return input.is_number() || input.kind == K::boolean;  // Python: bool is a Number
  if (name == "integer") return input.kind == K::integer;
  if (name == "float") return input.kind == K::floating;
  if (name == "mapping") return input.is_dict() && !input.dict->is_namespace;
  if (name == "iterable") return input.is_string() || input.is_list() || input.is_undefined() || (input.is_dict() && !input.dict->is_namespace);
  if (name == "sequence") return input.is_string() || input.is_list() || (input.is_dict() && !input.dict->is_namespace);
  if (name == "callable") return input.kind == K::callable;
  if (name == "lower" || name == "upper") {
    std::string s = to_str(input);
    return s == ascii_case(s, name == "upper");
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!is_int_like(input)) fail_site(site, "test '" + name + "' needs an integer, got " + type_name(input));
    std::int64_t v = int_of(input);
    if (name == "divisibleby") {
      const Value* n = arg(args, 0, "num");
      if (!n || !is_int_like(*n) || int_of(*n) == 0) fail_site(site, "test 'divisibleby' needs a non-zero integer");
      return v % int_of(*n) == 0;
    }
    return (v % 2 != 0) == (name == "odd");
  }
  static const std::pair<const char*, const char*> comparisons[] = {
      {"eq", "=="}, {"equalto", "=="}, {"==", "=="}, {"ne", "!="}, {"!=", "!="}, {"lt", "<"}, {"lessthan", "<"},
      {"<", "<"}, {"le", "<="}, {"<=", "<="}, {"gt", ">"}, {"greaterthan", ">"}, {">", ">"}, {"ge", ">="}, {">=", ">="},
      {"in", "in"}};
  if (name == "sameas") {  // Python `is`: only singletons (true/false/none) compare meaningfully
    if (!other) fail_site(site, "test 'sameas' needs an argument");
    return input.kind == other->kind && equals(input, *other);
  }
  for (const auto& [test, op] : comparisons)
    if (name == test) {
      if (!other) fail_site(site, "test '" + name + "' needs an argument");
      if (name == "in") other = arg(args, 0, "seq");
      return compare_op(op, input, *other, site);
    }
  fail_site(site, "unknown test '" + name + "'");
}

}  // namespace tempra::llm::jinja
