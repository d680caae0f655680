// tempra/backend/scalar/elementwise_grad.cpp: the backward kernels of unary and binary ops.
//
// Derivatives follow PyTorch's tools/autograd/derivatives.yaml (the goldens' source): abs's is
// sign(x) (0 at 0), relu's is 1 where x > 0 else 0, pow's exponent gradient is 0 where the base
// is 0 and the exponent >= 0 (instead of 0 * log 0), maximum/minimum split the gradient evenly
// on ties. Each is evaluated with the same stable forms as the forward (elementwise.cpp).
#include <cmath>

#include "tempra/backend/scalar/scalar.h"

namespace tempra::scalar {
namespace {

template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// d op(x) / dx, given y = op(x) (the forward's output: the derivative of exp, sqrt, rsqrt, tanh
// and sigmoid is a cheap function of it, where recomputing it from x costs a libm call).
template <class T>
T unary_derivative(UnaryOp op, T x, T y) {
  switch (op) {
    case UnaryOp::neg: return T(-1);
    case UnaryOp::abs: return x > T(0) ? T(1) : x < T(0) ? T(-1) : (x == x ? T(0) : x);
    case UnaryOp::exp: return y;
    case UnaryOp::log: return T(1) / x;
    case UnaryOp::sqrt: return T(0.5) / y;
    case UnaryOp::rsqrt: return T(-0.5) * y / x;
    case UnaryOp::square: return T(2) * x;
    case UnaryOp::tanh: return T(1) - y * y;
    case UnaryOp::sigmoid: return y * (T(1) - y);
    case UnaryOp::relu: return x > T(0) ? T(1) : (x == x ? T(0) : x);
    case UnaryOp::gelu_tanh: {
      // gelu(x) = x * p with p = 0.5 (1 + tanh u) = 1 / (1 + exp(-2u)), u = k (x + c x^3):
      // gelu' = p + x * 2 p (1 - p) * k (1 + 3 c x^2), since dp/du = 2 p (1 - p).
      const T k = T(0.7978845608028654), c = T(0.044715);
      const T u = k * (x + c * x * x * x);
      const T p = T(1) / (T(1) + std::exp(T(-2) * u));
      return p + x * T(2) * p * (T(1) - p) * k * (T(1) + T(3) * c * x * x);
    }
    case UnaryOp::gelu_erf: {
      // Phi(x) + x phi(x).
      const T cdf = T(0.5) * std::erfc(x * T(-0.7071067811865476));
      const T pdf = T(0.3989422804014327) * std::exp(T(-0.5) * x * x);
      return cdf + x * pdf;
    }
    case UnaryOp::silu: {
      const T s = sigmoid(x);
      return s * (T(1) + x * (T(1) - s));
    }
    case UnaryOp::softplus: return x > T(20) ? T(1) : sigmoid(x);
    case UnaryOp::sin: return std::cos(x);
    case UnaryOp::cos: return -std::sin(x);
  }
  return T(0);
}

// (d/da, d/db) of a op b.
template <class T>
void binary_derivatives(BinaryOp op, T a, T b, T& da, T& db) {
  switch (op) {
    case BinaryOp::add: da = T(1), db = T(1); return;
    case BinaryOp::sub: da = T(1), db = T(-1); return;
    case BinaryOp::mul: da = b, db = a; return;
    case BinaryOp::div: da = T(1) / b, db = -a / (b * b); return;
    case BinaryOp::pow:
      da = b * std::pow(a, b - T(1));
      db = (a == T(0) && b >= T(0)) ? T(0) : std::pow(a, b) * std::log(a);
      return;
    case BinaryOp::maximum:
    case BinaryOp::minimum: {
      const bool a_wins = op == BinaryOp::maximum ? a > b : a < b;
      if (a == b) da = T(0.5), db = T(0.5);
      else da = a_wins ? T(1) : T(0), db = a_wins ? T(0) : T(1);
      return;
    }
  }
}

}  // namespace

template <class T>
void unary_grad(UnaryOp op, TensorRef<const T> x, TensorRef<const T> y, TensorRef<const T> g, TensorRef<T> gx,
                ThreadPool& pool) {
  const int64_t n = inner_extent(gx.shape);
  const int64_t sx = inner_stride(x.strides), sy = inner_stride(y.strides), sg = inner_stride(g.strides),
                so = inner_stride(gx.strides);
  pool.parallel_for(row_count(gx.shape), rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for_each_row<4>(gx.shape, {&x.strides, &y.strides, &g.strides, &gx.strides}, first, last, [&](int64_t, auto off) {
      for (int64_t j = 0; j < n; ++j)
        gx.data[off[3] + j * so] =
            g.data[off[2] + j * sg] * unary_derivative(op, x.data[off[0] + j * sx], y.data[off[1] + j * sy]);
    });
  });
}

template <class T>
void binary_grad(BinaryOp op, TensorRef<const T> a, TensorRef<const T> b, TensorRef<const T> g, TensorRef<T> ga,
                 TensorRef<T> gb, ThreadPool& pool) {
  const int64_t n = inner_extent(g.shape);
  const int64_t sa = inner_stride(a.strides), sb = inner_stride(b.strides), sg = inner_stride(g.strides),
                sga = inner_stride(ga.strides), sgb = inner_stride(gb.strides);
  pool.parallel_for(row_count(g.shape), rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for_each_row<5>(g.shape, {&a.strides, &b.strides, &g.strides, &ga.strides, &gb.strides}, first, last,
                    [&](int64_t, auto off) {
                      for (int64_t j = 0; j < n; ++j) {
                        T da = T(0), db = T(0);
                        binary_derivatives(op, a.data[off[0] + j * sa], b.data[off[1] + j * sb], da, db);
                        const T gj = g.data[off[2] + j * sg];
                        ga.data[off[3] + j * sga] = gj * da;
                        gb.data[off[4] + j * sgb] = gj * db;
                      }
                    });
  });
}

#define TEMPRA_INSTANTIATE(T)                                                                                    \
  template void unary_grad<T>(UnaryOp, TensorRef<const T>, TensorRef<const T>, TensorRef<const T>, TensorRef<T>, \
                              ThreadPool&);       \
  template void binary_grad<T>(BinaryOp, TensorRef<const T>, TensorRef<const T>, TensorRef<const T>, TensorRef<T>, \
                               TensorRef<T>, ThreadPool&);
TEMPRA_INSTANTIATE(float)
TEMPRA_INSTANTIATE(double)
#undef TEMPRA_INSTANTIATE

}  // namespace tempra::scalar
