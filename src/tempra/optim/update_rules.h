// tempra/optim/update_rules.h: the per-element update rules the optimizers share (internal).
//
// Each rule is the operation sequence of torch 1.13's single-tensor path (torch/optim/sgd.py,
// torch/optim/adamw.py), one rounding per torch op, with torch's scalar arguments cast to the
// element type T as ATen does. ATen's CPU kernels fuse some ops into one rounding, so these do
// too, with std::fma (measured against Debian's torch 1.13 build on f32, every element equal):
//   a.add_(b, alpha=s)           fma(s, b, a)
//   a.addcmul_(x, y, value=s)    fma(s * x, y, a)
//   a.addcdiv_(x, y, value=s)    a + (s * x) / y        (not fused)
//   a.lerp_(b, w)                fma(w, b - a, a) for |w| < 0.5, else fma(-(b - a), 1 - w, b)
// Elements are independent, so the loops split over threads (parallel_elements) without
// changing a bit; norms are reductions and run serially in double (sum_squares) so their order
// is fixed.
#pragma once

#include <cmath>
#include <cstdint>

#include "tempra/core/exec_context.h"

namespace tempra::optim::detail {

// Calls body(begin, end) over [0, n) in chunks; the result never depends on the chunking.
template <class Body>
void parallel_elements(ExecContext& ctx, int64_t n, Body body) {
  ctx.threads().parallel_for(n, int64_t{1} << 15, body);
}

// Sum of squares in double, in index order (a fixed order: the same for any thread count).
template <class T>
double sum_squares(const T* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return s;
}

// torch.lerp (ATen's lerp kernel): exact at both ends of the weight range.
template <class T>
T lerp(T start, T end, T weight) {
  const T diff = end - start;
  return std::abs(weight) < T(0.5) ? std::fma(weight, diff, start) : std::fma(-diff, T(1) - weight, end);
}

struct SgdCoefficients {
  double lr, weight_decay, momentum, dampening;
  bool nesterov;
  bool first;  // the momentum buffer starts as a copy of the first step's direction
};

// torch.optim.SGD (foreach=False) on n elements.
template <class T>
void sgd_update(ExecContext& ctx, T* p, const T* g, T* buf, int64_t n, const SgdCoefficients& c) {
  const T wd = static_cast<T>(c.weight_decay), mom = static_cast<T>(c.momentum);
  const T keep = static_cast<T>(1.0 - c.dampening), neg_lr = static_cast<T>(-c.lr);
  parallel_elements(ctx, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T d = g[i];
      if (c.weight_decay != 0) d = std::fma(wd, p[i], d);  // d.add(p, alpha=wd)
      if (c.momentum != 0) {
        buf[i] = c.first ? d : std::fma(keep, d, buf[i] * mom);  // buf.mul_(m).add_(d, alpha=1-dampening)
        d = c.nesterov ? std::fma(mom, buf[i], d) : buf[i];      // d.add(buf, alpha=m)
      }
      p[i] = std::fma(neg_lr, d, p[i]);  // p.add_(d, alpha=-lr)
    }
  });
}

struct AdamWCoefficients {
  double lr, weight_decay, beta1, beta2, eps;
  bool amsgrad;
  int64_t step;  // this param's update count, 1 on its first update
};

// torch.optim.AdamW (foreach=False, capturable=False) on n elements. max_v is used only with amsgrad.
template <class T>
void adamw_update(ExecContext& ctx, T* p, const T* g, T* m, T* v, T* max_v, int64_t n, const AdamWCoefficients& c) {
  const double bias_correction1 = 1 - std::pow(c.beta1, static_cast<double>(c.step));
  const double bias_correction2 = 1 - std::pow(c.beta2, static_cast<double>(c.step));
  const T decay = static_cast<T>(1 - c.lr * c.weight_decay);
  const T b1 = static_cast<T>(c.beta1), one_minus_b1 = static_cast<T>(1 - c.beta1);
  const T b2 = static_cast<T>(c.beta2), one_minus_b2 = static_cast<T>(1 - c.beta2);
  const T bc2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  const T eps = static_cast<T>(c.eps), neg_step_size = static_cast<T>(-(c.lr / bias_correction1));
  parallel_elements(ctx, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      p[i] = p[i] * decay;
      m[i] = std::fma(one_minus_b1, g[i], m[i] * b1);         // m.mul_(b1).add_(g, alpha=1-b1)
      v[i] = std::fma(one_minus_b2 * g[i], g[i], v[i] * b2);  // v.mul_(b2).addcmul_(g, g, value=1-b2)
      T second = v[i];
      if (c.amsgrad) {
        max_v[i] = max_v[i] > v[i] ? max_v[i] : v[i];
        second = max_v[i];
      }
      const T denom = std::sqrt(second) / bc2_sqrt + eps;
      p[i] = p[i] + neg_step_size * m[i] / denom;  // p.addcdiv_(m, denom, value=-step_size)
    }
  });
}

}  // namespace tempra::optim::detail
