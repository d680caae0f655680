// tempra/ops/reduce.cpp
#include "tempra/ops/reduce.h"

#include "tempra/core/grad_node.h"
#include "tempra/ops/elementwise.h"

#include "tempra/ops/creation.h"
#include "tempra/ops/dispatch.h"

namespace tempra {
namespace {

const char* reduce_name(ReduceOp op) {
  static const char* const names[] = {"sum", "mean", "max", "min", "variance", "logsumexp"};
  return names[static_cast<int>(op)];
}

// The [outer, n, inner] factorization of a contiguous array around `axis`.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
  Dims out_shape;
};

AxisSplit split_at(const Array& x, int axis, bool keepdim) {
  AxisSplit s;
  for (int i = 0; i < x.rank(); ++i) {
    if (i < axis) s.outer *= x.shape()[i];
    else if (i > axis) s.inner *= x.shape()[i];
  }
  s.n = x.shape()[axis];
  s.out_shape = x.shape();
  if (keepdim) s.out_shape[axis] = 1;
  else s.out_shape.erase(axis);
  return s;
}

}  // namespace

namespace {

Array reduce_value(ExecContext& ctx, ReduceOp op, const Array& x, int axis, bool keepdim, int64_t correction) {
  const char* name = reduce_name(op);
  detail::require_float(x, name);
  const int a = normalize_axis(axis, x.rank(), name);
  check(x.shape()[a] > 0 || op == ReduceOp::sum, name, "cannot reduce empty axis ", a, " of shape ", x.shape());
  check(op != ReduceOp::variance || (correction >= 0 && x.shape()[a] > correction), name, "axis ", a,
        " of shape ", x.shape(), " has too few elements for correction ", correction);
  const Array in = contiguous(ctx, detail::widen(ctx, x));
  const AxisSplit s = split_at(in, a, keepdim);
  Array out = Array::empty(ctx, s.out_shape, in.dtype());
  detail::with_float_type(in.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    detail::float_kernels<T>(ctx).reduce(op, in.data<T>(), s.outer, s.n, s.inner, correction, out.data<T>(),
                                         ctx.threads());
  });
  return detail::narrow(ctx, out, x.dtype());
}

// The gradient of a reduction over `axis`, in the input's shape and dtype. sum and mean are
// views of g (a broadcast) and read nothing else; the others run the backward kernel on the
// input x and the forward's result `out`.
Array reduce_vjp(ExecContext& ctx, ReduceOp op, const Dims& shape, const Array& x, const Array& out, int axis,
                 bool keepdim, int64_t correction, const Array& g) {
  const int a = normalize_axis(axis, shape.size(), reduce_name(op));
  const Array gk = keepdim ? g : g.unsqueeze(a);
  if (op == ReduceOp::sum) return gk.broadcast_to(shape);
  if (op == ReduceOp::mean) return div(ctx, gk, static_cast<double>(shape[a])).broadcast_to(shape);
  const Array in = contiguous(ctx, detail::widen(ctx, x));
  const Array result = contiguous(ctx, detail::widen(ctx, out)), grad = contiguous(ctx, detail::widen(ctx, g));
  const AxisSplit s = split_at(in, a, keepdim);
  Array gx = Array::empty(ctx, in.shape(), in.dtype());
  detail::with_float_type(in.dtype(), reduce_name(op), [&](auto tag) {
    using T = decltype(tag);
    detail::float_kernels<T>(ctx).reduce_grad(op, in.data<T>(), result.data<T>(), grad.data<T>(), s.outer, s.n, s.inner,
                                              correction, gx.data<T>(), ctx.threads());
  });
  return detail::narrow(ctx, gx, x.dtype());
}

}  // namespace

Array reduce(ExecContext& ctx, ReduceOp op, const Array& x, int axis, bool keepdim, int64_t correction) {
  if (!any_requires_grad({&x})) return reduce_value(ctx, op, x, axis, keepdim, correction);
  Array out = reduce_value(ctx, op, x.detach(), axis, keepdim, correction);
  // sum and mean keep nothing but x's shape; the others keep x and the result.
  const bool linear = op == ReduceOp::sum || op == ReduceOp::mean;
  attach_grad_node(out, reduce_name(op), {x},
                   [op, shape = x.shape(), x = linear ? Array{} : x.detach(), result = linear ? Array{} : out.detach(),
                    axis, keepdim, correction](ExecContext& c, const Array& g, const std::vector<bool>&) {
                     return std::vector<Array>{reduce_vjp(c, op, shape, x, result, axis, keepdim, correction, g)};
                   });
  return out;
}

Array sum_to(ExecContext& ctx, const Array& x, const Dims& shape) {
  check(x.defined(), "sum_to", "input is an empty array");
  check(shape.size() <= x.rank(), "sum_to", "cannot sum shape ", x.shape(), " to higher rank ", shape);
  Array out = x;
  const int lead = x.rank() - shape.size();
  for (int i = 0; i < lead; ++i) out = sum(ctx, out, 0);
  for (int i = 0; i < shape.size(); ++i) {
    if (shape[i] == out.shape()[i]) continue;
    check(shape[i] == 1, "sum_to", "shape ", x.shape(), " is not a broadcast of ", shape);
    out = sum(ctx, out, i, /*keepdim=*/true);
  }
  return out;
}

Array argmax(ExecContext& ctx, const Array& x, int axis, bool keepdim) {
  detail::require_float(x, "argmax");
  const int a = normalize_axis(axis, x.rank(), "argmax");
  check(x.shape()[a] > 0, "argmax", "cannot reduce empty axis ", a, " of shape ", x.shape());
  const Array in = contiguous(ctx, detail::widen(ctx, x));
  const AxisSplit s = split_at(in, a, keepdim);
  Array out = Array::empty(ctx, s.out_shape, DType::i64);
  detail::with_float_type(in.dtype(), "argmax", [&](auto tag) {
    using T = decltype(tag);
    detail::float_kernels<T>(ctx).argmax(in.data<T>(), s.outer, s.n, s.inner, out.data<int64_t>(), ctx.threads());
  });
  return out;
}

Array sum_all(ExecContext& ctx, const Array& x) {
  check(x.defined(), "sum_all", "input is an empty array");
  return sum(ctx, contiguous(ctx, x).reshape({-1}), 0);
}

Array mean_all(ExecContext& ctx, const Array& x) {
  check(x.defined(), "mean_all", "input is an empty array");
  check(x.numel() > 0, "mean_all", "mean of an empty array of shape ", x.shape());
  return mean(ctx, contiguous(ctx, x).reshape({-1}), 0);
}

namespace {

// The row kernel over the last axis; `mask` is already widened and broadcast to x's shape (or
// empty).
Array softmax_rows(ExecContext& ctx, const Array& x, const Array& mask, const SoftmaxOptions& options, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  const int last = x.rank() - 1;
  const Array in = contiguous(ctx, detail::widen(ctx, x));
  Array out = Array::empty(ctx, in.shape(), in.dtype());
  detail::with_float_type(in.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    SoftmaxArgs<T> args;
    args.scale = options.scale;
    args.log = log;
    args.causal = options.causal;
    args.q_len = options.causal ? in.shape()[last - 1] : 1;
    if (mask.defined())
      args.mask = mask.cref<T>();
    else
      args.mask.strides = Dims::filled(in.rank(), 0);
    detail::float_kernels<T>(ctx).softmax(in.cref<T>(), args, out.data<T>(), ctx.threads());
  });
  return detail::narrow(ctx, out, x.dtype());
}

// The gradient of the logits z = x * scale + mask (before the scale) times grad_scale, in the
// compute dtype, from the forward's output y and its gradient g.
Array softmax_logits_grad(ExecContext& ctx, const Array& y, const Array& g, const SoftmaxOptions& options, bool log,
                          double grad_scale) {
  const char* name = log ? "log_softmax" : "softmax";
  const Array wy = contiguous(ctx, detail::widen(ctx, y)), wg = contiguous(ctx, detail::widen(ctx, g));
  const int64_t n = wy.shape().back(), rows = n ? wy.numel() / n : 0;
  Array gz = Array::empty(ctx, wy.shape(), wy.dtype());
  detail::with_float_type(wy.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    SoftmaxArgs<T> args;
    args.log = log;
    args.causal = options.causal;
    args.q_len = options.causal ? wy.shape()[wy.rank() - 2] : 1;
    detail::float_kernels<T>(ctx).softmax_grad(wy.data<T>(), wg.data<T>(), rows, n, args, grad_scale, gz.data<T>(),
                                               ctx.threads());
  });
  return gz;
}

Array softmax_impl(ExecContext& ctx, const Array& x, int axis, const SoftmaxOptions& options, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  detail::require_float(x, name);
  const int a = normalize_axis(axis, x.rank(), name);
  const int last = x.rank() - 1;
  check(!options.causal || (a == last && x.rank() >= 2), name,
        "causal masking needs the softmax axis to be the last of a rank >= 2 input, got axis ", axis,
        " of shape ", x.shape());
  if (options.causal)
    check(x.shape()[last] >= x.shape()[last - 1], name, "causal masking needs at least as many keys as queries, got ",
          x.shape());
  if (a != last) {
    // Move the axis last, run the row kernel, move it back (views, so gradients flow through).
    Array moved = x.transpose(a, last);
    SoftmaxOptions moved_options = options;
    if (options.mask.defined()) {
      const Dims shape = broadcast_shapes(options.mask.shape(), x.shape(), name);
      check(shape == x.shape(), name, "mask of shape ", options.mask.shape(), " does not broadcast to ", x.shape());
      moved_options.mask = options.mask.broadcast_to(x.shape()).transpose(a, last);
    }
    return contiguous(ctx, softmax_impl(ctx, moved, last, moved_options, log).transpose(a, last));
  }
  if (options.mask.defined()) {
    detail::require_float(options.mask, name, "mask");
    detail::require_same_dtype(x, options.mask, name);
    const Dims shape = broadcast_shapes(options.mask.shape(), x.shape(), name);
    check(shape == x.shape(), name, "mask of shape ", options.mask.shape(), " does not broadcast to ", x.shape());
  }
  const Array& mask = options.mask;
  auto widened_mask = [&](const Array& m) {
    return m.defined() ? detail::widen(ctx, m).broadcast_to(x.shape()) : Array{};
  };
  if (!any_requires_grad({&x, &mask})) return softmax_rows(ctx, x, widened_mask(mask), options, log);
  Array out = softmax_rows(ctx, x.detach(), widened_mask(mask.detach()), options, log);
  // The VJP keeps the output (softmax's derivative is a function of it) and not the mask.
  attach_grad_node(out, name, {x, mask},
                   [y = out.detach(), x_dtype = x.dtype(), mask_shape = mask.shape(), mask_dtype = mask.dtype(),
                    kept = SoftmaxOptions{options.scale, options.causal, Array{}},
                    log](ExecContext& c, const Array& g, const std::vector<bool>& needs) {
                     // x's gradient is the logits' times the scale (folded into the kernel when the
                     // mask needs none: the same single rounding as the multiply).
                     const Array gz = softmax_logits_grad(c, y, g, kept, log, needs[1] ? 1.0 : kept.scale);
                     std::vector<Array> grads(2);
                     if (needs[0])
                       grads[0] =
                           detail::narrow(c, needs[1] && kept.scale != 1.0 ? mul(c, gz, kept.scale) : gz, x_dtype);
                     if (needs[1]) grads[1] = detail::narrow(c, sum_to(c, gz, mask_shape), mask_dtype);
                     return grads;
                   });
  return out;
}

}  // namespace

Array softmax(ExecContext& ctx, const Array& x, int axis, const SoftmaxOptions& options) {
  return softmax_impl(ctx, x, axis, options, false);
}
Array log_softmax(ExecContext& ctx, const Array& x, int axis, const SoftmaxOptions& options) {
  return softmax_impl(ctx, x, axis, options, true);
}

}  // namespace tempra
