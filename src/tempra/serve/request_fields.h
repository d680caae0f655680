// tempra/serve/request_fields.h: reading an API request's JSON fields with errors that name the
// field, and the error type every endpoint throws.
//
// Contract: each reader returns the field's value, or nullopt / the default when the field is
// absent or null, and throws ApiError (400, invalid_request_error, param = the field's path)
// when it has another type or is out of range: "'temperature' must be a number, got string".
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tempra::serve {

using json = nlohmann::ordered_json;

// An error answered as the API's own error shape (OpenAI's or Anthropic's, by the endpoint).
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = {}, std::string type = "invalid_request_error",
           std::string code = {})
      : std::runtime_error(std::move(message)),
        status(status),
        param(std::move(param)),
        type(std::move(type)),
        code(std::move(code)) {}
  int status;
  std::string param, type, code;
};

// The JSON type's name as an error message says it: "string", "number", "array", ...
std::string type_name(const json& value);

// The request body as a JSON object (400 naming the parse error otherwise: malformed JSON,
// invalid UTF-8, not an object).
json parse_body(const std::string& body);

const json* field(const json& object, const std::string& name);  // nullptr when absent or null
const json& required_field(const json& object, const std::string& name, const std::string& path = {});

std::optional<std::string> string_field(const json& object, const std::string& name, const std::string& path = {});
std::optional<bool> bool_field(const json& object, const std::string& name);
std::optional<double> number_field(const json& object, const std::string& name, double min, double max);
std::optional<int64_t> integer_field(const json& object, const std::string& name, int64_t min, int64_t max);
// A string or an array of strings (OpenAI's `stop`).
std::vector<std::string> strings_field(const json& object, const std::string& name, size_t max_count);

// A string's bytes as a JSON array of numbers (pieces that are not whole UTF-8).
json byte_array(const std::string& bytes);

// `value` dumped as JSON text; invalid UTF-8 in strings becomes U+FFFD instead of throwing.
std::string dump(const json& value);

}  // namespace tempra::serve
