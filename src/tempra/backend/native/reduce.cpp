// tempra/backend/native/reduce.cpp: axis reductions, softmax and cross-entropy rows.
//
// Two shapes of reduction, as laid out by the ops: [outer, n, inner] reduced over n.
// - inner > 1: each vector lane is a different output and walks n in index order, exactly the
//   scalar loop: sum, mean, max, min and variance are bitwise equal to scalar; logsumexp is
//   within the exp's error.
// - inner == 1 (the row is contiguous): lanes hold partial sums of a strided subset of the row,
//   added in a fixed tree at the end, so sums differ from scalar by reassociation only:
//   |native - scalar| <= ~n eps sum |x| (the parity test's bound); max/min stay exact.
// softmax and cross_entropy are rows of that second kind plus exp; their tolerances are in
// tests/backend/native_reduce_parity_test.cpp.
#include <cmath>
#include <limits>

#include "tempra/backend/native/native.h"
#include "tempra/backend/native/row_math.h"
#include "tempra/backend/scalar/scalar.h"

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native {
namespace {

using namespace simd;

// Reduces kLanes adjacent outputs at once: x points at [n, inner] with the lanes contiguous.
// `count` lanes are live (the last group of a row may be partial).
inline void reduce_lanes(ReduceOp op, const float* x, int64_t n, int64_t inner, int64_t correction, int count,
                         float* out) {
  auto at = [&](int64_t j) { return count == kLanes ? load(x + j * inner) : load_partial(x + j * inner, count); };
  V result;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: {
      V sum = zero();
      for (int64_t j = 0; j < n; ++j) sum = add(sum, at(j));
      result = op == ReduceOp::mean ? div(sum, set1(float(n))) : sum;
      break;
    }
    case ReduceOp::max:
    case ReduceOp::min: {
      // scalar: a NaN, once seen, is the result; otherwise strict comparisons keep the first.
      V best = at(0);
      for (int64_t j = 1; j < n; ++j) {
        const V v = at(j);
        const V better = op == ReduceOp::max ? select(greater(v, best), v, best) : select(less(v, best), v, best);
        best = select(is_nan(best), best, select(is_nan(v), v, better));
      }
      result = best;
      break;
    }
    case ReduceOp::variance: {
      V sum = zero();
      for (int64_t j = 0; j < n; ++j) sum = add(sum, at(j));
      const V mean = div(sum, set1(float(n)));
      V squares = zero();
      for (int64_t j = 0; j < n; ++j) {
        const V d = sub(at(j), mean);
        squares = add(squares, mul(d, d));
      }
      result = div(squares, set1(float(n - correction)));
      break;
    }
    case ReduceOp::logsumexp: {
      V peak = set1(-std::numeric_limits<float>::infinity());
      for (int64_t j = 0; j < n; ++j) peak = max_raw(at(j), peak);  // NaN lanes: see below
      V sum = zero();
      for (int64_t j = 0; j < n; ++j) sum = add(sum, exp(sub(at(j), peak)));
      float lanes_peak[kLanes], lanes_sum[kLanes];
      store(lanes_peak, peak);
      store(lanes_sum, sum);
      for (int i = 0; i < count; ++i)
        out[i] = std::isinf(lanes_peak[i]) ? lanes_peak[i] : lanes_peak[i] + std::log(lanes_sum[i]);
      return;
    }
  }
  store_partial(out, result, count);
}

// The same over one contiguous row (inner == 1).
inline float reduce_row(ReduceOp op, const float* x, int64_t n, int64_t correction) {
  switch (op) {
    case ReduceOp::sum: return row_sum(x, n);
    case ReduceOp::mean: return row_sum(x, n) / float(n);
    case ReduceOp::max:
    case ReduceOp::min: {
      // The extreme is exact in any order; but which NaN or which signed zero wins is scalar's
      // scan order, so rows with NaN or a zero extreme are scanned again in that order.
      const float extreme = op == ReduceOp::max ? row_max(x, n) : -row_max_negated(x, n);
      if (extreme != 0.0f && !row_has_nan(x, n)) return extreme;
      float best = x[0];
      for (int64_t j = 1; j < n && best == best; ++j)
        if (x[j] != x[j] || (op == ReduceOp::max ? x[j] > best : x[j] < best)) best = x[j];
      return best;
    }
    case ReduceOp::variance: {
      const float mean = row_sum(x, n) / float(n);
      return row_sum_squared_deviations(x, n, mean) / float(n - correction);
    }
    case ReduceOp::logsumexp: {
      const float peak = row_max(x, n);
      if (std::isinf(peak)) return peak;
      return peak + std::log(row_sum_exp(x, n, peak));
    }
  }
  return 0.0f;
}

}  // namespace

void reduce(ReduceOp op, const float* in, int64_t outer, int64_t n, int64_t inner, int64_t correction, float* out,
            ThreadPool& pool) {
  if (inner == 1) {
    pool.parallel_for(outer, scalar::rows_per_chunk(n), [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) out[r] = reduce_row(op, in + r * n, n, correction);
    });
    return;
  }
  const int64_t groups = (inner + kLanes - 1) / kLanes;
  pool.parallel_for(outer * groups, scalar::rows_per_chunk(n * kLanes), [&](int64_t first, int64_t last) {
    for (int64_t g = first; g < last; ++g) {
      const int64_t o = g / groups, i0 = (g % groups) * kLanes;
      const int count = int(std::min<int64_t>(kLanes, inner - i0));
      reduce_lanes(op, in + o * n * inner + i0, n, inner, correction, count, out + o * inner + i0);
    }
  });
}

void softmax(TensorRef<const float> in, const SoftmaxArgs<float>& args, float* out, ThreadPool& pool) {
  const int64_t n = in.shape.size() ? in.shape.back() : 1;
  const int64_t mask_step = args.mask.data && args.mask.strides.size() ? args.mask.strides.back() : 0;
  const float scale = float(args.scale);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  pool.parallel_for(row_count(in.shape), scalar::rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for_each_row<2>(in.shape, {&in.strides, &args.mask.strides}, first, last, [&](int64_t row, auto offsets) {
      const float* x = in.data + row * n;
      const float* mask = args.mask.data ? args.mask.data + offsets[1] : nullptr;
      float* y = out + row * n;
      const int64_t visible = args.causal ? row % args.q_len + (n - args.q_len) + 1 : n;
      // y = x * scale (+ mask), -inf past `visible`: the same products and sums as scalar.
      int64_t j = 0;
      for (; j + kLanes <= visible; j += kLanes) store(y + j, mul(load(x + j), set1(scale)));
      for (; j < visible; ++j) y[j] = x[j] * scale;
      for (; j < n; ++j) y[j] = neg_inf;
      if (mask) {
        if (mask_step == 1) {
          for (j = 0; j + kLanes <= n; j += kLanes) store(y + j, add(load(y + j), load(mask + j)));
          for (; j < n; ++j) y[j] += mask[j];
        } else {
          for (j = 0; j < n; ++j) y[j] += mask[j * mask_step];
        }
      }
      const float peak = row_max(y, n);
      if (args.log) {
        const float log_sum = std::log(row_sum_exp(y, n, peak));
        for (j = 0; j + kLanes <= n; j += kLanes)
          store(y + j, sub(sub(load(y + j), set1(peak)), set1(log_sum)));
        for (; j < n; ++j) y[j] = y[j] - peak - log_sum;
      } else {
        const float inv = 1.0f / row_exp_in_place(y, n, peak);
        for (j = 0; j + kLanes <= n; j += kLanes) store(y + j, mul(load(y + j), set1(inv)));
        for (; j < n; ++j) y[j] *= inv;
      }
    });
  });
}

void cross_entropy(const float* logits, int64_t rows, int64_t classes, const int64_t* targets, int64_t ignore_index,
                   float* loss, ThreadPool& pool) {
  pool.parallel_for(rows, scalar::rows_per_chunk(classes), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      if (targets[i] == ignore_index) {
        loss[i] = 0;
        continue;
      }
      const float* x = logits + i * classes;
      const float peak = row_max(x, classes);
      loss[i] = peak + std::log(row_sum_exp(x, classes, peak)) - x[targets[i]];
    }
  });
}

}  // namespace tempra::native
#endif  // TEMPRA_SIMD_ARM
