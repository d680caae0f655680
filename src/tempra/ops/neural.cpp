// tempra/ops/neural.cpp
#include "tempra/ops/neural.h"

#include <cmath>

#include "tempra/core/grad_node.h"
#include "tempra/ops/creation.h"
#include "tempra/ops/dispatch.h"
#include "tempra/ops/elementwise.h"
#include "tempra/ops/reduce.h"

namespace tempra {
namespace {

// Widened, contiguous copy of an optional 1-D parameter of extent n (empty stays empty).
Array parameter_vector(ExecContext& ctx, const Array& p, int64_t n, const Array& x, const char* op, const char* what) {
  if (!p.defined()) return p;
  detail::require_float(p, op, what);
  detail::require_same_dtype(x, p, op);
  check(p.rank() == 1 && p.dim(0) == n, op, what, " must have shape [", n, "] for input ", x.shape(), ", got ",
        p.shape());
  return contiguous(ctx, detail::widen(ctx, p));
}

template <class T>
const T* data_or_null(const Array& a) {
  return a.defined() ? a.data<T>() : nullptr;
}
// The same for an output a backward kernel may skip.
template <class T>
T* out_or_null(const Array& a) {
  return a.defined() ? a.data<T>() : nullptr;
}

Array normalize_value(ExecContext& ctx, const Array& x, const Array& weight, const Array& bias, double eps, bool rms) {
  const char* name = rms ? "rms_norm" : "layer_norm";
  const int64_t n = x.dim(-1);
  const Array in = contiguous(ctx, detail::widen(ctx, x));
  const Array w = parameter_vector(ctx, weight, n, x, name, "weight");
  const Array b = parameter_vector(ctx, bias, n, x, name, "bias");
  Array out = Array::empty(ctx, in.shape(), in.dtype());
  detail::with_float_type(in.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const auto& k = detail::float_kernels<T>(ctx);
    const int64_t rows = n ? in.numel() / n : 0;
    if (rms) k.rms_norm(in.data<T>(), rows, n, data_or_null<T>(w), eps, out.data<T>(), ctx.threads());
    else k.layer_norm(in.data<T>(), rows, n, data_or_null<T>(w), data_or_null<T>(b), eps, out.data<T>(), ctx.threads());
  });
  return detail::narrow(ctx, out, x.dtype());
}

// The gradients of x, weight and bias (each where needed and present) from g.
std::vector<Array> normalize_vjp(ExecContext& ctx, const Array& x, const Array& weight, bool has_bias, double eps,
                                 bool rms, const Array& g, const std::vector<bool>& needs) {
  const char* name = rms ? "rms_norm" : "layer_norm";
  const int64_t n = x.dim(-1);
  const Array in = contiguous(ctx, detail::widen(ctx, x)), grad = contiguous(ctx, detail::widen(ctx, g));
  const Array w = weight.defined() ? contiguous(ctx, detail::widen(ctx, weight)) : Array{};
  const int64_t rows = n ? in.numel() / n : 0;
  Array gx = needs[0] ? Array::empty(ctx, in.shape(), in.dtype()) : Array{};
  Array gw = needs[1] && weight.defined() ? Array::empty(ctx, {n}, in.dtype()) : Array{};
  Array gb = needs[2] && has_bias ? Array::empty(ctx, {n}, in.dtype()) : Array{};
  Array scratch = Array::empty(ctx, {2 * rows}, in.dtype());
  detail::with_float_type(in.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    const auto& k = detail::float_kernels<T>(ctx);
    if (rms)
      k.rms_norm_grad(in.data<T>(), data_or_null<T>(w), grad.data<T>(), rows, n, eps, out_or_null<T>(gx),
                      out_or_null<T>(gw), scratch.data<T>(), ctx.threads());
    else
      k.layer_norm_grad(in.data<T>(), data_or_null<T>(w), grad.data<T>(), rows, n, eps, out_or_null<T>(gx),
                        out_or_null<T>(gw), out_or_null<T>(gb), scratch.data<T>(), ctx.threads());
  });
  std::vector<Array> grads(3);
  if (gx.defined()) grads[0] = detail::narrow(ctx, gx, x.dtype());
  if (gw.defined()) grads[1] = detail::narrow(ctx, gw, x.dtype());
  if (gb.defined()) grads[2] = detail::narrow(ctx, gb, x.dtype());
  return grads;
}

Array normalize(ExecContext& ctx, const Array& x, const Array& weight, const Array& bias, double eps, bool rms) {
  const char* name = rms ? "rms_norm" : "layer_norm";
  detail::require_float(x, name);
  check(x.rank() >= 1, name, "input must have rank >= 1");
  check(eps >= 0, name, "eps must be >= 0, got ", eps);
  if (!any_requires_grad({&x, &weight, &bias})) return normalize_value(ctx, x, weight, bias, eps, rms);
  Array out = normalize_value(ctx, x.detach(), weight.detach(), bias.detach(), eps, rms);
  attach_grad_node(out, name, {x, weight, bias},
                   [x = x.detach(), w = weight.detach(), has_bias = bias.defined(), eps, rms](
                       ExecContext& c, const Array& g, const std::vector<bool>& needs) {
                     return normalize_vjp(c, x, w, has_bias, eps, rms, g, needs);
                   });
  return out;
}

}  // namespace

Array rms_norm(ExecContext& ctx, const Array& x, const Array& weight, double eps) {
  return normalize(ctx, x, weight, {}, eps, true);
}

Array layer_norm(ExecContext& ctx, const Array& x, const Array& weight, const Array& bias, double eps) {
  return normalize(ctx, x, weight, bias, eps, false);
}

namespace {

// The rotation itself, on validated arguments.
Array rope_rotate(ExecContext& ctx, const Array& x, const Array& positions, const RopeParams& params) {
  const int64_t seq = x.dim(-3), heads = x.dim(-2), head_dim = x.dim(-1);
  const Array in = contiguous(ctx, detail::widen(ctx, x));
  const Array pos = contiguous(ctx, positions);
  Array out = Array::empty(ctx, in.shape(), in.dtype());
  detail::with_float_type(in.dtype(), "rope", [&](auto tag) {
    using T = decltype(tag);
    const int64_t outer = in.numel() / std::max<int64_t>(1, seq * heads * head_dim);
    detail::float_kernels<T>(ctx).rope(in.data<T>(), outer, seq, heads, head_dim, pos.data<int32_t>(), params,
                                       out.data<T>(), ctx.threads());
  });
  return detail::narrow(ctx, out, x.dtype());
}

}  // namespace

Array rope(ExecContext& ctx, const Array& x, const Array& positions, const RopeParams& params_in) {
  detail::require_float(x, "rope");
  check(x.rank() >= 3, "rope", "x must be [..., seq, heads, head_dim], got ", x.shape());
  const int64_t seq = x.dim(-3), head_dim = x.dim(-1);
  check(positions.defined() && positions.dtype() == DType::i32 && positions.rank() == 1 && positions.dim(0) == seq,
        "rope", "positions must be i32 [", seq, "] for x ", x.shape(), ", got ",
        positions.defined() ? positions.dtype().name() : "empty", " ", positions.shape());
  RopeParams params = params_in;
  if (params.n_dims == 0) params.n_dims = head_dim;
  check(params.n_dims > 0 && params.n_dims % 2 == 0 && params.n_dims <= head_dim, "rope", "n_dims ",
        params.n_dims, " must be even and at most head_dim ", head_dim);
  check(params.freq_base > 0, "rope", "freq_base must be > 0, got ", params.freq_base);
  if (!any_requires_grad({&x})) return rope_rotate(ctx, x, positions, params);
  Array out = rope_rotate(ctx, x.detach(), positions, params);
  // The rotation is orthogonal (times YaRN's magnitude, a scalar), so its VJP is the inverse
  // rotation at that magnitude: the same kernel at the negated positions (theta is odd in the
  // position, so cos stays and sin flips sign exactly).
  std::vector<int32_t> negated(static_cast<size_t>(seq));
  const Array pos = contiguous(ctx, positions);
  for (int64_t i = 0; i < seq; ++i) negated[i] = -pos.data<int32_t>()[i];
  attach_grad_node(out, "rope", {x},
                   [inverse = Array::from_values<int32_t>(ctx, {seq}, negated), params, dtype = x.dtype()](
                       ExecContext& c, const Array& g, const std::vector<bool>&) {
                     return std::vector<Array>{detail::narrow(c, rope_rotate(c, g, inverse, params), dtype)};
                   });
  return out;
}

Array attention(ExecContext& ctx, const Array& q, const Array& k, const Array& v, const AttentionOptions& options) {
  detail::require_float(q, "attention", "q");
  detail::require_float(k, "attention", "k");
  detail::require_float(v, "attention", "v");
  detail::require_same_dtype(q, k, "attention");
  detail::require_same_dtype(q, v, "attention");
  check(q.rank() == 4 && k.rank() == 4 && v.rank() == 4, "attention",
        "q, k, v must be [batch, heads, seq, dim], got ", q.shape(), ", ", k.shape(), ", ", v.shape());
  const AttentionShape s{q.dim(0), q.dim(1), k.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3)};
  check(k.dim(0) == s.batch && v.dim(0) == s.batch, "attention", "batch sizes differ: q ", q.shape(), ", k ",
        k.shape(), ", v ", v.shape());
  check(k.dim(3) == s.head_dim, "attention", "q and k head dims differ: ", q.shape(), " vs ", k.shape());
  check(v.dim(1) == s.kv_heads && v.dim(2) == s.kv_len, "attention", "k and v disagree: ", k.shape(), " vs ",
        v.shape());
  check(s.kv_heads > 0 && s.q_heads % s.kv_heads == 0, "attention", "query heads ", s.q_heads,
        " are not a multiple of key/value heads ", s.kv_heads);
  check(!options.causal || s.kv_len >= s.q_len, "attention", "causal attention needs at least as many keys (",
        s.kv_len, ") as queries (", s.q_len, ")");
  const Dims score_shape{s.batch, s.q_heads, s.q_len, s.kv_len};
  Array mask;
  if (options.mask.defined()) {
    detail::require_float(options.mask, "attention", "mask");
    detail::require_same_dtype(q, options.mask, "attention");
    check(broadcast_shapes(options.mask.shape(), score_shape, "attention") == score_shape, "attention", "mask ",
          options.mask.shape(), " does not broadcast to the scores ", score_shape);
    mask = detail::widen(ctx, options.mask.detach()).broadcast_to(score_shape);
  }
  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  const Array cq = contiguous(ctx, detail::widen(ctx, q.detach())),
              ck = contiguous(ctx, detail::widen(ctx, k.detach())),
              cv = contiguous(ctx, detail::widen(ctx, v.detach()));
  Array scores = Array::empty(ctx, score_shape, cq.dtype());
  Array out = Array::empty(ctx, {s.batch, s.q_heads, s.q_len, s.value_dim}, cq.dtype());
  detail::with_float_type(cq.dtype(), "attention", [&](auto tag) {
    using T = decltype(tag);
    TensorRef<const T> mask_ref;
    if (mask.defined()) mask_ref = mask.cref<T>();
    else mask_ref.strides = Dims::filled(4, 0);
    detail::float_kernels<T>(ctx).attention(cq.data<T>(), ck.data<T>(), cv.data<T>(), s, mask_ref, options.causal,
                                            scale, scores.data<T>(), out.data<T>(), ctx.threads());
  });
  scores = Array{};  // the forward's scratch; the backward recomputes its rows
  Array result = detail::narrow(ctx, out, q.dtype());
  if (!any_requires_grad({&q, &k, &v, &options.mask})) return result;
  // The VJP keeps the (widened, contiguous) inputs and the output in the compute dtype.
  attach_grad_node(result, "attention", {q, k, v, options.mask},
                   [cq, ck, cv, out = out.detach(), mask, s, causal = options.causal, scale, dtype = q.dtype(),
                    mask_shape = options.mask.shape()](ExecContext& c, const Array& g, const std::vector<bool>& needs) {
                     const Array grad = contiguous(c, detail::widen(c, g));
                     Array gq = Array::empty(c, cq.shape(), cq.dtype()), gk = Array::empty(c, ck.shape(), ck.dtype()),
                           gv = Array::empty(c, cv.shape(), cv.dtype());
                     // The kernel's scratch; its first half holds the scores' gradient on return.
                     Array score_grad = Array::empty(c, {2, s.batch, s.q_heads, s.q_len, s.kv_len}, cq.dtype());
                     detail::with_float_type(cq.dtype(), "attention", [&](auto tag) {
                       using T = decltype(tag);
                       TensorRef<const T> mask_ref;
                       if (mask.defined())
                         mask_ref = mask.cref<T>();
                       else
                         mask_ref.strides = Dims::filled(4, 0);
                       detail::float_kernels<T>(c).attention_grad(
                           cq.data<T>(), ck.data<T>(), cv.data<T>(), out.data<T>(), grad.data<T>(), s, mask_ref, causal,
                           scale, score_grad.data<T>(), gq.data<T>(), gk.data<T>(), gv.data<T>(), c.threads());
                     });
                     std::vector<Array> grads(4);
                     if (needs[0]) grads[0] = detail::narrow(c, gq, dtype);
                     if (needs[1]) grads[1] = detail::narrow(c, gk, dtype);
                     if (needs[2]) grads[2] = detail::narrow(c, gv, dtype);
                     if (needs[3]) grads[3] = detail::narrow(c, sum_to(c, score_grad.select(0, 0), mask_shape), dtype);
                     return grads;
                   });
  return result;
}

namespace {
Array reduce_loss(ExecContext& ctx, const Array& per_element, Reduction reduction, double divisor) {
  switch (reduction) {
    case Reduction::none: return per_element;
    case Reduction::sum: return sum_all(ctx, per_element);
    case Reduction::mean: return div(ctx, sum_all(ctx, per_element), divisor);
  }
  return per_element;
}
}  // namespace

Array cross_entropy(ExecContext& ctx, const Array& logits, const Array& targets_in, const CrossEntropyOptions& options) {
  detail::require_float(logits, "cross_entropy", "logits");
  check(logits.rank() == 2, "cross_entropy", "logits must be [N, C], got ", logits.shape());
  const Array targets = detail::index_as_i64(ctx, targets_in, "cross_entropy");
  check(targets.rank() == 1 && targets.dim(0) == logits.dim(0), "cross_entropy", "targets must be [",
        logits.dim(0), "] for logits ", logits.shape(), ", got ", targets.shape());
  const int64_t rows = logits.dim(0), classes = logits.dim(1);
  int64_t counted = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t t = targets.data<int64_t>()[i];
    if (t == options.ignore_index) continue;
    check(t >= 0 && t < classes, "cross_entropy", "target ", t, " at row ", i, " is out of range [0, ", classes,
          ") for logits ", logits.shape());
    ++counted;
  }
  const Array in = contiguous(ctx, detail::widen(ctx, logits.detach()));
  Array loss = Array::empty(ctx, {rows}, in.dtype());
  detail::with_float_type(in.dtype(), "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    detail::float_kernels<T>(ctx).cross_entropy(in.data<T>(), rows, classes, targets.data<int64_t>(),
                                                options.ignore_index, loss.data<T>(), ctx.threads());
  });
  // The per-row losses' node; the reduction below is made of ops that record their own. Targets
  // are indices: no gradient.
  if (any_requires_grad({&logits}))
    attach_grad_node(loss, "cross_entropy", {logits},
                     [in, targets, ignore_index = options.ignore_index, dtype = logits.dtype()](
                         ExecContext& c, const Array& g, const std::vector<bool>&) {
                       const Array grad = contiguous(c, detail::widen(c, g));
                       Array gx = Array::empty(c, in.shape(), in.dtype());
                       detail::with_float_type(in.dtype(), "cross_entropy", [&](auto tag) {
                         using T = decltype(tag);
                         detail::float_kernels<T>(c).cross_entropy_grad(in.data<T>(), in.dim(0), in.dim(1),
                                                                        targets.data<int64_t>(), ignore_index,
                                                                        grad.data<T>(), gx.data<T>(), c.threads());
                       });
                       return std::vector<Array>{detail::narrow(c, gx, dtype)};
                     });
  // torch divides by the count of kept rows; with none kept that is 0/0 = NaN, as in torch.
  return detail::narrow(ctx, reduce_loss(ctx, loss, options.reduction, static_cast<double>(counted)),
                        logits.dtype());
}

Array mse(ExecContext& ctx, const Array& prediction, const Array& target, Reduction reduction) {
  check(prediction.defined() && target.defined() && prediction.shape() == target.shape(), "mse",
        "prediction and target shapes differ: ", prediction.shape(), " vs ", target.shape());
  const Array squared = square(ctx, sub(ctx, prediction, target));
  return reduce_loss(ctx, squared, reduction, static_cast<double>(squared.numel()));
}

Array conv1d(ExecContext& ctx, const Array& x, const Array& weight, const Array& bias, const Conv1dOptions& o) {
  detail::require_float(x, "conv1d", "input");
  detail::require_float(weight, "conv1d", "weight");
  detail::require_same_dtype(x, weight, "conv1d");
  check(x.rank() == 3 && weight.rank() == 3, "conv1d", "input must be [B, Cin, T] and weight [Cout, Cin/groups, K], got ",
        x.shape(), " and ", weight.shape());
  check(o.stride >= 1 && o.dilation >= 1 && o.groups >= 1 && o.padding >= 0, "conv1d",
        "stride, dilation and groups must be >= 1 and padding >= 0");
  check(!o.causal || o.padding == 0, "conv1d", "causal convolution pads on its own; padding must be 0");
  Conv1dShape s{};
  s.batch = x.dim(0);
  s.in_channels = x.dim(1);
  s.in_len = x.dim(2);
  s.out_channels = weight.dim(0);
  s.kernel = weight.dim(2);
  s.stride = o.stride;
  s.dilation = o.dilation;
  s.groups = o.groups;
  check(s.in_channels % o.groups == 0 && s.out_channels % o.groups == 0 && weight.dim(1) * o.groups == s.in_channels,
        "conv1d", "channels do not divide into ", o.groups, " groups: input ", x.shape(), ", weight ", weight.shape());
  const int64_t reach = (s.kernel - 1) * o.dilation;
  s.pad_left = o.causal ? reach : o.padding;
  const int64_t pad_right = o.causal ? 0 : o.padding;
  const int64_t span = s.in_len + s.pad_left + pad_right - reach;
  check(span >= 1, "conv1d", "input length ", s.in_len, " is shorter than the dilated kernel ", reach + 1);
  s.out_len = (span - 1) / o.stride + 1;
  const Array in = contiguous(ctx, detail::widen(ctx, x.detach())),
              w = contiguous(ctx, detail::widen(ctx, weight.detach()));
  const Array b = parameter_vector(ctx, bias.detach(), s.out_channels, x, "conv1d", "bias");
  Array out = Array::empty(ctx, {s.batch, s.out_channels, s.out_len}, in.dtype());
  detail::with_float_type(in.dtype(), "conv1d", [&](auto tag) {
    using T = decltype(tag);
    detail::float_kernels<T>(ctx).conv1d(in.data<T>(), w.data<T>(), data_or_null<T>(b), s, out.data<T>(),
                                         ctx.threads());
  });
  Array result = detail::narrow(ctx, out, x.dtype());
  if (!any_requires_grad({&x, &weight, &bias})) return result;
  attach_grad_node(result, "conv1d", {x, weight, bias},
                   [in, w, s, dtype = x.dtype()](ExecContext& c, const Array& g, const std::vector<bool>& needs) {
                     const Array grad = contiguous(c, detail::widen(c, g));
                     Array gx = needs[0] ? Array::empty(c, in.shape(), in.dtype()) : Array{};
                     Array gw = needs[1] ? Array::empty(c, w.shape(), w.dtype()) : Array{};
                     Array gb = needs[2] ? Array::empty(c, {s.out_channels}, in.dtype()) : Array{};
                     detail::with_float_type(in.dtype(), "conv1d", [&](auto tag) {
                       using T = decltype(tag);
                       detail::float_kernels<T>(c).conv1d_grad(in.data<T>(), w.data<T>(), grad.data<T>(), s,
                                                               out_or_null<T>(gx), out_or_null<T>(gw),
                                                               out_or_null<T>(gb), c.threads());
                     });
                     std::vector<Array> grads(3);
                     if (gx.defined()) grads[0] = detail::narrow(c, gx, dtype);
                     if (gw.defined()) grads[1] = detail::narrow(c, gw, dtype);
                     if (gb.defined()) grads[2] = detail::narrow(c, gb, dtype);
                     return grads;
                   });
  return result;
}

}  // namespace tempra
