// tempra/ops/linalg.cpp
//
// The VJPs follow PyTorch's derivatives.yaml: for C = A . B, dA = dC . B^T and dB = A^T . dC,
// each summed back over the batch axes broadcasting stretched (sum_to); the gradient of an
// einsum is the einsum of the output's gradient with the other operand, mapped back to the
// operand's labels (a contraction's gradient is a contraction).
#include "tempra/ops/linalg.h"

#include <string>

#include "tempra/core/grad_node.h"
#include "tempra/ops/creation.h"
#include "tempra/ops/dispatch.h"
#include "tempra/ops/quantize.h"
#include "tempra/ops/reduce.h"

namespace tempra {

namespace {

Array matmul_value(ExecContext& ctx, const Array& a_in, const Array& b_in) {
  detail::require_float(a_in, "matmul", "left operand");
  detail::require_float(b_in, "matmul", "right operand");
  detail::require_same_dtype(a_in, b_in, "matmul");
  check(a_in.rank() >= 1 && b_in.rank() >= 1, "matmul", "operands must have rank >= 1, got ", a_in.shape(), " and ",
        b_in.shape());
  const bool a_vector = a_in.rank() == 1, b_vector = b_in.rank() == 1;
  const Array a = detail::widen(ctx, a_vector ? a_in.unsqueeze(0) : a_in);
  const Array b = detail::widen(ctx, b_vector ? b_in.unsqueeze(1) : b_in);
  const int64_t m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
  check(b.dim(-2) == k, "matmul", "inner dimensions differ: a is ", a_in.shape(), ", b is ", b_in.shape());

  const Dims a_batch(a.shape().begin(), a.shape().end() - 2), b_batch(b.shape().begin(), b.shape().end() - 2);
  const Dims batch = broadcast_shapes(a_batch, b_batch, "matmul");
  Dims a_full = batch, b_full = batch;
  a_full.push_back(m);
  a_full.push_back(k);
  b_full.push_back(k);
  b_full.push_back(n);
  const Array ab = a.broadcast_to(a_full), bb = b.broadcast_to(b_full);
  Dims out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  Array out = Array::empty(ctx, out_shape, a.dtype());

  const int nb = batch.size();
  detail::with_float_type(a.dtype(), "matmul", [&](auto tag) {
    using T = decltype(tag);
    const auto& gemm = detail::float_kernels<T>(ctx).gemm;
    const T* pa = ab.data<T>();
    const T* pb = bb.data<T>();
    T* pc = out.data<T>();
    for (int64_t item = 0; item < batch.product(); ++item) {
      int64_t rest = item, off_a = 0, off_b = 0;
      for (int d = nb - 1; d >= 0; --d) {
        const int64_t i = rest % batch[d];
        rest /= batch[d];
        off_a += i * ab.strides()[d];
        off_b += i * bb.strides()[d];
      }
      gemm(m, n, k, pa + off_a, ab.strides()[nb], ab.strides()[nb + 1], pb + off_b, bb.strides()[nb],
           bb.strides()[nb + 1], pc + item * m * n, n, ctx.threads());
    }
  });
  Array result = detail::narrow(ctx, out, a_in.dtype());
  if (b_vector) result = result.squeeze(-1);
  if (a_vector) result = result.squeeze(-2 + (b_vector ? 1 : 0));
  return result;
}

// dA = dC . B^T and dB = A^T . dC on the operands as matrices (a vector operand gets its unit
// axis back), then summed to each operand's own batch shape.
std::vector<Array> matmul_vjp(ExecContext& ctx, const Array& a_in, const Array& b_in, const Array& g_in,
                              const std::vector<bool>& needs) {
  const bool a_vector = a_in.rank() == 1, b_vector = b_in.rank() == 1;
  const Array a = a_vector ? a_in.unsqueeze(0) : a_in;
  const Array b = b_vector ? b_in.unsqueeze(1) : b_in;
  Array g = g_in;
  if (a_vector) g = g.unsqueeze(g.rank() - (b_vector ? 0 : 1));
  if (b_vector) g = g.unsqueeze(g.rank());
  std::vector<Array> grads(2);
  if (needs[0]) {
    Array ga = sum_to(ctx, matmul_value(ctx, g, b.transpose(-1, -2)), a.shape());
    grads[0] = a_vector ? ga.squeeze(0) : ga;
  }
  if (needs[1]) {
    Array gb;
    if (b.rank() == 2 && a.rank() > 2) {
      // A matrix shared by every batch item (a layer's weight): one GEMM over all rows,
      // [k, rows] . [rows, n], instead of a GEMM per item and a sum over the batch.
      const int64_t k = a.dim(-1), n = g.dim(-1);
      gb = matmul_value(ctx, contiguous(ctx, a).reshape({-1, k}).transpose(0, 1), contiguous(ctx, g).reshape({-1, n}));
    } else {
      gb = sum_to(ctx, matmul_value(ctx, a.transpose(-1, -2), g), b.shape());
    }
    grads[1] = b_vector ? gb.squeeze(1) : gb;
  }
  return grads;
}

}  // namespace

Array matmul(ExecContext& ctx, const Array& a, const Array& b) {
  if (!any_requires_grad({&a, &b})) return matmul_value(ctx, a, b);
  Array out = matmul_value(ctx, a.detach(), b.detach());
  attach_grad_node(out, "matmul", {a, b},
                   [a = a.detach(), b = b.detach()](ExecContext& c, const Array& g, const std::vector<bool>& needs) {
                     return matmul_vjp(c, a, b, g, needs);
                   });
  return out;
}

namespace {

Array linear_value(ExecContext& ctx, const Array& x_in, const Array& w_in) {
  detail::require_float(x_in, "linear", "input");
  check(w_in.defined() && w_in.rank() == 2, "linear", "weights must be [n, k], got ",
        w_in.defined() ? to_string(w_in.shape()) : std::string("an empty array"));
  check(x_in.rank() >= 1 && x_in.dim(-1) == w_in.dim(1), "linear", "input ", x_in.shape(), " does not match weights ",
        w_in.shape(), " (", w_in.dtype().name(), ") on k");
  if (w_in.dtype().is_block_quantized()) return matmul_quantized(ctx, x_in, w_in);
  check(w_in.dtype().is_floating(), "linear", "weights must be floating or block-quantized, got ",
        w_in.dtype().name());
  if (w_in.dtype() == DType::f32 || w_in.dtype() == DType::f64) {
    check(x_in.dtype() == w_in.dtype() || (w_in.dtype() == DType::f32 && detail::is_half(x_in.dtype())), "linear",
          "input ", x_in.dtype().name(), " with ", w_in.dtype().name(), " weights");
    return matmul(ctx, detail::widen(ctx, x_in), w_in.transpose(0, 1));
  }
  // f16 / bf16 weights: rows must be contiguous for the widening loads.
  check(x_in.dtype() != DType::f64, "linear", "f64 input with ", w_in.dtype().name(), " weights");
  const Array w = w_in.strides()[1] == 1 ? w_in : contiguous(ctx, w_in);
  Array x = detail::widen(ctx, x_in);
  if (!x.is_contiguous()) x = contiguous(ctx, x);
  const int64_t k = w.dim(1), n = w.dim(0), rows = k ? x.numel() / k : 0;
  Dims out_shape = x.shape();
  out_shape[out_shape.size() - 1] = n;
  Array out = Array::empty(ctx, out_shape, DType::f32);
  const Kernels& kernels = kernels_for(ctx.backend());
  if (w.dtype() == DType::f16)
    kernels.gemm_f16_weights(rows, n, k, x.data<float>(), k, w.data<f16_t>(), w.strides()[0], out.data<float>(), n,
                             ctx.threads());
  else
    kernels.gemm_bf16_weights(rows, n, k, x.data<float>(), k, w.data<bf16_t>(), w.strides()[0], out.data<float>(), n,
                              ctx.threads());
  return out;
}

// x [..., k] and g [..., n] as matrices of rows: [rows, k] and [rows, n].
Array as_rows(ExecContext& ctx, const Array& t) {
  return contiguous(ctx, t).reshape({-1, t.rank() ? t.dim(-1) : 1});
}

// y = x . w^T: dx = dy . w (linear_input_grad), dw = dy^T . x over all rows at once (one GEMM,
// no batch reduction). A quantized w never requires a gradient (only f32/f64 arrays can); a half
// w that came from a recorded cast gets one, computed in f32 and rounded once.
std::vector<Array> linear_vjp(ExecContext& ctx, const Array& x, const Array& w, const Array& g,
                              const std::vector<bool>& needs) {
  std::vector<Array> grads(2);
  const Array wg = detail::widen(ctx, g);
  if (needs[0]) grads[0] = detail::narrow(ctx, linear_input_grad(ctx, wg, w), x.dtype());
  if (needs[1]) {
    Array wx = detail::widen(ctx, x);
    if (wx.dtype() != wg.dtype()) wx = cast(ctx, wx, wg.dtype());
    const Array gw = matmul_value(ctx, as_rows(ctx, wg).transpose(0, 1), as_rows(ctx, wx));
    grads[1] = detail::narrow(ctx, gw, w.dtype());
  }
  return grads;
}

}  // namespace

// A contiguous block-quantized or half w (the frozen base weights of a LoRA layer) is read as
// stored: the kernel widens or decodes it panel by panel, never into a whole f32 copy
// (a 151936 x 1024 head would be 594 MiB). Other weights are widened (or, quantized but not
// contiguous, decoded) first.
Array linear_input_grad(ExecContext& ctx, const Array& g, const Array& w) {
  detail::require_float(g, "linear_input_grad", "gradient");
  check(w.defined() && w.rank() == 2 && (w.dtype().is_floating() || w.dtype().is_block_quantized()),
        "linear_input_grad", "weights must be floating or block-quantized [n, k], got ",
        w.defined() ? to_string(w.shape()) + " " + std::string(w.dtype().name()) : std::string("an empty array"));
  check(g.rank() >= 1 && g.dim(-1) == w.dim(0), "linear_input_grad", "gradient ", g.shape(),
        " does not match weights ", w.shape(), " on n");
  const Array wg = detail::widen(ctx, g);
  Dims out_shape = g.shape();
  out_shape[out_shape.size() - 1] = w.dim(1);
  const bool stored = w.dtype().is_block_quantized() || detail::is_half(w.dtype());
  if (stored && wg.dtype() == DType::f32 && w.is_contiguous()) {
    const Array g_rows = as_rows(ctx, wg);
    const int64_t n = w.dim(0), k = w.dim(1), rows = g_rows.dim(0);
    Array dx = Array::empty(ctx, {rows, k}, DType::f32);
    kernels_for(ctx.backend())
        .gemm_stored_weights_nn(rows, n, k, g_rows.data<float>(), n, w.raw_data(), w.dtype(), dx.data<float>(), k,
                                ctx.threads());
    return dx.reshape(out_shape);
  }
  Array w_float = w.dtype().is_block_quantized() ? dequantize(ctx, w) : detail::widen(ctx, w);
  if (w_float.dtype() != wg.dtype()) w_float = cast(ctx, w_float, wg.dtype());
  return matmul_value(ctx, wg, w_float);
}

Array linear(ExecContext& ctx, const Array& x, const Array& w) {
  if (!any_requires_grad({&x, &w})) return linear_value(ctx, x, w);
  Array out = linear_value(ctx, x.detach(), w.detach());
  attach_grad_node(out, "linear", {x, w},
                   [x = x.detach(), w = w.detach()](ExecContext& c, const Array& g, const std::vector<bool>& needs) {
                     return linear_vjp(c, x, w, g, needs);
                   });
  return out;
}

Array bmm(ExecContext& ctx, const Array& a, const Array& b) {
  check(a.defined() && b.defined() && a.rank() == 3 && b.rank() == 3, "bmm", "operands must have rank 3, got ",
        a.shape(), " and ", b.shape());
  check(a.dim(0) == b.dim(0), "bmm", "batch sizes differ: ", a.shape(), " vs ", b.shape());
  return matmul(ctx, a, b);
}

namespace {

// Views `a` (already permuted to [batch..., rows..., cols...]) as [batch, rows, cols] without a
// copy when each group's axes nest by stride, as they do for any permutation of a contiguous
// array that keeps each group's axes in memory order. Otherwise copies first.
Array as_3d(ExecContext& ctx, const Array& a, int n_batch, int n_rows) {
  const int bounds[4] = {0, n_batch, n_batch + n_rows, a.rank()};
  Dims shape, strides;
  for (int g = 0; g < 3; ++g) {
    int64_t extent = 1, stride = 1;
    bool nested = true;
    for (int d = bounds[g]; d < bounds[g + 1]; ++d) {
      if (a.shape()[d] == 1) continue;  // a unit axis's stride never matters
      if (extent > 1 && stride != a.strides()[d] * a.shape()[d]) nested = false;
      extent *= a.shape()[d];
      stride = a.strides()[d];
    }
    if (!nested) {
      const Array c = contiguous(ctx, a);
      return as_3d(ctx, c, n_batch, n_rows);
    }
    shape.push_back(extent);
    strides.push_back(stride);
  }
  return Array(a.storage(), a.dtype(), shape, strides, a.offset());
}

}  // namespace

Array einsum(ExecContext& ctx, std::string_view equation, const Array& a, const Array& b) {
  const size_t comma = equation.find(','), arrow = equation.find("->");
  check(comma != std::string_view::npos && arrow != std::string_view::npos && comma < arrow, "einsum",
        "equation '", equation, "' is not of the form 'ab,bc->ac'");
  return einsum(ctx, a, equation.substr(0, comma), b, equation.substr(comma + 1, arrow - comma - 1),
                equation.substr(arrow + 2));
}

namespace {

Array einsum_value(ExecContext& ctx, const Array& a, std::string_view la, const Array& b, std::string_view lb,
                   std::string_view lo) {
  check(a.defined() && b.defined(), "einsum", "operand is an empty array");
  check(static_cast<int>(la.size()) == a.rank() && static_cast<int>(lb.size()) == b.rank(), "einsum", "labels '",
        la, "' and '", lb, "' do not match operand shapes ", a.shape(), " and ", b.shape());
  auto has = [](std::string_view s, char c) { return s.find(c) != std::string_view::npos; };
  auto unique = [](std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i)
      if (s.find(s[i], i + 1) != std::string_view::npos) return false;
    return true;
  };
  check(unique(la) && unique(lb) && unique(lo), "einsum", "a label repeats within '", la, "', '", lb, "' or '",
        lo, "'");

  std::string batch, contracted, a_free, b_free;
  for (char c : lo) {
    check(has(la, c) || has(lb, c), "einsum", "output label '", c, "' is in neither operand ('", la, "', '", lb,
          "')");
    if (has(la, c) && has(lb, c)) batch += c;
  }
  for (char c : la) {
    if (has(lb, c)) {
      check(a.dim(static_cast<int>(la.find(c))) == b.dim(static_cast<int>(lb.find(c))), "einsum", "axis '", c,
            "' has extent ", a.dim(static_cast<int>(la.find(c))), " in ", a.shape(), " but ",
            b.dim(static_cast<int>(lb.find(c))), " in ", b.shape());
      if (!has(lo, c)) contracted += c;
    } else {
      check(has(lo, c), "einsum", "label '", c, "' appears only in the first operand and not in the output '", lo,
            "'; reduce it first");
      a_free += c;
    }
  }
  for (char c : lb) {
    if (has(la, c)) continue;
    check(has(lo, c), "einsum", "label '", c, "' appears only in the second operand and not in the output '", lo,
          "'; reduce it first");
    b_free += c;
  }

  auto order_of = [](std::string_view labels, const std::string& wanted) {
    Dims order;
    for (char c : wanted) order.push_back(static_cast<int64_t>(labels.find(c)));
    return order;
  };
  const int nb = static_cast<int>(batch.size());
  const Array a3 = as_3d(ctx, a.permute(order_of(la, batch + a_free + contracted)), nb, static_cast<int>(a_free.size()));
  const Array b3 = as_3d(ctx, b.permute(order_of(lb, batch + contracted + b_free)), nb,
                         static_cast<int>(contracted.size()));
  const Array product = matmul(ctx, a3, b3);

  const std::string produced = batch + a_free + b_free;
  Dims produced_shape;
  for (char c : produced)
    produced_shape.push_back(has(la, c) ? a.dim(static_cast<int>(la.find(c))) : b.dim(static_cast<int>(lb.find(c))));
  return contiguous(ctx, product.reshape(produced_shape).permute(order_of(produced, std::string(lo))));
}

}  // namespace

// out = einsum(a, b) over labels la, lb -> lo. Every label of la is in lo or lb (the forward
// rejects a label only one operand has and the output lacks), so da = einsum(dout, b) -> la is
// itself a valid contraction: b's labels missing from la are summed, a's free labels come from
// dout. The same holds for db.
Array einsum(ExecContext& ctx, const Array& a, std::string_view la, const Array& b, std::string_view lb,
             std::string_view lo) {
  if (!any_requires_grad({&a, &b})) return einsum_value(ctx, a, la, b, lb, lo);
  Array out = einsum_value(ctx, a.detach(), la, b.detach(), lb, lo);
  attach_grad_node(out, "einsum", {a, b},
                   [a = a.detach(), b = b.detach(), la = std::string(la), lb = std::string(lb),
                    lo = std::string(lo)](ExecContext& c, const Array& g, const std::vector<bool>& needs) {
                     std::vector<Array> grads(2);
                     if (needs[0]) grads[0] = einsum_value(c, g, lo, b, lb, la);
                     if (needs[1]) grads[1] = einsum_value(c, a, la, g, lo, lb);
                     return grads;
                   });
  return out;
}

}  // namespace tempra
