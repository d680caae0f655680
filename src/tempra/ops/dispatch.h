// tempra/ops/dispatch.h: how an op reaches its kernel (internal to the ops layer).
//
// After validation an op calls with_float_type(dtype, ...) to get the element type, then
// float_kernels<T>(ctx) for the backend's kernels of that type. f16/bf16 inputs never reach a
// float kernel: the op widens them to f32 (widen), computes, and narrows the result back to the
// input's dtype (narrow), so half-precision math is f32 math rounded once at the end.
#pragma once

#include "tempra/backend/kernels.h"
#include "tempra/core/array.h"

namespace tempra {

Array cast(ExecContext& ctx, const Array& x, DType dtype);

namespace detail {

template <class T>
const FloatKernels<T>& float_kernels(ExecContext& ctx) {
  if constexpr (std::is_same_v<T, float>) return kernels_for(ctx.backend()).f32;
  else return kernels_for(ctx.backend()).f64;
}

// Calls fn(T{}) for f32 or f64; throws naming the op for anything else.
template <class Fn>
decltype(auto) with_float_type(DType t, const char* op, Fn&& fn) {
  if (t == DType::f32) return fn(float{});
  if (t == DType::f64) return fn(double{});
  fail(op, "expects f32 or f64 here, got ", t.name());
}

inline bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }

// The dtype an op computes in for an input of dtype t.
inline DType compute_dtype(DType t) { return is_half(t) ? DType::f32 : t; }

inline void require_float(const Array& x, const char* op, const char* what = "input") {
  check(x.defined(), op, what, " is an empty array");
  check(x.dtype().is_floating(), op, what, " must be a floating dtype (f32, f64, f16, bf16), got ",
        x.dtype().name(), " with shape ", x.shape());
}

inline void require_same_dtype(const Array& a, const Array& b, const char* op) {
  check(a.dtype() == b.dtype(), op, "dtypes differ: ", a.dtype().name(), " ", a.shape(), " vs ",
        b.dtype().name(), " ", b.shape());
}

inline Array widen(ExecContext& ctx, const Array& x) {
  return is_half(x.dtype()) ? cast(ctx, x, DType::f32) : x;
}
inline Array narrow(ExecContext& ctx, const Array& y, DType dtype) {
  return y.dtype() == dtype ? y : cast(ctx, y, dtype);
}

// Reads an integer index array (i32 or i64) as i64, contiguous.
Array index_as_i64(ExecContext& ctx, const Array& index, const char* op);

}  // namespace detail
}  // namespace tempra
