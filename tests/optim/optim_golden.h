// tests/optim/optim_golden.h: runs an optimizer golden case (tools/gen_optim_goldens.py) and
// measures how far tempra's params are from the reference after every step.
//
// A case stores the initial params, the gradient of each param at each step (absent: the param
// has no gradient and is skipped) and the params after each step. The optimizer is built from
// the case's groups, then each step hands it the gradients through Array::set_grad and calls
// step(), the path training takes.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "support/golden.h"
#include "tempra/optim/adamw.h"
#include "tempra/optim/apollo.h"
#include "tempra/optim/muon.h"
#include "tempra/optim/schedule.h"
#include "tempra/optim/sgd.h"

namespace tempra::testing {

// A fresh contiguous copy (params are updated in place; goldens stay as loaded).
inline Array clone(ExecContext& ctx, const Array& a) {
  Array out = Array::empty(ctx, a.shape(), a.dtype());
  std::memcpy(out.raw_data(), a.raw_data(), a.nbytes());
  return out;
}

template <class Options>
std::vector<optim::Group<Options>> golden_groups(const GoldenCase& c, const std::vector<optim::Param>& params,
                                                 Options (*options)(const nlohmann::json&)) {
  std::vector<optim::Group<Options>> groups;
  for (const auto& g : c.params.at("groups")) {
    optim::Group<Options> group;
    for (int i : g.at("params").get<std::vector<int>>()) group.params.push_back(params[static_cast<size_t>(i)]);
    group.lr = g.at("lr").get<double>();
    group.weight_decay = g.at("weight_decay").get<double>();
    group.options = options(g);
    groups.push_back(std::move(group));
  }
  return groups;
}

inline optim::SgdOptions sgd_options(const nlohmann::json& g) {
  return {g.at("momentum").get<double>(), g.at("dampening").get<double>(), g.at("nesterov").get<bool>()};
}
inline optim::AdamWOptions adamw_options(const nlohmann::json& g) {
  return {g.at("beta1").get<double>(), g.at("beta2").get<double>(), g.at("eps").get<double>(),
          g.at("amsgrad").get<bool>()};
}
inline optim::MuonOptions muon_options(const nlohmann::json& g) {
  optim::MuonOptions o;
  o.use_muon = g.at("use_muon").get<bool>();
  o.momentum = g.at("momentum").get<double>();
  o.nesterov = g.at("nesterov").get<bool>();
  o.ns_steps = g.at("ns_steps").get<int>();
  o.beta1 = g.at("beta1").get<double>();
  o.beta2 = g.at("beta2").get<double>();
  o.eps = g.at("eps").get<double>();
  return o;
}
inline optim::ApolloOptions apollo_options(const nlohmann::json& g) {
  optim::ApolloOptions o;
  o.rank = g.at("rank").get<int64_t>();
  o.update_proj_gap = g.at("update_proj_gap").get<int64_t>();
  o.scale = g.at("scale").get<double>();
  o.scale_type =
      g.at("scale_type").get<std::string>() == "tensor" ? optim::ApolloScale::tensor : optim::ApolloScale::channel;
  o.beta1 = g.at("beta1").get<double>();
  o.beta2 = g.at("beta2").get<double>();
  o.eps = g.at("eps").get<double>();
  o.correct_bias = g.at("correct_bias").get<bool>();
  o.seed = g.at("seed").get<uint64_t>();
  return o;
}

inline std::unique_ptr<optim::Optimizer> make_optimizer(const GoldenCase& c, const std::vector<optim::Param>& params) {
  if (c.op == "sgd") return std::make_unique<optim::Sgd>(golden_groups(c, params, sgd_options));
  if (c.op == "adamw") return std::make_unique<optim::AdamW>(golden_groups(c, params, adamw_options));
  if (c.op == "muon") return std::make_unique<optim::Muon>(golden_groups(c, params, muon_options));
  if (c.op == "apollo") return std::make_unique<optim::Apollo>(golden_groups(c, params, apollo_options));
  ADD_FAILURE() << "unknown optimizer " << c.op;
  return nullptr;
}

// A missing gradient tensor means the param has none at that step.
inline bool has_tensor(const GoldenFile& file, const std::string& name) {
  try {
    (void)file.tensor(name);
    return true;
  } catch (const Error&) {
    return false;
  }
}

struct Deviation {
  double max_rel = 0;  // max over elements of |got - want| / |want|
  double max_abs = 0;
  double max_want = 0;  // the largest |reference param| seen
};

template <class T>
void accumulate(Deviation& d, const Array& got, const Array& want) {
  const T* g = got.data<T>();
  const T* w = want.data<T>();
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double err = std::abs(static_cast<double>(g[i]) - static_cast<double>(w[i]));
    d.max_abs = std::max(d.max_abs, err);
    d.max_want = std::max(d.max_want, std::abs(static_cast<double>(w[i])));
    d.max_rel = std::max(d.max_rel, err / std::abs(static_cast<double>(w[i])));
  }
}

// Runs one case: after every step, compares every param with the reference's. Returns the
// largest deviation seen over all steps (callers hold it to their bound).
inline Deviation run_optimizer_case(ExecContext& ctx, const GoldenFile& file, const GoldenCase& c) {
  const auto names = c.params.at("names").get<std::vector<std::string>>();
  const int steps = c.params.at("steps").get<int>();
  std::vector<optim::Param> params;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Array p = clone(ctx, file.tensor(c.inputs[i]));
    p.set_requires_grad();
    params.push_back({names[i], p});
  }
  auto opt = make_optimizer(c, params);
  Deviation worst;
  if (!opt) return worst;
  const bool scheduled = c.params.contains("schedule");
  optim::LrSchedule schedule;
  if (scheduled) {
    const auto& s = c.params.at("schedule");
    schedule = optim::LrSchedule::warmup_cosine(s.at("warmup").get<int64_t>(), s.at("total").get<int64_t>(),
                                                s.at("min_lr_ratio").get<double>());
  }
  for (int k = 1; k <= steps; ++k) {
    if (scheduled) optim::apply_schedule(*opt, schedule);
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string grad_name = c.name + ".p" + std::to_string(i) + ".grad" + std::to_string(k);
      params[i].value.set_grad(has_tensor(file, grad_name) ? clone(ctx, file.tensor(grad_name)) : Array{});
    }
    opt->step(ctx);
    EXPECT_EQ(opt->step_count(), k);
    for (size_t i = 0; i < params.size(); ++i) {
      const Array& want = file.tensor(c.name + ".p" + std::to_string(i) + ".step" + std::to_string(k));
      if (want.dtype() == DType::f32)
        accumulate<float>(worst, params[i].value, want);
      else
        accumulate<double>(worst, params[i].value, want);
    }
    opt->zero_grad();
  }
  return worst;
}

}  // namespace tempra::testing
