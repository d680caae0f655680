// tests/audio/nam_fuzz.cpp: libFuzzer target for the `.nam` reader (clang only: TEMPRA_FUZZ=ON).
//
// Parses the input as a profile; what parses is built into its model (reset and prewarmed),
// runs 100 samples in two calls, and is written back and parsed again, which must give the same
// weights. tempra::Error is the expected way to reject input; anything else (a crash, a
// sanitizer report, another exception) is a finding. Run with scripts/fuzz.sh;
// tests/audio/fuzz_corpus seeds it (two stock-sized profiles and a tiny gated one).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tempra/audio/amp_model.h"
#include "tempra/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tempra::audio;
  try {
    const NamFile file = parse_nam(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.nam");
    // Keep each input cheap: the fuzzer's time goes to the parser, not to a huge model's prewarm.
    if (file.weights.size() > 200000) return 0;
    if (const auto* w = std::get_if<WaveNetConfig>(&file.config)) {
      int64_t field = 0;
      for (const LayerArrayConfig& a : w->layer_arrays)
        for (const int d : a.dilations) field += int64_t(d) * (a.kernel_size - 1);
      if (field > 100000) return 0;
    }
    const auto model = make_amp_model(file);
    std::vector<float> x(100, 0.25f), y(100);
    model->process(x.data(), y.data(), 37);
    model->process(x.data() + 37, y.data() + 37, 63);
    const NamFile back = parse_nam(format_nam(file), "fuzz-rewritten.nam");
    if (back.weights != file.weights) __builtin_trap();
  } catch (const tempra::Error&) {
  }
  return 0;
}
