// tempra/optim/apollo.h: APOLLO, Adam-style scaling estimated in a random low-rank space.
//
// Contract: Zhu et al. 2024, "APOLLO: SGD-like Memory, AdamW-level Performance"
// (arXiv 2412.05270), as its official implementation does it (apollo_torch/apollo.py AdamW
// with a random GradientProjector, scale_front = False, the norm-growth limiter on). For a
// param in a projected group (rank > 0), G its gradient [m, n], t its update count:
//   P  = N(0, 1) / sqrt(rank), regenerated (never stored) for refresh period k = (t - 1) / T:
//        [rank, n] when m >= n ("right": R = G P^T, [m, rank]),
//        [m, rank] when m <  n ("left":  R = P^T G, [rank, n])
//   M  = beta1 M + (1 - beta1) R;   V = beta2 V + (1 - beta2) R * R        (Adam moments of R)
//   N  = M / (sqrt(V) + eps)
//   s  = ||N_c|| / (||R_c|| + 1e-8) per channel c (rows of R when "right", columns when "left":
//        the axis the projection keeps), or one ratio of Frobenius norms ("tensor", APOLLO-Mini)
//   S  = G * s
//   norm-growth limiter (Fira): from the second update on, with q = the previous ||S||,
//        l = max(||S|| / (q + 1e-8), 1.01) / 1.01;  S = S / l;  q = ||S|| (before division) / l
//   p  = p - lr * sqrt(1 - beta2^t) / (1 - beta1^t) * sqrt(scale) * S      (correct_bias)
//   p  = p - lr * weight_decay * p                                        (after the update)
// Unprojected groups (rank = 0) run the same Adam rule on G itself with no scaling (the
// reference's path for groups without "rank"). Projected params must be 2-D with
// 1 <= rank <= min(m, n).
//
// The projection: element e of P (row-major) is CounterRng::normal(stream, e) (tempra/core/rng.h),
// converted to the param's dtype and divided by sqrt(rank), with
// stream = CounterRng::bits(CounterRng::bits(seed, param index), k), the param index being its
// place in group order. So P is a pure function of (seed, param index, period): a resumed run
// regenerates it and the checkpoint carries only the seed (an option) and the step counts.
// State: "apollo.exp_avg.<name>", "apollo.exp_avg_sq.<name>" ([m, rank], [rank, n] or the param's
// shape when unprojected) and the scalar "apollo.scaled_grad_norm.<name>" (the limiter's q).
// Parity: tests/optim/golden_parity_test.cpp against the float64 reference implementation in
// tools/gen_optim_goldens.py.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tempra/optim/optimizer.h"

namespace tempra::optim {

enum class ApolloScale : uint8_t { channel, tensor };

struct ApolloOptions {
  int64_t rank = 0;               // 0: no projection (plain Adam update, for vectors)
  int64_t update_proj_gap = 200;  // T: steps between projection refreshes
  double scale = 1.0;             // alpha: the update is multiplied by sqrt(scale)
  ApolloScale scale_type = ApolloScale::channel;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-6;  // the reference's default
  bool correct_bias = true;
  uint64_t seed = 0;

  // APOLLO-Mini as the paper runs it: rank 1, tensor-wise scaling, scale 128.
  static ApolloOptions mini(int64_t update_proj_gap = 200, uint64_t seed = 0) {
    ApolloOptions o;
    o.rank = 1;
    o.update_proj_gap = update_proj_gap;
    o.scale = 128;
    o.scale_type = ApolloScale::tensor;
    o.seed = seed;
    return o;
  }
};

class Apollo final : public Optimizer {
 public:
  explicit Apollo(std::vector<Group<ApolloOptions>> groups);

  const ApolloOptions& options(int group) const { return options_.at(static_cast<size_t>(group)); }

  // The projection param `index` uses at its update number `param_step` (1-based), in the
  // param's dtype: [rank, n] ("right") or [m, rank] ("left"). Regenerated on every call.
  Array projection(ExecContext& ctx, int64_t index, int64_t param_step) const;

 private:
  void update(ExecContext& ctx, int group, int64_t index, const Array& grad, int64_t param_step) override;

  std::vector<ApolloOptions> options_;
  std::vector<Array> exp_avg_, exp_avg_sq_;
  std::unique_ptr<double[]> scaled_grad_norm_;  // per param; its address is registered as state
};

}  // namespace tempra::optim
