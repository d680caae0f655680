// tempra/ag/gradcheck.cpp: analytic J^T v against central differences, in f64.
#include "tempra/ag/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tempra/ag/backward.h"
#include "tempra/core/grad_node.h"
#include "tempra/ops/creation.h"
#include "tempra/ops/elementwise.h"
#include "tempra/ops/reduce.h"

namespace tempra::ag {
namespace {

// sum(y * v) as a plain double (no graph).
double weighted_sum(ExecContext& ctx, const Array& y, const Array& v) {
  Array yc = contiguous(ctx, cast(ctx, y, DType::f64));
  const double* py = yc.data<double>();
  const double* pv = v.data<double>();
  double total = 0.0;
  for (int64_t i = 0; i < yc.numel(); ++i) total += py[i] * pv[i];
  return total;
}

}  // namespace

GradcheckResult gradcheck(ExecContext& ctx, const GradFn& fn, const std::vector<Array>& inputs,
                          const GradcheckOptions& options) {
  std::vector<bool> diff = options.differentiable;
  if (diff.empty())
    for (const Array& x : inputs) diff.push_back(x.dtype().is_floating());
  check(diff.size() == inputs.size(), "gradcheck", "differentiable has ", diff.size(), " entries for ",
        inputs.size(), " inputs");

  // f64 leaves, contiguous and owned, so perturbing one element perturbs exactly that element.
  std::vector<Array> xs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!diff[i]) {
      xs.push_back(inputs[i]);
      continue;
    }
    Array x = copy(ctx, cast(ctx, inputs[i].detach(), DType::f64));
    x.set_requires_grad();
    xs.push_back(x);
  }

  Array y = fn(ctx, xs);
  check(y.dtype() == DType::f64, "gradcheck", "fn returned ", y.dtype().name(), "; with f64 inputs it must return f64");
  const Array v = normal(ctx, y.shape(), 0.0, 1.0, options.seed).reshape(y.shape());
  const Array v64 = contiguous(ctx, cast(ctx, v, DType::f64));
  backward(ctx, sum_all(ctx, mul(ctx, y, v64)));

  GradcheckResult result;
  NoGradGuard no_grad;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!diff[i]) continue;
    Array analytic = xs[i].grad();
    if (!analytic.defined()) analytic = Array::zeros(ctx, xs[i].shape(), DType::f64);
    analytic = contiguous(ctx, analytic);
    // Perturb a plain copy so the leaf (and its grad) stay as they are.
    std::vector<Array> probe = xs;
    Array x = copy(ctx, xs[i].detach());
    probe[i] = x;
    double* px = x.data<double>();
    for (int64_t j = 0; j < x.numel(); ++j) {
      const double saved = px[j];
      px[j] = saved + options.eps;
      const double plus = weighted_sum(ctx, fn(ctx, probe), v64);
      px[j] = saved - options.eps;
      const double minus = weighted_sum(ctx, fn(ctx, probe), v64);
      px[j] = saved;
      const double numeric = (plus - minus) / (2 * options.eps);
      const double a = analytic.data<double>()[j];
      const double err = std::abs(a - numeric) / std::max(1.0, std::abs(numeric));
      ++result.checked;
      if (result.checked == 1 || err > result.max_error) {
        result.max_error = err;
        std::ostringstream os;
        os << "input " << i << ", element " << j << ": analytic " << a << ", numeric " << numeric;
        result.worst = os.str();
      }
    }
  }
  result.ok = std::isfinite(result.max_error) && result.max_error <= options.tolerance;
  return result;
}

}  // namespace tempra::ag
