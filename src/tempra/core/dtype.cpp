// tempra/core/dtype.cpp: the dtype registry.
#include "tempra/core/dtype.h"

#include <array>
#include <deque>
#include <mutex>

#include "tempra/core/error.h"

namespace tempra {
namespace {

struct Registry {
  std::mutex mutex;
  // A deque so references handed out by info() stay valid while others register.
  std::deque<DTypeInfo> types{
      {"f32", DTypeKind::floating, 1, 4},          {"f64", DTypeKind::floating, 1, 8},
      {"f16", DTypeKind::floating, 1, 2},          {"bf16", DTypeKind::floating, 1, 2},
      {"i8", DTypeKind::signed_integer, 1, 1},     {"u8", DTypeKind::unsigned_integer, 1, 1},
      {"i16", DTypeKind::signed_integer, 1, 2},    {"i32", DTypeKind::signed_integer, 1, 4},
      {"i64", DTypeKind::signed_integer, 1, 8},    {"bool", DTypeKind::boolean, 1, 1},
  };
};

constexpr uint16_t kBuiltinCount = 10;

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const DTypeInfo& DType::info() const {
  // Built-in ids never move: read them without the lock (ops ask on every call). Their addresses
  // are taken once, under the lock: deque elements stay put as the registry grows, but indexing
  // the deque reads its block map, which a concurrent register_dtype's push_back reallocates.
  static const std::array<const DTypeInfo*, kBuiltinCount> builtins = [] {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    std::array<const DTypeInfo*, kBuiltinCount> p{};
    for (uint16_t i = 0; i < kBuiltinCount; ++i) p[i] = &r.types[i];
    return p;
  }();
  if (id < kBuiltinCount) return *builtins[id];
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  check(id < r.types.size(), "dtype", "unknown dtype id ", id);
  return r.types[id];
}

size_t DType::element_size() const {
  const DTypeInfo& i = info();
  check(i.block_elems == 1, "dtype", i.name, " is block-quantized: it has no per-element size");
  return i.block_bytes;
}

size_t DType::bytes_for(int64_t n) const {
  const DTypeInfo& i = info();
  check(n >= 0 && n % static_cast<int64_t>(i.block_elems) == 0, "dtype", n, " elements of ", i.name,
        " are not a whole number of ", i.block_elems, "-element blocks");
  return static_cast<size_t>(n) / i.block_elems * i.block_bytes;
}

DType register_dtype(const DTypeInfo& info) {
  check(info.block_elems > 0 && info.block_bytes > 0 && !info.name.empty(), "register_dtype",
        "a dtype needs a name and a non-empty block");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (size_t i = 0; i < r.types.size(); ++i) {
    if (r.types[i].name != info.name) continue;
    check(r.types[i].block_elems == info.block_elems && r.types[i].block_bytes == info.block_bytes &&
              r.types[i].kind == info.kind,
          "register_dtype", "dtype ", info.name, " is already registered with a different layout");
    return DType{static_cast<uint16_t>(i)};
  }
  r.types.push_back(info);
  return DType{static_cast<uint16_t>(r.types.size() - 1)};
}

std::optional<DType> dtype_from_name(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (size_t i = 0; i < r.types.size(); ++i)
    if (r.types[i].name == name) return DType{static_cast<uint16_t>(i)};
  return std::nullopt;
}

}  // namespace tempra
