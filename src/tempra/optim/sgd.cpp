// tempra/optim/sgd.cpp: SGD on f32/f64 params (the rule is detail::sgd_update).
#include "tempra/optim/sgd.h"

#include "tempra/core/error.h"
#include "tempra/optim/update_rules.h"

namespace tempra::optim {

Sgd::Sgd(std::vector<Group<SgdOptions>> groups)
    : Optimizer("sgd", base_groups(groups)), options_(group_options(groups)) {
  for (size_t g = 0; g < options_.size(); ++g) {
    const SgdOptions& o = options_[g];
    check(o.momentum >= 0, "sgd", "group ", g, ": momentum must be >= 0, got ", o.momentum);
    check(o.dampening >= 0 && o.dampening <= 1, "sgd", "group ", g, ": dampening must be in [0, 1], got ", o.dampening);
    check(!o.nesterov || (o.momentum > 0 && o.dampening == 0), "sgd", "group ", g,
          ": nesterov momentum requires a momentum and zero dampening");
  }
  for (int64_t i = 0; i < num_params(); ++i)
    momentum_.push_back(add_state("momentum_buffer", i, param(i).value.shape()));
}

void Sgd::update(ExecContext& ctx, int group, int64_t index, const Array& grad, int64_t param_step) {
  const SgdOptions& o = options_[static_cast<size_t>(group)];
  const detail::SgdCoefficients c{groups()[static_cast<size_t>(group)].lr,
                                  groups()[static_cast<size_t>(group)].weight_decay,
                                  o.momentum,
                                  o.dampening,
                                  o.nesterov,
                                  param_step == 1};
  const Array& p = param(index).value;
  const Array& buf = momentum_[static_cast<size_t>(index)];
  if (p.dtype() == DType::f32)
    detail::sgd_update(ctx, p.data<float>(), grad.data<float>(), buf.data<float>(), p.numel(), c);
  else
    detail::sgd_update(ctx, p.data<double>(), grad.data<double>(), buf.data<double>(), p.numel(), c);
}

}  // namespace tempra::optim
