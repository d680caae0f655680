// tempra/optim/sgd.h: stochastic gradient descent with momentum, dampening, nesterov and
// (coupled, L2-style) weight decay.
//
// Contract: torch.optim.SGD (1.13, maximize=False), per element:
//   d = g + weight_decay * p
//   buf = d on a param's first update, else momentum * buf + (1 - dampening) * d   (momentum != 0)
//   d = nesterov ? d + momentum * buf : buf                                          (momentum != 0)
//   p = p - lr * d
// nesterov needs momentum > 0 and dampening == 0, as in torch. State: "sgd.momentum_buffer.<name>"
// (allocated for every param, used only when its group's momentum is non-zero).
// Parity: tests/optim/golden_parity_test.cpp against torch.optim.SGD (tools/gen_optim_goldens.py).
#pragma once

#include <vector>

#include "tempra/optim/optimizer.h"

namespace tempra::optim {

struct SgdOptions {
  double momentum = 0;
  double dampening = 0;
  bool nesterov = false;
};

class Sgd final : public Optimizer {
 public:
  explicit Sgd(std::vector<Group<SgdOptions>> groups);
  // One group.
  Sgd(std::vector<Param> params, double lr, SgdOptions options = {}, double weight_decay = 0)
      : Sgd(std::vector<Group<SgdOptions>>{{std::move(params), lr, weight_decay, options}}) {}

  const SgdOptions& options(int group) const { return options_.at(static_cast<size_t>(group)); }

 private:
  void update(ExecContext& ctx, int group, int64_t index, const Array& grad, int64_t param_step) override;

  std::vector<SgdOptions> options_;
  std::vector<Array> momentum_;  // per param
};

}  // namespace tempra::optim
