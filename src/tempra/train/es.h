// tempra/train/es.h: training without gradients: evolution strategies (Salimans et al., 2017;
// at the scale of language models, Qiu et al., arXiv:2509.24372). Forward passes only.
//
// Contract (tools/es_reference.py is this algebra in NumPy; tests/train/es_test.cpp holds the
// two to bit equality in f64):
// - The parameters are f32 arrays, taken in order as one vector theta (element i counts across
//   them). Generation s of a population of N members (N even, N >= 2) evaluates antithetic
//   pairs: member 2k is theta + sigma eps_k, member 2k+1 is theta - sigma eps_k, where
//   eps_k[i] = es_noise(seed, s, k, i) is a standard normal (CounterRng::normal_f64 of the stream
//   es_stream(seed, s, k)). The noise is regenerated wherever it is needed and never stored.
// - A member's parameters are float(double(theta_i) + (+-sigma) * eps_k[i]), written into the
//   live arrays from a copy of the center kept aside, which is copied back after the last
//   member (or a failed evaluation): the center returns exactly (no subtraction).
// - Fitness (higher is better) is shaped by centered ranks: member m gets r_m / (N - 1) - 1/2,
//   where r_m is its rank in ascending fitness from 0, tied members sharing the mean of their
//   ranks (so equal rewards carry equal weight). Every fitness must be finite.
// - The update: d_k = F_2k - F_2k+1, acc_i = sum over k ascending of d_k * eps_k[i] (in f64 from
//   0), theta_i = float(double(theta_i) + (lr / (sigma * N)) * acc_i): gradient ascent on the
//   smoothed fitness. This file is built without floating-point contraction
//   (-ffp-contract=off), so that no compiler fuses these multiply-adds and NumPy's separately
//   rounded operations reproduce them.
// - Over several processes (comm.h), member m is evaluated by rank m mod size, and the ranks
//   exchange only their fitness scalars; each then applies the same update. The result is bit
//   for bit the single process's.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tempra/optim/optimizer.h"
#include "tempra/train/comm.h"

namespace tempra::train {

struct EsOptions {
  int64_t population = 16;  // N members: N / 2 antithetic pairs
  double sigma = 1e-3;      // the perturbations' standard deviation
  double lr = 1e-3;         // the update's step size
  uint64_t seed = 0;
  void validate() const;
};

// The counter RNG stream of pair k's noise in generation s, and its element i.
uint64_t es_stream(uint64_t seed, int64_t step, int64_t pair);
double es_noise(uint64_t seed, int64_t step, int64_t pair, uint64_t index);

// The centered ranks of `fitness` (see the contract), in member order.
std::vector<double> centered_ranks(std::span<const double> fitness);

// Member m's values of the elements [first, first + center.size()) of theta, into `out`.
void es_perturb(std::span<const float> center, std::span<float> out, uint64_t first, const EsOptions& options,
                int64_t step, int64_t member);
// The update of the elements [first, first + theta.size()), in place, from the shaped fitness.
void es_update(std::span<float> theta, uint64_t first, std::span<const double> shaped, const EsOptions& options,
               int64_t step);

struct EsStepResult {
  std::vector<double> fitness;  // per member, in member order
  double mean = 0, best = 0;
};

class EvolutionStrategy {
 public:
  // `params` (contiguous f32 arrays, updated in place) stay owned by the caller.
  EvolutionStrategy(std::vector<optim::Param> params, const EsOptions& options);

  int64_t steps_done() const { return step_; }
  void set_steps_done(int64_t step) { step_ = step; }  // resuming a run whose parameters were loaded
  const EsOptions& options() const { return options_; }
  int64_t parameter_count() const { return count_; }

  // One generation: `fitness` is called once per member this rank evaluates, with the member's
  // parameters in place and its index; then the parameters are the updated center.
  EsStepResult step(const std::function<double(int64_t member)>& fitness, Communicator& comm);

 private:
  void write_member(int64_t member);
  void restore();

  std::vector<optim::Param> params_;
  std::vector<std::vector<float>> center_;  // the center's copy while members are written
  EsOptions options_;
  int64_t step_ = 0, count_ = 0;
};

}  // namespace tempra::train
