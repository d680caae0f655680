// apps/tempra/amp_plot.h: the picture `tempra amp train` leaves beside its profile.
//
// One PNG, drawn with cairo (Debian's libcairo2-dev): above, the target against the model's
// prediction on the 20 ms of the validation split where they differ most;
// below, the ESR after every epoch on a log scale, training and validation.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace tempra::app {

struct AmpPlot {
  std::string title;                          // "standard WaveNet, validation ESR 0.0042"
  std::span<const float> target, prediction;  // the whole validation split
  int sample_rate = 48000;
  std::vector<double> train_esr, validation_esr;  // one per epoch
};

// The PNG's bytes (drawn in memory, so a caller can have it before writing anything).
std::string render_amp_plot(const AmpPlot& plot);

}  // namespace tempra::app
