// tempra/ops/reduce.h: reductions over one axis, and softmax.
//
// Contract: `axis` may be negative (counted from the end). The reduced axis is removed, or kept
// with extent 1 when keepdim is true. Float inputs only (argmax returns i64 indices, first
// maximum on ties). variance divides by (n - correction): 0 is the population variance, 1 the
// unbiased estimate (torch.var's default). max/min/argmax of an empty axis are errors.
#pragma once

#include <optional>

#include "tempra/backend/kernel_args.h"
#include "tempra/core/array.h"

namespace tempra {

Array reduce(ExecContext& ctx, ReduceOp op, const Array& x, int axis, bool keepdim = false, int64_t correction = 0);

// x summed over the axes that broadcasting stretched to reach x's shape from `shape` (leading
// extra axes, and axes of extent 1 in `shape`): the gradient of broadcast_to. Returns x itself
// when the shapes are equal.
Array sum_to(ExecContext& ctx, const Array& x, const Dims& shape);

inline Array sum(ExecContext& ctx, const Array& x, int axis, bool keepdim = false) {
  return reduce(ctx, ReduceOp::sum, x, axis, keepdim);
}
inline Array mean(ExecContext& ctx, const Array& x, int axis, bool keepdim = false) {
  return reduce(ctx, ReduceOp::mean, x, axis, keepdim);
}
inline Array max(ExecContext& ctx, const Array& x, int axis, bool keepdim = false) {
  return reduce(ctx, ReduceOp::max, x, axis, keepdim);
}
inline Array min(ExecContext& ctx, const Array& x, int axis, bool keepdim = false) {
  return reduce(ctx, ReduceOp::min, x, axis, keepdim);
}
inline Array variance(ExecContext& ctx, const Array& x, int axis, int64_t correction = 0, bool keepdim = false) {
  return reduce(ctx, ReduceOp::variance, x, axis, keepdim, correction);
}
inline Array logsumexp(ExecContext& ctx, const Array& x, int axis, bool keepdim = false) {
  return reduce(ctx, ReduceOp::logsumexp, x, axis, keepdim);
}
Array argmax(ExecContext& ctx, const Array& x, int axis, bool keepdim = false);

// Sum or mean of every element: a 0-d array.
Array sum_all(ExecContext& ctx, const Array& x);
Array mean_all(ExecContext& ctx, const Array& x);

struct SoftmaxOptions {
  double scale = 1.0;  // applied to x before the mask: softmax(x * scale + mask)
  bool causal = false;  // over the last two axes [.., q, k]: key j hidden from query i when j > i + (k - q)
  Array mask{};         // optional additive mask (same dtype), broadcastable to x
};

Array softmax(ExecContext& ctx, const Array& x, int axis = -1, const SoftmaxOptions& options = {});
Array log_softmax(ExecContext& ctx, const Array& x, int axis = -1, const SoftmaxOptions& options = {});

}  // namespace tempra
