// tempra/optim/clip.h: global gradient-norm clipping.
//
// Contract: torch.nn.utils.clip_grad_norm_ (1.13, error_if_nonfinite = False):
//   norms = [||g||_p for each gradient];  total = ||norms||_p  (max of norms for p = inf)
//   coef = max_norm / (total + 1e-6);  every gradient *= min(coef, 1)
// and the total norm is returned. Gradients are scaled in place; empty ones are skipped (a
// param with no gradient, as torch skips p.grad = None). Each gradient's norm is summed in
// double in index order, so the result is the same for any thread count.
// Parity: tests/optim/clip_schedule_test.cpp against torch (tools/gen_optim_goldens.py).
#pragma once

#include <limits>
#include <span>

#include "tempra/core/array.h"

namespace tempra::optim {

class Optimizer;

inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

// Clips contiguous f32/f64 gradients; norm_type is p > 0 or kInfNorm.
double clip_grad_norm(std::span<const Array> grads, double max_norm, double norm_type = 2.0);
// Clips the gradients (Array::grad()) of every param of the optimizer.
double clip_grad_norm(const Optimizer& optimizer, double max_norm, double norm_type = 2.0);

}  // namespace tempra::optim
