// tempra/llm/template/jinja_builtins.cpp: attribute/item access, operators, iteration, global functions
// and the str/dict methods. Filters and tests live in jinja_filters.cpp.
// Parity: jinja2/sandbox.py (getattr/getitem order, unsafe '_' attributes), Python 3 semantics
// of the operators and of str.split/strip/startswith/replace/find/count/join.
#include <cmath>
#include <limits>

#include "tempra/core/error.h"
#include "tempra/llm/template/jinja_builtins.h"

namespace tempra::llm::jinja {

void fail_site(const Site& site, const std::string& message) {
  fail("chat_template", "line ", site.line, ", column ", site.column, ": ", message);
}

namespace {

bool is_int_like(const Value& v) { return v.kind == Value::Kind::integer || v.kind == Value::Kind::boolean; }
std::int64_t int_of(const Value& v) { return v.kind == Value::Kind::boolean ? (v.boolean ? 1 : 0) : v.integer; }
bool is_numeric(const Value& v) { return is_int_like(v) || v.kind == Value::Kind::floating; }
double double_of(const Value& v) { return v.kind == Value::Kind::floating ? v.floating : static_cast<double>(int_of(v)); }

void check_size(std::size_t bytes, const Site& site) {
  if (bytes > site.max_string_bytes)
    fail_site(site, "a string of " + std::to_string(bytes) + " bytes exceeds the sandbox limit of " +
                        std::to_string(site.max_string_bytes) + " bytes");
}

const Value* arg(const Args& args, std::size_t index, const char* name) {
  for (const auto& [k, v] : args.keyword)
    if (k == name) return &v;
  return index < args.positional.size() ? &args.positional[index] : nullptr;
}

std::string need_string(const Value* v, const char* what, const Site& site) {
  if (!v || !v->is_string()) fail_site(site, std::string(what) + " must be a string, got " + (v ? type_name(*v) : "nothing"));
  return v->string;
}

Value callable(const std::string& name, const Value& self) {
  Value v;
  v.kind = Value::Kind::callable;
  v.callable = std::make_shared<Callable>(Callable{name, self});
  return v;
}

bool is_string_method(const std::string& name) {
  static const char* const methods[] = {"startswith", "endswith", "split", "strip", "lstrip", "rstrip", "upper",
                                        "lower", "replace", "find", "count", "join", "capitalize"};
  for (const char* m : methods)
    if (name == m) return true;
  return false;
}

bool is_dict_method(const std::string& name) { return name == "items" || name == "keys" || name == "values" || name == "get"; }

// Python's str.split (sep given: exact pieces; no sep: runs of whitespace, empties dropped).
List split(const std::string& s, const Value* sep, std::int64_t maxsplit, const Site& site) {
  List out;
  if (sep && !sep->is_none()) {
    std::string separator = need_string(sep, "split() separator", site);
    if (separator.empty()) fail_site(site, "split(): empty separator");
    std::size_t begin = 0;
    while (maxsplit != 0) {
      std::size_t at = s.find(separator, begin);
      if (at == std::string::npos) break;
      out.push_back(Value::from(s.substr(begin, at - begin)));
      begin = at + separator.size();
      --maxsplit;
    }
    out.push_back(Value::from(s.substr(begin)));
    return out;
  }
  auto cps = decode_utf8(s);
  std::size_t i = 0;
  while (true) {
    while (i < cps.size() && is_python_space(cps[i])) ++i;
    if (i == cps.size()) break;
    if (maxsplit == 0) {  // the rest, trailing whitespace stripped
      std::size_t end = cps.size();
      while (end > i && is_python_space(cps[end - 1])) --end;
      out.push_back(Value::from(encode_utf8(cps, i, end)));
      break;
    }
    std::size_t j = i;
    while (j < cps.size() && !is_python_space(cps[j])) ++j;
    out.push_back(Value::from(encode_utf8(cps, i, j)));
    i = j;
    --maxsplit;
  }
  return out;
}

std::string ascii_case(std::string s, bool upper) {
  for (char& c : s) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

std::int64_t count_code_points(const std::string& s) { return static_cast<std::int64_t>(decode_utf8(s).size()); }

Value string_method(const std::string& self, const std::string& name, const Args& args, const Site& site) {
  if (name == "startswith" || name == "endswith") {
    const Value* affix = arg(args, 0, "prefix");
    if (!affix) fail_site(site, name + "() takes at least 1 argument");
    List candidates = affix->is_list() ? *affix->list : List{*affix};
    for (const Value& c : candidates) {
      std::string text = need_string(&c, (name + "() argument").c_str(), site);
      bool hit = name == "startswith" ? self.compare(0, text.size(), text) == 0 && self.size() >= text.size()
                                      : self.size() >= text.size() && self.compare(self.size() - text.size(), text.size(), text) == 0;
      if (hit) return Value::from(true);
    }
    return Value::from(false);
  }
  if (name == "split") {
    const Value* maxsplit = arg(args, 1, "maxsplit");
    return Value::from(split(self, arg(args, 0, "sep"), maxsplit ? int_of(*maxsplit) : -1, site));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = arg(args, 0, "chars");
    std::string set;
    if (chars && !chars->is_none()) set = need_string(chars, (name + "() argument").c_str(), site);
    return Value::from(python_strip(self, chars && !chars->is_none() ? &set : nullptr, name != "rstrip", name != "lstrip"));
  }
  if (name == "upper" || name == "lower") return Value::from(ascii_case(self, name == "upper"));
  if (name == "capitalize") {
    std::string lower = ascii_case(self, false);
    if (!lower.empty()) lower[0] = ascii_case(lower.substr(0, 1), true)[0];
    return Value::from(lower);
  }
  if (name == "replace") {
    std::string from = need_string(arg(args, 0, "old"), "replace() old", site);
    std::string to = need_string(arg(args, 1, "new"), "replace() new", site);
    const Value* count = arg(args, 2, "count");
    std::int64_t left = count ? int_of(*count) : -1;
    std::string out;
    std::size_t begin = 0;
    if (from.empty()) fail_site(site, "replace() with an empty 'old' string is not supported");
    while (left != 0) {
      std::size_t at = self.find(from, begin);
      if (at == std::string::npos) break;
      out.append(self, begin, at - begin);
      out += to;
      check_size(out.size(), site);
      begin = at + from.size();
      --left;
    }
    out.append(self, begin);
    check_size(out.size(), site);
    return Value::from(out);
  }
  if (name == "find" || name == "count") {
    std::string needle = need_string(arg(args, 0, "sub"), (name + "() argument").c_str(), site);
    if (name == "find") {
      std::size_t at = self.find(needle);
      return Value::from(at == std::string::npos ? std::int64_t{-1} : count_code_points(self.substr(0, at)));
    }
    if (needle.empty()) return Value::from(count_code_points(self) + 1);
    std::int64_t n = 0;
    for (std::size_t at = self.find(needle); at != std::string::npos; at = self.find(needle, at + needle.size())) ++n;
    return Value::from(n);
  }
  if (name == "join") {
    const Value* items = arg(args, 0, "iterable");
    if (!items) fail_site(site, "join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(*items, site)) {
      if (!item.is_string()) fail_site(site, "join(): expected str items, got " + type_name(item));
      if (!first) out += self;
      first = false;
      out += item.string;
      check_size(out.size(), site);
    }
    return Value::from(out);
  }
  fail_site(site, "'str' object has no method '" + name + "'");
}

Value dict_method(const Dict& self, const std::string& name, const Args& args, const Site& site) {
  if (name == "get") {
    const Value* key = arg(args, 0, "key");
    if (!key) fail_site(site, "get() takes at least 1 argument");
    const Value* found = key->is_string() ? self.find(key->string) : nullptr;
    if (found) return *found;
    const Value* fallback = arg(args, 1, "default");
    return fallback ? *fallback : Value::none();
  }
  List out;
  for (const auto& [k, v] : self.items) {
    if (name == "keys") out.push_back(Value::from(k));
    else if (name == "values") out.push_back(v);
    else out.push_back(Value::tuple(List{Value::from(k), v}));
  }
  return Value::from(std::move(out));
}

Value global_function(const std::string& name, const Args& args, const Site& site) {
  if (name == "raise_exception") {
    const Value* message = arg(args, 0, "message");
    fail_site(site, "the template raised an exception: " + (message ? to_str(*message) : std::string()));
  }
  if (name == "namespace" || name == "dict") {
    Dict d;
    d.is_namespace = name == "namespace";
    for (const Value& p : args.positional) {
      if (!p.is_dict()) fail_site(site, name + "() positional arguments must be mappings");
      for (const auto& [k, v] : p.dict->items) d.set(k, v);
    }
    for (const auto& [k, v] : args.keyword) d.set(k, v);
    return Value::from(std::move(d));
  }
  if (name == "range") {
    std::int64_t start = 0, stop = 0, step = 1;
    for (const Value& p : args.positional)
      if (!is_int_like(p)) fail_site(site, "range() arguments must be integers, got " + type_name(p));
    if (args.positional.size() == 1) stop = int_of(args.positional[0]);
    else if (args.positional.size() == 2 || args.positional.size() == 3) {
      start = int_of(args.positional[0]);
      stop = int_of(args.positional[1]);
      if (args.positional.size() == 3) step = int_of(args.positional[2]);
    } else fail_site(site, "range() takes 1 to 3 integer arguments");
    if (step == 0) fail_site(site, "range() step must not be zero");
    // jinja's sandbox caps range() at MAX_RANGE = 100000 items.
    double count = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step));
    if (count > 100000) fail_site(site, "range() of more than 100000 items is refused by the sandbox");
    List out;
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(Value::from(i));
    return Value::from(std::move(out));
  }
  fail_site(site, "unknown function '" + name + "'");
}

// Python's slice.indices(): clamp start/stop for a sequence of length n.
void slice_bounds(std::int64_t n, const Value& start_v, const Value& stop_v, std::int64_t step, std::int64_t& start,
                  std::int64_t& stop, const Site& site) {
  auto get = [&](const Value& v, std::int64_t fallback) {
    if (v.is_undefined() || v.is_none()) return fallback;
    if (!is_int_like(v)) fail_site(site, "slice indices must be integers or none, got " + type_name(v));
    return int_of(v);
  };
  auto clamp = [&](std::int64_t i, std::int64_t lo, std::int64_t hi) {
    if (i < 0) i += n;
    return i < lo ? lo : i > hi ? hi : i;
  };
  if (step > 0) {
    start = clamp(get(start_v, 0), 0, n);
    stop = clamp(get(stop_v, n), 0, n);
  } else {
    start = start_v.is_undefined() || start_v.is_none() ? n - 1 : clamp(get(start_v, 0), -1, n - 1);
    stop = stop_v.is_undefined() || stop_v.is_none() ? -1 : clamp(get(stop_v, 0), -1, n - 1);
  }
}

}  // namespace

Value get_attribute(const Value& object, const std::string& name, const Site& site) {
  if (object.is_undefined())
    fail_site(site, (object.string.empty() ? std::string("value") : object.string) + " is undefined (reading '." + name + "')");
  if (object.is_dict()) {
    if (!object.dict->is_namespace && is_dict_method(name)) return callable(name, object);
    if (const Value* v = object.dict->find(name)) return *v;
  }
  if (!name.empty() && name[0] == '_')
    fail_site(site, "access to attribute '" + name + "' of a '" + type_name(object) + "' object is unsafe (sandbox)");
  if (object.is_string() && is_string_method(name)) return callable(name, object);
  return Value::undefined(std::string(1, '\'') + type_name(object) + " object' has no attribute '" + name + "'");
}

Value get_item(const Value& object, const Value& key, const Site& site) {
  if (object.is_undefined())
    fail_site(site, (object.string.empty() ? std::string("value") : object.string) + " is undefined (reading '[" + repr(key) + "]')");
  if ((object.is_list() || object.is_string()) && is_int_like(key)) {
    std::int64_t i = int_of(key);
    if (object.is_list()) {
      auto n = static_cast<std::int64_t>(object.list->size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined("list index " + std::to_string(int_of(key)) + " out of range");
      return (*object.list)[static_cast<std::size_t>(i)];
    }
    auto cps = decode_utf8(object.string);
    auto n = static_cast<std::int64_t>(cps.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined("string index " + std::to_string(int_of(key)) + " out of range");
    return Value::from(encode_utf8(cps, static_cast<std::size_t>(i), static_cast<std::size_t>(i) + 1));
  }
  if (object.is_dict() && key.is_string()) {
    if (const Value* v = object.dict->find(key.string)) return *v;
  }
  if (key.is_string()) return get_attribute(object, key.string, site);  // jinja falls back to getattr
  return Value::undefined(std::string(1, '\'') + type_name(object) + " object' has no item " + repr(key));
}

Value get_slice(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v, const Site& site) {
  std::int64_t step = 1;
  if (!step_v.is_undefined() && !step_v.is_none()) {
    if (!is_int_like(step_v)) fail_site(site, "slice step must be an integer");
    step = int_of(step_v);
  }
  if (step == 0) fail_site(site, "slice step cannot be zero");
  std::int64_t start = 0, stop = 0;
  if (object.is_list()) {
    slice_bounds(static_cast<std::int64_t>(object.list->size()), start_v, stop_v, step, start, stop, site);
    List out;
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back((*object.list)[static_cast<std::size_t>(i)]);
    return Value::from(std::move(out));
  }
  if (object.is_string()) {
    auto cps = decode_utf8(object.string);
    slice_bounds(static_cast<std::int64_t>(cps.size()), start_v, stop_v, step, start, stop, site);
    std::string out;
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) append_utf8(out, cps[static_cast<std::size_t>(i)]);
    return Value::from(out);
  }
  if (object.is_undefined()) fail_site(site, (object.string.empty() ? std::string("value") : object.string) + " is undefined (slicing it)");
  fail_site(site, std::string(1, '\'') + type_name(object) + "' object cannot be sliced");
}

Value call(const Value& callee, const Args& args, const Site& site) {
  if (callee.kind != Value::Kind::callable) {
    if (callee.is_undefined()) fail_site(site, (callee.string.empty() ? std::string("value") : callee.string) + " is undefined (calling it)");
    fail_site(site, std::string(1, '\'') + type_name(callee) + "' object is not callable");
  }
  const Callable& c = *callee.callable;
  if (c.self.is_string()) return string_method(c.self.string, c.name, args, site);
  if (c.self.is_dict()) return dict_method(*c.self.dict, c.name, args, site);
  return global_function(c.name, args, site);
}

void add_global_functions(Dict& globals) {
  for (const char* name : {"namespace", "range", "dict", "raise_exception"}) globals.set(name, callable(name, Value::undefined()));
}

List iterate(const Value& v, const Site& site) {
  switch (v.kind) {
    case Value::Kind::undefined: return {};
    case Value::Kind::list: return *v.list;
    case Value::Kind::string: {
      List out;
      auto cps = decode_utf8(v.string);
      for (std::size_t i = 0; i < cps.size(); ++i) out.push_back(Value::from(encode_utf8(cps, i, i + 1)));
      return out;
    }
    case Value::Kind::dict: {
      if (v.dict->is_namespace) break;
      List out;
      for (const auto& item : v.dict->items) out.push_back(Value::from(item.first));
      return out;
    }
    default: break;
  }
  fail_site(site, std::string(1, '\'') + type_name(v) + "' object is not iterable");
}

Value binary_op(const std::string& op, const Value& a, const Value& b, const Site& site) {
  if (op == "~") {
    std::string out = to_str(a) + to_str(b);
    check_size(out.size(), site);
    return Value::from(out);
  }
  auto unsupported = [&]() -> Value {
    fail_site(site, "unsupported operand types for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'" +
                        (a.is_undefined() || b.is_undefined() ? " (a value is undefined)" : ""));
  };
  if (is_int_like(a) && is_int_like(b)) {
    std::int64_t x = int_of(a), y = int_of(b), r = 0;
    if (op == "+" || op == "-" || op == "*") {
      bool overflow = op == "+" ? __builtin_add_overflow(x, y, &r) : op == "-" ? __builtin_sub_overflow(x, y, &r) : __builtin_mul_overflow(x, y, &r);
      if (overflow) fail_site(site, "integer overflow in " + op);
      return Value::from(r);
    }
    if (op == "/" || op == "//" || op == "%") {
      if (y == 0) fail_site(site, "division by zero");
      if (op == "/") return Value::from(static_cast<double>(x) / static_cast<double>(y));
      if (x == std::numeric_limits<std::int64_t>::min() && y == -1) fail_site(site, "integer overflow in " + op);
      std::int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors toward negative infinity
        --q;
        m += y;
      }
      return Value::from(op == "//" ? q : m);
    }
    if (op == "**") {
      if (y < 0) return Value::from(std::pow(static_cast<double>(x), static_cast<double>(y)));
      std::int64_t result = 1;
      for (std::int64_t i = 0; i < y; ++i)
        if (__builtin_mul_overflow(result, x, &result)) fail_site(site, "integer overflow in **");
      return Value::from(result);
    }
  }
  if (is_numeric(a) && is_numeric(b)) {
    double x = double_of(a), y = double_of(b);
    if (op == "+") return Value::from(x + y);
    if (op == "-") return Value::from(x - y);
    if (op == "*") return Value::from(x * y);
    if (op == "**") return Value::from(std::pow(x, y));
    if (y == 0.0) fail_site(site, "float division by zero");
    if (op == "/") return Value::from(x / y);
    double q = std::floor(x / y);
    if (op == "//") return Value::from(q);
    if (op == "%") return Value::from(x - q * y);
  }
  if (op == "+" && a.is_string() && b.is_string()) {
    check_size(a.string.size() + b.string.size(), site);
    return Value::from(a.string + b.string);
  }
  if (op == "+" && a.is_list() && b.is_list()) {
    List out = *a.list;
    out.insert(out.end(), b.list->begin(), b.list->end());
    return Value::from(std::move(out));
  }
  if (op == "*" && ((a.is_string() && is_int_like(b)) || (is_int_like(a) && b.is_string()))) {
    const std::string& s = a.is_string() ? a.string : b.string;
    std::int64_t n = a.is_string() ? int_of(b) : int_of(a);
    if (n <= 0) return Value::from(std::string());
    if (s.size() != 0 && static_cast<std::uint64_t>(n) > site.max_string_bytes / s.size() + 1) check_size(site.max_string_bytes + 1, site);
    check_size(s.size() * static_cast<std::size_t>(n), site);
    std::string out;
    out.reserve(s.size() * static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) out += s;
    return Value::from(out);
  }
  if (op == "%" && a.is_string()) fail_site(site, "printf-style string formatting ('...' % x) is not supported");
  return unsupported();
}

bool compare_op(const std::string& op, const Value& a, const Value& b, const Site& site) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in" || op == "notin") {
    bool found = false;
    if (b.is_string()) {
      if (!a.is_string()) fail_site(site, "'in <string>' requires a string on the left, got " + type_name(a));
      found = b.string.find(a.string) != std::string::npos;
    } else if (b.is_dict() && !b.dict->is_namespace) {
      found = a.is_string() && b.dict->find(a.string) != nullptr;
    } else if (b.is_list()) {
      for (const Value& item : *b.list)
        if (equals(item, a)) {
          found = true;
          break;
        }
    } else if (!b.is_undefined()) {
      fail_site(site, "argument of type '" + type_name(b) + "' is not iterable");
    }
    return op == "in" ? found : !found;
  }
  int order = 0;
  if (is_numeric(a) && is_numeric(b)) {
    if (is_int_like(a) && is_int_like(b)) order = int_of(a) < int_of(b) ? -1 : int_of(a) > int_of(b) ? 1 : 0;
    else order = double_of(a) < double_of(b) ? -1 : double_of(a) > double_of(b) ? 1 : 0;
  } else if (a.is_string() && b.is_string()) {
    order = a.string.compare(b.string) < 0 ? -1 : a.string == b.string ? 0 : 1;  // UTF-8 keeps code point order
  } else {
    fail_site(site, "'" + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
  }
  if (op == "<") return order < 0;
  if (op == "<=") return order <= 0;
  if (op == ">") return order > 0;
  return order >= 0;
}

}  // namespace tempra::llm::jinja
