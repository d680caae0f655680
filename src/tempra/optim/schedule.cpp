// tempra/optim/schedule.cpp: constant and warmup-cosine schedules.
#include "tempra/optim/schedule.h"

#include <cmath>
#include <numbers>

#include "tempra/core/error.h"
#include "tempra/optim/optimizer.h"

namespace tempra::optim {

LrSchedule LrSchedule::warmup_cosine(int64_t warmup_steps, int64_t total_steps, double min_lr_ratio) {
  check(total_steps >= 1, "warmup_cosine", "total_steps must be >= 1, got ", total_steps);
  check(warmup_steps >= 0 && warmup_steps <= total_steps, "warmup_cosine",
        "warmup_steps must be in [0, total_steps = ", total_steps, "], got ", warmup_steps);
  check(min_lr_ratio >= 0 && min_lr_ratio <= 1, "warmup_cosine", "min_lr_ratio must be in [0, 1], got ", min_lr_ratio);
  return LrSchedule{Kind::warmup_cosine, warmup_steps, total_steps, min_lr_ratio};
}

double LrSchedule::factor(int64_t step) const {
  check(step >= 0, "lr_schedule", "step must be >= 0, got ", step);
  if (kind == Kind::constant) return 1.0;
  if (step < warmup_steps) return static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (step >= total_steps) return min_lr_ratio;
  const double progress = static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
  return min_lr_ratio + (1 - min_lr_ratio) * (1 + std::cos(std::numbers::pi * progress)) / 2;
}

void apply_schedule(Optimizer& optimizer, const LrSchedule& schedule) {
  const double f = schedule.factor(optimizer.step_count());
  for (ParamGroup& g : optimizer.groups()) g.lr = g.initial_lr * f;
}

}  // namespace tempra::optim
