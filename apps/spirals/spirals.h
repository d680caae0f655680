// apps/spirals/spirals.h: the two-spirals classifier the README demo trains.
//
// Contract:
// - make_spirals(seed, n_per_class, noise) is a pure function of its arguments (the counter
//   RNG, core/rng.h): the same points on any machine and thread count. Class 0 winds out from
//   the centre for one and a half turns; class 1 is the same spiral rotated by half a turn.
// - Mlp is the README's named-axis MLP with one more hidden layer (2 -> 64 -> 64 -> 2, tanh):
//   typed parameters Tensor<h1, in> etc., so a misaligned contraction does not compile.
// - Trainer owns one training run: its ExecContext (the RNG that draws the initial weights and
//   each step's minibatch), the model, one optimizer from its name, and the lr schedule. step()
//   is forward, cross_entropy, ag::backward, optimizer step. Everything that influences the next
//   step lives in the model, the optimizer state and ctx.rng(), which is exactly what
//   save()/load() write to and restore from a checkpoint (optim/checkpoint.h): k steps + save +
//   load + N - k steps reproduce N steps bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tempra/optim/optimizer.h"
#include "tempra/optim/schedule.h"
#include "tempra/typed/ops.h"

namespace spirals {

TEMPRA_AXES(batch, in, h1, h2, cls);

struct Dataset {
  std::vector<float> x;    // [n, 2]
  std::vector<int32_t> y;  // [n]: 0 or 1
  int64_t size() const { return static_cast<int64_t>(y.size()); }
};

Dataset make_spirals(uint64_t seed, int64_t n_per_class, double noise);

struct Mlp {
  tempra::Tensor<h1, in> w1;
  tempra::Tensor<h1> b1;
  tempra::Tensor<h2, h1> w2;
  tempra::Tensor<h2> b2;
  tempra::Tensor<cls, h2> w3;
  tempra::Tensor<cls> b3;

  // Weights ~ N(0, gain / fan_in) from ctx.rng(), biases zero; all require gradients.
  static Mlp init(tempra::ExecContext& ctx, int64_t hidden = 64);
  // The parameters by name, in a fixed order (what optimizers and checkpoints see).
  std::vector<tempra::optim::Param> params() const;
};

tempra::Tensor<batch, cls> forward(tempra::ExecContext& ctx, const Mlp& m, const tempra::Tensor<batch, in>& x);
// The training loss: mean cross-entropy of the logits against i32 labels [batch].
tempra::Array loss(tempra::ExecContext& ctx, const tempra::Tensor<batch, cls>& logits, const tempra::Array& labels);

// The optimizers the demo compares: "sgd", "sgd-momentum", "adamw", "muon", "apollo".
const std::vector<std::string>& optimizer_names();
// Throws tempra::Error naming the choices for an unknown name.
std::unique_ptr<tempra::optim::Optimizer> make_optimizer(const std::string& name, const Mlp& model);

struct Evaluation {
  double loss = 0;
  double accuracy = 0;  // in [0, 1]
};

class Trainer {
 public:
  static constexpr int64_t kBatch = 256;

  Trainer(const std::string& optimizer, uint64_t seed, int64_t total_steps, int threads, const Dataset& train);

  // One step on a minibatch drawn from ctx.rng(); returns the minibatch loss and accuracy.
  Evaluation step();
  int64_t steps_done() const { return optimizer_->step_count(); }

  Evaluation evaluate(const Dataset& data);
  // Class-1 probability of each point (inference under NoGradGuard).
  std::vector<float> predict(const std::vector<float>& xy);

  void save(const std::string& path);
  void load(const std::string& path);

  // FNV-1a over every parameter's bytes in params() order: equal hashes, equal bits.
  uint64_t params_hash() const;
  const std::string& optimizer_name() const { return optimizer_->name(); }

 private:
  tempra::ExecContext ctx_;
  const Dataset& train_;
  Mlp model_;
  std::unique_ptr<tempra::optim::Optimizer> optimizer_;
  tempra::optim::LrSchedule schedule_;
  std::string kind_;  // the name the optimizer was asked for ("sgd-momentum" is an "sgd")
};

}  // namespace spirals
