// tempra/io/gguf_value.cpp
#include "tempra/io/gguf_value.h"

#include "tempra/core/error.h"

namespace tempra::io {

std::string type_name(GgufType type) {
  static constexpr const char* kNames[kGgufTypeCount] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                         "bool", "string", "array", "u64", "i64", "f64"};
  const auto id = static_cast<uint32_t>(type);
  if (id < kGgufTypeCount) return kNames[id];
  return "type " + std::to_string(id);
}

size_t GgufArray::size() const {
  return std::visit([](const auto& v) { return v.size(); }, items);
}

namespace {
std::string describe_array(const GgufArray& a) {
  std::string inner = type_name(a.element_type());
  if (const auto* nested = std::get_if<std::vector<GgufArray>>(&a.items); nested && !nested->empty())
    inner = describe_array(nested->front());
  return "array[" + inner + "]";
}
}  // namespace

std::string describe_type(const GgufValue& value) {
  if (const auto* a = std::get_if<GgufArray>(&value.value)) return describe_array(*a);
  return type_name(value.type());
}

void GgufMetadata::add(std::string key, GgufValue value) {
  check(!index_.contains(key), "gguf", "duplicate metadata key '", key, "'");
  index_.emplace(key, entries_.size());
  entries_.emplace_back(std::move(key), std::move(value));
}

void GgufMetadata::set(std::string key, GgufValue value) {
  if (auto it = index_.find(key); it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  add(std::move(key), std::move(value));
}

const GgufValue* GgufMetadata::find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

void GgufMetadata::type_mismatch(std::string_view key, const GgufValue& value, GgufType expected) const {
  fail("gguf", "metadata key '", key, "' is ", describe_type(value), ", expected ", type_name(expected));
}

void GgufMetadata::missing(std::string_view key) const { fail("gguf", "metadata key '", key, "' is missing"); }

}  // namespace tempra::io
