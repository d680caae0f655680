// tempra/optim/apollo.cpp: APOLLO's projection, low-rank moments, scaling and limiter.
#include "tempra/optim/apollo.h"

#include <algorithm>
#include <cmath>

#include "tempra/core/error.h"
#include "tempra/core/rng.h"
#include "tempra/ops/linalg.h"
#include "tempra/optim/adamw.h"
#include "tempra/optim/update_rules.h"

namespace tempra::optim {
namespace {

bool projects_right(const Array& p) {
  return p.dim(0) >= p.dim(1);
}

template <class T>
void fill_projection(const Array& out, uint64_t stream, int64_t rank) {
  T* ps = out.data<T>();
  const T inv = static_cast<T>(std::sqrt(static_cast<double>(rank)));
  for (int64_t e = 0; e < out.numel(); ++e)
    ps[e] = static_cast<T>(CounterRng::normal(stream, static_cast<uint64_t>(e))) / inv;
}

struct Step {
  double lr, weight_decay;
  int64_t t;
};

// The Adam moments of r (in place) and N = M / (sqrt(V) + eps), into `normalized`.
template <class T>
void adam_moments(const T* r, T* m, T* v, T* normalized, int64_t n, const ApolloOptions& o) {
  const T b1 = static_cast<T>(o.beta1), one_minus_b1 = static_cast<T>(1 - o.beta1);
  const T b2 = static_cast<T>(o.beta2), one_minus_b2 = static_cast<T>(1 - o.beta2);
  const T eps = static_cast<T>(o.eps);
  for (int64_t i = 0; i < n; ++i) {
    m[i] = std::fma(one_minus_b1, r[i], m[i] * b1);         // exp_avg.mul_(b1).add_(r, alpha=1-b1)
    v[i] = std::fma(one_minus_b2 * r[i], r[i], v[i] * b2);  // exp_avg_sq.mul_(b2).addcmul_(r, r, value=1-b2)
    normalized[i] = m[i] / (std::sqrt(v[i]) + eps);
  }
}

double step_size(const ApolloOptions& o, const Step& s) {
  if (!o.correct_bias) return s.lr;
  const double bc1 = 1 - std::pow(o.beta1, static_cast<double>(s.t));
  const double bc2 = 1 - std::pow(o.beta2, static_cast<double>(s.t));
  return s.lr * std::sqrt(bc2) / bc1;
}

// p = p - step * u; then the reference's decoupled decay after the update.
template <class T>
void apply_update(ExecContext& ctx, T* p, const T* u, int64_t n, double step, const Step& s) {
  const T neg_step = static_cast<T>(-step);
  const T neg_decay = static_cast<T>(-s.lr * s.weight_decay);
  detail::parallel_elements(ctx, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      p[i] = std::fma(neg_step, u[i], p[i]);                           // p.add_(u, alpha=-step)
      if (s.weight_decay > 0) p[i] = std::fma(neg_decay, p[i], p[i]);  // p.add_(p, alpha=-lr*wd)
    }
  });
}

template <class T>
void unprojected_update(ExecContext& ctx, const Array& p, const Array& grad, const Array& m, const Array& v,
                        const ApolloOptions& o, const Step& s) {
  const int64_t n = p.numel();
  Array normalized = Array::empty(ctx, p.shape(), p.dtype());
  adam_moments(grad.data<T>(), m.data<T>(), v.data<T>(), normalized.data<T>(), n, o);
  apply_update(ctx, p.data<T>(), normalized.data<T>(), n, step_size(o, s), s);
}

template <class T>
void projected_update(ExecContext& ctx, const Array& p, const Array& grad, const Array& projection, const Array& m,
                      const Array& v, double* scaled_grad_norm, const ApolloOptions& o, const Step& s) {
  const bool right = projects_right(p);
  const int64_t rows = p.dim(0), cols = p.dim(1);
  // R = G P^T ([rows, rank]) or P^T G ([rank, cols]).
  const Array r = right ? matmul(ctx, grad, projection.transpose(0, 1)) : matmul(ctx, projection.transpose(0, 1), grad);
  const int64_t rn = r.numel();
  Array normalized = Array::empty(ctx, r.shape(), r.dtype());
  const T* rs = r.data<T>();
  T* ns = normalized.data<T>();
  adam_moments(rs, m.data<T>(), v.data<T>(), ns, rn, o);

  const T* g = grad.data<T>();
  Array scaled = Array::empty(ctx, p.shape(), p.dtype());
  T* ss = scaled.data<T>();
  if (o.scale_type == ApolloScale::tensor) {
    const T factor = static_cast<T>(std::sqrt(detail::sum_squares(ns, rn))) /
                     (static_cast<T>(std::sqrt(detail::sum_squares(rs, rn))) + static_cast<T>(1e-8));
    for (int64_t i = 0; i < p.numel(); ++i) ss[i] = g[i] * factor;
  } else if (right) {
    // One factor per row: R's rows are the param's rows.
    const int64_t k = r.dim(1);
    for (int64_t i = 0; i < rows; ++i) {
      const T factor = static_cast<T>(std::sqrt(detail::sum_squares(ns + i * k, k))) /
                       (static_cast<T>(std::sqrt(detail::sum_squares(rs + i * k, k))) + static_cast<T>(1e-8));
      for (int64_t j = 0; j < cols; ++j) ss[i * cols + j] = g[i * cols + j] * factor;
    }
  } else {
    // One factor per column: R's columns are the param's columns.
    const int64_t k = r.dim(0);
    std::vector<T> factors(static_cast<size_t>(cols));
    for (int64_t j = 0; j < cols; ++j) {
      double nn = 0, nr = 0;
      for (int64_t i = 0; i < k; ++i) {
        nn += static_cast<double>(ns[i * cols + j]) * static_cast<double>(ns[i * cols + j]);
        nr += static_cast<double>(rs[i * cols + j]) * static_cast<double>(rs[i * cols + j]);
      }
      factors[static_cast<size_t>(j)] =
          static_cast<T>(std::sqrt(nn)) / (static_cast<T>(std::sqrt(nr)) + static_cast<T>(1e-8));
    }
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) ss[i * cols + j] = g[i * cols + j] * factors[static_cast<size_t>(j)];
  }

  // Fira's norm-growth limiter: the update's norm may grow by at most 1% a step.
  const double norm = static_cast<double>(static_cast<T>(std::sqrt(detail::sum_squares(ss, p.numel()))));
  if (s.t > 1) {
    const double limiter = std::max(norm / (*scaled_grad_norm + 1e-8), 1.01) / 1.01;
    const T l = static_cast<T>(limiter);
    for (int64_t i = 0; i < p.numel(); ++i) ss[i] = ss[i] / l;
    *scaled_grad_norm = norm / limiter;
  } else {
    *scaled_grad_norm = norm;
  }
  const T alpha = static_cast<T>(std::sqrt(o.scale));
  for (int64_t i = 0; i < p.numel(); ++i) ss[i] = ss[i] * alpha;
  apply_update(ctx, p.data<T>(), ss, p.numel(), step_size(o, s), s);
}

}  // namespace

Apollo::Apollo(std::vector<Group<ApolloOptions>> groups)
    : Optimizer("apollo", base_groups(groups)), options_(group_options(groups)) {
  for (size_t g = 0; g < options_.size(); ++g) {
    const ApolloOptions& o = options_[g];
    check_adam_options("apollo", g, o.beta1, o.beta2, o.eps);
    check(o.rank >= 0, "apollo", "group ", g, ": rank must be >= 0, got ", o.rank);
    check(o.update_proj_gap >= 1, "apollo", "group ", g, ": update_proj_gap must be >= 1, got ", o.update_proj_gap);
    check(o.scale > 0, "apollo", "group ", g, ": scale must be > 0, got ", o.scale);
  }
  scaled_grad_norm_ = std::make_unique<double[]>(static_cast<size_t>(num_params()));
  for (int64_t i = 0; i < num_params(); ++i) {
    const Param& p = param(i);
    const ApolloOptions& o = options_[static_cast<size_t>(flat(i).group)];
    Dims moments = p.value.shape();
    if (o.rank > 0) {
      check(p.value.rank() == 2, "apollo", "param ", p.name, " has shape ", p.value.shape(),
            "; projected groups (rank > 0) take 2-D weights only: put it in a group with rank = 0");
      const int64_t rows = p.value.dim(0), cols = p.value.dim(1);
      check(o.rank <= std::min(rows, cols), "apollo", "param ", p.name, " with shape ", p.value.shape(), ": rank ",
            o.rank, " exceeds its smaller side");
      moments = projects_right(p.value) ? Dims{rows, o.rank} : Dims{o.rank, cols};
      add_scalar("scaled_grad_norm", i, &scaled_grad_norm_[static_cast<size_t>(i)]);
    }
    exp_avg_.push_back(add_state("exp_avg", i, moments));
    exp_avg_sq_.push_back(add_state("exp_avg_sq", i, moments));
  }
}

Array Apollo::projection(ExecContext& ctx, int64_t index, int64_t param_step) const {
  const Param& p = param(index);
  const ApolloOptions& o = options_[static_cast<size_t>(flat(index).group)];
  check(o.rank > 0, "apollo", "param ", p.name, " is not projected (its group has rank 0)");
  check(param_step >= 1, "apollo", "param_step counts from 1, got ", param_step);
  const uint64_t period = static_cast<uint64_t>((param_step - 1) / o.update_proj_gap);
  const uint64_t stream = CounterRng::bits(CounterRng::bits(o.seed, static_cast<uint64_t>(index)), period);
  const Dims shape = projects_right(p.value) ? Dims{o.rank, p.value.dim(1)} : Dims{p.value.dim(0), o.rank};
  Array out = Array::empty(ctx, shape, p.value.dtype());
  if (out.dtype() == DType::f32)
    fill_projection<float>(out, stream, o.rank);
  else
    fill_projection<double>(out, stream, o.rank);
  return out;
}

void Apollo::update(ExecContext& ctx, int group, int64_t index, const Array& grad, int64_t param_step) {
  const ApolloOptions& o = options_[static_cast<size_t>(group)];
  const ParamGroup& pg = groups()[static_cast<size_t>(group)];
  const Array& p = param(index).value;
  const size_t i = static_cast<size_t>(index);
  const Step s{pg.lr, pg.weight_decay, param_step};
  if (o.rank == 0) {
    if (p.dtype() == DType::f32)
      unprojected_update<float>(ctx, p, grad, exp_avg_[i], exp_avg_sq_[i], o, s);
    else
      unprojected_update<double>(ctx, p, grad, exp_avg_[i], exp_avg_sq_[i], o, s);
    return;
  }
  const Array projection_matrix = projection(ctx, index, param_step);
  if (p.dtype() == DType::f32)
    projected_update<float>(ctx, p, grad, projection_matrix, exp_avg_[i], exp_avg_sq_[i], &scaled_grad_norm_[i], o, s);
  else
    projected_update<double>(ctx, p, grad, projection_matrix, exp_avg_[i], exp_avg_sq_[i], &scaled_grad_norm_[i], o, s);
}

}  // namespace tempra::optim
