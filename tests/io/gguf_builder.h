// tests/io/gguf_builder.h: a tiny GGUF byte builder for tests and the corrupt corpus.
//
// It writes fields exactly as asked, with no validation, so a test can state a corrupt file
// field by field: GgufBuilder().header(3, 1, 0).tensor_info("w", {4}, 0, 0).pad().zeros(16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace tempra::io::testing {

class GgufBuilder {
 public:
  template <class T>
  GgufBuilder& put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  GgufBuilder& u8(uint8_t v) { return put(v); }
  GgufBuilder& u32(uint32_t v) { return put(v); }
  GgufBuilder& i32(int32_t v) { return put(v); }
  GgufBuilder& u64(uint64_t v) { return put(v); }
  GgufBuilder& i64(int64_t v) { return put(v); }
  GgufBuilder& f32(float v) { return put(v); }
  GgufBuilder& raw(std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes_.insert(bytes_.end(), p, p + s.size());
    return *this;
  }
  GgufBuilder& str(std::string_view s) { return u64(s.size()).raw(s); }  // GGUF string: u64 length + bytes

  GgufBuilder& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  }
  // key + value type (the value itself follows with the other calls)
  GgufBuilder& key(std::string_view k, uint32_t type) { return str(k).u32(type); }
  GgufBuilder& kv_u32(std::string_view k, uint32_t v) { return key(k, 4).u32(v); }
  GgufBuilder& kv_string(std::string_view k, std::string_view v) { return key(k, 8).str(v); }
  // key, type array, element type, count (the items follow)
  GgufBuilder& kv_array(std::string_view k, uint32_t element_type, uint64_t n) {
    return key(k, 9).u32(element_type).u64(n);
  }
  GgufBuilder& tensor_info(std::string_view name, std::initializer_list<int64_t> ne, int32_t ggml_type,
                           uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (int64_t e : ne) i64(e);
    return i32(ggml_type).u64(offset);
  }
  GgufBuilder& pad(size_t alignment = 32) {
    while (bytes_.size() % alignment) bytes_.push_back(std::byte{0});
    return *this;
  }
  GgufBuilder& zeros(size_t n) {
    bytes_.resize(bytes_.size() + n);
    return *this;
  }
  GgufBuilder& fill(size_t n, std::byte value) {
    bytes_.insert(bytes_.end(), n, value);
    return *this;
  }
  GgufBuilder& truncate(size_t n) {
    bytes_.resize(n);
    return *this;
  }

  size_t size() const { return bytes_.size(); }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

}  // namespace tempra::io::testing
