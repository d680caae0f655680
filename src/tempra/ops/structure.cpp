// tempra/ops/structure.cpp
//
// VJPs (PyTorch's derivatives.yaml): concat and stack hand each input its slice of the
// gradient (a view); gather and index_select scatter-add the gradient back into zeros of the
// input's shape (embedding goes through index_select: rows of the table); pad's gradient is the
// interior view; tril/triu apply the same triangle to the gradient. split returns views, which
// record their own VJP (core/grad_node.h). Index arrays are never differentiable.
#include "tempra/ops/structure.h"

#include "tempra/backend/scalar/movement.h"
#include "tempra/core/grad_node.h"
#include "tempra/ops/creation.h"
#include "tempra/ops/dispatch.h"
#include "tempra/quant/formats.h"

namespace tempra {

namespace {
Array concat_value(ExecContext& ctx, const std::vector<Array>& parts, int axis) {
  check(!parts.empty(), "concat", "needs at least one array");
  const Array& first = parts.front();
  check(first.defined() && first.rank() >= 1, "concat", "inputs must have rank >= 1");
  const int a = normalize_axis(axis, first.rank(), "concat");
  Dims shape = first.shape();
  shape[a] = 0;
  for (const Array& p : parts) {
    check(p.defined() && p.dtype() == first.dtype() && p.rank() == first.rank(), "concat",
          "inputs must share dtype and rank: ", first.dtype().name(), " ", first.shape(), " vs ",
          p.defined() ? p.dtype().name() : "empty", " ", p.shape());
    for (int d = 0; d < p.rank(); ++d)
      check(d == a || p.shape()[d] == first.shape()[d], "concat", "shapes ", first.shape(), " and ", p.shape(),
            " differ off axis ", a);
    shape[a] += p.shape()[a];
  }
  Array out = Array::empty(ctx, shape, first.dtype());
  int64_t at = 0;
  for (const Array& p : parts) {
    copy_into(ctx, p, out.narrow(a, at, p.shape()[a]));
    at += p.shape()[a];
  }
  return out;
}
}  // namespace

Array concat(ExecContext& ctx, const std::vector<Array>& parts, int axis) {
  if (!any_requires_grad(parts)) return concat_value(ctx, parts, axis);
  std::vector<Array> detached;
  for (const Array& p : parts) detached.push_back(p.detach());
  Array out = concat_value(ctx, detached, axis);
  const int a = normalize_axis(axis, out.rank(), "concat");
  std::vector<int64_t> sizes;
  for (const Array& p : parts) sizes.push_back(p.shape()[a]);
  attach_grad_node(out, "concat", parts, [a, sizes](ExecContext&, const Array& g, const std::vector<bool>& needs) {
    std::vector<Array> grads(sizes.size());
    int64_t at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (needs[i]) grads[i] = g.narrow(a, at, sizes[i]);
      at += sizes[i];
    }
    return grads;
  });
  return out;
}

Array stack(ExecContext& ctx, const std::vector<Array>& parts, int axis) {
  check(!parts.empty() && parts.front().defined(), "stack", "needs at least one array");
  const int a = normalize_axis(axis, parts.front().rank() + 1, "stack");
  std::vector<Array> expanded;
  expanded.reserve(parts.size());
  for (const Array& p : parts) {
    check(p.defined() && p.shape() == parts.front().shape(), "stack", "shapes differ: ", parts.front().shape(),
          " vs ", p.shape());
    expanded.push_back(p.detach().unsqueeze(a));
  }
  Array out = concat_value(ctx, expanded, a);
  // Part i's gradient is the gradient's slice i along the new axis (a view).
  record_op(out, "stack", parts, [a](ExecContext&, const Array& g, const std::vector<bool>& needs) {
    std::vector<Array> grads(needs.size());
    for (size_t i = 0; i < needs.size(); ++i)
      if (needs[i]) grads[i] = g.select(a, static_cast<int64_t>(i));
    return grads;
  });
  return out;
}

std::vector<Array> split(const Array& x, int axis, const std::vector<int64_t>& sizes) {
  check(x.defined(), "split", "input is an empty array");
  const int a = normalize_axis(axis, x.rank(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    check(s >= 0, "split", "negative size ", s);
    total += s;
  }
  check(total == x.shape()[a], "split", "sizes add up to ", total, " but axis ", a, " of shape ", x.shape(),
        " has ", x.shape()[a]);
  std::vector<Array> pieces;
  int64_t at = 0;
  for (int64_t s : sizes) {
    pieces.push_back(x.narrow(a, at, s));
    at += s;
  }
  return pieces;
}

namespace {
void check_indices(const Array& index, int64_t limit, const char* op, const Dims& shape) {
  const int64_t* p = index.data<int64_t>();
  for (int64_t i = 0; i < index.numel(); ++i)
    check(p[i] >= 0 && p[i] < limit, op, "index ", p[i], " is out of range [0, ", limit, ") for shape ", shape);
}
}  // namespace

namespace {
Array gather_value(ExecContext& ctx, const Array& x, int axis, const Array& index_in) {
  check(x.defined(), "gather", "input is an empty array");
  const int a = normalize_axis(axis, x.rank(), "gather");
  const Array index = detail::index_as_i64(ctx, index_in, "gather");
  check(index.rank() == x.rank(), "gather", "index of shape ", index.shape(), " must have the rank of ", x.shape());
  for (int d = 0; d < x.rank(); ++d)
    check(d == a || index.shape()[d] <= x.shape()[d], "gather", "index shape ", index.shape(),
          " exceeds input shape ", x.shape(), " on axis ", d);
  check_indices(index, x.shape()[a], "gather", x.shape());
  Array out = Array::empty(ctx, index.shape(), x.dtype());
  visit_dtype(x.dtype(), "gather", [&](auto tag) {
    using T = decltype(tag);
    scalar::gather<T>(x.cref<T>(), index.cref<int64_t>(), a, out.ref<T>(), ctx.threads());
  });
  return out;
}

Array index_select_value(ExecContext& ctx, const Array& x_in, int axis, const Array& index_in) {
  check(x_in.defined(), "index_select", "input is an empty array");
  const int a = normalize_axis(axis, x_in.rank(), "index_select");
  const Array index = detail::index_as_i64(ctx, index_in, "index_select");
  check(index.rank() == 1, "index_select", "index must be 1-D, got shape ", index.shape());
  check_indices(index, x_in.shape()[a], "index_select", x_in.shape());
  const Array x = contiguous(ctx, x_in);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < x.rank(); ++d) {
    if (d < a) outer *= x.shape()[d];
    if (d > a) inner *= x.shape()[d];
  }
  Dims shape = x.shape();
  shape[a] = index.numel();
  Array out = Array::empty(ctx, shape, x.dtype());
  visit_dtype(x.dtype(), "index_select", [&](auto tag) {
    using T = decltype(tag);
    scalar::index_select<T>(x.data<T>(), outer, x.shape()[a], inner, index.data<int64_t>(), index.numel(),
                            out.data<T>(), ctx.threads());
  });
  return out;
}

// Zeros of `shape` in g's compute dtype, into which fn(T tag, wide g, out) scatter-adds; the
// result is rounded once to `dtype` (half inputs accumulate in f32).
template <class Fn>
Array scatter_into_zeros(ExecContext& ctx, const Array& g, const Dims& shape, DType dtype, const char* op, Fn fn) {
  const Array wg = detail::widen(ctx, g);
  Array out = Array::zeros(ctx, shape, wg.dtype());
  detail::with_float_type(wg.dtype(), op, [&](auto tag) { fn(tag, wg, out); });
  return detail::narrow(ctx, out, dtype);
}

}  // namespace

Array gather(ExecContext& ctx, const Array& x, int axis, const Array& index) {
  if (!any_requires_grad({&x})) return gather_value(ctx, x, axis, index);
  Array out = gather_value(ctx, x.detach(), axis, index);
  const int a = normalize_axis(axis, x.rank(), "gather");
  attach_grad_node(out, "gather", {x, Array{}},
                   [a, shape = x.shape(), dtype = x.dtype(), index = detail::index_as_i64(ctx, index, "gather")](
                       ExecContext& c, const Array& g, const std::vector<bool>&) {
                     Array gx = scatter_into_zeros(c, g, shape, dtype, "gather", [&](auto tag, const Array& wg, Array& out) {
                       using T = decltype(tag);
                       scalar::gather_add<T>(wg.cref<T>(), index.cref<int64_t>(), a, out.ref<T>(), c.threads());
                     });
                     return std::vector<Array>{gx, Array{}};
                   });
  return out;
}

Array index_select(ExecContext& ctx, const Array& x, int axis, const Array& index) {
  if (!any_requires_grad({&x})) return index_select_value(ctx, x, axis, index);
  Array out = index_select_value(ctx, x.detach(), axis, index);
  const int a = normalize_axis(axis, x.rank(), "index_select");
  attach_grad_node(
      out, "index_select", {x, Array{}},
      [a, shape = x.shape(), dtype = x.dtype(), index = detail::index_as_i64(ctx, index, "index_select")](
          ExecContext& c, const Array& g, const std::vector<bool>&) {
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < shape.size(); ++d) {
          if (d < a) outer *= shape[d];
          if (d > a) inner *= shape[d];
        }
        Array gx = scatter_into_zeros(c, g, shape, dtype, "index_select", [&](auto tag, const Array& wg, Array& out) {
          using T = decltype(tag);
          const Array gc = contiguous(c, wg);
          scalar::index_add<T>(gc.data<T>(), outer, index.numel(), inner, index.data<int64_t>(), shape[a],
                               out.data<T>(), c.threads());
        });
        return std::vector<Array>{gx, Array{}};
      });
  return out;
}

Array embedding(ExecContext& ctx, const Array& table, const Array& ids) {
  check(table.defined() && table.rank() == 2, "embedding", "table must be [vocab, dim], got ", table.shape());
  check(ids.defined(), "embedding", "ids is an empty array");
  const Array flat = detail::index_as_i64(ctx, ids, "embedding").reshape({-1});
  Dims shape = ids.shape();
  shape.push_back(table.dim(1));
  if (!table.dtype().is_block_quantized()) return index_select(ctx, table, 0, flat).reshape(shape);
  // A block-quantized table (how quantized model files store token embeddings): decode only
  // the selected rows, each with the format's reference decoder, into f32.
  check_indices(flat, table.dim(0), "embedding", table.shape());
  const quant::QuantFormat& format = *quant::find_format(table.dtype());
  const int64_t dim = table.dim(1), rows = flat.numel();
  const size_t row_bytes = table.dtype().bytes_for(dim);
  const auto* blocks = static_cast<const uint8_t*>(table.raw_data());
  const int64_t* index = flat.data<int64_t>();
  Array out = Array::empty(ctx, {rows, dim}, DType::f32);
  float* y = out.data<float>();
  ctx.threads().parallel_for(rows, 1 + 16384 / (dim + 1), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r)
      format.dequantize_row(blocks + static_cast<size_t>(index[r]) * row_bytes, y + r * dim, dim);
  });
  return out.reshape(shape);
}

namespace {
Array pad_value(ExecContext& ctx, const Array& x, const std::vector<std::pair<int64_t, int64_t>>& pads, double value) {
  check(x.defined(), "pad", "input is an empty array");
  check(static_cast<int>(pads.size()) == x.rank(), "pad", "needs one (before, after) pair per axis: got ",
        pads.size(), " for shape ", x.shape());
  Dims shape = x.shape();
  for (int d = 0; d < x.rank(); ++d) {
    check(pads[d].first >= 0 && pads[d].second >= 0, "pad", "negative padding on axis ", d);
    shape[d] += pads[d].first + pads[d].second;
  }
  Array out = full(ctx, shape, value, x.dtype());
  Array interior = out;
  for (int d = 0; d < x.rank(); ++d) interior = interior.narrow(d, pads[d].first, x.shape()[d]);
  copy_into(ctx, x, interior);
  return out;
}
}  // namespace

Array pad(ExecContext& ctx, const Array& x, const std::vector<std::pair<int64_t, int64_t>>& pads, double value) {
  if (!any_requires_grad({&x})) return pad_value(ctx, x, pads, value);
  Array out = pad_value(ctx, x.detach(), pads, value);
  attach_grad_node(out, "pad", {x}, [pads, shape = x.shape()](ExecContext&, const Array& g, const std::vector<bool>&) {
    Array interior = g;
    for (int d = 0; d < shape.size(); ++d) interior = interior.narrow(d, pads[d].first, shape[d]);
    return std::vector<Array>{interior};
  });
  return out;
}

namespace {
Array triangle(ExecContext& ctx, const Array& x, int64_t diagonal, bool upper) {
  const char* name = upper ? "triu" : "tril";
  check(x.defined() && x.rank() >= 2, name, "input must have rank >= 2, got ",
        x.defined() ? to_string(x.shape()) : "an empty array");
  Array out = Array::empty(ctx, x.shape(), x.dtype());
  visit_dtype(x.dtype(), name, [&](auto tag) {
    using T = decltype(tag);
    scalar::triangle<T>(x.cref<T>(), diagonal, upper, out.ref<T>(), ctx.threads());
  });
  return out;
}

Array triangle_recorded(ExecContext& ctx, const Array& x, int64_t diagonal, bool upper) {
  if (!any_requires_grad({&x})) return triangle(ctx, x, diagonal, upper);
  Array out = triangle(ctx, x.detach(), diagonal, upper);
  attach_grad_node(out, upper ? "triu" : "tril", {x}, [diagonal, upper](ExecContext& c, const Array& g, const std::vector<bool>&) {
    return std::vector<Array>{triangle(c, g, diagonal, upper)};
  });
  return out;
}
}  // namespace

Array tril(ExecContext& ctx, const Array& x, int64_t diagonal) { return triangle_recorded(ctx, x, diagonal, false); }
Array triu(ExecContext& ctx, const Array& x, int64_t diagonal) { return triangle_recorded(ctx, x, diagonal, true); }

}  // namespace tempra
