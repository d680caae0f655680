// tempra/ops/elementwise.cpp
#include "tempra/ops/elementwise.h"

#include "tempra/ops/creation.h"
#include "tempra/ops/dispatch.h"

namespace tempra {

const char* op_name(UnaryOp op) {
  static const char* const names[] = {"neg",     "abs",  "exp",       "log",      "sqrt", "rsqrt",
                                      "square",  "tanh", "sigmoid",   "relu",     "gelu_tanh",
                                      "gelu_erf", "silu", "softplus", "sin",      "cos"};
  return names[static_cast<int>(op)];
}

const char* op_name(BinaryOp op) {
  static const char* const names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"};
  return names[static_cast<int>(op)];
}

Array unary(ExecContext& ctx, UnaryOp op, const Array& x) {
  const char* name = op_name(op);
  detail::require_float(x, name);
  const Array in = detail::widen(ctx, x);
  Array out = Array::empty(ctx, in.shape(), in.dtype());
  detail::with_float_type(in.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    detail::float_kernels<T>(ctx).unary(op, in.cref<T>(), out.ref<T>(), ctx.threads());
  });
  return detail::narrow(ctx, out, x.dtype());
}

Array binary(ExecContext& ctx, BinaryOp op, const Array& a, const Array& b) {
  const char* name = op_name(op);
  detail::require_float(a, name, "left operand");
  detail::require_float(b, name, "right operand");
  detail::require_same_dtype(a, b, name);
  const Dims shape = broadcast_shapes(a.shape(), b.shape(), name);
  const Array wa = detail::widen(ctx, a).broadcast_to(shape), wb = detail::widen(ctx, b).broadcast_to(shape);
  Array out = Array::empty(ctx, shape, wa.dtype());
  detail::with_float_type(wa.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    detail::float_kernels<T>(ctx).binary(op, wa.cref<T>(), wb.cref<T>(), out.ref<T>(), ctx.threads());
  });
  return detail::narrow(ctx, out, a.dtype());
}

Array binary(ExecContext& ctx, BinaryOp op, const Array& a, double scalar) {
  detail::require_float(a, op_name(op));
  const Array s = full(ctx, {}, scalar, detail::compute_dtype(a.dtype()));
  return detail::narrow(ctx, binary(ctx, op, detail::widen(ctx, a), s), a.dtype());
}

Array where(ExecContext& ctx, const Array& cond, const Array& a, const Array& b) {
  check(cond.defined() && cond.dtype() == DType::boolean, "where", "condition must be a bool array, got ",
        cond.defined() ? cond.dtype().name() : "an empty array");
  detail::require_float(a, "where", "left operand");
  detail::require_float(b, "where", "right operand");
  detail::require_same_dtype(a, b, "where");
  const Dims shape =
      broadcast_shapes(cond.shape(), broadcast_shapes(a.shape(), b.shape(), "where"), "where");
  const Array wc = cond.broadcast_to(shape);
  const Array wa = detail::widen(ctx, a).broadcast_to(shape), wb = detail::widen(ctx, b).broadcast_to(shape);
  Array out = Array::empty(ctx, shape, wa.dtype());
  detail::with_float_type(wa.dtype(), "where", [&](auto tag) {
    using T = decltype(tag);
    detail::float_kernels<T>(ctx).where(wc.cref<bool>(), wa.cref<T>(), wb.cref<T>(), out.ref<T>(), ctx.threads());
  });
  return detail::narrow(ctx, out, a.dtype());
}

}  // namespace tempra
