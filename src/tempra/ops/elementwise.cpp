// tempra/ops/elementwise.cpp
#include "tempra/ops/elementwise.h"

#include "tempra/core/grad_node.h"
#include "tempra/ops/creation.h"
#include "tempra/ops/dispatch.h"
#include "tempra/ops/reduce.h"

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

namespace {

Array unary_value(ExecContext& ctx, UnaryOp op, const Array& x) {
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

Array binary_value(ExecContext& ctx, BinaryOp op, const Array& a, const Array& b) {
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

// g * op'(x), in x's dtype (half inputs computed in f32 and rounded once). y = op(x), saved by
// the forward: several derivatives are cheaper from it.
Array unary_vjp(ExecContext& ctx, UnaryOp op, const Array& x, const Array& y, const Array& g) {
  const Array wx = detail::widen(ctx, x), wy = detail::widen(ctx, y), wg = detail::widen(ctx, g);
  Array gx = Array::empty(ctx, wx.shape(), wx.dtype());
  detail::with_float_type(wx.dtype(), op_name(op), [&](auto tag) {
    using T = decltype(tag);
    detail::float_kernels<T>(ctx).unary_grad(op, wx.cref<T>(), wy.cref<T>(), wg.cref<T>(), gx.ref<T>(),
                                             ctx.threads());
  });
  return detail::narrow(ctx, gx, x.dtype());
}

// What a binary op's VJP keeps of an operand: its shape and dtype, and its value only where a
// derivative reads it. add and sub read neither value and mul reads each operand only for the
// other's gradient, so a recorded graph does not hold activations it never reads (a LoRA
// projection's base output and adapter term: a third of a Qwen3 block's saved memory).
struct Operand {
  Dims shape;
  DType dtype;
  Array value;  // empty where no derivative reads it
};

Operand keep(const Array& x, bool value) {
  return {x.shape(), x.dtype(), value ? x.detach() : Array{}};
}

// The gradients of a op b at the broadcast shape, each summed back to its operand's shape.
std::vector<Array> binary_vjp(ExecContext& ctx, BinaryOp op, const Operand& a, const Operand& b, const Array& g,
                              const std::vector<bool>& needs) {
  const Dims shape = g.shape();
  const Array wg = detail::widen(ctx, g);
  std::vector<Array> grads(2);
  const auto summed_to = [&](int i, const Array& full, const Operand& operand) {
    grads[size_t(i)] = detail::narrow(ctx, sum_to(ctx, full, operand.shape), operand.dtype);
  };
  // The derivatives of add, sub and mul need no kernel of their own: g itself, -g, and g times
  // the other operand (the forward's kernel; the same bits as binary_grad's g * 1, g * -1, g * b),
  // each computed only where an input wants it.
  if (op == BinaryOp::add || op == BinaryOp::sub || op == BinaryOp::mul) {
    if (needs[0])
      summed_to(0, op == BinaryOp::mul ? binary_value(ctx, BinaryOp::mul, wg, detail::widen(ctx, b.value)) : wg, a);
    if (needs[1])
      summed_to(1,
                op == BinaryOp::mul   ? binary_value(ctx, BinaryOp::mul, wg, detail::widen(ctx, a.value))
                : op == BinaryOp::sub ? unary_value(ctx, UnaryOp::neg, wg)
                                      : wg,
                b);
    return grads;
  }
  const Array wa = detail::widen(ctx, a.value).broadcast_to(shape);
  const Array wb = detail::widen(ctx, b.value).broadcast_to(shape);
  Array ga = Array::empty(ctx, shape, wg.dtype()), gb = Array::empty(ctx, shape, wg.dtype());
  detail::with_float_type(wg.dtype(), op_name(op), [&](auto tag) {
    using T = decltype(tag);
    detail::float_kernels<T>(ctx).binary_grad(op, wa.cref<T>(), wb.cref<T>(), wg.cref<T>(), ga.ref<T>(), gb.ref<T>(),
                                              ctx.threads());
  });
  if (needs[0]) summed_to(0, ga, a);
  if (needs[1]) summed_to(1, gb, b);
  return grads;
}

}  // namespace

Array unary(ExecContext& ctx, UnaryOp op, const Array& x) {
  if (!any_requires_grad({&x})) return unary_value(ctx, op, x);
  Array out = unary_value(ctx, op, x.detach());
  // The VJP keeps what the derivative reads (unary_grad's table): the output for exp, sqrt, tanh
  // and sigmoid, both for rsqrt, neither for neg, else the input. The kernel takes both, so an
  // unread one is stood in for by one of the same shape it does not read.
  const bool reads_y = op == UnaryOp::exp || op == UnaryOp::sqrt || op == UnaryOp::rsqrt || op == UnaryOp::tanh ||
                       op == UnaryOp::sigmoid;
  const bool reads_x = op == UnaryOp::rsqrt || (!reads_y && op != UnaryOp::neg);
  attach_grad_node(out, op_name(op), {x},
                   [op, x = reads_x ? x.detach() : Array{}, y = reads_y ? out.detach() : Array{}](
                       ExecContext& c, const Array& g, const std::vector<bool>&) {
                     const Array& x_or_stand_in = x.defined() ? x : y.defined() ? y : g;
                     const Array& y_or_stand_in = y.defined() ? y : x_or_stand_in;
                     return std::vector<Array>{unary_vjp(c, op, x_or_stand_in, y_or_stand_in, g)};
                   });
  return out;
}

Array binary(ExecContext& ctx, BinaryOp op, const Array& a, const Array& b) {
  if (!any_requires_grad({&a, &b})) return binary_value(ctx, op, a, b);
  Array out = binary_value(ctx, op, a.detach(), b.detach());
  const bool reads_values = op != BinaryOp::add && op != BinaryOp::sub;
  attach_grad_node(out, op_name(op), {a, b},
                   [op, a = keep(a, reads_values && (op != BinaryOp::mul || b.requires_grad())),
                    b = keep(b, reads_values && (op != BinaryOp::mul || a.requires_grad()))](
                       ExecContext& c, const Array& g, const std::vector<bool>& needs) {
                     return binary_vjp(c, op, a, b, g, needs);
                   });
  return out;
}

Array binary(ExecContext& ctx, BinaryOp op, const Array& a, double scalar) {
  detail::require_float(a, op_name(op));
  const Array s = full(ctx, {}, scalar, detail::compute_dtype(a.dtype()));
  return detail::narrow(ctx, binary(ctx, op, detail::widen(ctx, a), s), a.dtype());
}

namespace {
Array where_value(ExecContext& ctx, const Array& cond, const Array& a, const Array& b) {
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
}  // namespace

// d/da = g where cond, d/db = g where not cond, each summed back over its broadcast axes; the
// condition is a bool array and gets no gradient.
Array where(ExecContext& ctx, const Array& cond, const Array& a, const Array& b) {
  if (!any_requires_grad({&a, &b})) return where_value(ctx, cond, a, b);
  Array out = where_value(ctx, cond, a.detach(), b.detach());
  attach_grad_node(out, "where", {Array{}, a, b},
                   [cond, a_shape = a.shape(), b_shape = b.shape()](ExecContext& c, const Array& g,
                                                                    const std::vector<bool>& needs) {
                     const Array zero = full(c, {}, 0.0, g.dtype());
                     std::vector<Array> grads(3);
                     if (needs[1]) grads[1] = sum_to(c, where_value(c, cond, g, zero), a_shape);
                     if (needs[2]) grads[2] = sum_to(c, where_value(c, cond, zero, g), b_shape);
                     return grads;
                   });
  return out;
}

}  // namespace tempra
