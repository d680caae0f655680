// tests/optim/clip_schedule_test.cpp: clip_grad_norm against torch.nn.utils.clip_grad_norm_ and
// the warmup-cosine schedule against the generator's formula (tests/goldens/optim_misc).
//
// Bounds: f64 gradients and totals within 1e-12 relative; f32 within 1e-6 relative per element
// (torch sums an f32 gradient's norm in f32, tempra in double, so the coefficient differs in
// the last bits; scaling keeps that relative error on every element, near zero too).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "optim/optim_golden.h"
#include "tempra/optim/clip.h"
#include "tempra/optim/schedule.h"

namespace tempra::testing {
namespace {

double max_relative(const Array& got, const Array& want) {
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.dtype() == DType::f32 ? got.data<float>()[i] : got.data<double>()[i];
    const double w = want.dtype() == DType::f32 ? want.data<float>()[i] : want.data<double>()[i];
    if (g != w) worst = std::max(worst, std::abs(g - w) / std::abs(w));
  }
  return worst;
}

class ClipGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(ClipGolden, clip_grad_norm_matches_torch) {
  const GoldenCase& c = GetParam();
  ExecContext ctx(ExecOptions{.threads = 1});
  const GoldenFile file(ctx, golden_path(c.file));
  std::vector<Array> grads;
  for (const auto& name : c.inputs) grads.push_back(clone(ctx, file.tensor(name)));
  const auto& norm = c.params.at("norm_type");
  const double norm_type = norm.is_string() ? optim::kInfNorm : norm.get<double>();
  const double total = optim::clip_grad_norm(grads, c.params.at("max_norm").get<double>(), norm_type);
  const double bound = c.params.at("dtype") == "f64" ? 1e-12 : 1e-6;
  const Array& want_total = file.tensor(c.outputs.back());
  const double want = want_total.dtype() == DType::f32 ? want_total.data<float>()[0] : want_total.data<double>()[0];
  EXPECT_LE(std::abs(total - want) / want, bound) << c.name << ": total " << total << " vs " << want;
  for (size_t i = 0; i < grads.size(); ++i)
    EXPECT_LE(max_relative(grads[i], file.tensor(c.outputs[i])), bound) << c.name;
}

class ScheduleGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(ScheduleGolden, warmup_cosine_matches_reference) {
  const GoldenCase& c = GetParam();
  ExecContext ctx(ExecOptions{.threads = 1});
  const GoldenFile file(ctx, golden_path(c.file));
  const auto s =
      optim::LrSchedule::warmup_cosine(c.params.at("warmup").get<int64_t>(), c.params.at("total").get<int64_t>(),
                                       c.params.at("min_lr_ratio").get<double>());
  const Array& want = file.tensor(c.outputs[0]);
  for (int64_t step = 0; step < want.numel(); ++step)
    EXPECT_DOUBLE_EQ(s.factor(step), want.data<double>()[step]) << c.name << " step " << step;
}

std::vector<GoldenCase> cases_of(const std::string& op) {
  std::vector<GoldenCase> out;
  for (const auto& c : load_all_cases({"optim_misc"}))
    if (c.op == op) out.push_back(c);
  return out;
}
std::string case_name(const ::testing::TestParamInfo<GoldenCase>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Clip, ClipGolden, ::testing::ValuesIn(cases_of("clip")), case_name);
INSTANTIATE_TEST_SUITE_P(Schedule, ScheduleGolden, ::testing::ValuesIn(cases_of("schedule")), case_name);

TEST(Clip, clip_grad_norm_skips_empty_gradients_and_returns_zero_without_any) {
  ExecContext ctx(ExecOptions{.threads = 1});
  std::vector<Array> none{Array{}, Array{}};
  EXPECT_EQ(optim::clip_grad_norm(none, 1.0), 0.0);
  std::vector<Array> some{Array::from_values<double>(ctx, {2}, {3.0, 4.0}), Array{}};
  EXPECT_DOUBLE_EQ(optim::clip_grad_norm(some, 1.0), 5.0);
  EXPECT_NEAR(some[0].data<double>()[0], 3.0 / (5.0 + 1e-6), 1e-15);
}

TEST(Clip, clip_grad_norm_through_an_optimizer_scales_the_params_gradients) {
  ExecContext ctx(ExecOptions{.threads = 1});
  Array w = Array::from_values<float>(ctx, {2}, {1.0f, 1.0f});
  w.set_requires_grad();
  w.set_grad(Array::from_values<float>(ctx, {2}, {6.0f, 8.0f}));
  optim::Sgd sgd({{"w", w}}, 0.1);
  EXPECT_NEAR(optim::clip_grad_norm(sgd, 5.0), 10.0, 1e-12);
  EXPECT_NEAR(w.grad().data<float>()[0], 3.0f, 1e-6f);
  EXPECT_NEAR(w.grad().data<float>()[1], 4.0f, 1e-6f);
}

TEST(Clip, clip_grad_norm_rejects_bad_arguments) {
  ExecContext ctx(ExecOptions{.threads = 1});
  std::vector<Array> g{Array::from_values<double>(ctx, {2}, {1.0, 2.0})};
  EXPECT_THROW(optim::clip_grad_norm(g, 1.0, 0.0), Error);
  EXPECT_THROW(optim::clip_grad_norm(g, -1.0), Error);
  std::vector<Array> ints{Array::zeros(ctx, {2}, DType::i32)};
  EXPECT_THROW(optim::clip_grad_norm(ints, 1.0), Error);
}

TEST(Schedule, constant_and_apply_schedule_scale_each_groups_initial_lr) {
  ExecContext ctx(ExecOptions{.threads = 1});
  Array a = Array::zeros(ctx, {2}, DType::f64), b = Array::zeros(ctx, {3}, DType::f64);
  optim::Sgd sgd(std::vector<optim::Group<optim::SgdOptions>>{{{{"a", a}}, 0.1}, {{{"b", b}}, 0.4}});
  optim::apply_schedule(sgd, optim::LrSchedule::constant());
  EXPECT_EQ(sgd.groups()[0].lr, 0.1);
  const auto s = optim::LrSchedule::warmup_cosine(4, 10, 0.1);
  optim::apply_schedule(sgd, s);  // step 0
  EXPECT_DOUBLE_EQ(sgd.groups()[0].lr, 0.1 * 0.25);
  EXPECT_DOUBLE_EQ(sgd.groups()[1].lr, 0.4 * 0.25);
  EXPECT_DOUBLE_EQ(s.factor(3), 1.0);   // last warmup step: the full lr
  EXPECT_DOUBLE_EQ(s.factor(4), 1.0);   // the decay starts from the top
  EXPECT_DOUBLE_EQ(s.factor(10), 0.1);  // and ends at min_lr_ratio
  EXPECT_DOUBLE_EQ(s.factor(100), 0.1);
  EXPECT_THROW(optim::LrSchedule::warmup_cosine(11, 10), Error);
  EXPECT_THROW(optim::LrSchedule::warmup_cosine(0, 0), Error);
  EXPECT_THROW(optim::LrSchedule::warmup_cosine(1, 10, 1.5), Error);
  EXPECT_THROW((void)s.factor(-1), Error);
}

}  // namespace
}  // namespace tempra::testing
