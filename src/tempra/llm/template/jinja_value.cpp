// tempra/llm/template/jinja_value.cpp: Python's str/repr/json.dumps/== and UTF-8 code points for Values.
// Parity: CPython 3 (Objects/unicodeobject.c repr rules, Lib/json/encoder.py, float_repr_style
// 'short'), checked through the chat-template goldens (tests/goldens/chat_templates.json).
#include "tempra/llm/template/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tempra::llm::jinja {

Value Value::undefined(std::string name) {
  Value v;
  v.string = std::move(name);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::none;
  return v;
}
Value Value::from(bool b) {
  Value v;
  v.kind = Kind::boolean;
  v.boolean = b;
  return v;
}
Value Value::from(std::int64_t i) {
  Value v;
  v.kind = Kind::integer;
  v.integer = i;
  return v;
}
Value Value::from(double f) {
  Value v;
  v.kind = Kind::floating;
  v.floating = f;
  return v;
}
Value Value::from(std::string s) {
  Value v;
  v.kind = Kind::string;
  v.string = std::move(s);
  return v;
}
Value Value::from(List items) {
  Value v;
  v.kind = Kind::list;
  v.list = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::tuple(List items) {
  Value v = from(std::move(items));
  v.is_tuple = true;
  return v;
}
Value Value::from(Dict d) {
  Value v;
  v.kind = Kind::dict;
  v.dict = std::make_shared<Dict>(std::move(d));
  return v;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : items)
    if (k == key) {
      v = std::move(value);
      return;
    }
  items.emplace_back(key, std::move(value));
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none: return false;
    case Value::Kind::boolean: return v.boolean;
    case Value::Kind::integer: return v.integer != 0;
    case Value::Kind::floating: return v.floating != 0.0;
    case Value::Kind::string: return !v.string.empty();
    case Value::Kind::list: return !v.list->empty();
    case Value::Kind::dict: return v.dict->is_namespace || !v.dict->items.empty();
    case Value::Kind::callable: return true;
  }
  return false;
}

std::string python_float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  if (f == 0.0) return std::signbit(f) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: fixed for 1e-4 <= |f| < 1e16, else
  // scientific with a signed two-digit (at least) exponent.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string sci(buf, end);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  std::size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  int exponent = std::stoi(sci.substr(e_pos + 1));
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    } else {
      std::size_t int_digits = static_cast<std::size_t>(exponent) + 1;
      if (digits.size() <= int_digits) {
        out += digits + std::string(int_digits - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, int_digits) + "." + digits.substr(int_digits);
      }
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp_buf;
  }
  return out;
}

std::vector<std::uint32_t> decode_utf8(std::string_view s) {
  std::vector<std::uint32_t> out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = byte(i);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len != 0 && i + len <= s.size();
    std::uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (std::size_t k = 1; ok && k < len; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (byte(i + k) & 0x3Fu);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid, as in Python's decoder.
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF))
      ok = false;
    if (!ok) {
      out.push_back(0xDC00u + c);  // surrogateescape: one invalid byte, kept
      ++i;
    } else {
      out.push_back(cp);
      i += len;
    }
  }
  return out;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {  // an escaped invalid byte goes back out as itself
    out += static_cast<char>(cp - 0xDC00);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string encode_utf8(const std::vector<std::uint32_t>& cps, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end; ++i) append_utf8(out, cps[i]);
  return out;
}

bool is_python_space(std::uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string python_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<std::uint32_t> cps = decode_utf8(s);
  std::vector<std::uint32_t> set;
  if (chars) set = decode_utf8(*chars);
  auto strippable = [&](std::uint32_t cp) {
    if (!chars) return is_python_space(cp);
    for (auto c : set)
      if (c == cp) return true;
    return false;
  };
  std::size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strippable(cps[b])) ++b;
  if (right)
    while (e > b && strippable(cps[e - 1])) --e;
  return encode_utf8(cps, b, e);
}

namespace {

std::string repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (std::uint32_t cp : decode_utf8(s)) {
    char buf[16];
    if (cp == static_cast<std::uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) {
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
    } else if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) ||
               (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 ||
               cp == 0xFEFF) {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);  // Python's non-printable characters
      out += buf;
    } else {
      append_utf8(out, cp);
    }
  }
  out += quote;
  return out;
}

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;  // ensure_ascii=False: UTF-8 passes through
        }
    }
  }
  out += '"';
}

void json_dump(std::string& out, const Value& v, int indent, bool sort_keys, int level) {
  auto newline = [&](int lvl) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<std::size_t>(indent * lvl), ' ');
  };
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (v.kind) {
    case Value::Kind::none: out += "null"; return;
    case Value::Kind::boolean: out += v.boolean ? "true" : "false"; return;
    case Value::Kind::integer: out += std::to_string(v.integer); return;
    case Value::Kind::floating:
      if (std::isnan(v.floating)) out += "NaN";
      else if (std::isinf(v.floating)) out += v.floating < 0 ? "-Infinity" : "Infinity";
      else out += python_float_repr(v.floating);
      return;
    case Value::Kind::string: json_string(out, v.string); return;
    case Value::Kind::list: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        json_dump(out, (*v.list)[i], indent, sort_keys, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Kind::dict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& item : v.dict->items) items.push_back(&item);
      if (sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        json_string(out, items[i]->first);
        out += ": ";
        json_dump(out, items[i]->second, indent, sort_keys, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    case Value::Kind::undefined:
    case Value::Kind::callable:
      throw std::invalid_argument("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return "Undefined";
    case Value::Kind::none: return "NoneType";
    case Value::Kind::boolean: return "bool";
    case Value::Kind::integer: return "int";
    case Value::Kind::floating: return "float";
    case Value::Kind::string: return "str";
    case Value::Kind::list: return "list";
    case Value::Kind::dict: return v.dict->is_namespace ? "Namespace" : "dict";
    case Value::Kind::callable: return "builtin_function_or_method";
  }
  return "object";
}

std::string repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::string: return repr_string(v.string);
    case Value::Kind::list: {
      std::string out = v.is_tuple ? "(" : "[";
      for (std::size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += ", ";
        out += repr((*v.list)[i]);
      }
      if (v.is_tuple) return out + (v.list->size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Value::Kind::dict: {
      std::string out = v.dict->is_namespace ? "<Namespace {" : "{";
      for (std::size_t i = 0; i < v.dict->items.size(); ++i) {
        if (i) out += ", ";
        out += repr_string(v.dict->items[i].first) + ": " + repr(v.dict->items[i].second);
      }
      return out + (v.dict->is_namespace ? "}>" : "}");
    }
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return "";
    case Value::Kind::none: return "None";
    case Value::Kind::boolean: return v.boolean ? "True" : "False";
    case Value::Kind::integer: return std::to_string(v.integer);
    case Value::Kind::floating: return python_float_repr(v.floating);
    case Value::Kind::string: return v.string;
    case Value::Kind::callable: return "<built-in method " + v.callable->name + ">";
    default: return repr(v);
  }
}

std::string to_json(const Value& v, int indent, bool sort_keys) {
  std::string out;
  json_dump(out, v, indent, sort_keys, 0);
  return out;
}

bool equals(const Value& a, const Value& b) {
  auto numeric = [](const Value& v) { return v.is_number() || v.kind == Value::Kind::boolean; };
  if (numeric(a) && numeric(b)) {
    auto as_num = [](const Value& v) {
      return v.kind == Value::Kind::boolean ? (v.boolean ? 1.0 : 0.0) : v.as_double();
    };
    if (a.kind == Value::Kind::integer && b.kind == Value::Kind::integer) return a.integer == b.integer;
    return as_num(a) == as_num(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none: return true;
    case Value::Kind::string: return a.string == b.string;
    case Value::Kind::list:
      if (a.list->size() != b.list->size()) return false;
      for (std::size_t i = 0; i < a.list->size(); ++i)
        if (!equals((*a.list)[i], (*b.list)[i])) return false;
      return true;
    case Value::Kind::dict:
      if (a.dict == b.dict) return true;
      if (a.dict->is_namespace || b.dict->is_namespace) return false;
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* other = b.dict->find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    case Value::Kind::callable: return a.callable == b.callable;
    default: return false;
  }
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::from(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::from(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value::from(static_cast<std::int64_t>(j.get<std::uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value::from(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::from(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& item : j) items.push_back(from_json(item));
      return Value::from(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.items.emplace_back(it.key(), from_json(it.value()));
      return Value::from(std::move(d));
    }
    default: return Value::undefined();
  }
}

}  // namespace tempra::llm::jinja
