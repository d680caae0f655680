// tempra/io/gguf_value.h: GGUF metadata values and the ordered key -> value table.
//
// A GGUF file carries typed key/value metadata. GgufValue is a std::variant whose alternative
// index *is* the GGUF type id (u8 = 0 ... f64 = 12), so type() is the index and a value
// round-trips to the same bytes. Arrays hold one typed vector (also indexed by the type id of
// their elements); arrays of arrays nest. GgufMetadata keeps the file's key order (a
// re-emitted file is byte-identical) and looks keys up by name; keys are unique.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tempra::io {

// The GGUF value type ids (gguf.h, enum gguf_type).
enum class GgufType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
inline constexpr uint32_t kGgufTypeCount = 13;
// "u8", "i8", ..., "string", "array", "f64"; "type N" for an id outside the enum.
std::string type_name(GgufType type);

// A homogeneous array. items holds std::vector<T> for the element type T of the same id.
struct GgufArray {
  using Items = std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                             std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                             std::vector<float>, std::vector<bool>, std::vector<std::string>,
                             std::vector<GgufArray>, std::vector<uint64_t>, std::vector<int64_t>,
                             std::vector<double>>;
  Items items;

  GgufType element_type() const { return static_cast<GgufType>(items.index()); }
  size_t size() const;
  friend bool operator==(const GgufArray&, const GgufArray&) = default;
};

struct GgufValue {
  using Variant = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, GgufArray, uint64_t, int64_t, double>;
  Variant value;

  GgufType type() const { return static_cast<GgufType>(value.index()); }
  template <class T>
  bool is() const {
    return std::holds_alternative<T>(value);
  }
  friend bool operator==(const GgufValue&, const GgufValue&) = default;
};

// "u32", "string", or "array[string]" / "array[array[i32]]" for arrays.
std::string describe_type(const GgufValue& value);

class GgufMetadata {
 public:
  using Entry = std::pair<std::string, GgufValue>;

  // Appends a key; throws tempra::Error if the key is already present.
  void add(std::string key, GgufValue value);
  // Replaces the value of an existing key in place (keeping its position), or appends it.
  void set(std::string key, GgufValue value);

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<Entry>& entries() const { return entries_; }  // file order
  const GgufValue* find(std::string_view key) const;              // null if absent
  bool contains(std::string_view key) const { return find(key) != nullptr; }

  // The value of `key` as T; throws tempra::Error naming the key if it is absent or of another
  // type. T is one of the variant's alternatives (uint32_t, std::string, GgufArray, ...).
  template <class T>
  const T& get(std::string_view key) const;
  // Like get() but nullopt when the key is absent (still throws on a type mismatch).
  template <class T>
  std::optional<T> get_optional(std::string_view key) const;

 private:
  [[noreturn]] void type_mismatch(std::string_view key, const GgufValue& value, GgufType expected) const;
  [[noreturn]] void missing(std::string_view key) const;

  std::vector<Entry> entries_;
  std::map<std::string, size_t, std::less<>> index_;
};

template <class T>
const T& GgufMetadata::get(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) missing(key);
  if (!v->is<T>()) type_mismatch(key, *v, static_cast<GgufType>(GgufValue::Variant(T{}).index()));
  return std::get<T>(v->value);
}

template <class T>
std::optional<T> GgufMetadata::get_optional(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  return get<T>(key);
}

}  // namespace tempra::io
