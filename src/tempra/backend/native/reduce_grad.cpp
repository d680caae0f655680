// tempra/backend/native/reduce_grad.cpp: the backward kernels of softmax and cross-entropy.
//
// The formulas and the order of each element's operations are scalar's (scalar/reduce_grad.cpp);
// what differs is the row sums (vector lanes added in a fixed tree: reassociation only) and exp
// (simd::exp, within 2 ulp of std::exp). Tolerances: tests/backend/native_grad_parity_test.cpp.
#include <cmath>
#include <limits>

#include "tempra/backend/native/native.h"
#include "tempra/backend/native/row_math.h"
#include "tempra/backend/scalar/scalar.h"

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native {

using namespace simd;

void softmax_grad(const float* y, const float* g, int64_t rows, int64_t n, const SoftmaxArgs<float>& args,
                  double grad_scale, float* gz, ThreadPool& pool) {
  const V scale = set1(float(grad_scale));
  pool.parallel_for(rows, scalar::rows_per_chunk(n), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* yr = y + r * n;
      const float* gr = g + r * n;
      float* out = gz + r * n;
      const int64_t visible = args.causal ? r % args.q_len + (n - args.q_len) + 1 : n;
      // log_softmax: (g - exp(y) sum(g)) * scale; softmax: y (g - sum(g y)) * scale.
      const V total = set1(args.log ? row_sum(gr, visible) : row_dot(gr, yr, visible));
      auto one = [&](V yv, V gv) {
        return args.log ? mul(sub(gv, mul(exp(yv), total)), scale) : mul(mul(yv, sub(gv, total)), scale);
      };
      int64_t j = 0;
      for (; j + kLanes <= visible; j += kLanes) store(out + j, one(load(yr + j), load(gr + j)));
      if (j < visible) {
        const int count = int(visible - j);
        store_partial(out + j, one(load_partial(yr + j, count), load_partial(gr + j, count)), count);
      }
      std::fill(out + visible, out + n, 0.0f);
    }
  });
}

void cross_entropy_grad(const float* logits, int64_t rows, int64_t classes, const int64_t* targets,
                        int64_t ignore_index, const float* g, float* gx, ThreadPool& pool) {
  pool.parallel_for(rows, scalar::rows_per_chunk(classes), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      float* out = gx + i * classes;
      if (targets[i] == ignore_index) {
        std::fill(out, out + classes, 0.0f);
        continue;
      }
      const float* x = logits + i * classes;
      const float peak = row_max(x, classes);
      const V inv = set1(1.0f / row_sum_exp(x, classes, peak)), grad = set1(g[i]), vpeak = set1(peak);
      // (p - onehot) * g: p * g everywhere, then the target's element again with the 1.
      auto probability = [&](V v) { return mul(exp(sub(v, vpeak)), inv); };
      int64_t c = 0;
      for (; c + kLanes <= classes; c += kLanes) store(out + c, mul(probability(load(x + c)), grad));
      if (c < classes) {
        const int count = int(classes - c);
        store_partial(out + c, mul(probability(load_partial(x + c, count)), grad), count);
      }
      float target_p[kLanes];
      store(target_p, probability(set1(x[targets[i]])));
      out[targets[i]] = (target_p[0] - 1.0f) * g[i];
    }
  });
}

}  // namespace tempra::native
#endif  // TEMPRA_SIMD_ARM
