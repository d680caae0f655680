// tempra/llm/decode/json_schema.cpp: JSON Schema and regular expressions to GBNF.
#include "tempra/llm/decode/json_schema.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "tempra/core/error.h"
#include "tempra/llm/decode/grammar.h"
#include "tempra/llm/tokenizer/unicode.h"

namespace tempra::llm {

namespace {

using Json = nlohmann::ordered_json;  // properties keep the schema's order
using Range = std::pair<uint32_t, uint32_t>;

// --- GBNF spelling ---------------------------------------------------------------------------

std::string literal(std::string_view utf8) {
  std::string out = "\"";
  for (uint32_t c : decode_utf8_lenient(utf8)) append_gbnf_char(out, c, false);
  return out + "\"";
}

// A set of code points as sorted, disjoint ranges.
std::vector<Range> normalize(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<Range> out;
  for (const Range& r : ranges) {
    if (!out.empty() && r.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

std::vector<Range> complement(const std::vector<Range>& ranges) {
  std::vector<Range> out;
  uint32_t next = 0;
  for (const Range& r : normalize(ranges)) {
    if (r.first > next) out.emplace_back(next, r.first - 1);
    next = r.second + 1;
  }
  if (next <= 0x10FFFF) out.emplace_back(next, 0x10FFFF);
  return out;
}

std::vector<Range> subtract(const std::vector<Range>& a, const std::vector<Range>& b) {
  std::vector<Range> both = complement(b);
  std::vector<Range> out;
  for (const Range& x : normalize(a))
    for (const Range& y : both) {
      const uint32_t lo = std::max(x.first, y.first), hi = std::min(x.second, y.second);
      if (lo <= hi) out.emplace_back(lo, hi);
    }
  return out;
}

bool contains(const std::vector<Range>& ranges, uint32_t c) {
  return std::any_of(ranges.begin(), ranges.end(), [&](const Range& r) { return r.first <= c && c <= r.second; });
}

std::string class_text(const std::vector<Range>& ranges) {
  std::string out = "[";
  for (const Range& r : normalize(ranges)) {
    append_gbnf_char(out, r.first, true);
    if (r.second != r.first) {
      out += '-';
      append_gbnf_char(out, r.second, true);
    }
  }
  return out + "]";
}

// The characters a JSON string holds only escaped: '"', '\' and the controls U+0000-U+001F.
const std::vector<Range> kJsonEscaped = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};

std::string json_escape_of(uint32_t c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\t': return "\\t";
    case '\r': return "\\r";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: break;
  }
  static const char* hex = "0123456789abcdef";
  return std::string("\\u00") + hex[c >> 4] + hex[c & 15];
}

// A set of characters as GBNF: inside a JSON string the ones that must be escaped are spelled
// as their escapes.
std::string char_set(const std::vector<Range>& members, bool in_json_string) {
  if (!in_json_string) return class_text(members);
  std::vector<std::string> parts;
  const std::vector<Range> plain = subtract(members, kJsonEscaped);
  if (!plain.empty()) parts.push_back(class_text(plain));
  for (uint32_t c : {uint32_t('"'), uint32_t('\\')})
    if (contains(members, c)) parts.push_back(literal(json_escape_of(c)));
  bool all_controls = true;
  for (uint32_t c = 0; c < 0x20; ++c) all_controls = all_controls && contains(members, c);
  if (all_controls) {  // every control character, in either spelling JSON has for it
    parts.push_back(R"("\\" [bfnrt] | "\\u00" [01] [0-9a-fA-F])");
  } else {
    for (uint32_t c = 0; c < 0x20; ++c)
      if (contains(members, c)) parts.push_back(literal(json_escape_of(c)));
  }
  if (parts.empty()) fail("regex", "a character class matches nothing");
  if (parts.size() == 1) return parts[0];
  std::string out = "(";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : " ") + parts[i];
  return out + " )";
}

// --- regular expressions -----------------------------------------------------------------------

class RegexCompiler {
 public:
  RegexCompiler(std::string_view pattern, bool in_json_string)
      : cps_(decode_utf8_lenient(pattern)), in_json_string_(in_json_string) {}

  std::string compile() {
    if (pos_ < cps_.size() && cps_[pos_] == '^') ++pos_;
    std::string body = alternation();
    if (pos_ < cps_.size() && cps_[pos_] == '$' && pos_ + 1 == cps_.size()) ++pos_;
    if (pos_ < cps_.size()) error(cps_[pos_] == ')' ? "unbalanced ')'" : "'^' and '$' are supported only at the ends");
    return body;
  }

 private:
  template <class... Parts>
  [[noreturn]] void error(const Parts&... parts) const {
    fail("regex", "at character ", pos_, ": ", parts...);
  }
  bool more() const { return pos_ < cps_.size(); }
  uint32_t peek() const { return more() ? cps_[pos_] : 0; }

  std::string alternation() {
    std::vector<std::string> branches{concatenation()};
    while (more() && peek() == '|') {
      ++pos_;
      branches.push_back(concatenation());
    }
    if (branches.size() == 1) return branches[0];
    std::string out = "(";
    for (size_t i = 0; i < branches.size(); ++i) out += (i ? " | " : " ") + (branches[i].empty() ? "\"\"" : branches[i]);
    return out + " )";
  }

  std::string concatenation() {
    std::string out;
    while (more() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && pos_ + 1 == cps_.size()) break;
      std::string item = atom();
      item += quantifier();
      out += (out.empty() ? "" : " ") + item;
    }
    return out;
  }

  uint64_t number() {
    uint64_t value = 0;
    const size_t start = pos_;
    while (more() && peek() >= '0' && peek() <= '9') value = std::min<uint64_t>(value * 10 + (cps_[pos_++] - '0'), 100000);
    if (pos_ == start) error("expecting a number in '{...}'");
    if (value > 10000) error("repetition counts past 10000 are not supported");
    return value;
  }

  std::string quantifier() {
    if (!more()) return "";
    std::string q;
    const uint32_t c = peek();
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      q = std::string(1, char(c));
    } else if (c == '{') {
      ++pos_;
      const uint64_t min = number();
      uint64_t max = min;
      bool unbounded = false;
      if (peek() == ',') {
        ++pos_;
        if (peek() == '}') {
          unbounded = true;
        } else {
          max = number();
        }
      }
      if (peek() != '}') error("expecting '}'");
      ++pos_;
      if (!unbounded && max < min) error("{", min, ",", max, "} has its maximum below its minimum");
      q = "{" + std::to_string(min) + (unbounded ? "," : (max == min ? "" : "," + std::to_string(max))) + "}";
    } else {
      return "";
    }
    if (more() && peek() == '?') ++pos_;  // lazy: the same language
    if (more() && (peek() == '*' || peek() == '+' || peek() == '{')) error("a quantifier cannot follow a quantifier");
    return q;
  }

  // A character, `.` or an escape as a set of code points.
  std::vector<Range> escape_set(uint32_t e) {
    switch (e) {
      case 'd': return {{'0', '9'}};
      case 'D': return complement({{'0', '9'}});
      case 'w': return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
      case 'W': return complement({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
      case 's': return whitespace();
      case 'S': return complement(whitespace());
      default: return {};
    }
  }
  static std::vector<Range> whitespace() {  // ECMAScript's \s
    return {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
            {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
  }

  // After a backslash: one character (a class escape returns false and fills `set`).
  bool escaped_char(uint32_t& out, std::vector<Range>& set) {
    if (!more()) error("a pattern cannot end with '\\'");
    const uint32_t e = cps_[pos_++];
    if (std::string_view("dDwWsS").find(char(e < 128 ? e : 0)) != std::string_view::npos && e < 128) {
      set = escape_set(e);
      return false;
    }
    switch (e) {
      case 'n': out = '\n'; return true;
      case 't': out = '\t'; return true;
      case 'r': out = '\r'; return true;
      case 'f': out = '\f'; return true;
      case 'v': out = '\v'; return true;
      case '0': out = 0; return true;
      case 'u': {
        uint32_t value = 0;
        for (int i = 0; i < 4; ++i) {
          const uint32_t h = peek();
          int d = -1;
          if (h >= '0' && h <= '9') d = int(h - '0');
          if (h >= 'a' && h <= 'f') d = int(h - 'a' + 10);
          if (h >= 'A' && h <= 'F') d = int(h - 'A' + 10);
          if (d < 0) error("expecting 4 hex digits after \\u");
          value = value * 16 + uint32_t(d);
          ++pos_;
        }
        if (value >= 0xD800 && value <= 0xDFFF)
          error("\\u", std::hex, value, " is a UTF-16 surrogate: write the character itself");
        out = value;
        return true;
      }
      case 'b':
      case 'B': error("word boundaries (\\", char(e), ") are not supported");
      default: break;
    }
    if (e >= '1' && e <= '9') error("backreferences are not supported");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) error("unknown escape '\\", char(e), "'");
    out = e;  // an escaped punctuation character stands for itself
    return true;
  }

  std::string atom() {
    const uint32_t c = cps_[pos_++];
    if (c == '(') {
      if (++depth_ > 128) error("groups nested deeper than 128 are not supported");
      if (peek() == '?') {
        if (pos_ + 1 < cps_.size() && cps_[pos_ + 1] == ':') {
          pos_ += 2;
        } else {
          error("lookaround and named groups ('(?') are not supported");
        }
      }
      std::string inner = alternation();
      if (peek() != ')') error("expecting ')'");
      ++pos_;
      --depth_;
      return "(" + (inner.empty() ? std::string("\"\"") : " " + inner) + " )";
    }
    if (c == '[') return char_set(bracket(), in_json_string_);
    if (c == '.') return char_set(complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}), in_json_string_);
    if (c == '\\') {
      uint32_t ch = 0;
      std::vector<Range> set;
      if (!escaped_char(ch, set)) return char_set(set, in_json_string_);
      return char_set({{ch, ch}}, in_json_string_);
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') error("'", char(c), "' has nothing before it to repeat");
    if (c == '^' || c == '$') error("'^' and '$' are supported only at the ends");
    return char_set({{c, c}}, in_json_string_);
  }

  std::vector<Range> bracket() {
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<Range> members;
    while (more() && peek() != ']') {
      uint32_t low = cps_[pos_++];
      if (low == '\\') {
        std::vector<Range> set;
        if (!escaped_char(low, set)) {
          members.insert(members.end(), set.begin(), set.end());
          continue;
        }
      }
      uint32_t high = low;
      if (peek() == '-' && pos_ + 1 < cps_.size() && cps_[pos_ + 1] != ']') {
        ++pos_;
        high = cps_[pos_++];
        if (high == '\\') {
          std::vector<Range> set;
          if (!escaped_char(high, set)) error("a class escape cannot end a range");
        }
        if (high < low) error("range out of order in a character class");
      }
      members.emplace_back(low, high);
    }
    if (!more()) error("unterminated character class");
    ++pos_;
    return negated ? complement(members) : normalize(members);
  }

  std::vector<uint32_t> cps_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool in_json_string_;
};

// --- JSON Schema -------------------------------------------------------------------------------

const char* const kPrimitives = R"(ws ::= | " " | "\n" [ \t]{0,20}
string ::= "\"" char* "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
number ::= integer ( "." [0-9]+ )? ( [eE] [-+]? [0-9]{1,3} )?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
)";

// One schema's rules, added to a shared rule table (names are made unique there).
class SchemaCompiler {
 public:
  SchemaCompiler(Json root, std::map<std::string, std::string>& rules) : root_(std::move(root)), rules_(rules) {}

  // The expression matching the documents the schema accepts.
  std::string compile(const std::string& hint) { return visit(root_, "", hint); }

 private:
  template <class... Parts>
  [[noreturn]] static void error(const std::string& path, const Parts&... parts) {
    fail("json-schema", "at ", path.empty() ? std::string("/") : path, ": ", parts...);
  }

  std::string new_rule(const std::string& hint, const std::string& body) {
    std::string name;
    for (char c : hint) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '-';
    if (name.empty()) name = "r";
    std::string unique = name;
    int& suffix = suffixes_[name];  // the last one tried: many rules of one hint stay linear
    while (rules_.count(unique) || reserved(unique)) unique = name + "-" + std::to_string(++suffix + 1);
    rules_[unique] = body;
    return unique;
  }
  static bool reserved(const std::string& name) {
    static const std::set<std::string> names{"root", "ws", "string", "char", "integer", "number",
                                             "boolean", "null", "value", "object", "array"};
    return names.count(name) > 0;
  }

  static std::string alternatives(const std::vector<std::string>& options) {
    if (options.size() == 1) return options[0];
    std::string out = "(";
    for (size_t i = 0; i < options.size(); ++i) out += (i ? " | " : " ") + options[i];
    return out + " )";
  }

  // The grammar expression of `schema` at `path`.
  std::string visit(const Json& schema, const std::string& path, const std::string& hint) {
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return "value";
      error(path, "the schema 'false' accepts nothing");
    }
    if (!schema.is_object()) error(path, "a schema must be an object or a boolean");
    static const std::set<std::string> ignored{"$schema", "$id", "title", "description", "default", "examples",
                                               "$comment", "deprecated", "readOnly", "writeOnly", "$defs",
                                               "definitions"};
    static const std::set<std::string> known{"type", "properties", "required", "additionalProperties", "items",
                                             "minItems", "maxItems", "minLength", "maxLength", "pattern", "format",
                                             "enum", "const", "anyOf", "oneOf", "allOf", "$ref"};
    for (const auto& [key, value] : schema.items())
      if (!ignored.count(key) && !known.count(key)) error(path, "'", key, "' is not supported");

    if (++depth_ > kMaxDepth) error(path, "schemas nested deeper than ", kMaxDepth, " are not supported");
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    // A combining keyword stands alone (beside annotations): what a sibling would add is refused
    // by name rather than dropped. `enum` and `const` may say their `type`: values of another
    // type are then left out.
    for (const char* combiner : {"$ref", "const", "enum", "anyOf", "oneOf", "allOf"}) {
      if (!schema.contains(combiner)) continue;
      for (const auto& [key, value] : schema.items()) {
        const bool typed_value = (std::string_view(combiner) == "enum" || std::string_view(combiner) == "const") &&
                                 key == "type";
        if (key != combiner && !ignored.count(key) && !typed_value)
          error(path, "'", key, "' beside '", combiner, "' is not supported");
      }
    }
    if (schema.contains("$ref")) return reference(schema["$ref"], path);
    if (schema.contains("const") || schema.contains("enum")) {
      Json values = schema.contains("const") ? Json::array({schema["const"]}) : schema["enum"];
      if (!values.is_array() || values.empty()) error(path, "'enum' must be a non-empty array");
      std::vector<std::string> options;
      for (const Json& v : values)
        if (!schema.contains("type") || of_type(v, schema["type"], path)) options.push_back(literal(v.dump()));
      if (options.empty()) error(path, "no value of 'enum'/'const' has the 'type' ", schema["type"].dump());
      return alternatives(options);
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (schema.contains(key)) {
        const Json& branches = schema[key];
        if (!branches.is_array() || branches.empty()) error(path, "'", key, "' must be a non-empty array");
        std::vector<std::string> options;
        for (size_t i = 0; i < branches.size(); ++i)
          options.push_back(visit(branches[i], path + "/" + key + "/" + std::to_string(i), hint));
        return alternatives(options);
      }
    if (schema.contains("allOf")) {
      const Json& all = schema["allOf"];
      if (!all.is_array() || all.size() != 1) error(path, "'allOf' is supported with exactly one schema");
      return visit(all[0], path + "/allOf/0", hint);
    }
    if (!schema.contains("type")) {
      if (schema.contains("properties") || schema.contains("required") || schema.contains("additionalProperties"))
        return object(schema, path, hint);
      if (schema.contains("items")) return array(schema, path, hint);
      return "value";
    }
    const Json& type = schema["type"];
    std::vector<std::string> types;
    for (const Json& t : type.is_array() ? type : Json::array({type})) {
      if (!t.is_string()) error(path, "'type' must be a string or a list of strings");
      types.push_back(t.get<std::string>());
    }
    if (types.empty()) error(path, "'type' is an empty list");
    // A keyword for another type is ignored for this one (the standard's rule), but one that
    // applies to none of the listed types is a mistake worth naming.
    static const std::map<std::string, std::string> applies{
        {"minLength", "string"}, {"maxLength", "string"},  {"pattern", "string"},   {"format", "string"},
        {"items", "array"},      {"minItems", "array"},    {"maxItems", "array"},   {"properties", "object"},
        {"required", "object"},  {"additionalProperties", "object"}};
    for (const auto& [key, value] : schema.items())
      if (const auto it = applies.find(key);
          it != applies.end() && std::find(types.begin(), types.end(), it->second) == types.end())
        error(path, "'", key, "' does not apply to type ", type.dump());
    std::vector<std::string> options;
    for (const std::string& t : types) options.push_back(typed(schema, t, path, hint));
    return alternatives(options);
  }

  // Whether JSON value `v` has `type` (a name or a list of names).
  static bool of_type(const Json& v, const Json& type, const std::string& path) {
    auto is = [&](const Json& t) {
      if (!t.is_string()) error(path, "'type' must be a string or a list of strings");
      const std::string name = t.get<std::string>();
      if (name == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
      if (name == "number") return v.is_number();
      if (name == "string") return v.is_string();
      if (name == "boolean") return v.is_boolean();
      if (name == "null") return v.is_null();
      if (name == "object") return v.is_object();
      if (name == "array") return v.is_array();
      error(path, "unknown type '", name, "'");
    };
    if (!type.is_array()) return is(type);
    return std::any_of(type.begin(), type.end(), is);
  }

  std::string typed(const Json& schema, const std::string& t, const std::string& path, const std::string& hint) {
    if (t == "string") return string(schema, path, hint);
    if (t == "number" || t == "integer" || t == "boolean" || t == "null") return t;
    if (t == "object") return object(schema, path, hint);
    if (t == "array") return array(schema, path, hint);
    error(path, "unknown type '", t, "'");
  }

  static uint64_t count_of(const Json& schema, const char* key, const std::string& path) {
    const Json& v = schema[key];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      error(path, "'", key, "' must be a non-negative integer");
    const uint64_t n = v.get<uint64_t>();
    if (n > 10000) error(path, "'", key, "' past 10000 is not supported");
    return n;
  }

  static std::string repeat(const std::string& item, uint64_t min, uint64_t max, bool unbounded) {
    if (unbounded) return min == 0 ? item + "*" : item + "{" + std::to_string(min) + ",}";
    if (max == 0) return "";
    return item + "{" + std::to_string(min) + "," + std::to_string(max) + "}";
  }

  std::string string(const Json& schema, const std::string& path, const std::string& hint) {
    if (schema.contains("pattern")) {
      if (schema.contains("format") || schema.contains("minLength") || schema.contains("maxLength"))
        error(path, "'pattern' beside 'format', 'minLength' or 'maxLength' is not supported");
      const Json& p = schema["pattern"];
      if (!p.is_string()) error(path, "'pattern' must be a string");
      const std::string pattern = p.get<std::string>();
      if (pattern.size() < 2 || pattern.front() != '^' || pattern.back() != '$')
        error(path, "'pattern' must be anchored with '^' and '$' (a pattern matches anywhere in the string otherwise)");
      try {
        return new_rule(hint, "\"\\\"\" " + RegexCompiler(pattern, true).compile() + " \"\\\"\"");
      } catch (const Error& e) {
        error(path + "/pattern", e.what());
      }
    }
    if (schema.contains("format")) {
      if (schema.contains("minLength") || schema.contains("maxLength"))
        error(path, "'format' beside 'minLength' or 'maxLength' is not supported");
      const Json& f = schema["format"];
      if (!f.is_string()) error(path, "'format' must be a string");
      return "\"\\\"\" " + format(f.get<std::string>(), path) + " \"\\\"\"";
    }
    const uint64_t min = schema.contains("minLength") ? count_of(schema, "minLength", path) : 0;
    const bool unbounded = !schema.contains("maxLength");
    const uint64_t max = unbounded ? 0 : count_of(schema, "maxLength", path);
    if (!unbounded && max < min) error(path, "'maxLength' is below 'minLength'");
    if (min == 0 && unbounded) return "string";
    return "\"\\\"\" " + repeat("char", min, max, unbounded) + " \"\\\"\"";
  }

  std::string format(const std::string& name, const std::string& path) {
    const std::string date =
        "[0-9]{4} \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] )"
        " | ( \"0\" [469] | \"11\" ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" )"
        " | \"02-\" ( \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) )";
    const std::string time =
        "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,6} )?"
        " ( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )";
    if (name == "date") return new_rule("date", date);
    if (name == "time") return new_rule("time", time);
    if (name == "date-time") return new_rule("date-time", date + " \"T\" " + time);
    if (name == "uuid")
      return new_rule("uuid", "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}");
    error(path, "format '", name, "' is not supported (date, time, date-time and uuid are)");
  }

  std::string array(const Json& schema, const std::string& path, const std::string& hint) {
    const std::string item = schema.contains("items") ? visit(schema["items"], path + "/items", hint + "-item") : "value";
    const uint64_t min = schema.contains("minItems") ? count_of(schema, "minItems", path) : 0;
    const bool unbounded = !schema.contains("maxItems");
    const uint64_t max = unbounded ? 0 : count_of(schema, "maxItems", path);
    if (!unbounded && max < min) error(path, "'maxItems' is below 'minItems'");
    if (!unbounded && max == 0) return "\"[\" ws \"]\"";
    const std::string element = item + " ws";
    const std::string more = repeat("( \",\" ws " + element + " )", min == 0 ? 0 : min - 1, unbounded ? 0 : max - 1, unbounded);
    const std::string filled = element + (more.empty() ? "" : " " + more);
    return new_rule(hint + "-array", "\"[\" ws " + (min == 0 ? "( " + filled + " )?" : filled) + " \"]\"");
  }

  // A key string that is none of `names` (so an extra key never repeats a declared one).
  std::string key_other_than(const std::vector<std::string>& names, const std::string& hint) {
    if (names.empty()) return "string";
    // Walk the names as a trie: at each prefix, either stop (when the prefix is no name), or go on
    // with a character no name continues with (then anything), or with one that some name does.
    struct Node {
      std::map<uint32_t, int> next;
      bool is_name = false;
    };
    std::vector<Node> trie(1);
    for (const std::string& n : names) {
      if (n.size() > 1024) fail("json-schema", "property names longer than 1024 bytes are not supported");
      int at = 0;
      for (uint32_t c : decode_utf8_lenient(n)) {
        auto it = trie[size_t(at)].next.find(c);
        if (it == trie[size_t(at)].next.end()) {
          trie.emplace_back();
          it = trie[size_t(at)].next.emplace(c, int(trie.size() - 1)).first;
        }
        at = it->second;
      }
      trie[size_t(at)].is_name = true;
    }
    // One rule per trie node, so a long name costs rules, not recursion.
    std::vector<std::string> node_rule(trie.size());
    for (size_t at = 0; at < trie.size(); ++at) node_rule[at] = new_rule(hint + "-key", "\"\"");
    for (size_t at = 0; at < trie.size(); ++at) {
      const Node& node = trie[at];
      std::vector<std::string> options;
      if (!node.is_name) options.push_back("\"\\\"\"");
      std::vector<Range> taken;
      for (const auto& [c, child] : node.next) {
        taken.emplace_back(c, c);
        options.push_back(char_set({{c, c}}, true) + " " + node_rule[size_t(child)]);
      }
      options.push_back(char_set(complement(taken), true) + " char* \"\\\"\"");
      rules_[node_rule[at]] = alternatives(options);
    }
    return new_rule(hint + "-other-key", "\"\\\"\" " + node_rule[0]);
  }

  std::string object(const Json& schema, const std::string& path, const std::string& hint) {
    std::vector<std::pair<std::string, std::string>> properties;  // name, value expression
    std::set<std::string> required;
    if (schema.contains("required")) {
      const Json& r = schema["required"];
      if (!r.is_array()) error(path, "'required' must be an array of names");
      for (const Json& name : r) {
        if (!name.is_string()) error(path, "'required' must be an array of names");
        required.insert(name.get<std::string>());
      }
    }
    std::vector<std::string> names;
    if (schema.contains("properties")) {
      const Json& p = schema["properties"];
      if (!p.is_object()) error(path, "'properties' must be an object");
      for (const auto& [name, sub] : p.items()) {
        properties.emplace_back(name, visit(sub, path + "/properties/" + name, hint + "-" + name));
        names.push_back(name);
      }
    }
    std::string extra_value;  // empty: no extra keys
    if (!schema.contains("additionalProperties") || schema["additionalProperties"] == Json(true)) {
      extra_value = "value";
    } else if (schema["additionalProperties"] != Json(false)) {
      extra_value = visit(schema["additionalProperties"], path + "/additionalProperties", hint + "-extra");
    }
    // A required name without a declared schema is an extra member that must be there.
    for (const std::string& name : required)
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        if (extra_value.empty())
          error(path, "'required' names '", name, "', which 'properties' lacks and 'additionalProperties' forbids");
        properties.emplace_back(name, extra_value);
        names.push_back(name);
      }
    std::string extra;
    if (!extra_value.empty())
      extra = new_rule(hint + "-extra-kv", key_other_than(names, hint) + " ws \":\" ws " + extra_value + " ws");

    // tail[i][first]: the members from property i on, `first` when none came before; built from
    // the last property back, so a long property list costs rules, not recursion.
    const size_t n = properties.size();
    std::vector<std::array<std::string, 2>> tail(n + 1);
    for (size_t i = n + 1; i-- > 0;)
      for (const bool first : {false, true}) {
        std::string body;
        if (i == n) {
          if (extra.empty()) {
            body = "\"\"";
          } else {
            body = first ? "( " + extra + " ( \",\" ws " + extra + " )* )?" : "( \",\" ws " + extra + " )*";
          }
        } else {
          const std::string member =
              literal(Json(properties[i].first).dump()) + " ws \":\" ws " + properties[i].second + " ws";
          const std::string present = (first ? "" : "\",\" ws ") + member + " " + tail[i + 1][0];
          body = required.count(properties[i].first) ? present : "( " + present + " | " + tail[i + 1][first] + " )";
        }
        tail[i][first] = new_rule(hint + "-members", body);
      }
    return new_rule(hint + "-object", "\"{\" ws " + tail[0][1] + " \"}\"");
  }

  std::string reference(const Json& ref, const std::string& path) {
    if (!ref.is_string()) error(path, "'$ref' must be a string");
    const std::string target = ref.get<std::string>();
    if (const auto it = refs_.find(target); it != refs_.end()) return it->second;
    std::string name;
    for (const char* prefix : {"#/$defs/", "#/definitions/"})
      if (target.rfind(prefix, 0) == 0) name = target.substr(std::string_view(prefix).size());
    const std::string container = target.rfind("#/$defs/", 0) == 0 ? "$defs" : "definitions";
    if (name.empty() || name.find('/') != std::string::npos || !root_.contains(container) ||
        !root_[container].contains(name))
      error(path, "'$ref' to '", target, "' is not supported (only #/$defs/NAME and #/definitions/NAME of this schema)");
    // The rule is named before its body is compiled, so a schema may refer to itself.
    const std::string rule = new_rule("def-" + name, "\"\"");
    refs_[target] = rule;
    const std::string body = visit(root_[container][name], "/" + container + "/" + name, "def-" + name);
    rules_[rule] = body;
    return rule;
  }

  static constexpr int kMaxDepth = 64;  // nested schemas (each level is a recursive call)
  Json root_;
  std::map<std::string, std::string>& rules_;
  std::map<std::string, std::string> refs_;
  std::map<std::string, int> suffixes_;
  int depth_ = 0;
};

}  // namespace

std::string JsonGrammarBuilder::add_schema(std::string_view schema_json, std::string_view hint) {
  Json schema;
  try {
    schema = Json::parse(schema_json);
  } catch (const Json::exception& e) {
    fail("json-schema", "not valid JSON: ", e.what());
  }
  return SchemaCompiler(std::move(schema), rules_).compile(std::string(hint));
}

std::string JsonGrammarBuilder::add_rule(std::string_view hint, std::string body) {
  std::string name(hint);
  for (int i = 2; rules_.count(name); ++i) name = std::string(hint) + "-" + std::to_string(i);
  rules_[name] = std::move(body);
  return name;
}

void JsonGrammarBuilder::set_rule(const std::string& name, std::string body) { rules_[name] = std::move(body); }

std::string JsonGrammarBuilder::gbnf(std::string_view root_body) const {
  std::string out = "root ::= " + std::string(root_body) + "\n";
  for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
  return out + kPrimitives;
}

std::string json_schema_to_gbnf(std::string_view schema_json) {
  JsonGrammarBuilder builder;
  const std::string value = builder.add_schema(schema_json, "root-value");
  return builder.gbnf("ws " + value + " ws");
}

std::string gbnf_literal(std::string_view utf8) { return literal(utf8); }

std::string json_object_gbnf() { return std::string("root ::= ws object ws\n") + kPrimitives; }

std::string regex_to_gbnf(std::string_view pattern) {
  const std::string body = RegexCompiler(pattern, false).compile();
  return "root ::= " + (body.empty() ? std::string("\"\"") : body) + "\n";
}

}  // namespace tempra::llm
