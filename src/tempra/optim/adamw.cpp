// tempra/optim/adamw.cpp: AdamW on f32/f64 params (the rule is detail::adamw_update).
#include "tempra/optim/adamw.h"

#include "tempra/core/error.h"
#include "tempra/optim/update_rules.h"

namespace tempra::optim {

void check_adam_options(const char* op, size_t group, double beta1, double beta2, double eps) {
  check(beta1 >= 0 && beta1 < 1, op, "group ", group, ": beta1 must be in [0, 1), got ", beta1);
  check(beta2 >= 0 && beta2 < 1, op, "group ", group, ": beta2 must be in [0, 1), got ", beta2);
  check(eps >= 0, op, "group ", group, ": eps must be >= 0, got ", eps);
}

AdamW::AdamW(std::vector<Group<AdamWOptions>> groups)
    : Optimizer("adamw", base_groups(groups)), options_(group_options(groups)) {
  for (size_t g = 0; g < options_.size(); ++g)
    check_adam_options("adamw", g, options_[g].beta1, options_[g].beta2, options_[g].eps);
  for (int64_t i = 0; i < num_params(); ++i) {
    const Dims& shape = param(i).value.shape();
    exp_avg_.push_back(add_state("exp_avg", i, shape));
    exp_avg_sq_.push_back(add_state("exp_avg_sq", i, shape));
    max_exp_avg_sq_.push_back(
        options_[static_cast<size_t>(flat(i).group)].amsgrad ? add_state("max_exp_avg_sq", i, shape) : Array{});
  }
}

void AdamW::update(ExecContext& ctx, int group, int64_t index, const Array& grad, int64_t param_step) {
  const AdamWOptions& o = options_[static_cast<size_t>(group)];
  const ParamGroup& pg = groups()[static_cast<size_t>(group)];
  const detail::AdamWCoefficients c{pg.lr, pg.weight_decay, o.beta1, o.beta2, o.eps, o.amsgrad, param_step};
  const Array& p = param(index).value;
  const size_t i = static_cast<size_t>(index);
  if (p.dtype() == DType::f32)
    detail::adamw_update(ctx, p.data<float>(), grad.data<float>(), exp_avg_[i].data<float>(),
                         exp_avg_sq_[i].data<float>(), o.amsgrad ? max_exp_avg_sq_[i].data<float>() : nullptr,
                         p.numel(), c);
  else
    detail::adamw_update(ctx, p.data<double>(), grad.data<double>(), exp_avg_[i].data<double>(),
                         exp_avg_sq_[i].data<double>(), o.amsgrad ? max_exp_avg_sq_[i].data<double>() : nullptr,
                         p.numel(), c);
}

}  // namespace tempra::optim
