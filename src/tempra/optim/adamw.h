// tempra/optim/adamw.h: Adam with decoupled weight decay (Loshchilov & Hutter, 2019).
//
// Contract: torch.optim.AdamW (1.13, maximize=False), per element, t = the param's update count:
//   p = p * (1 - lr * weight_decay)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   v_max = max(v_max, v)                                                (amsgrad only)
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v or v_max) / sqrt(1 - beta2^t) + eps)
// eps is added outside the square root, after bias correction, as torch does. State:
// "adamw.exp_avg.<name>", "adamw.exp_avg_sq.<name>" and, for groups with amsgrad,
// "adamw.max_exp_avg_sq.<name>".
// Parity: tests/optim/golden_parity_test.cpp against torch.optim.AdamW (tools/gen_optim_goldens.py).
#pragma once

#include <vector>

#include "tempra/optim/optimizer.h"

namespace tempra::optim {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  bool amsgrad = false;
};

// torch's defaults: lr 1e-3, weight_decay 1e-2.
class AdamW final : public Optimizer {
 public:
  explicit AdamW(std::vector<Group<AdamWOptions>> groups);
  // One group.
  AdamW(std::vector<Param> params, double lr = 1e-3, AdamWOptions options = {}, double weight_decay = 1e-2)
      : AdamW(std::vector<Group<AdamWOptions>>{{std::move(params), lr, weight_decay, options}}) {}

  const AdamWOptions& options(int group) const { return options_.at(static_cast<size_t>(group)); }

 private:
  void update(ExecContext& ctx, int group, int64_t index, const Array& grad, int64_t param_step) override;

  std::vector<AdamWOptions> options_;
  std::vector<Array> exp_avg_, exp_avg_sq_, max_exp_avg_sq_;  // per param; max_ empty without amsgrad
};

// Validates Adam hyperparameters for `op` (shared with Muon's AdamW groups and APOLLO).
void check_adam_options(const char* op, size_t group, double beta1, double beta2, double eps);

}  // namespace tempra::optim
