// tempra/audio/amp_model.cpp
#include "tempra/audio/amp_model.h"

#include <algorithm>
#include <array>

#include "tempra/audio/lstm.h"
#include "tempra/audio/wavenet.h"

namespace tempra::audio {

void AmpModel::process(const float* in, float* out, int64_t n) {
  for (int64_t at = 0; at < n; at += kMaxBlock) process_block(in + at, out + at, int(std::min(kMaxBlock, n - at)));
}

void AmpModel::reset() {
  clear_state();
  // Silence through the model, in blocks from the stack: prewarming allocates nothing either.
  std::array<float, 256> silence{}, ignored{};
  for (int64_t done = 0, total = prewarm_samples(); done < total;) {
    const int n = int(std::min<int64_t>(int64_t(silence.size()), total - done));
    process_block(silence.data(), ignored.data(), n);
    done += n;
  }
}

std::unique_ptr<AmpModel> make_amp_model(const NamFile& file, const AmpOptions& options) {
  std::unique_ptr<AmpModel> model;
  if (const auto* w = std::get_if<WaveNetConfig>(&file.config))
    model = std::make_unique<WaveNet>(*w, file.weights, file.sample_rate, options);
  else
    model = std::make_unique<Lstm>(std::get<LstmConfig>(file.config), file.weights, file.sample_rate, options);
  model->reset();
  return model;
}

}  // namespace tempra::audio
