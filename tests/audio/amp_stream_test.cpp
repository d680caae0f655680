// tests/audio/amp_stream_test.cpp: a model's output does not depend on how its input is split.
//
// Every profile of the zoo processes a 0.25 s signal whole, then in blocks of 1, 7, 64 and 4096
// samples, and in a ragged mix of sizes; every split must give the whole signal's output bit for
// bit (the state between calls is the history a sample needs, nothing else). Also: a reset
// returns a model to its just-loaded state, processing in place equals processing into another
// buffer, and a block larger than kMaxBlock is split invisibly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "audio/amp_fixtures.h"
#include "tempra/audio/amp_model.h"
#include "tempra/audio/wavenet.h"

namespace tempra::audio {
namespace {

std::vector<float> run(AmpModel& model, const std::vector<float>& x, const std::vector<int>& blocks) {
  std::vector<float> y(x.size());
  size_t at = 0;
  for (size_t b = 0; at < x.size(); ++b) {
    const size_t n = std::min(size_t(blocks[b % blocks.size()]), x.size() - at);
    model.process(x.data() + at, y.data() + at, int64_t(n));
    at += n;
  }
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(AmpStream, any_split_of_the_input_gives_the_whole_signals_output_bit_for_bit) {
  const std::vector<float> x = testing::test_signal(12000);
  for (const auto& [name, file] : testing::profile_zoo()) {
    SCOPED_TRACE(name);
    const auto whole_model = make_amp_model(file);
    const std::vector<float> whole = run(*whole_model, x, {int(x.size())});
    for (const std::vector<int>& blocks :
         std::vector<std::vector<int>>{{1}, {7}, {64}, {4096}, {3, 250, 1, 64, 999, 17}}) {
      const auto model = make_amp_model(file);
      EXPECT_TRUE(same_bits(run(*model, x, blocks), whole)) << "first block size " << blocks[0];
    }
  }
}

TEST(AmpStream, the_scalar_backend_is_split_independent_too) {
  // Longer than 2 kMaxBlock: every layer's history rewinds at least once.
  const std::vector<float> x = testing::test_signal(AmpModel::kMaxBlock * 2 + 1000);
  for (const auto& [name, file] : testing::profile_zoo()) {
    SCOPED_TRACE(name);
    const AmpOptions scalar{.backend = Backend::scalar};
    const auto whole = make_amp_model(file, scalar), split = make_amp_model(file, scalar);
    EXPECT_TRUE(same_bits(run(*split, x, {7, 64, 1}), run(*whole, x, {int(x.size())})));
  }
}

// Whether a profile runs a transcendental the native backend computes its own way: exact tanh
// and sigmoid (simd::exp, a few ulp from the C library's exp). Everything else is the same
// arithmetic in the same order in both backends.
bool uses_native_transcendentals(const NamFile& file, bool fast) {
  if (const auto* w = std::get_if<WaveNetConfig>(&file.config)) {
    for (const LayerArrayConfig& a : w->layer_arrays)
      if (a.gated || a.activation == Activation::sigmoid || (!fast && a.activation == Activation::tanh)) return true;
    return false;
  }
  return !fast;  // the LSTM's gates: fast sigmoid and fast tanh are plain arithmetic
}

TEST(AmpStream, the_native_backend_agrees_with_the_scalar_specification) {
  // Native sums the same products in the same order with the same fused multiply-adds, so it
  // must give the scalar backend's bits, except where its tanh and sigmoid (~1e-6 relative of
  // the C library's) enter: there 2e-6 of the output's scale (its peak, at least 1: activations
  // are of order one whatever the head scale makes of them). Measured: 3.1e-6 on the standard
  // WaveNet with exact tanh (peak 2.4), 1.2e-7 on the sigmoid one.
  const std::vector<float> x = testing::test_signal(12000);
  for (const bool fast : {true, false})
    for (const auto& [name, file] : testing::profile_zoo()) {
      SCOPED_TRACE(name + (fast ? " fast tanh" : " exact tanh"));
      const auto native = make_amp_model(file, {.fast_tanh = fast, .backend = Backend::native});
      const auto scalar = make_amp_model(file, {.fast_tanh = fast, .backend = Backend::scalar});
      const std::vector<float> a = run(*native, x, {64}), b = run(*scalar, x, {64});
      double diff = 0, peak = 1;
      for (size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, double(std::abs(a[i] - b[i])));
        peak = std::max(peak, double(std::abs(b[i])));
      }
      const bool own = uses_native_transcendentals(file, fast);
      EXPECT_LE(diff, own ? 2e-6 * peak : 0.0);
      std::printf("%-28s %s tanh: native - scalar %.3g\n", name.c_str(), fast ? "fast " : "exact", diff);
    }
}

TEST(AmpStream, reset_returns_to_the_state_after_loading) {
  const std::vector<float> x = testing::test_signal(6000);
  for (const auto& [name, file] : testing::profile_zoo()) {
    SCOPED_TRACE(name);
    const auto model = make_amp_model(file);
    const std::vector<float> first = run(*model, x, {64});
    const std::vector<float> carried_on = run(*model, x, {64});
    model->reset();
    EXPECT_TRUE(same_bits(run(*model, x, {64}), first));
    EXPECT_FALSE(same_bits(carried_on, first));  // the state did carry over before the reset
  }
}

TEST(AmpStream, in_place_equals_out_of_place_and_long_calls_are_split) {
  const std::vector<float> x = testing::test_signal(AmpModel::kMaxBlock * 2 + 123);
  const NamFile file = testing::random_profile(*wavenet_preset("lite"), 3);
  const auto a = make_amp_model(file), b = make_amp_model(file), c = make_amp_model(file);
  const std::vector<float> reference = run(*a, x, {64});
  std::vector<float> in_place = x;
  b->process(in_place.data(), in_place.data(), int64_t(in_place.size()));  // one call of > 2 kMaxBlock
  EXPECT_TRUE(same_bits(in_place, reference));
  EXPECT_TRUE(same_bits(run(*c, x, {int(x.size())}), reference));
}

TEST(AmpStream, prewarming_settles_the_silence_response) {
  // After make_amp_model (reset + prewarm), silence in gives the model's steady silence out: the
  // first output equals one a further receptive field of silence later.
  const NamFile file = testing::random_profile(*wavenet_preset("nano"), 9);
  const auto model = make_amp_model(file);
  const auto& wavenet = dynamic_cast<const WaveNet&>(*model);
  std::vector<float> silence(size_t(wavenet.receptive_field()) * 2, 0.0f), out(silence.size());
  model->process(silence.data(), out.data(), int64_t(silence.size()));
  EXPECT_EQ(out.front(), out.back());
  EXPECT_NE(out.front(), 0.0f);  // biases make silence's response non-zero: prewarm mattered
  EXPECT_EQ(wavenet.receptive_field(), 1 + 2 * (127 + 896 + 1023));  // kernel 3 over 1..64, then 128..512 and 1..512
}

TEST(AmpStream, exact_and_fast_tanh_differ_by_nams_approximation_error_only) {
  const std::vector<float> x = testing::test_signal(6000);
  const NamFile file = testing::random_profile(*wavenet_preset("feather"), 11);
  const auto fast = make_amp_model(file), exact = make_amp_model(file, {.fast_tanh = false});
  const std::vector<float> a = run(*fast, x, {64}), b = run(*exact, x, {64});
  double diff = 0, peak = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, double(std::abs(a[i] - b[i])));
    peak = std::max(peak, double(std::abs(b[i])));
  }
  EXPECT_GT(diff, 0.0);
  EXPECT_LT(diff, 0.01 * peak);
}

TEST(AmpStream, an_lstm_with_exact_tanh_recovers_from_infinite_samples) {
  // Exact sigmoid and tanh of an infinite pre-activation are finite, so NAM's LSTM (and tempra's)
  // is finite again from the next sample. The missing units of a last group of eight (nano:
  // H = 12) turn NaN for good; the head must not read them.
  std::vector<float> x = testing::test_signal(2000);
  x[100] = INFINITY;
  x[300] = -INFINITY;
  int lstms = 0;
  for (const auto& [name, file] : testing::profile_zoo()) {
    if (!std::holds_alternative<LstmConfig>(file.config)) continue;
    ++lstms;
    for (const Backend backend : {Backend::scalar, Backend::native}) {
      SCOPED_TRACE(name + (backend == Backend::scalar ? " scalar" : " native"));
      const auto model = make_amp_model(file, {.fast_tanh = false, .backend = backend});
      const std::vector<float> y = run(*model, x, {64});
      int not_finite = 0;
      for (size_t i = 301; i < y.size(); ++i) not_finite += !std::isfinite(y[i]);
      EXPECT_EQ(not_finite, 0);
    }
  }
  EXPECT_GE(lstms, 4);
}

}  // namespace
}  // namespace tempra::audio
