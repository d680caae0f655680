// tempra/optim/optimizer.cpp: the Optimizer base: validation, the step loop, state registry.
#include "tempra/optim/optimizer.h"

#include <cmath>
#include <set>

#include "tempra/core/error.h"
#include "tempra/core/grad_node.h"
#include "tempra/core/storage.h"

namespace tempra::optim {

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups)
    : name_(std::move(name)), groups_(std::move(groups)) {
  check(!groups_.empty(), name_, "needs at least one parameter group");
  std::set<std::string> seen;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const ParamGroup& group = groups_[g];
    check(group.lr >= 0, name_, "group ", g, ": lr must be >= 0, got ", group.lr);
    check(group.weight_decay >= 0, name_, "group ", g, ": weight_decay must be >= 0, got ", group.weight_decay);
    for (const Param& p : group.params) {
      check(!p.name.empty(), name_, "group ", g, ": a param has an empty name");
      check(seen.insert(p.name).second, name_, "param name ", p.name, " appears twice");
      check(p.value.defined(), name_, "param ", p.name, " is an empty array");
      check(p.value.dtype() == DType::f32 || p.value.dtype() == DType::f64, name_, "param ", p.name, " has dtype ",
            p.value.dtype().name(), "; optimizers update f32 or f64 params");
      check(p.value.is_contiguous(), name_, "param ", p.name, " with shape ", p.value.shape(),
            " is not contiguous; optimizers update params in place and need contiguous storage");
      flat_.push_back(FlatParam{p, static_cast<int>(g)});
    }
  }
  param_steps_.assign(flat_.size(), 0);
}

const Param& Optimizer::param(int64_t index) const {
  check(index >= 0 && index < num_params(), name_, "param index ", index, " out of range [0, ", num_params(), ")");
  return flat_[static_cast<size_t>(index)].param;
}

void Optimizer::step(ExecContext& ctx) {
  std::vector<Array> grads;
  grads.reserve(flat_.size());
  for (const FlatParam& f : flat_) grads.push_back(f.param.value.grad());
  apply(ctx, grads);
}

void Optimizer::apply(ExecContext& ctx, std::span<const Array> grads) {
  check(grads.size() == flat_.size(), name_, "got ", grads.size(), " gradients for ", flat_.size(), " params");
  // Validate every gradient before touching any param: a bad one leaves the model as it was.
  for (size_t i = 0; i < flat_.size(); ++i) {
    const Array& g = grads[i];
    if (!g.defined()) continue;
    const Array& p = flat_[i].param.value;
    check(g.shape() == p.shape(), name_, "gradient of ", flat_[i].param.name, " has shape ", g.shape(),
          ", the param has ", p.shape());
    check(g.dtype() == p.dtype(), name_, "gradient of ", flat_[i].param.name, " has dtype ", g.dtype().name(),
          ", the param has ", p.dtype().name());
    check(g.is_contiguous(), name_, "gradient of ", flat_[i].param.name, " is not contiguous");
  }
  // The update is not part of any graph: the ops it runs (Muon's and APOLLO's matmuls) record nothing.
  NoGradGuard no_grad;
  for (size_t i = 0; i < flat_.size(); ++i) {
    if (!grads[i].defined()) continue;
    ++param_steps_[i];
    update(ctx, flat_[i].group, static_cast<int64_t>(i), grads[i], param_steps_[i]);
  }
  ++step_count_;
}

void Optimizer::zero_grad() {
  for (FlatParam& f : flat_) f.param.value.set_grad(Array{});
}

Array Optimizer::add_state(const std::string& buffer, int64_t index, const Dims& shape) {
  const Param& p = param(index);
  // Unpooled: state lives as long as the optimizer, so it should not hold a pool bucket.
  const DType dtype = p.value.dtype();
  Array a(Storage::allocate(dtype.bytes_for(shape.product()), nullptr, /*zero=*/true), dtype, shape,
          contiguous_strides(shape), 0);
  state_.push_back(StateTensor{name_ + "." + buffer + "." + p.name, a});
  return a;
}

void Optimizer::add_scalar(const std::string& scalar, int64_t index, double* slot) {
  scalars_.emplace_back(name_ + "." + scalar + "." + param(index).name, slot);
}

std::vector<StateTensor> Optimizer::state_tensors() const {
  return state_;
}

std::map<std::string, double> Optimizer::scalar_state() const {
  std::map<std::string, double> out;
  out["step"] = static_cast<double>(step_count_);
  for (size_t g = 0; g < groups_.size(); ++g) out["group." + std::to_string(g) + ".lr"] = groups_[g].lr;
  for (size_t i = 0; i < flat_.size(); ++i)
    out[name_ + ".step." + flat_[i].param.name] = static_cast<double>(param_steps_[i]);
  for (const auto& [key, slot] : scalars_) out[key] = *slot;
  return out;
}

void Optimizer::load_scalar_state(const std::map<std::string, double>& values) {
  const std::map<std::string, double> current = scalar_state();
  for (const auto& [key, value] : current) {
    (void)value;
    check(values.count(key) == 1, name_, "scalar state has no ", key);
  }
  auto integer = [&](const std::string& key) {
    const double v = values.at(key);
    check(v >= 0 && v < 0x1.0p53 && v == static_cast<double>(static_cast<int64_t>(v)), name_, "scalar state ", key,
          " must be a non-negative integer, got ", v);
    return static_cast<int64_t>(v);
  };
  const int64_t step = integer("step");
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string key = "group." + std::to_string(g) + ".lr";
    const double lr = values.at(key);
    check(std::isfinite(lr) && lr >= 0, name_, "scalar state ", key, " must be a finite lr >= 0, got ", lr);
  }
  std::vector<int64_t> param_steps(flat_.size());
  for (size_t i = 0; i < flat_.size(); ++i) param_steps[i] = integer(name_ + ".step." + flat_[i].param.name);
  step_count_ = step;
  param_steps_ = param_steps;
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].lr = values.at("group." + std::to_string(g) + ".lr");
  for (const auto& [key, slot] : scalars_) *slot = values.at(key);
}

}  // namespace tempra::optim
