// tests/optim/optimizer_test.cpp: the Optimizer contract beyond the goldens: the state
// interface (names, shapes, a resume through it is bitwise), 1 vs N threads bitwise, skipped
// params, zero_grad, APOLLO's regenerated projection, and the errors bad input gets.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "optim/optim_golden.h"
#include "tempra/core/rng.h"
#include "tempra/ops/ops.h"
#include "tempra/optim/clip.h"

namespace tempra::testing {
namespace {

using optim::Param;

// Params with seeded values: a wide and a tall matrix, a vector, a 3-D tensor.
std::vector<Param> make_params(ExecContext& ctx, const std::vector<Dims>& shapes, DType dtype) {
  std::vector<Param> params;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Array a = Array::empty(ctx, shapes[i], dtype);
    for (int64_t e = 0; e < a.numel(); ++e) {
      const float v = CounterRng::normal(100 + i, static_cast<uint64_t>(e));
      if (dtype == DType::f32)
        a.data<float>()[e] = v;
      else
        a.data<double>()[e] = v;
    }
    a.set_requires_grad();
    params.push_back({"p" + std::to_string(i), a});
  }
  return params;
}

// The gradient of param i at step k: a pure function of (i, k), so runs can be replayed.
void set_grads(ExecContext& ctx, const std::vector<Param>& params, int64_t step) {
  for (size_t i = 0; i < params.size(); ++i) {
    Array p = params[i].value;  // a handle: the gradient lives with the param's node
    Array g = Array::empty(ctx, p.shape(), p.dtype());
    const uint64_t stream = CounterRng::bits(1000 + i, static_cast<uint64_t>(step));
    for (int64_t e = 0; e < g.numel(); ++e) {
      const float v = CounterRng::normal(stream, static_cast<uint64_t>(e));
      if (g.dtype() == DType::f32)
        g.data<float>()[e] = v;
      else
        g.data<double>()[e] = v;
    }
    p.set_grad(g);
  }
}

using Factory = std::function<std::unique_ptr<optim::Optimizer>(const std::vector<Param>&)>;

// Every optimizer, over params [wide matrix, tall matrix, vector, 3-D] with groups that fit.
std::vector<std::pair<std::string, Factory>> factories() {
  auto pick = [](const std::vector<Param>& p, std::initializer_list<size_t> idx) {
    std::vector<Param> out;
    for (size_t i : idx) out.push_back(p[i]);
    return out;
  };
  return {
      {"sgd",
       [=](const std::vector<Param>& p) {
         return std::make_unique<optim::Sgd>(std::vector<optim::Group<optim::SgdOptions>>{
             {pick(p, {0, 1}), 0.05, 0.01, {0.9, 0.0, true}}, {pick(p, {2, 3}), 0.1, 0.0, {0.8, 0.1, false}}});
       }},
      {"adamw",
       [=](const std::vector<Param>& p) {
         return std::make_unique<optim::AdamW>(std::vector<optim::Group<optim::AdamWOptions>>{
             {pick(p, {0, 1}), 1e-2, 0.1, {0.9, 0.999, 1e-8, true}}, {pick(p, {2, 3}), 3e-3, 0.0, {}}});
       }},
      {"muon",
       [=](const std::vector<Param>& p) {
         optim::MuonOptions adam;
         adam.use_muon = false;
         return std::make_unique<optim::Muon>(std::vector<optim::Group<optim::MuonOptions>>{
             {pick(p, {0, 1}), 0.02, 0.01, {}}, {pick(p, {2, 3}), 3e-3, 0.0, adam}});
       }},
      {"apollo",
       [=](const std::vector<Param>& p) {
         optim::ApolloOptions channel;
         channel.rank = 4;
         channel.update_proj_gap = 3;
         channel.seed = 5;
         return std::make_unique<optim::Apollo>(std::vector<optim::Group<optim::ApolloOptions>>{
             {pick(p, {0}), 1e-2, 0.01, channel},
             {pick(p, {1}), 1e-2, 0.0, optim::ApolloOptions::mini(2, 9)},
             {pick(p, {2, 3}), 1e-2, 0.0, {}}});
       }},
  };
}

// Params and optimizer, plus the step loop a trainer runs.
struct Trainer {
  std::vector<Param> params;
  std::unique_ptr<optim::Optimizer> opt;
  Trainer(ExecContext& ctx, const Factory& f, const std::vector<Dims>& shapes, DType dtype)
      : params(make_params(ctx, shapes, dtype)), opt(f(params)) {}
  void steps(ExecContext& ctx, int n) {
    for (int i = 0; i < n; ++i) {
      set_grads(ctx, params, opt->step_count());
      opt->step(ctx);
      opt->zero_grad();
    }
  }
};

bool bitwise_equal(const Array& a, const Array& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

const std::vector<Dims> kShapes{{6, 10}, {12, 5}, {7}, {2, 3, 4}};

TEST(Optimizer, resume_through_the_state_interface_is_bitwise) {
  for (const auto& [name, factory] : factories()) {
    for (DType dtype : {DType::f32, DType::f64}) {
      SCOPED_TRACE(name + " " + std::string(dtype.name()));
      ExecContext ctx(ExecOptions{.threads = 1});
      Trainer straight(ctx, factory, kShapes, dtype);
      straight.steps(ctx, 9);

      Trainer first(ctx, factory, kShapes, dtype);
      first.steps(ctx, 4);
      // What a checkpoint saves: params, state tensors, scalar state.
      Trainer resumed(ctx, factory, kShapes, dtype);
      for (size_t i = 0; i < kShapes.size(); ++i)
        std::memcpy(resumed.params[i].value.raw_data(), first.params[i].value.raw_data(),
                    first.params[i].value.nbytes());
      const auto saved = first.opt->state_tensors();
      const auto live = resumed.opt->state_tensors();
      ASSERT_EQ(saved.size(), live.size());
      for (size_t i = 0; i < saved.size(); ++i) {
        ASSERT_EQ(saved[i].name, live[i].name);
        std::memcpy(live[i].value.raw_data(), saved[i].value.raw_data(), saved[i].value.nbytes());
      }
      resumed.opt->load_scalar_state(first.opt->scalar_state());
      EXPECT_EQ(resumed.opt->step_count(), 4);
      resumed.steps(ctx, 5);
      for (size_t i = 0; i < kShapes.size(); ++i)
        EXPECT_TRUE(bitwise_equal(resumed.params[i].value, straight.params[i].value)) << resumed.params[i].name;
    }
  }
}

TEST(Optimizer, updates_are_bitwise_equal_for_1_and_4_threads) {
  // Big enough that elementwise loops split (2 x 32768 elements) and the matmuls go parallel.
  const std::vector<Dims> shapes{{200, 400}, {400, 200}, {70000}, {2, 3, 4}};
  for (const auto& [name, factory] : factories()) {
    SCOPED_TRACE(name);
    ExecContext one(ExecOptions{.threads = 1});
    ExecContext four(ExecOptions{.threads = 4});
    Trainer a(one, factory, shapes, DType::f32), b(four, factory, shapes, DType::f32);
    a.steps(one, 3);
    b.steps(four, 3);
    for (size_t i = 0; i < shapes.size(); ++i) EXPECT_TRUE(bitwise_equal(a.params[i].value, b.params[i].value)) << i;
    EXPECT_GT(four.threads().split_jobs(), 0) << "the 4-thread run never split work";
  }
}

TEST(Optimizer, state_tensors_are_named_per_param_and_allocated_before_the_first_step) {
  ExecContext ctx(ExecOptions{.threads = 1});
  const auto fs = factories();
  auto names_of = [&](size_t which) {
    const auto params = make_params(ctx, kShapes, DType::f32);
    auto opt = fs[which].second(params);
    std::map<std::string, Dims> out;
    for (const auto& s : opt->state_tensors()) {
      out[s.name] = s.value.shape();
      EXPECT_EQ(s.value.dtype(), DType::f32);
    }
    return out;
  };
  const auto sgd = names_of(0);
  EXPECT_EQ(sgd.size(), 4u);
  EXPECT_EQ(sgd.at("sgd.momentum_buffer.p0"), (Dims{6, 10}));
  const auto adamw = names_of(1);
  EXPECT_EQ(adamw.size(), 10u);  // exp_avg, exp_avg_sq for 4 params; max_exp_avg_sq for the amsgrad group's 2
  EXPECT_TRUE(adamw.count("adamw.max_exp_avg_sq.p1"));
  EXPECT_FALSE(adamw.count("adamw.max_exp_avg_sq.p2"));
  const auto muon = names_of(2);
  EXPECT_EQ(muon.at("muon.momentum_buffer.p0"), (Dims{6, 10}));
  EXPECT_EQ(muon.at("muon.exp_avg.p3"), (Dims{2, 3, 4}));
  const auto apollo = names_of(3);
  EXPECT_EQ(apollo.at("apollo.exp_avg.p0"), (Dims{4, 10}));     // wide [6, 10], rank 4: P^T G
  EXPECT_EQ(apollo.at("apollo.exp_avg_sq.p1"), (Dims{12, 1}));  // tall [12, 5], APOLLO-Mini: G P^T
  EXPECT_EQ(apollo.at("apollo.exp_avg.p2"), (Dims{7}));

  const auto params = make_params(ctx, kShapes, DType::f32);
  auto opt = fs[3].second(params);
  const auto scalars = opt->scalar_state();
  for (const char* key : {"step", "group.0.lr", "group.2.lr", "apollo.step.p0", "apollo.step.p3",
                          "apollo.scaled_grad_norm.p0", "apollo.scaled_grad_norm.p1"})
    EXPECT_TRUE(scalars.count(key)) << key;
  EXPECT_FALSE(scalars.count("apollo.scaled_grad_norm.p2"));
}

TEST(Optimizer, load_scalar_state_rejects_missing_or_bad_keys_and_changes_nothing) {
  ExecContext ctx(ExecOptions{.threads = 1});
  Trainer run(ctx, factories()[1].second, kShapes, DType::f64);
  run.steps(ctx, 2);
  const auto original = run.opt->scalar_state();
  auto values = original;
  values.erase("adamw.step.p3");
  EXPECT_THROW(run.opt->load_scalar_state(values), Error);
  values = run.opt->scalar_state();
  values["step"] = 2.5;
  EXPECT_THROW(run.opt->load_scalar_state(values), Error);
  values = original;
  values["group.1.lr"] = -1e-3;
  EXPECT_THROW(run.opt->load_scalar_state(values), Error);
  EXPECT_EQ(run.opt->step_count(), 2);
  EXPECT_EQ(run.opt->scalar_state(), original);
}

TEST(Optimizer, a_param_without_a_gradient_is_skipped) {
  for (const auto& [name, factory] : factories()) {
    SCOPED_TRACE(name);
    ExecContext ctx(ExecOptions{.threads = 1});
    Trainer run(ctx, factory, kShapes, DType::f64);
    Array before = clone(ctx, run.params[2].value);
    set_grads(ctx, run.params, 0);
    Array skipped = run.params[2].value;
    skipped.set_grad(Array{});
    run.opt->step(ctx);
    EXPECT_TRUE(bitwise_equal(run.params[2].value, before));
    const auto scalars = run.opt->scalar_state();
    EXPECT_EQ(scalars.at(name + ".step.p2"), 0.0);
    EXPECT_EQ(scalars.at(name + ".step.p0"), 1.0);
    EXPECT_EQ(run.opt->step_count(), 1);
    run.opt->zero_grad();
    for (const auto& p : run.params) EXPECT_FALSE(p.value.grad().defined());
  }
}

TEST(Optimizer, apply_takes_explicit_gradients_and_checks_them_before_touching_any_param) {
  ExecContext ctx(ExecOptions{.threads = 1});
  Trainer run(ctx, factories()[0].second, kShapes, DType::f32);
  Array before = clone(ctx, run.params[0].value);
  std::vector<Array> grads;
  for (const auto& p : run.params) grads.push_back(Array::zeros(ctx, p.value.shape(), DType::f32));
  grads[3] = Array::zeros(ctx, {2, 3, 5}, DType::f32);  // wrong shape, last in order
  EXPECT_THROW(run.opt->apply(ctx, grads), Error);
  grads[3] = Array::zeros(ctx, {2, 3, 4}, DType::f64);  // wrong dtype
  EXPECT_THROW(run.opt->apply(ctx, grads), Error);
  grads.pop_back();
  EXPECT_THROW(run.opt->apply(ctx, grads), Error);  // wrong count
  EXPECT_TRUE(bitwise_equal(run.params[0].value, before));
  EXPECT_EQ(run.opt->step_count(), 0);
  grads.push_back(Array::zeros(ctx, {2, 3, 4}, DType::f32));
  grads[0] = Array::from_values<float>(ctx, {6, 10}, std::vector<float>(60, 1.0f));
  run.opt->apply(ctx, grads);
  EXPECT_EQ(run.opt->step_count(), 1);
  EXPECT_FALSE(bitwise_equal(run.params[0].value, before));
}

TEST(Optimizer, constructors_reject_bad_params_and_options) {
  ExecContext ctx(ExecOptions{.threads = 1});
  Array m = Array::zeros(ctx, {4, 3}, DType::f32), v = Array::zeros(ctx, {5}, DType::f32);
  using optim::Group;
  EXPECT_THROW(optim::Sgd({{"a", m}, {"a", v}}, 0.1), Error);                         // duplicate name
  EXPECT_THROW(optim::Sgd({{"", m}}, 0.1), Error);                                    // empty name
  EXPECT_THROW(optim::Sgd({{"a", m}}, -0.1), Error);                                  // negative lr
  EXPECT_THROW(optim::Sgd({{"a", Array::zeros(ctx, {4}, DType::f16)}}, 0.1), Error);  // f16 param
  EXPECT_THROW(optim::Sgd({{"a", m.transpose(0, 1)}}, 0.1), Error);                   // not contiguous
  EXPECT_THROW(optim::Sgd({{"a", Array{}}}, 0.1), Error);                             // empty array
  EXPECT_THROW(optim::Sgd({{"a", m}}, 0.1, {0.0, 0.0, true}), Error);                 // nesterov, no momentum
  EXPECT_THROW(optim::Sgd(std::vector<Group<optim::SgdOptions>>{}), Error);           // no groups
  EXPECT_THROW(optim::AdamW({{"a", m}}, 1e-3, {1.0, 0.999, 1e-8, false}), Error);     // beta1 = 1
  EXPECT_THROW(optim::Muon({{{{"v", v}}, 0.02}}), Error);                             // 1-D param in a Muon group
  optim::ApolloOptions big;
  big.rank = 4;
  EXPECT_THROW(optim::Apollo({{{{"m", m}}, 1e-2, 0.0, big}}), Error);                           // rank > min(4, 3)
  EXPECT_THROW(optim::Apollo({{{{"v", v}}, 1e-2, 0.0, optim::ApolloOptions::mini()}}), Error);  // 1-D projected
  try {
    optim::Muon({{{{"bias", v}}, 0.02}});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bias"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("use_muon = false"), std::string::npos) << e.what();
  }
}

TEST(Apollo, projection_is_regenerated_per_period_and_never_stored) {
  ExecContext ctx(ExecOptions{.threads = 1});
  const auto params = make_params(ctx, kShapes, DType::f64);
  optim::ApolloOptions o;
  o.rank = 3;
  o.update_proj_gap = 4;
  o.seed = 42;
  optim::Apollo apollo({{{params[0], params[1]}, 1e-2, 0.0, o}});
  const Array p1 = apollo.projection(ctx, 0, 1);
  EXPECT_EQ(p1.shape(), (Dims{6, 3}));                            // wide [6, 10]: "left", [m, rank]
  EXPECT_EQ(apollo.projection(ctx, 1, 1).shape(), (Dims{3, 5}));  // tall [12, 5]: "right", [rank, n]
  EXPECT_TRUE(bitwise_equal(apollo.projection(ctx, 0, 4), p1));   // steps 1..4: one period
  EXPECT_FALSE(bitwise_equal(apollo.projection(ctx, 0, 5), p1));  // step 5: the next one
  EXPECT_FALSE(bitwise_equal(apollo.projection(ctx, 1, 1).reshape({15}).narrow(0, 0, 6).reshape({6, 1}),
                             p1.narrow(1, 0, 1)));  // another param, another stream
  // N(0, 1) / sqrt(rank): element 0 is the counter RNG's draw for (seed, param, period).
  const uint64_t stream = CounterRng::bits(CounterRng::bits(42, 0), 0);
  EXPECT_EQ(p1.data<double>()[0], static_cast<double>(CounterRng::normal(stream, 0)) / std::sqrt(3.0));
  for (const auto& s : apollo.state_tensors()) EXPECT_EQ(s.name.find("proj"), std::string::npos) << s.name;
}

TEST(Muon, newton_schulz_makes_singular_values_near_one) {
  ExecContext ctx(ExecOptions{.threads = 1});
  const auto params = make_params(ctx, {{8, 20}}, DType::f64);
  for (bool tall : {false, true}) {
    const Array g = tall ? contiguous(ctx, params[0].value.transpose(0, 1)) : params[0].value;
    const Array x = optim::newton_schulz5(ctx, g);
    EXPECT_EQ(x.shape(), g.shape());
    // The Gram matrix of the wide side: the quintic puts every singular value in about
    // [0.68, 1.13] (Keller Jordan's note), so its diagonal lies there squared, about.
    const Array wide = tall ? contiguous(ctx, x.transpose(0, 1)) : x;
    const Array gram = matmul(ctx, wide, wide.transpose(0, 1));
    for (int64_t i = 0; i < 8; ++i) {
      EXPECT_GT(gram.at({i, i}), 0.4);
      EXPECT_LT(gram.at({i, i}), 1.35);
    }
  }
  EXPECT_THROW(optim::newton_schulz5(ctx, Array::zeros(ctx, {4}, DType::f32)), Error);
}

}  // namespace
}  // namespace tempra::testing
