// tempra/backend/scalar/reduce_grad.cpp: the backward kernels of the reductions, softmax and
// cross-entropy.
//
// Formulas are PyTorch's (tools/autograd/derivatives.yaml and FunctionsManual.cpp, the goldens'
// source):
// - max/min (amax/amin): the gradient is split evenly among the elements equal to the result
//   (g / count at each of them); a NaN result equals no element and gives NaN, as in torch.
// - variance: g * 2 (x - mean) / (n - correction).
// - logsumexp: g * exp(x - result).
// - softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g). Causally hidden keys get 0:
//   their logits never reach the output (the forward replaces them by -inf), and the sum of
//   log_softmax runs over the visible keys only, whose outputs are the ones that depend on x.
// - cross_entropy: g * (softmax(logits) - onehot(target)), the softmax recomputed from the
//   logits as the forward computes it.
// Each output element has one owner and sums run in index order, so results do not depend on
// the thread count.
#include <cmath>
#include <limits>

#include "tempra/backend/scalar/scalar.h"

namespace tempra::scalar {

template <class T>
void reduce_grad(ReduceOp op, const T* x, const T* out, const T* g, int64_t outer, int64_t n, int64_t inner,
                 int64_t correction, T* gx, ThreadPool& pool) {
  pool.parallel_for(outer * inner, rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const int64_t base = (r / inner) * n * inner + r % inner;  // [base + j * inner] walks the axis
      const T* xr = x + base;
      T* gr = gx + base;
      const T result = out[r], grad = g[r];
      switch (op) {
        case ReduceOp::max:
        case ReduceOp::min: {
          int64_t count = 0;
          for (int64_t j = 0; j < n; ++j) count += xr[j * inner] == result;
          const T share = count ? grad / static_cast<T>(count) : std::numeric_limits<T>::quiet_NaN();
          for (int64_t j = 0; j < n; ++j) gr[j * inner] = xr[j * inner] == result || !count ? share : T(0);
          break;
        }
        case ReduceOp::variance: {
          T sum = 0;
          for (int64_t j = 0; j < n; ++j) sum += xr[j * inner];
          const T mean = sum / static_cast<T>(n);
          const T factor = T(2) / static_cast<T>(n - correction) * grad;
          for (int64_t j = 0; j < n; ++j) gr[j * inner] = factor * (xr[j * inner] - mean);
          break;
        }
        case ReduceOp::logsumexp:
          for (int64_t j = 0; j < n; ++j) gr[j * inner] = grad * std::exp(xr[j * inner] - result);
          break;
        case ReduceOp::sum:
        case ReduceOp::mean:
          for (int64_t j = 0; j < n; ++j) gr[j * inner] = op == ReduceOp::mean ? grad / static_cast<T>(n) : grad;
          break;
      }
    }
  });
}

template <class T>
void softmax_grad(const T* y, const T* g, int64_t rows, int64_t n, const SoftmaxArgs<T>& args, double grad_scale, T* gz,
                  ThreadPool& pool) {
  const T scale = static_cast<T>(grad_scale);
  pool.parallel_for(rows, rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* yr = y + r * n;
      const T* gr = g + r * n;
      T* out = gz + r * n;
      const int64_t visible = args.causal ? r % args.q_len + (n - args.q_len) + 1 : n;
      T total = 0;
      if (args.log) {
        for (int64_t j = 0; j < visible; ++j) total += gr[j];
        for (int64_t j = 0; j < visible; ++j) out[j] = (gr[j] - std::exp(yr[j]) * total) * scale;
      } else {
        for (int64_t j = 0; j < visible; ++j) total += gr[j] * yr[j];
        for (int64_t j = 0; j < visible; ++j) out[j] = yr[j] * (gr[j] - total) * scale;
      }
      for (int64_t j = visible; j < n; ++j) out[j] = T(0);
    }
  });
}

template <class T>
void cross_entropy_grad(const T* logits, int64_t rows, int64_t classes, const int64_t* targets, int64_t ignore_index,
                        const T* g, T* gx, ThreadPool& pool) {
  pool.parallel_for(rows, rows_per_chunk(classes), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      T* out = gx + i * classes;
      if (targets[i] == ignore_index) {
        for (int64_t c = 0; c < classes; ++c) out[c] = T(0);
        continue;
      }
      const T* x = logits + i * classes;
      T peak = x[0];
      for (int64_t c = 1; c < classes; ++c) peak = std::max(peak, x[c]);
      T sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(x[c] - peak);
      const T inv = T(1) / sum;
      for (int64_t c = 0; c < classes; ++c)
        out[c] = (std::exp(x[c] - peak) * inv - (c == targets[i] ? T(1) : T(0))) * g[i];
    }
  });
}

#define TEMPRA_INSTANTIATE(T)                                                                                          \
  template void reduce_grad<T>(ReduceOp, const T*, const T*, const T*, int64_t, int64_t, int64_t, int64_t, T*,         \
                               ThreadPool&);                                                                           \
  template void softmax_grad<T>(const T*, const T*, int64_t, int64_t, const SoftmaxArgs<T>&, double, T*, ThreadPool&); \
  template void cross_entropy_grad<T>(const T*, int64_t, int64_t, const int64_t*, int64_t, const T*, T*, ThreadPool&);
TEMPRA_INSTANTIATE(float)
TEMPRA_INSTANTIATE(double)
#undef TEMPRA_INSTANTIATE

}  // namespace tempra::scalar
