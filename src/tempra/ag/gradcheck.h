// tempra/ag/gradcheck.h: the calculus referee. Every VJP is checked against central finite
// differences in f64.
//
// Contract: gradcheck(ctx, fn, inputs) makes f64 leaf copies of `inputs` (those with
// `differentiable[i]` false, e.g. integer indices, are passed through untouched), computes
// y = fn(inputs), and compares, for a fixed random cotangent v (drawn from `seed`), the
// analytic gradient of sum(y * v) from ag::backward with the central difference
// (f(x + eps e_j) - f(x - eps e_j)) / (2 eps) for every element j of every differentiable input.
// The error of an element is |analytic - numeric| / max(1, |numeric|) (absolute near zero,
// relative for large gradients); the result reports the largest and where it was.
// fn must be deterministic and must not change its inputs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tempra/core/array.h"

namespace tempra::ag {

struct GradcheckOptions {
  double eps = 1e-6;
  double tolerance = 1e-6;  // the largest error that passes
  uint64_t seed = 42;
  std::vector<bool> differentiable;  // per input; empty means all floating inputs
};

struct GradcheckResult {
  double max_error = 0.0;
  std::string worst;  // "input 1, element 17: analytic 0.25, numeric 0.2500001"
  int64_t checked = 0;  // elements compared
  bool ok = false;
};

using GradFn = std::function<Array(ExecContext&, const std::vector<Array>&)>;

GradcheckResult gradcheck(ExecContext& ctx, const GradFn& fn, const std::vector<Array>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace tempra::ag
