// tempra/core/dtype.h: element types and the registry that block-quantized formats join.
//
// A DType is a small id into a process-wide registry of DTypeInfo (name, kind, block geometry).
// The ten built-in types have fixed ids; later layers (quant: Q8_0, Q4_K, ...) call
// register_dtype() once at startup and get ids of their own. A plain type has a block of one
// element; a block-quantized type packs block_elems values into block_bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "tempra/core/half.h"

namespace tempra {

enum class DTypeKind : uint8_t { floating, signed_integer, unsigned_integer, boolean, block_quantized };

struct DTypeInfo {
  std::string name;  // "f32", "bf16", "q8_0", ...
  DTypeKind kind;
  size_t block_elems;  // elements per block: 1 for plain types
  size_t block_bytes;  // bytes per block: the element size for plain types
};

struct DType {
  uint16_t id = 0;

  static const DType f32, f64, f16, bf16, i8, u8, i16, i32, i64, boolean;

  const DTypeInfo& info() const;
  std::string_view name() const { return info().name; }
  bool is_floating() const { return info().kind == DTypeKind::floating; }
  bool is_integer() const {
    return info().kind == DTypeKind::signed_integer || info().kind == DTypeKind::unsigned_integer;
  }
  bool is_block_quantized() const { return info().kind == DTypeKind::block_quantized; }
  // Bytes per element of a plain type; throws for block-quantized types (use bytes_for).
  size_t element_size() const;
  // Bytes that n elements occupy; throws if n is not a whole number of blocks.
  size_t bytes_for(int64_t n) const;

  friend constexpr bool operator==(DType a, DType b) { return a.id == b.id; }
};

inline constexpr DType DType::f32{0}, DType::f64{1}, DType::f16{2}, DType::bf16{3}, DType::i8{4},
    DType::u8{5}, DType::i16{6}, DType::i32{7}, DType::i64{8}, DType::boolean{9};

// Adds a type to the registry and returns its id. Registering a name twice returns the first id
// if the geometry matches and throws otherwise. Thread-safe.
DType register_dtype(const DTypeInfo& info);
std::optional<DType> dtype_from_name(std::string_view name);

inline std::ostream& operator<<(std::ostream& out, DType t) { return out << t.name(); }

// The C++ element type of each plain dtype, for kernels and typed accessors.
template <class T>
struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<f16_t> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<bf16_t> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };

// Calls fn(T{}) with T the C++ type of a plain dtype: the one switch every dtype-generic
// loop goes through. Throws for block-quantized types, naming the op.
template <class Fn>
decltype(auto) visit_dtype(DType t, const char* op, Fn&& fn);

}  // namespace tempra

#include "tempra/core/error.h"

namespace tempra {
template <class Fn>
decltype(auto) visit_dtype(DType t, const char* op, Fn&& fn) {
  switch (t.id) {
    case DType::f32.id: return fn(float{});
    case DType::f64.id: return fn(double{});
    case DType::f16.id: return fn(f16_t{});
    case DType::bf16.id: return fn(bf16_t{});
    case DType::i8.id: return fn(int8_t{});
    case DType::u8.id: return fn(uint8_t{});
    case DType::i16.id: return fn(int16_t{});
    case DType::i32.id: return fn(int32_t{});
    case DType::i64.id: return fn(int64_t{});
    case DType::boolean.id: return fn(bool{});
    default: fail(op, "dtype ", t.name(), " is not supported here");
  }
}
}  // namespace tempra
