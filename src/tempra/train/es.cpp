// tempra/train/es.cpp: see es.h. Compiled with -ffp-contract=off (src/tempra/train/CMakeLists.txt):
// the reference rounds every product and sum separately, and so must this file.
#include "tempra/train/es.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "tempra/core/error.h"
#include "tempra/core/rng.h"

namespace tempra::train {
namespace {

constexpr uint64_t kEsDomain = 0x65735f6e6f697365ull;  // "es_noise": keeps ES's streams apart from others of the seed

std::span<float> values_of(const optim::Param& p) {
  return {p.value.data<float>(), size_t(p.value.numel())};
}

}  // namespace

void EsOptions::validate() const {
  check(population >= 2 && population % 2 == 0, "es", "the population ", population,
        " must be even and at least 2 (antithetic pairs)");
  check(sigma > 0 && std::isfinite(sigma), "es", "sigma ", sigma, " must be positive");
  check(lr > 0 && std::isfinite(lr), "es", "lr ", lr, " must be positive");
}

uint64_t es_stream(uint64_t seed, int64_t step, int64_t pair) {
  return splitmix64_mix(splitmix64_mix(seed ^ kEsDomain) + (uint64_t(step) << 32 | uint64_t(pair)));
}

double es_noise(uint64_t seed, int64_t step, int64_t pair, uint64_t index) {
  return CounterRng::normal_f64(es_stream(seed, step, pair), index);
}

std::vector<double> centered_ranks(std::span<const double> fitness) {
  const size_t n = fitness.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return fitness[a] < fitness[b]; });
  std::vector<double> shaped(n);
  for (size_t first = 0; first < n;) {
    size_t last = first;  // a run of ties: ranks first .. last share their mean
    while (last + 1 < n && fitness[order[last + 1]] == fitness[order[first]]) ++last;
    const double rank = double(first + last) / 2.0;
    for (size_t j = first; j <= last; ++j) shaped[order[j]] = rank / double(n - 1) - 0.5;
    first = last + 1;
  }
  return shaped;
}

void es_perturb(std::span<const float> center, std::span<float> out, uint64_t first, const EsOptions& options,
                int64_t step, int64_t member) {
  const uint64_t stream = es_stream(options.seed, step, member / 2);
  const double signed_sigma = member % 2 == 0 ? options.sigma : -options.sigma;
  for (size_t i = 0; i < center.size(); ++i)
    out[i] = float(double(center[i]) + signed_sigma * CounterRng::normal_f64(stream, first + i));
}

void es_update(std::span<float> theta, uint64_t first, std::span<const double> shaped, const EsOptions& options,
               int64_t step) {
  const int64_t pairs = int64_t(shaped.size()) / 2;
  std::vector<double> d(static_cast<size_t>(pairs));
  std::vector<uint64_t> streams(static_cast<size_t>(pairs));
  for (int64_t k = 0; k < pairs; ++k) {
    d[size_t(k)] = shaped[size_t(2 * k)] - shaped[size_t(2 * k + 1)];
    streams[size_t(k)] = es_stream(options.seed, step, k);
  }
  const double scale = options.lr / (options.sigma * double(shaped.size()));
  for (size_t i = 0; i < theta.size(); ++i) {
    double acc = 0.0;
    for (int64_t k = 0; k < pairs; ++k) acc = acc + d[size_t(k)] * CounterRng::normal_f64(streams[size_t(k)], first + i);
    theta[i] = float(double(theta[i]) + scale * acc);
  }
}

EvolutionStrategy::EvolutionStrategy(std::vector<optim::Param> params, const EsOptions& options)
    : params_(std::move(params)), options_(options) {
  options_.validate();
  check(!params_.empty(), "es", "no parameters to train");
  for (const optim::Param& p : params_) {
    check(p.value.dtype() == DType::f32 && p.value.is_contiguous(), "es", p.name, ": evolution strategies train ",
          "contiguous f32 parameters, got ", p.value.dtype().name());
    center_.emplace_back(size_t(p.value.numel()));
    count_ += p.value.numel();
  }
}

void EvolutionStrategy::write_member(int64_t member) {
  uint64_t first = 0;
  for (size_t j = 0; j < params_.size(); ++j) {
    es_perturb(center_[j], values_of(params_[j]), first, options_, step_, member);
    first += center_[j].size();
  }
}

void EvolutionStrategy::restore() {
  for (size_t j = 0; j < params_.size(); ++j) std::ranges::copy(center_[j], values_of(params_[j]).begin());
}

EsStepResult EvolutionStrategy::step(const std::function<double(int64_t member)>& fitness, Communicator& comm) {
  const int64_t n = options_.population;
  for (size_t j = 0; j < params_.size(); ++j) {
    const std::span<const float> live = values_of(params_[j]);
    std::ranges::copy(live, center_[j].begin());
  }
  std::vector<double> mine;
  try {
    for (int64_t m = comm.rank(); m < n; m += comm.size()) {
      write_member(m);
      mine.push_back(fitness(m));
    }
  } catch (...) {
    restore();  // a failed evaluation leaves the center, not a member, in place
    throw;
  }
  restore();

  // Rank r sent its members r, r + size, ...: back into member order.
  const std::vector<double> gathered = comm.allgather(std::move(mine));
  EsStepResult r;
  r.fitness.resize(size_t(n));
  size_t at = 0;
  for (int rank = 0; rank < comm.size(); ++rank)
    for (int64_t m = rank; m < n; m += comm.size()) r.fitness[size_t(m)] = gathered.at(at++);
  for (int64_t m = 0; m < n; ++m)
    check(std::isfinite(r.fitness[size_t(m)]), "es", "member ", m, " of generation ", step_, " has fitness ",
          r.fitness[size_t(m)], " (a perturbed model diverged: try a smaller sigma)");

  const std::vector<double> shaped = centered_ranks(r.fitness);
  uint64_t first = 0;
  for (size_t j = 0; j < params_.size(); ++j) {
    es_update(values_of(params_[j]), first, shaped, options_, step_);
    first += center_[j].size();
  }
  ++step_;
  r.mean = std::accumulate(r.fitness.begin(), r.fitness.end(), 0.0) / double(n);
  r.best = *std::ranges::max_element(r.fitness);
  return r;
}

}  // namespace tempra::train
