// tests/train/es_test.cpp: evolution strategies (train/es.h): one generation's algebra against
// the NumPy reference (tools/es_reference.py, run with Debian's /usr/bin/python3) bit for bit,
// the centered ranks, an exact restore of the center, and a toy problem it solves.
#include "tempra/train/es.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/errors.h"
#include "support/files.h"
#include "tempra/core/rng.h"

namespace tempra::train {
namespace {

namespace fs = std::filesystem;

std::vector<optim::Param> params_of_sizes(ExecContext& ctx, std::initializer_list<int64_t> sizes, uint64_t seed) {
  std::vector<optim::Param> params;
  uint64_t at = 0;
  for (int64_t n : sizes) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = CounterRng::normal(seed, at++);
    params.push_back({"p" + std::to_string(params.size()), Array::from_values<float>(ctx, {n}, v)});
  }
  return params;
}

std::vector<uint32_t> bits_of(const std::vector<optim::Param>& params) {
  std::vector<uint32_t> out;
  for (const optim::Param& p : params)
    for (int64_t i = 0; i < p.value.numel(); ++i) out.push_back(std::bit_cast<uint32_t>(p.value.data<float>()[i]));
  return out;
}

std::string hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

TEST(EsAlgebra, OneGenerationEqualsTheNumPyReferenceBitForBit) {
  ExecContext ctx;
  std::vector<optim::Param> params = params_of_sizes(ctx, {5, 7, 33}, 99);
  const EsOptions options{.population = 8, .sigma = 0.02, .lr = 0.05, .seed = 12345};
  EvolutionStrategy es(params, options);
  es.set_steps_done(3);  // the noise's stream depends on the step
  // Ties (0.5 twice, 0.25 twice) take their mean rank.
  const std::vector<double> fitness{0.5, 0.25, 0.5, 1.0, -2.0, 0.25, 3.0, -0.125};
  const std::vector<uint32_t> center = bits_of(params);
  std::vector<std::vector<uint32_t>> members(fitness.size());
  const EsStepResult r = es.step(
      [&](int64_t m) {
        members[size_t(m)] = bits_of(params);
        return fitness[size_t(m)];
      },
      local_communicator());
  EXPECT_EQ(r.fitness, fitness);

  nlohmann::json spec{{"center", center},       {"seed", options.seed}, {"step", 3},
                      {"population", 8},        {"sigma", hex(options.sigma)}, {"lr", hex(options.lr)},
                      {"fitness", nlohmann::json::array()}};
  for (double f : fitness) spec["fitness"].push_back(hex(f));
  const fs::path dir = testing::scratch_dir("tempra_es_test");
  std::ofstream(dir / "in.json") << spec.dump();
  const std::string cmd = std::string("/usr/bin/python3 '") + TEMPRA_SOURCE_DIR + "/tools/es_reference.py' '" +
                          (dir / "in.json").string() + "' '" + (dir / "out.json").string() + "'";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0)
      << cmd << " failed: it needs /usr/bin/python3 with NumPy (scripts/install-deps.sh installs python3-numpy)";
  const nlohmann::json ref = nlohmann::json::parse(std::ifstream(dir / "out.json"));

  for (size_t m = 0; m < members.size(); ++m)
    EXPECT_EQ(members[m], ref["members"][m].get<std::vector<uint32_t>>()) << "member " << m << "'s parameters";
  const std::vector<double> shaped = centered_ranks(fitness);
  for (size_t m = 0; m < shaped.size(); ++m)
    EXPECT_EQ(std::bit_cast<uint64_t>(shaped[m]),
              std::bit_cast<uint64_t>(std::strtod(ref["shaped"][m].get<std::string>().c_str(), nullptr)))
        << "member " << m << "'s shaped fitness";
  EXPECT_EQ(bits_of(params), ref["updated"].get<std::vector<uint32_t>>()) << "the updated center";
  EXPECT_NE(bits_of(params), center) << "the update changed nothing";
}

TEST(EsAlgebra, CenteredRanksShareTiesAndSpanMinusHalfToHalf) {
  // This test found g++ 12.2 with AVX-512 building {1, 1, 0, 0} as {1, 1, 1, 1}: the build now
  // probes for it (cmake/vector_init_probe.cpp), and the values here avoid the pattern anyway.
  const std::vector<double> distinct{3, 1, 2}, ties{1, 1, -1, -1}, all_equal{7, 7};
  EXPECT_EQ(centered_ranks(distinct), (std::vector<double>{0.5, -0.5, 0}));
  const std::vector<double> tied = centered_ranks(ties);  // mean ranks 2.5 and 0.5
  const double expected[] = {1.0 / 3, 1.0 / 3, -1.0 / 3, -1.0 / 3};
  for (size_t m = 0; m < 4; ++m) EXPECT_NEAR(tied[m], expected[m], 1e-15) << m;
  EXPECT_EQ(centered_ranks(all_equal), (std::vector<double>{0, 0}));
}

TEST(EsAlgebra, NoiseIsAStandardNormalAndDiffersByPairAndStep) {
  double sum = 0, sum_sq = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double z = es_noise(1, 0, 0, uint64_t(i));
    sum += z;
    sum_sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.04);
  EXPECT_NE(es_noise(1, 0, 0, 0), es_noise(1, 0, 1, 0));
  EXPECT_NE(es_noise(1, 0, 0, 0), es_noise(1, 1, 0, 0));
  EXPECT_NE(es_noise(1, 0, 0, 0), es_noise(2, 0, 0, 0));
}

TEST(EvolutionStrategy, RestoresTheCenterExactlyWhenAnEvaluationThrows) {
  ExecContext ctx;
  std::vector<optim::Param> params = params_of_sizes(ctx, {16}, 5);
  const std::vector<uint32_t> center = bits_of(params);
  EvolutionStrategy es(params, {.population = 4, .sigma = 0.5, .lr = 0.1, .seed = 1});
  EXPECT_THROW(es.step([&](int64_t m) -> double { return m == 2 ? throw std::runtime_error("eval failed") : 1.0; },
                       local_communicator()),
               std::runtime_error);
  EXPECT_EQ(bits_of(params), center);
  EXPECT_EQ(es.steps_done(), 0);
}

TEST(EvolutionStrategy, RejectsBadOptionsAndNonFiniteFitness) {
  ExecContext ctx;
  std::vector<optim::Param> params = params_of_sizes(ctx, {4}, 5);
  const auto fails_naming = [](auto fn, const std::string& what) {
    EXPECT_NE(testing::error_message(fn).find(what), std::string::npos) << what;
  };
  fails_naming([&] { EvolutionStrategy(params, {.population = 3}); }, "even");
  fails_naming([&] { EvolutionStrategy(params, {.sigma = 0}); }, "sigma");
  EvolutionStrategy es(params, {.population = 4});
  fails_naming([&] { es.step([](int64_t m) { return m == 1 ? NAN : 0.0; }, local_communicator()); }, "member 1");
}

// Maximizing -|theta - target|^2 from theta = 0: forward evaluations only.
TEST(EvolutionStrategy, SolvesAQuadraticWithoutGradients) {
  ExecContext ctx;
  std::vector<float> target(12);
  for (size_t i = 0; i < target.size(); ++i) target[i] = float(i % 5) - 2.0f;
  std::vector<optim::Param> params{{"theta", Array::from_values<float>(ctx, {12}, std::vector<float>(12, 0.0f))}};
  const auto distance = [&] {
    double d = 0;
    for (size_t i = 0; i < target.size(); ++i) d += std::pow(double(params[0].value.data<float>()[i]) - target[i], 2);
    return d;
  };
  const double before = distance();
  EvolutionStrategy es(params, {.population = 16, .sigma = 0.1, .lr = 0.05, .seed = 7});
  for (int s = 0; s < 300; ++s) es.step([&](int64_t) { return -distance(); }, local_communicator());
  EXPECT_LT(distance(), before / 100) << "from " << before;
}

}  // namespace
}  // namespace tempra::train
