// tempra/optim/muon.cpp: Muon's momentum, Newton-Schulz orthogonalization and update.
#include "tempra/optim/muon.h"

#include <cmath>

#include "tempra/core/error.h"
#include "tempra/ops/creation.h"
#include "tempra/ops/linalg.h"
#include "tempra/optim/adamw.h"
#include "tempra/optim/update_rules.h"

namespace tempra::optim {
namespace {

// The quintic's coefficients, tuned by Keller Jordan to maximize the slope at zero.
constexpr double kA = 3.4445, kB = -4.7750, kC = 2.0315;

template <class T>
Array newton_schulz5_typed(ExecContext& ctx, const Array& g, int steps) {
  const bool tall = g.dim(0) > g.dim(1);
  // X is wide ([r, c], r <= c), so X X^T is the smaller Gram matrix.
  Array x = contiguous(ctx, tall ? g.transpose(0, 1) : g);
  x = copy(ctx, x);  // owned: updated in place below
  T* xs = x.data<T>();
  const int64_t n = x.numel();
  const T denom = static_cast<T>(std::sqrt(detail::sum_squares(xs, n))) + static_cast<T>(1e-7);
  detail::parallel_elements(ctx, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) xs[i] = xs[i] / denom;
  });
  const T a = static_cast<T>(kA), b = static_cast<T>(kB), c = static_cast<T>(kC);
  for (int s = 0; s < steps; ++s) {
    const Array gram = matmul(ctx, x, x.transpose(0, 1));  // A = X X^T
    const Array gram2 = matmul(ctx, gram, gram);           // A A
    Array poly = copy(ctx, gram);                          // B = b A + c A A
    T* ps = poly.data<T>();
    const T* g2 = gram2.data<T>();
    detail::parallel_elements(ctx, poly.numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) ps[i] = b * ps[i] + c * g2[i];
    });
    const Array bx = matmul(ctx, poly, x);  // B X
    const T* bxs = bx.data<T>();
    xs = x.data<T>();
    detail::parallel_elements(ctx, n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) xs[i] = a * xs[i] + bxs[i];
    });
  }
  return tall ? contiguous(ctx, x.transpose(0, 1)) : x;
}

template <class T>
void muon_update(ExecContext& ctx, const Array& p, const Array& grad, const Array& buf, const MuonOptions& o, double lr,
                 double weight_decay) {
  const int64_t n = p.numel();
  const T* g = grad.data<T>();
  T* m = buf.data<T>();
  const T one_minus_beta = static_cast<T>(1 - o.momentum), beta = static_cast<T>(o.momentum);
  Array u = Array::empty(ctx, p.shape(), p.dtype());
  T* us = u.data<T>();
  detail::parallel_elements(ctx, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      m[i] = detail::lerp(m[i], g[i], one_minus_beta);
      us[i] = o.nesterov ? detail::lerp(g[i], m[i], beta) : m[i];
    }
  });
  const Array x = newton_schulz5_typed<T>(ctx, u, o.ns_steps);
  const T* xs = x.data<T>();
  const T scale =
      static_cast<T>(std::sqrt(std::max(1.0, static_cast<double>(p.dim(0)) / static_cast<double>(p.dim(1)))));
  const T decay = static_cast<T>(1 - lr * weight_decay), neg_lr = static_cast<T>(-lr);
  T* ps = p.data<T>();
  detail::parallel_elements(ctx, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      ps[i] = ps[i] * decay;                           // p.mul_(1 - lr * wd)
      ps[i] = std::fma(neg_lr, xs[i] * scale, ps[i]);  // p.add_(update * scale, alpha=-lr)
    }
  });
}

// The reference's adam_update for the AdamW groups, then p.mul_(1 - lr * wd).add_(u, alpha=-lr).
// (The same rule as torch's AdamW, rounded the way the reference rounds it.)
template <class T>
void aux_adam_update(ExecContext& ctx, const Array& p, const Array& grad, const Array& exp_avg, const Array& exp_avg_sq,
                     const MuonOptions& o, double lr, double weight_decay, int64_t step) {
  const T* g = grad.data<T>();
  T* m = exp_avg.data<T>();
  T* v = exp_avg_sq.data<T>();
  T* ps = p.data<T>();
  const T w1 = static_cast<T>(1 - o.beta1), w2 = static_cast<T>(1 - o.beta2);
  const T bc1 = static_cast<T>(1 - std::pow(o.beta1, static_cast<double>(step)));
  const T bc2 = static_cast<T>(1 - std::pow(o.beta2, static_cast<double>(step)));
  const T eps = static_cast<T>(o.eps), decay = static_cast<T>(1 - lr * weight_decay), neg_lr = static_cast<T>(-lr);
  detail::parallel_elements(ctx, p.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      m[i] = detail::lerp(m[i], g[i], w1);
      v[i] = detail::lerp(v[i], g[i] * g[i], w2);
      const T u = (m[i] / bc1) / (std::sqrt(v[i] / bc2) + eps);
      ps[i] = ps[i] * decay;
      ps[i] = std::fma(neg_lr, u, ps[i]);
    }
  });
}

}  // namespace

Array newton_schulz5(ExecContext& ctx, const Array& g, int steps) {
  check(g.rank() == 2, "newton_schulz5", "needs a 2-D array, got shape ", g.shape());
  check(g.dtype() == DType::f32 || g.dtype() == DType::f64, "newton_schulz5", "needs f32 or f64, got ",
        g.dtype().name());
  check(steps >= 0, "newton_schulz5", "steps must be >= 0, got ", steps);
  return g.dtype() == DType::f32 ? newton_schulz5_typed<float>(ctx, g, steps)
                                 : newton_schulz5_typed<double>(ctx, g, steps);
}

Muon::Muon(std::vector<Group<MuonOptions>> groups)
    : Optimizer("muon", base_groups(groups)), options_(group_options(groups)) {
  for (size_t g = 0; g < options_.size(); ++g) {
    const MuonOptions& o = options_[g];
    if (o.use_muon) {
      check(o.momentum >= 0 && o.momentum < 1, "muon", "group ", g, ": momentum must be in [0, 1), got ", o.momentum);
      check(o.ns_steps >= 0, "muon", "group ", g, ": ns_steps must be >= 0, got ", o.ns_steps);
    } else {
      check_adam_options("muon", g, o.beta1, o.beta2, o.eps);
    }
  }
  for (int64_t i = 0; i < num_params(); ++i) {
    const Param& p = param(i);
    if (options_[static_cast<size_t>(flat(i).group)].use_muon) {
      check(p.value.rank() == 2, "muon", "param ", p.name, " has shape ", p.value.shape(),
            "; Muon orthogonalizes 2-D weights only: put it in a group with use_muon = false (AdamW)");
      momentum_.push_back(add_state("momentum_buffer", i, p.value.shape()));
      exp_avg_.emplace_back();
      exp_avg_sq_.emplace_back();
    } else {
      momentum_.emplace_back();
      exp_avg_.push_back(add_state("exp_avg", i, p.value.shape()));
      exp_avg_sq_.push_back(add_state("exp_avg_sq", i, p.value.shape()));
    }
  }
}

void Muon::update(ExecContext& ctx, int group, int64_t index, const Array& grad, int64_t param_step) {
  const MuonOptions& o = options_[static_cast<size_t>(group)];
  const ParamGroup& pg = groups()[static_cast<size_t>(group)];
  const Array& p = param(index).value;
  const size_t i = static_cast<size_t>(index);
  if (o.use_muon) {
    if (p.dtype() == DType::f32)
      muon_update<float>(ctx, p, grad, momentum_[i], o, pg.lr, pg.weight_decay);
    else
      muon_update<double>(ctx, p, grad, momentum_[i], o, pg.lr, pg.weight_decay);
    return;
  }
  if (p.dtype() == DType::f32)
    aux_adam_update<float>(ctx, p, grad, exp_avg_[i], exp_avg_sq_[i], o, pg.lr, pg.weight_decay, param_step);
  else
    aux_adam_update<double>(ctx, p, grad, exp_avg_[i], exp_avg_sq_[i], o, pg.lr, pg.weight_decay, param_step);
}

}  // namespace tempra::optim
