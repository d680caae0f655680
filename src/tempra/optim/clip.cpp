// tempra/optim/clip.cpp: clip_grad_norm.
#include "tempra/optim/clip.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tempra/core/error.h"
#include "tempra/optim/optimizer.h"

namespace tempra::optim {
namespace {

template <class T>
double norm_of(const T* x, int64_t n, double p) {
  if (std::isinf(p)) {
    double m = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, std::abs(static_cast<double>(x[i])));
    return m;
  }
  double s = 0;
  if (p == 2) {
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    return std::sqrt(s);
  }
  if (p == 1) {
    for (int64_t i = 0; i < n; ++i) s += std::abs(static_cast<double>(x[i]));
    return s;
  }
  for (int64_t i = 0; i < n; ++i) s += std::pow(std::abs(static_cast<double>(x[i])), p);
  return std::pow(s, 1 / p);
}

template <class T>
void scale(const Array& g, double coef) {
  T* x = g.data<T>();
  const T c = static_cast<T>(coef);
  for (int64_t i = 0; i < g.numel(); ++i) x[i] = x[i] * c;
}

}  // namespace

double clip_grad_norm(std::span<const Array> grads, double max_norm, double norm_type) {
  check(norm_type > 0, "clip_grad_norm", "norm_type must be > 0 (or infinity), got ", norm_type);
  check(max_norm >= 0, "clip_grad_norm", "max_norm must be >= 0, got ", max_norm);
  std::vector<double> norms;
  for (size_t i = 0; i < grads.size(); ++i) {
    const Array& g = grads[i];
    if (!g.defined()) continue;
    check(g.dtype() == DType::f32 || g.dtype() == DType::f64, "clip_grad_norm", "gradient ", i, " has dtype ",
          g.dtype().name(), "; expected f32 or f64");
    check(g.is_contiguous(), "clip_grad_norm", "gradient ", i, " with shape ", g.shape(), " is not contiguous");
    norms.push_back(g.dtype() == DType::f32 ? norm_of(g.data<float>(), g.numel(), norm_type)
                                            : norm_of(g.data<double>(), g.numel(), norm_type));
  }
  if (norms.empty()) return 0;
  const double total = norm_of(norms.data(), static_cast<int64_t>(norms.size()), norm_type);
  const double coef = std::min(max_norm / (total + 1e-6), 1.0);
  for (const Array& g : grads) {
    if (!g.defined()) continue;
    if (g.dtype() == DType::f32)
      scale<float>(g, coef);
    else
      scale<double>(g, coef);
  }
  return total;
}

double clip_grad_norm(const Optimizer& optimizer, double max_norm, double norm_type) {
  std::vector<Array> grads;
  for (int64_t i = 0; i < optimizer.num_params(); ++i) grads.push_back(optimizer.param(i).value.grad());
  return clip_grad_norm(grads, max_norm, norm_type);
}

}  // namespace tempra::optim
