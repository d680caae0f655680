// tempra/serve/request_fields.cpp: see request_fields.h.
#include "tempra/serve/request_fields.h"

#include <cmath>
#include <sstream>

namespace tempra::serve {

std::string type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "number";
    default:
      return "value";
  }
}

json parse_body(const std::string& body) {
  json value;
  try {
    value = json::parse(body);
  } catch (const json::parse_error& e) {
    // nlohmann's message names the byte offset and what it met (ill-formed UTF-8 included).
    throw ApiError(400, std::string("the body is not valid JSON: ") + e.what());
  }
  if (!value.is_object()) throw ApiError(400, "the body must be a JSON object, got " + type_name(value));
  return value;
}

const json* field(const json& object, const std::string& name) {
  const auto it = object.find(name);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

const json& required_field(const json& object, const std::string& name, const std::string& path) {
  const json* v = field(object, name);
  const std::string where = path.empty() ? name : path;
  if (v == nullptr) throw ApiError(400, "'" + where + "' is required", where);
  return *v;
}

std::optional<std::string> string_field(const json& object, const std::string& name, const std::string& path) {
  const json* v = field(object, name);
  if (v == nullptr) return std::nullopt;
  const std::string where = path.empty() ? name : path;
  if (!v->is_string()) throw ApiError(400, "'" + where + "' must be a string, got " + type_name(*v), where);
  return v->get<std::string>();
}

std::optional<bool> bool_field(const json& object, const std::string& name) {
  const json* v = field(object, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) throw ApiError(400, "'" + name + "' must be a boolean, got " + type_name(*v), name);
  return v->get<bool>();
}

std::optional<double> number_field(const json& object, const std::string& name, double min, double max) {
  const json* v = field(object, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) throw ApiError(400, "'" + name + "' must be a number, got " + type_name(*v), name);
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < min || x > max) {
    std::ostringstream range;
    range << "'" << name << "' must be in [" << min << ", " << max << "], got " << v->dump();
    throw ApiError(400, range.str(), name);
  }
  return x;
}

std::optional<int64_t> integer_field(const json& object, const std::string& name, int64_t min, int64_t max) {
  const json* v = field(object, name);
  if (v == nullptr) return std::nullopt;
  auto out_of_range = [&] {
    return ApiError(400,
                    "'" + name + "' must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                        v->dump(),
                    name);
  };
  // Integers are compared as integers (a double cannot hold every int64: 2^63 - 1 rounds up).
  if (v->is_number_unsigned()) {
    const uint64_t x = v->get<uint64_t>();
    if (x > uint64_t(max) || (min > 0 && x < uint64_t(min))) throw out_of_range();
    return int64_t(x);
  }
  if (v->is_number_integer()) {
    const int64_t x = v->get<int64_t>();
    if (x < min || x > max) throw out_of_range();
    return x;
  }
  const bool integral = v->is_number_float() && std::isfinite(v->get<double>()) &&
                        std::floor(v->get<double>()) == v->get<double>();
  if (!integral)
    throw ApiError(400, "'" + name + "' must be an integer, got " + (v->is_number() ? v->dump() : type_name(*v)), name);
  const double x = v->get<double>();
  // [-2^63, 2^63) is what converts to int64 at all.
  if (x < -0x1p63 || x >= 0x1p63 || int64_t(x) < min || int64_t(x) > max) throw out_of_range();
  return int64_t(x);
}

std::vector<std::string> strings_field(const json& object, const std::string& name, size_t max_count) {
  const json* v = field(object, name);
  if (v == nullptr) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) throw ApiError(400, "'" + name + "' must be a string or an array of strings", name);
  if (v->size() > max_count)
    throw ApiError(400, "'" + name + "' has " + std::to_string(v->size()) + " entries, at most " +
                            std::to_string(max_count) + " are allowed",
                   name);
  std::vector<std::string> out;
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string())
      throw ApiError(400, "'" + name + "[" + std::to_string(i) + "]' must be a string, got " + type_name((*v)[i]),
                     name);
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

json byte_array(const std::string& bytes) {
  json out = json::array();
  for (unsigned char c : bytes) out.push_back(int(c));
  return out;
}

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace tempra::serve
