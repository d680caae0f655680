// tempra/backend/native/elementwise.cpp: unary and binary ops over rows with unit inner stride.
//
// Vectorized where it matters and where the math is exact or well bounded:
// - bitwise equal to scalar: neg, abs, square, relu, sqrt, rsqrt (1 / sqrt, both correctly
//   rounded), add, sub, mul, div, maximum, minimum (with scalar's NaN rule);
// - within 1e-6 relative: exp, tanh, sigmoid, silu, gelu_tanh (activations.h).
// - unary_grad: bitwise equal to scalar for exp, tanh and sigmoid (their derivatives read the
//   output: the same operations); silu's within its sigmoid's bound (the derivative's terms
//   carry simd::exp's error); the others run the scalar kernel.
// Everything else (log, sin, cos, softplus, gelu_erf, pow) and any row whose innermost stride
// is not 1 (or 0 for a broadcast operand) runs the scalar kernel: correct first, and those are
// not on any hot path yet.
#include "tempra/backend/native/activations.h"
#include "tempra/backend/native/native.h"
#include "tempra/backend/scalar/scalar.h"

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native {
namespace {

using namespace simd;

// y[j] = f(x[j]) for j < n, full vectors then one partial one.
template <class F>
inline void map_row(const float* x, float* y, int64_t n, F f) {
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) store(y + j, f(load(x + j)));
  if (j < n) store_partial(y + j, f(load_partial(x + j, int(n - j))), int(n - j));
}

// z[j] = f(a[j], b[j]); a or b may be a broadcast scalar (stride 0).
template <class F>
inline void map_row2(const float* a, int64_t sa, const float* b, int64_t sb, float* z, int64_t n, F f) {
  auto get = [](const float* p, int64_t stride, int64_t j, int count) {
    if (stride == 0) return set1(*p);
    return count == kLanes ? load(p + j) : load_partial(p + j, count);
  };
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) store(z + j, f(get(a, sa, j, kLanes), get(b, sb, j, kLanes)));
  if (j < n) {
    const int count = int(n - j);
    store_partial(z + j, f(get(a, sa, j, count), get(b, sb, j, count)), count);
  }
}

// NaN if either operand is NaN, else the larger (b on ties, as scalar's `a > b ? a : b`).
inline V maximum(V a, V b) { return select(is_nan(a), a, max_raw(a, b)); }
inline V minimum(V a, V b) { return select(is_nan(a), a, min_raw(a, b)); }

template <class F>
void run_unary(TensorRef<const float> in, TensorRef<float> out, ThreadPool& pool, F f) {
  const int64_t n = inner_extent(out.shape);
  pool.parallel_for(row_count(out.shape), scalar::rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for_each_row<2>(out.shape, {&in.strides, &out.strides}, first, last,
                    [&](int64_t, auto offsets) { map_row(in.data + offsets[0], out.data + offsets[1], n, f); });
  });
}

template <class F>
void run_binary(TensorRef<const float> a, TensorRef<const float> b, TensorRef<float> out, ThreadPool& pool, F f) {
  const int64_t n = inner_extent(out.shape), sa = inner_stride(a.strides), sb = inner_stride(b.strides);
  pool.parallel_for(row_count(out.shape), scalar::rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for_each_row<3>(out.shape, {&a.strides, &b.strides, &out.strides}, first, last, [&](int64_t, auto offsets) {
      map_row2(a.data + offsets[0], sa, b.data + offsets[1], sb, out.data + offsets[2], n, f);
    });
  });
}

}  // namespace

void unary(UnaryOp op, TensorRef<const float> in, TensorRef<float> out, ThreadPool& pool) {
  const bool unit = inner_extent(out.shape) <= 1 || (inner_stride(in.strides) == 1 && inner_stride(out.strides) == 1);
  if (!unit) return scalar::unary(op, in, out, pool);
  switch (op) {
    case UnaryOp::neg: return run_unary(in, out, pool, [](V x) { return neg(x); });
    case UnaryOp::abs: return run_unary(in, out, pool, [](V x) { return abs(x); });
    case UnaryOp::square: return run_unary(in, out, pool, [](V x) { return mul(x, x); });
    case UnaryOp::sqrt: return run_unary(in, out, pool, [](V x) { return sqrt(x); });
    case UnaryOp::rsqrt: return run_unary(in, out, pool, [](V x) { return div(set1(1.0f), sqrt(x)); });
    case UnaryOp::relu:
      return run_unary(in, out, pool, [](V x) { return select(is_nan(x), x, select(greater(x, zero()), x, zero())); });
    case UnaryOp::exp: return run_unary(in, out, pool, [](V x) { return exp(x); });
    case UnaryOp::tanh: return run_unary(in, out, pool, [](V x) { return tanh(x); });
    case UnaryOp::sigmoid: return run_unary(in, out, pool, [](V x) { return sigmoid(x); });
    case UnaryOp::silu: return run_unary(in, out, pool, [](V x) { return silu(x); });
    case UnaryOp::gelu_tanh: return run_unary(in, out, pool, [](V x) { return gelu_tanh(x); });
    default: return scalar::unary(op, in, out, pool);
  }
}

void unary_grad(UnaryOp op, TensorRef<const float> x, TensorRef<const float> y, TensorRef<const float> g,
                TensorRef<float> gx, ThreadPool& pool) {
  const int64_t n = inner_extent(gx.shape);
  const bool unit = n <= 1 || (inner_stride(x.strides) == 1 && inner_stride(y.strides) == 1 &&
                               inner_stride(g.strides) == 1 && inner_stride(gx.strides) == 1);
  // The derivative as scalar's unary_derivative writes it, times g: from the output y where
  // that is how scalar reads it (the same operations, so bitwise), from x for silu.
  const auto run = [&](auto derivative_times_g) {
    pool.parallel_for(row_count(gx.shape), scalar::rows_per_chunk(n), [&](int64_t first, int64_t last) {
      for_each_row<4>(gx.shape, {&x.strides, &y.strides, &g.strides, &gx.strides}, first, last, [&](int64_t, auto o) {
        const float *xs = x.data + o[0], *ys = y.data + o[1], *gs = g.data + o[2];
        float* out = gx.data + o[3];
        int64_t j = 0;
        for (; j + kLanes <= n; j += kLanes)
          store(out + j, derivative_times_g(load(xs + j), load(ys + j), load(gs + j)));
        if (j < n) {
          const int tail = int(n - j);
          store_partial(out + j,
                        derivative_times_g(load_partial(xs + j, tail), load_partial(ys + j, tail),
                                           load_partial(gs + j, tail)),
                        tail);
        }
      });
    });
  };
  if (!unit) return scalar::unary_grad(op, x, y, g, gx, pool);
  const V one = set1(1.0f);
  switch (op) {
    case UnaryOp::exp: return run([](V, V yv, V gv) { return mul(gv, yv); });
    case UnaryOp::tanh: return run([one](V, V yv, V gv) { return mul(gv, sub(one, mul(yv, yv))); });
    case UnaryOp::sigmoid: return run([one](V, V yv, V gv) { return mul(gv, mul(yv, sub(one, yv))); });
    case UnaryOp::silu:
      return run([one](V xv, V, V gv) {
        const V s = sigmoid(xv);
        return mul(gv, mul(s, add(one, mul(xv, sub(one, s)))));
      });
    default: return scalar::unary_grad(op, x, y, g, gx, pool);
  }
}

void binary(BinaryOp op, TensorRef<const float> a, TensorRef<const float> b, TensorRef<float> out, ThreadPool& pool) {
  const int64_t sa = inner_stride(a.strides), sb = inner_stride(b.strides);
  const bool unit = inner_extent(out.shape) <= 1 ||
                    ((sa == 1 || sa == 0) && (sb == 1 || sb == 0) && inner_stride(out.strides) == 1);
  if (!unit) return scalar::binary(op, a, b, out, pool);
  switch (op) {
    case BinaryOp::add: return run_binary(a, b, out, pool, [](V x, V y) { return add(x, y); });
    case BinaryOp::sub: return run_binary(a, b, out, pool, [](V x, V y) { return sub(x, y); });
    case BinaryOp::mul: return run_binary(a, b, out, pool, [](V x, V y) { return mul(x, y); });
    case BinaryOp::div: return run_binary(a, b, out, pool, [](V x, V y) { return div(x, y); });
    case BinaryOp::maximum: return run_binary(a, b, out, pool, [](V x, V y) { return maximum(x, y); });
    case BinaryOp::minimum: return run_binary(a, b, out, pool, [](V x, V y) { return minimum(x, y); });
    default: return scalar::binary(op, a, b, out, pool);
  }
}

}  // namespace tempra::native
#endif  // TEMPRA_SIMD_ARM
