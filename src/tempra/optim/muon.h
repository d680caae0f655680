// tempra/optim/muon.h: Muon, momentum orthogonalized by Newton-Schulz, for 2-D weights; AdamW for
// the rest.
//
// Contract: Keller Jordan's reference (github.com/KellerJordan/Muon, muon.py: muon_update,
// zeropower_via_newtonschulz5, MuonWithAuxAdam), for a param of shape [rows, cols]:
//   buf = lerp(buf, g, 1 - momentum)                     (an EMA of the gradient)
//   u   = nesterov ? lerp(g, buf, momentum) : buf
//   X   = u, transposed when rows > cols so that X is wide, then X / (||X||_F + 1e-7)
//   5 times (ns_steps): A = X X^T;  B = b A + c A A;  X = a X + B X,   (a, b, c) = (3.4445, -4.7750, 2.0315)
//   X transposed back; update = X * sqrt(max(1, rows / cols))
//   p = p * (1 - lr * weight_decay) - lr * update
// The reference runs the iteration in bf16; here it runs in the param's dtype (f32 or f64),
// with the op library's matmul. The reference's nesterov step overwrites the gradient in
// place; here the gradient is left as it was.
// Groups with use_muon = false get AdamW: the reference's adam_update with decoupled decay,
//   m = lerp(m, g, 1 - beta1);  v = lerp(v, g * g, 1 - beta2)
//   p = p * (1 - lr * weight_decay) - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
// (torch's AdamW rule, rounded as the reference rounds it). Muon groups accept only 2-D params (a clear
// error otherwise); what goes where is the caller's choice, as in the reference: hidden
// matrices in Muon groups; embeddings, heads, gains and biases in AdamW groups.
// State: "muon.momentum_buffer.<name>" for Muon params; "muon.exp_avg.<name>" and
// "muon.exp_avg_sq.<name>" for AdamW params.
// Parity: tests/optim/golden_parity_test.cpp against the float64 reference implementation in
// tools/gen_optim_goldens.py.
#pragma once

#include <vector>

#include "tempra/optim/optimizer.h"

namespace tempra::optim {

struct MuonOptions {
  bool use_muon = true;  // false: this group is updated by AdamW
  // Muon groups (the reference's defaults: lr 0.02, weight_decay 0).
  double momentum = 0.95;
  bool nesterov = true;
  int ns_steps = 5;
  // AdamW groups (the reference's defaults: lr 3e-4, betas (0.9, 0.95), eps 1e-10).
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-10;
};

class Muon final : public Optimizer {
 public:
  explicit Muon(std::vector<Group<MuonOptions>> groups);

  const MuonOptions& options(int group) const { return options_.at(static_cast<size_t>(group)); }

 private:
  void update(ExecContext& ctx, int group, int64_t index, const Array& grad, int64_t param_step) override;

  std::vector<MuonOptions> options_;
  std::vector<Array> momentum_, exp_avg_, exp_avg_sq_;  // per param; empty where unused
};

// The orthogonalization alone: Newton-Schulz quintic iteration on a 2-D f32/f64 array,
// returning a new array of the same shape (exposed for tests and for other optimizers).
Array newton_schulz5(ExecContext& ctx, const Array& g, int steps = 5);

}  // namespace tempra::optim
