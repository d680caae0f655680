// tempra/audio/amp_model.cpp
#include "tempra/audio/amp_model.h"

#include <algorithm>
#include <array>

#include "tempra/audio/lstm.h"
#include "tempra/audio/wavenet.h"

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace tempra::audio {
namespace {

// Subnormal floats flushed to zero while a model runs, the caller's mode restored after: a
// decaying signal's tails otherwise fall into subnormals, which cost x86 a microcode assist per
// operation (the standard WaveNet ran 1.3x slower with them here). What every real-time audio
// host does (JUCE's ScopedNoDenormals); values below 1.2e-38 become 0, far under the 1e-5 the
// oracle test holds, and the same mode for every call keeps any split of the input bit-exact.
class FlushSubnormals {
 public:
#if defined(__x86_64__)
  FlushSubnormals() : saved_(_mm_getcsr()) {
    _mm_setcsr(saved_ | 0x8040);
  }  // FTZ | DAZ
  ~FlushSubnormals() {
    _mm_setcsr(saved_);
  }

 private:
  unsigned saved_;
#elif defined(__aarch64__)
  FlushSubnormals() {
    asm volatile("mrs %0, fpcr" : "=r"(saved_));
    asm volatile("msr fpcr, %0" : : "r"(saved_ | (uint64_t(1) << 24)));  // FZ
  }
  ~FlushSubnormals() {
    asm volatile("msr fpcr, %0" : : "r"(saved_));
  }

 private:
  uint64_t saved_ = 0;
#endif
};

}  // namespace

void AmpModel::process(const float* in, float* out, int64_t n) {
  const FlushSubnormals flush;
  for (int64_t at = 0; at < n; at += kMaxBlock) process_block(in + at, out + at, int(std::min(kMaxBlock, n - at)));
}

void AmpModel::reset() {
  const FlushSubnormals flush;
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
  validate(file);
  std::unique_ptr<AmpModel> model;
  if (const auto* w = std::get_if<WaveNetConfig>(&file.config))
    model = std::make_unique<WaveNet>(*w, file.weights, file.sample_rate, options);
  else
    model = std::make_unique<Lstm>(std::get<LstmConfig>(file.config), file.weights, file.sample_rate, options);
  model->reset();
  return model;
}

}  // namespace tempra::audio
