// tests/optim/golden_parity_test.cpp: every optimizer against its reference, step by step.
//
// The goldens (tools/gen_optim_goldens.py): torch.optim.SGD and torch.optim.AdamW (torch 1.13's
// own code), and reference implementations of Muon (Keller Jordan's muon.py) and APOLLO (the
// official apollo_torch code) in torch, run 12 steps over several param shapes, with parameter
// groups, skipped gradients and (AdamW) a warmup-cosine schedule, in f64 and in f32. Bounds:
// - SGD and AdamW, f32 and f64: bitwise equal to torch after every step (the update rules
//   round exactly as ATen's kernels do: tempra/optim/update_rules.h).
// - Muon and APOLLO, f64: max relative difference <= 1e-6 per element after every step (issue
//   3's bound; seen: 6e-14).
// - Muon and APOLLO, f32: the reference's f32 run sums its matmuls (Newton-Schulz, the
//   projection) and norms in other orders, so elements differ by a few ulp; a near-zero param
//   then has a large relative error that says nothing about the update. These cases are held
//   to a max difference <= 1e-6 of the largest param magnitude (seen: 2e-7 on params of
//   magnitude ~2, that is 1-3 ulp), and the strict per-element bound is the f64 cases'.
#include <gtest/gtest.h>

#include <cstdio>

#include "optim/optim_golden.h"

namespace tempra::testing {
namespace {

constexpr double kMaxRelative = 1e-6;

class OptimizerGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(OptimizerGolden, params_match_reference_after_every_step) {
  const GoldenCase& c = GetParam();
  ExecContext ctx(ExecOptions{.threads = 1});
  const GoldenFile file(ctx, golden_path(c.file));
  const Deviation d = run_optimizer_case(ctx, file, c);
  std::printf("%-34s max rel %9.3g  max abs %9.3g  (params up to %.3g)\n", c.name.c_str(), d.max_rel, d.max_abs,
              d.max_want);
  const bool torch_optimizer = c.op == "sgd" || c.op == "adamw";
  if (torch_optimizer) {
    EXPECT_EQ(d.max_abs, 0.0) << c.name << ": not bitwise equal to torch";
  } else if (c.params.at("dtype") == "f64") {
    EXPECT_LE(d.max_rel, kMaxRelative) << c.name;
  } else {
    EXPECT_LE(d.max_abs, kMaxRelative * d.max_want) << c.name;
  }
}

std::string case_name(const ::testing::TestParamInfo<GoldenCase>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Sgd, OptimizerGolden, ::testing::ValuesIn(load_all_cases({"optim_sgd"})), case_name);
INSTANTIATE_TEST_SUITE_P(AdamW, OptimizerGolden, ::testing::ValuesIn(load_all_cases({"optim_adamw"})), case_name);
INSTANTIATE_TEST_SUITE_P(Muon, OptimizerGolden, ::testing::ValuesIn(load_all_cases({"optim_muon"})), case_name);
INSTANTIATE_TEST_SUITE_P(Apollo, OptimizerGolden, ::testing::ValuesIn(load_all_cases({"optim_apollo"})), case_name);

}  // namespace
}  // namespace tempra::testing
