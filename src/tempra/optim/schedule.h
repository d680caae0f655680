// tempra/optim/schedule.h: learning-rate schedules.
//
// Contract: a schedule maps the index of the step about to run (0 for the first) to a factor;
// apply_schedule sets every group's lr = initial_lr * factor, as torch's LambdaLR does, so
// groups keep their ratios. A schedule holds no state besides its configuration: the step
// index comes from the optimizer (step_count()), so a resumed run gets the same lr back.
// - constant: factor 1.
// - warmup_cosine: linear warmup, then a half cosine down to min_lr_ratio:
//     step <  warmup:        (step + 1) / warmup
//     warmup <= step < total: r + (1 - r) * (1 + cos(pi * (step - warmup) / (total - warmup))) / 2
//     step >= total:          r                                              (r = min_lr_ratio)
//   so the first step already has a non-zero lr, the last warmup step the full lr, and the
//   decay reaches min_lr = r * initial_lr at step `total`. (The shape of nanoGPT's get_lr.)
// Parity: tests/optim/clip_schedule_test.cpp against the same formula in
// tools/gen_optim_goldens.py.
#pragma once

#include <cstdint>

namespace tempra::optim {

class Optimizer;

struct LrSchedule {
  enum class Kind : uint8_t { constant, warmup_cosine };
  Kind kind = Kind::constant;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  double min_lr_ratio = 0;

  static LrSchedule constant() { return {}; }
  // Throws tempra::Error unless 0 <= warmup_steps <= total_steps, total_steps >= 1, ratio in [0, 1].
  static LrSchedule warmup_cosine(int64_t warmup_steps, int64_t total_steps, double min_lr_ratio = 0);

  double factor(int64_t step) const;
};

// Sets each group's lr for the step about to run (optimizer.step_count()).
void apply_schedule(Optimizer& optimizer, const LrSchedule& schedule);

}  // namespace tempra::optim
