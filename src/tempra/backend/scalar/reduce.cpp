// tempra/backend/scalar/reduce.cpp: axis reductions, softmax and the cross-entropy rows.
//
// Accumulation is in the element type (f32 for f32), in index order. Variance is two-pass
// (mean, then squared deviations); logsumexp and softmax subtract the row maximum first.
#include <cmath>
#include <limits>

#include "tempra/backend/scalar/scalar.h"

namespace tempra::scalar {

template <class T>
void reduce(ReduceOp op, const T* in, int64_t outer, int64_t n, int64_t inner, int64_t correction, T* out,
            ThreadPool& pool) {
  pool.parallel_for(outer * inner, rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* x = in + (r / inner) * n * inner + r % inner;  // x[j * inner] walks the reduced axis
      T result{};
      switch (op) {
        case ReduceOp::sum:
        case ReduceOp::mean: {
          T sum = 0;
          for (int64_t j = 0; j < n; ++j) sum += x[j * inner];
          result = op == ReduceOp::mean ? sum / static_cast<T>(n) : sum;
          break;
        }
        case ReduceOp::max:
        case ReduceOp::min: {
          T best = x[0];
          for (int64_t j = 1; j < n && best == best; ++j) {
            const T v = x[j * inner];
            if (v != v || (op == ReduceOp::max ? v > best : v < best)) best = v;  // NaN wins
          }
          result = best;
          break;
        }
        case ReduceOp::variance: {
          T sum = 0;
          for (int64_t j = 0; j < n; ++j) sum += x[j * inner];
          const T mean = sum / static_cast<T>(n);
          T squares = 0;
          for (int64_t j = 0; j < n; ++j) squares += (x[j * inner] - mean) * (x[j * inner] - mean);
          result = squares / static_cast<T>(n - correction);
          break;
        }
        case ReduceOp::logsumexp: {
          T peak = -std::numeric_limits<T>::infinity();
          for (int64_t j = 0; j < n; ++j) peak = std::max(peak, x[j * inner]);
          if (std::isinf(peak)) {
            result = peak;
            break;
          }
          T sum = 0;
          for (int64_t j = 0; j < n; ++j) sum += std::exp(x[j * inner] - peak);
          result = peak + std::log(sum);
          break;
        }
      }
      out[r] = result;
    }
  });
}

template <class T>
void argmax(const T* in, int64_t outer, int64_t n, int64_t inner, int64_t* out, ThreadPool& pool) {
  pool.parallel_for(outer * inner, rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* x = in + (r / inner) * n * inner + r % inner;
      int64_t best = 0;  // first maximum wins ties; a NaN is the maximum, as in torch
      for (int64_t j = 1; j < n && x[best * inner] == x[best * inner]; ++j) {
        const T v = x[j * inner];
        if (v != v || v > x[best * inner]) best = j;
      }
      out[r] = best;
    }
  });
}

template <class T>
void softmax(TensorRef<const T> in, const SoftmaxArgs<T>& args, T* out, ThreadPool& pool) {
  const int64_t n = in.shape.size() ? in.shape.back() : 1;
  const int64_t mask_step = args.mask.data && args.mask.strides.size() ? args.mask.strides.back() : 0;
  const T scale = static_cast<T>(args.scale);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  pool.parallel_for(row_count(in.shape), rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for_each_row<2>(in.shape, {&in.strides, &args.mask.strides}, first, last, [&](int64_t row, auto offsets) {
      const T* x = in.data + row * n;
      const T* mask = args.mask.data ? args.mask.data + offsets[1] : nullptr;
      T* y = out + row * n;
      // Keys past this query's position (offset so the last query sees every key) are masked.
      const int64_t visible = args.causal ? row % args.q_len + (n - args.q_len) + 1 : n;
      T peak = neg_inf;
      for (int64_t j = 0; j < n; ++j) {
        T v = j < visible ? x[j] * scale : neg_inf;
        if (mask) v += mask[j * mask_step];
        y[j] = v;
        peak = std::max(peak, v);
      }
      T sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(y[j] - peak);
      if (args.log) {
        const T log_sum = std::log(sum);
        for (int64_t j = 0; j < n; ++j) y[j] = y[j] - peak - log_sum;
      } else {
        const T inv = T(1) / sum;
        for (int64_t j = 0; j < n; ++j) y[j] = std::exp(y[j] - peak) * inv;
      }
    });
  });
}

template <class T>
void cross_entropy(const T* logits, int64_t rows, int64_t classes, const int64_t* targets, int64_t ignore_index,
                   T* loss, ThreadPool& pool) {
  pool.parallel_for(rows, rows_per_chunk(classes), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      if (targets[i] == ignore_index) {
        loss[i] = 0;
        continue;
      }
      const T* x = logits + i * classes;
      T peak = x[0];
      for (int64_t c = 1; c < classes; ++c) peak = std::max(peak, x[c]);
      T sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(x[c] - peak);
      loss[i] = peak + std::log(sum) - x[targets[i]];
    }
  });
}

#define TEMPRA_INSTANTIATE(T)                                                                               \
  template void reduce<T>(ReduceOp, const T*, int64_t, int64_t, int64_t, int64_t, T*, ThreadPool&);         \
  template void argmax<T>(const T*, int64_t, int64_t, int64_t, int64_t*, ThreadPool&);                      \
  template void softmax<T>(TensorRef<const T>, const SoftmaxArgs<T>&, T*, ThreadPool&);                     \
  template void cross_entropy<T>(const T*, int64_t, int64_t, const int64_t*, int64_t, T*, ThreadPool&);
TEMPRA_INSTANTIATE(float)
TEMPRA_INSTANTIATE(double)
#undef TEMPRA_INSTANTIATE

}  // namespace tempra::scalar
