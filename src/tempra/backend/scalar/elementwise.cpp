// tempra/backend/scalar/elementwise.cpp: unary, binary and where, one strided row at a time.
//
// Formulas follow PyTorch's definitions (the goldens' source): gelu_tanh is
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), gelu_erf 0.5 x (1 + erf(x / sqrt 2)), each
// evaluated in a form without cancellation for negative x; softplus is log1p(exp(x)) below 20 and x
// above (torch's default threshold), maximum/minimum propagate NaN.
#include <cmath>
#include <limits>

#include "tempra/backend/scalar/scalar.h"

namespace tempra::scalar {
namespace {

template <class T>
T apply_unary(UnaryOp op, T x) {
  switch (op) {
    case UnaryOp::neg: return -x;
    case UnaryOp::abs: return std::abs(x);
    case UnaryOp::exp: return std::exp(x);
    case UnaryOp::log: return std::log(x);
    case UnaryOp::sqrt: return std::sqrt(x);
    case UnaryOp::rsqrt: return T(1) / std::sqrt(x);
    case UnaryOp::square: return x * x;
    case UnaryOp::tanh: return std::tanh(x);
    case UnaryOp::sigmoid: return T(1) / (T(1) + std::exp(-x));
    case UnaryOp::relu: return x > T(0) ? x : (x == x ? T(0) : x);
    case UnaryOp::gelu_tanh: {
      // 0.5 (1 + tanh(u)) == 1 / (1 + exp(-2u)): the same function without the cancellation
      // that loses all precision of 1 + tanh(u) in the negative tail.
      const T u = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);  // sqrt(2 / pi) (...)
      return x / (T(1) + std::exp(T(-2) * u));
    }
    case UnaryOp::gelu_erf: return T(0.5) * x * std::erfc(x * T(-0.7071067811865476));  // 1 + erf(z) == erfc(-z)
    case UnaryOp::silu: return x / (T(1) + std::exp(-x));
    case UnaryOp::softplus: return x > T(20) ? x : std::log1p(std::exp(x));
    case UnaryOp::sin: return std::sin(x);
    case UnaryOp::cos: return std::cos(x);
  }
  return x;
}

template <class T>
T apply_binary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::add: return a + b;
    case BinaryOp::sub: return a - b;
    case BinaryOp::mul: return a * b;
    case BinaryOp::div: return a / b;
    case BinaryOp::pow: return std::pow(a, b);
    case BinaryOp::maximum: return (a != a || b != b) ? std::numeric_limits<T>::quiet_NaN() : (a > b ? a : b);
    case BinaryOp::minimum: return (a != a || b != b) ? std::numeric_limits<T>::quiet_NaN() : (a < b ? a : b);
  }
  return a;
}

}  // namespace

template <class T>
void unary(UnaryOp op, TensorRef<const T> in, TensorRef<T> out, ThreadPool& pool) {
  const int64_t n = inner_extent(out.shape), si = inner_stride(in.strides), so = inner_stride(out.strides);
  pool.parallel_for(row_count(out.shape), rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for_each_row<2>(out.shape, {&in.strides, &out.strides}, first, last, [&](int64_t, auto offsets) {
      const T* x = in.data + offsets[0];
      T* y = out.data + offsets[1];
      for (int64_t j = 0; j < n; ++j) y[j * so] = apply_unary(op, x[j * si]);
    });
  });
}

template <class T>
void binary(BinaryOp op, TensorRef<const T> a, TensorRef<const T> b, TensorRef<T> out, ThreadPool& pool) {
  const int64_t n = inner_extent(out.shape);
  const int64_t sa = inner_stride(a.strides), sb = inner_stride(b.strides), so = inner_stride(out.strides);
  pool.parallel_for(row_count(out.shape), rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for_each_row<3>(out.shape, {&a.strides, &b.strides, &out.strides}, first, last, [&](int64_t, auto offsets) {
      const T* x = a.data + offsets[0];
      const T* y = b.data + offsets[1];
      T* z = out.data + offsets[2];
      for (int64_t j = 0; j < n; ++j) z[j * so] = apply_binary(op, x[j * sa], y[j * sb]);
    });
  });
}

template <class T>
void where(TensorRef<const bool> cond, TensorRef<const T> a, TensorRef<const T> b, TensorRef<T> out,
           ThreadPool& pool) {
  const int64_t n = inner_extent(out.shape);
  const int64_t sc = inner_stride(cond.strides), sa = inner_stride(a.strides), sb = inner_stride(b.strides),
                so = inner_stride(out.strides);
  pool.parallel_for(row_count(out.shape), rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for_each_row<4>(out.shape, {&cond.strides, &a.strides, &b.strides, &out.strides}, first, last,
                    [&](int64_t, auto off) {
                      for (int64_t j = 0; j < n; ++j)
                        out.data[off[3] + j * so] =
                            cond.data[off[0] + j * sc] ? a.data[off[1] + j * sa] : b.data[off[2] + j * sb];
                    });
  });
}

#define TEMPRA_INSTANTIATE(T)                                                                                \
  template void unary<T>(UnaryOp, TensorRef<const T>, TensorRef<T>, ThreadPool&);                            \
  template void binary<T>(BinaryOp, TensorRef<const T>, TensorRef<const T>, TensorRef<T>, ThreadPool&);      \
  template void where<T>(TensorRef<const bool>, TensorRef<const T>, TensorRef<const T>, TensorRef<T>,        \
                         ThreadPool&);
TEMPRA_INSTANTIATE(float)
TEMPRA_INSTANTIATE(double)
#undef TEMPRA_INSTANTIATE

}  // namespace tempra::scalar
