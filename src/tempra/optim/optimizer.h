// tempra/optim/optimizer.h: parameters, parameter groups, and the Optimizer base class.
//
// Contract:
// - A Param is a named leaf Array: contiguous f32 or f64. The optimizer keeps a handle to the
//   same Storage and updates it in place, so the model sees the new values with no copy. Names
//   must be unique across all groups: they key the optimizer state and checkpoint files.
// - A group carries its own lr and weight_decay, and each optimizer adds its own options to it
//   (Group<Options> below). Groups are how one optimizer treats parameters differently: Muon's
//   2-D weights against the AdamW rest, APOLLO's projected matrices against plain vectors.
// - step(ctx) reads each param's gradient (Array::grad()) and updates the param. A param with no
//   gradient (an empty Array) is skipped: its state and its own step count do not move, as in
//   torch. apply(ctx, grads) does the same with gradients passed in explicitly, one per param in
//   group order. A gradient must have its param's shape and dtype.
// - zero_grad() drops every param's gradient (set_grad(Array{})), so a param that gets no
//   gradient in the next backward is skipped rather than updated with zeros.
// - Every update is a fixed sequence of operations per element, and every reduction (a norm)
//   runs in one fixed order on the calling thread, so results are bitwise the same for 1 and N
//   threads. Parity: torch.optim (SGD, AdamW) and the published algorithms (Muon, APOLLO), held
//   by tests/optim against goldens from tools/gen_optim_goldens.py.
//
// State, the interface checkpoints are written against:
// - state_tensors(): every state Array, named "<optimizer>.<buffer>.<param name>" (for example
//   "adamw.exp_avg.fc1.weight"). They are live handles: a loader restores state by copying
//   bytes into them (same shape and dtype), a saver reads them. All state is allocated, zeroed,
//   when the optimizer is constructed, so the set of names and shapes never changes with steps
//   and a loader can restore into a fresh optimizer before its first step.
// - scalar_state(): name -> double for everything that is not a tensor: "step" (the optimizer's
//   step count), "group.<i>.lr" (the current lr of group i, as schedules left it),
//   "<optimizer>.step.<param name>" (how many updates that param has had: torch keeps one count
//   per param, since skipped params do not advance) and optimizer-specific scalars
//   (APOLLO's "apollo.scaled_grad_norm.<param name>"). Every value is an integer below 2^53 or
//   a double computed as such, so the double round-trips exactly.
// - load_scalar_state(values) sets them all back; it throws tempra::Error naming the first
//   missing key, and leaves the optimizer untouched if any key is missing.
// A random projection (APOLLO) is regenerated from the counter RNG and never part of the state.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/core/exec_context.h"

namespace tempra::optim {

struct Param {
  std::string name;
  Array value;  // contiguous f32 or f64, updated in place
};

// The options every optimizer reads from a group. `initial_lr` is the lr the group was built
// with; schedules scale it (lr = initial_lr * factor), as torch's LRScheduler does.
struct ParamGroup {
  std::vector<Param> params;
  double lr = 0;
  double weight_decay = 0;
  double initial_lr = 0;
};

// How users describe a group to an optimizer: params, lr, weight decay, the optimizer's options.
template <class Options>
struct Group {
  std::vector<Param> params;
  double lr = 1e-3;
  double weight_decay = 0;
  Options options{};
};

struct StateTensor {
  std::string name;
  Array value;  // a live handle to the optimizer's buffer
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update from each param's accumulated gradient (Array::grad()).
  void step(ExecContext& ctx);
  // One update from explicit gradients: grads[i] belongs to param i in group order (empty: skip).
  void apply(ExecContext& ctx, std::span<const Array> grads);
  // Drops every param's gradient.
  void zero_grad();

  int64_t step_count() const { return step_count_; }
  const std::string& name() const { return name_; }  // "sgd", "adamw", "muon", "apollo"

  // Groups in construction order. lr may be changed between steps (schedules do).
  std::vector<ParamGroup>& groups() { return groups_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  // Params in group order (the order apply() takes gradients in).
  int64_t num_params() const { return static_cast<int64_t>(flat_.size()); }
  const Param& param(int64_t index) const;

  // ---- state (see the header comment) ----
  std::vector<StateTensor> state_tensors() const;
  std::map<std::string, double> scalar_state() const;
  void load_scalar_state(const std::map<std::string, double>& values);

 protected:
  // Validates the groups (non-empty, unique names, contiguous f32/f64 params, lr >= 0,
  // weight_decay >= 0); throws tempra::Error naming `name` and the param.
  Optimizer(std::string name, std::vector<ParamGroup> groups);

  // Updates param `index` (flat, in group order) of group `group` from `grad`, which has already
  // been checked against the param. `param_step` is the param's update count including this one
  // (1 on its first update).
  virtual void update(ExecContext& ctx, int group, int64_t index, const Array& grad, int64_t param_step) = 0;

  // Allocates a zeroed state buffer for param `index`, named "<name>.<buffer>.<param name>".
  Array add_state(const std::string& buffer, int64_t index, const Dims& shape);
  // Registers an extra per-param scalar, "<name>.<scalar>.<param name>", held in `slot`.
  void add_scalar(const std::string& scalar, int64_t index, double* slot);

  struct FlatParam {
    Param param;
    int group;
  };
  const FlatParam& flat(int64_t index) const { return flat_[static_cast<size_t>(index)]; }

 private:
  std::string name_;
  std::vector<ParamGroup> groups_;
  std::vector<FlatParam> flat_;
  std::vector<int64_t> param_steps_;
  int64_t step_count_ = 0;
  std::vector<StateTensor> state_;
  std::vector<std::pair<std::string, double*>> scalars_;
};

// Splits typed groups into the base groups and the per-group options, in the same order.
template <class Options>
std::vector<ParamGroup> base_groups(const std::vector<Group<Options>>& groups) {
  std::vector<ParamGroup> out;
  out.reserve(groups.size());
  for (const auto& g : groups) out.push_back(ParamGroup{g.params, g.lr, g.weight_decay, g.lr});
  return out;
}
template <class Options>
std::vector<Options> group_options(const std::vector<Group<Options>>& groups) {
  std::vector<Options> out;
  out.reserve(groups.size());
  for (const auto& g : groups) out.push_back(g.options);
  return out;
}

}  // namespace tempra::optim
