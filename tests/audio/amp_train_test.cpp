// tests/audio/amp_train_test.cpp: training NAM WaveNets (src/tempra/audio/train).
//
// - The trainable WaveNet is NAM's: on the same weights it computes what the streaming WaveNet
//   computes (that model is held to NAM's own core by nam_oracle_test), for every activation,
//   gating, head bias, kernel size and chain of arrays, and its weights go out in the `.nam`
//   order and come back unchanged.
// - Pairs: the latency of a known delay is found, and bad pairs are refused by name.
// - The trainer: its loss falls, and a run is a pure function of its seed (the same bits for
//   one thread and two).
#include <gtest/gtest.h>

#include <cmath>

#include "audio/amp_fixtures.h"
#include "tempra/ag/backward.h"
#include "tempra/ag/gradcheck.h"
#include "tempra/audio/amp_model.h"
#include "tempra/audio/train/amp_trainer.h"
#include "tempra/audio/train/lstm_graph.h"
#include "tempra/audio/train/wavenet_graph.h"
#include "tempra/core/error.h"
#include "tempra/core/rng.h"
#include "tempra/ops/ops.h"

namespace tempra::audio {
namespace {

WaveNetConfig small_config(Activation activation, bool gated) {
  LayerArrayConfig a{.input_size = 1,
                     .condition_size = 1,
                     .head_size = 3,
                     .channels = 4,
                     .kernel_size = 3,
                     .dilations = {1, 2, 4},
                     .activation = activation,
                     .gated = gated,
                     .head_bias = false};
  LayerArrayConfig b{.input_size = 4,
                     .condition_size = 1,
                     .head_size = 1,
                     .channels = 3,
                     .kernel_size = 2,
                     .dilations = {8, 1},
                     .activation = activation,
                     .gated = gated,
                     .head_bias = true};
  return {{a, b}};
}

// The streaming model's output (scalar backend, exact tanh) from a reset.
std::vector<float> stream(const NamFile& file, const std::vector<float>& x) {
  const auto model = make_amp_model(file, {.fast_tanh = false, .backend = Backend::scalar});
  std::vector<float> y(x.size());
  model->process(x.data(), y.data(), int64_t(x.size()));
  return y;
}

// max |trainable - streaming| over the outputs with a full receptive field, and the peak output;
// the trainable model from graph_file's weights, the streaming one from stream_file's.
std::pair<double, double> graph_against_stream(const NamFile& graph_file, const NamFile& stream_file,
                                               const std::vector<float>& x) {
  ExecContext ctx;
  const auto& config = std::get<WaveNetConfig>(graph_file.config);
  const TrainableWaveNet net = TrainableWaveNet::from_weights(ctx, config, graph_file.weights);
  const Array out = net.forward(ctx, Array::from_values<float>(ctx, {1, 1, int64_t(x.size())}, x));
  const std::vector<float> want = stream(stream_file, x);
  const int64_t skip = net.receptive_field() - 1;
  EXPECT_EQ(out.shape()[2], int64_t(x.size()) - skip);
  double diff = 0, peak = 0;
  for (int64_t t = 0; t < out.shape()[2]; ++t) {
    diff = std::max(diff, std::abs(double(out.data<float>()[t]) - want[size_t(t + skip)]));
    peak = std::max(peak, std::abs(double(want[size_t(t + skip)])));
  }
  return {diff, peak};
}

std::pair<double, double> graph_against_stream(const NamFile& file, const std::vector<float>& x) {
  return graph_against_stream(file, file, x);
}

TEST(TrainableWaveNet, computes_the_streaming_wavenet_for_every_activation_and_gating) {
  const std::vector<float> x = testing::test_signal(3000);
  for (Activation act : {Activation::tanh, Activation::hard_tanh, Activation::relu, Activation::leaky_relu,
                         Activation::sigmoid, Activation::silu, Activation::hardswish})
    for (bool gated : {false, true}) {
      SCOPED_TRACE(std::string(activation_name(act)) + (gated ? " gated" : ""));
      const auto [diff, peak] = graph_against_stream(testing::random_profile(small_config(act, gated), 3), x);
      // Both sum the same terms in float32 in different orders: a few ulps of the layer sums.
      EXPECT_LE(diff, 2e-6 * std::max(1.0, peak));
      EXPECT_GT(peak, 1e-2);
    }
}

TEST(TrainableWaveNet, computes_the_stock_standard_and_nano_wavenets) {
  const std::vector<float> x = testing::test_signal(4093 + 700);
  for (const char* name : {"standard", "nano"}) {
    SCOPED_TRACE(name);
    const auto [diff, peak] = graph_against_stream(testing::random_profile(*wavenet_preset(name), 11, 0.2f), x);
    EXPECT_LE(diff, 2e-6 * std::max(1.0, peak));
    EXPECT_GT(peak, 1e-2);
  }
}

TEST(TrainableWaveNet, a_swapped_weight_order_is_seen) {
  // The mutation check of the two tests above: the first layer's conv bias and mix-in
  // exchanged (4 floats each here) is an order mistake far outside their bound.
  const NamFile file = testing::random_profile(small_config(Activation::tanh, false), 3);
  NamFile wrong = file;
  const auto conv_bias = wrong.weights.begin() + 4 /*rechannel*/ + 4 * 4 * 3 /*conv*/;
  std::swap_ranges(conv_bias, conv_bias + 4, conv_bias + 4);
  const auto [diff, peak] = graph_against_stream(wrong, file, testing::test_signal(3000));
  EXPECT_GT(diff, 1e-3 * peak);
}

TEST(TrainableWaveNet, weights_round_trip_and_fresh_ones_are_torchs_conv_init) {
  ExecContext ctx;
  const WaveNetConfig config = *wavenet_preset("standard");
  const NamFile file = testing::random_profile(config, 4);
  EXPECT_EQ(TrainableWaveNet::from_weights(ctx, config, file.weights).flat_weights(), file.weights);
  const TrainableWaveNet fresh = TrainableWaveNet::init(ctx, config, 0.02f, 9);
  const std::vector<float> w = fresh.flat_weights();
  ASSERT_EQ(int64_t(w.size()), weight_count(config));
  EXPECT_EQ(w.back(), 0.02f);
  // The first layer's conv has fan-in 16 channels x 3 taps: uniform in +-1/sqrt(48).
  const float bound = 1.0f / std::sqrt(48.0f);
  float largest = 0;
  for (int64_t i = 16; i < 16 + 16 * 16 * 3; ++i) largest = std::max(largest, std::abs(w[size_t(i)]));
  EXPECT_LE(largest, bound);
  EXPECT_GT(largest, 0.9f * bound);
  EXPECT_NE(TrainableWaveNet::init(ctx, config, 0.02f, 10).flat_weights(), w);
  EXPECT_EQ(int64_t(fresh.params().size()), 2 * (1 + 10 * 5 + 1) + 1);  // the last head has a bias
}

TEST(TrainableWaveNet, refuses_fast_tanh_by_name) {
  ExecContext ctx;
  try {
    TrainableWaveNet::init(ctx, small_config(Activation::fast_tanh, false), 0.02f, 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Fasttanh"), std::string::npos) << e.what();
  }
}

TEST(TrainableLstm, lstm_sequence_gradients_match_finite_differences) {
  ExecContext ctx;
  const int64_t B = 2, T = 5, in = 2, H = 3;
  auto values = [](const Dims& shape, uint64_t seed) {
    std::vector<double> v(size_t(shape.product()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.8 * (CounterRng::uniform(seed, i) - 0.5);
    return v;
  };
  std::vector<Array> inputs;
  uint64_t seed = 1;
  for (const Dims& shape : {Dims{B, T, in}, Dims{4 * H, in + H}, Dims{4 * H}, Dims{B, H}, Dims{B, H}})
    inputs.push_back(Array::from_values<double>(ctx, shape, values(shape, seed++)));
  const ag::GradcheckResult r = ag::gradcheck(
      ctx, [](ExecContext& c, const std::vector<Array>& a) { return lstm_sequence(c, a[0], a[1], a[2], a[3], a[4]); },
      inputs, {.tolerance = 1e-7, .differentiable = {}});
  EXPECT_TRUE(r.ok) << r.worst;
  EXPECT_EQ(r.checked, B * T * in + 4 * H * (in + H) + 4 * H + 2 * B * H);
}

TEST(TrainableLstm, computes_the_streaming_lstm_and_trains_with_the_same_values) {
  for (const char* size : {"standard", "lite"}) {
    SCOPED_TRACE(size);
    ExecContext ctx;
    const TrainableLstm fresh = TrainableLstm::init(ctx, *lstm_preset(size), 5);
    const NamFile file = fresh.profile(ctx);
    // A model from the profile's weights starts where the profile starts (the exported silence
    // state); it is fed the one sample of silence the streaming model prewarms with first.
    const TrainableLstm net =
        TrainableLstm::from_weights(ctx, *lstm_preset(size), file.weights, {.burn_in = 700, .truncate = 256});
    const std::vector<float> signal = testing::test_signal(2000);
    std::vector<float> padded = {0.0f};
    padded.insert(padded.end(), signal.begin(), signal.end());
    const Array x = Array::from_values<float>(ctx, {1, 1, int64_t(padded.size())}, padded);
    const Array inferred = net.forward(ctx, x, false), trained = net.forward(ctx, x, true);
    const std::vector<float> want = stream(file, signal);
    double diff = 0, peak = 0, moved = 0;
    for (size_t t = 0; t < signal.size(); ++t) {
      diff = std::max(diff, std::abs(double(inferred.data<float>()[t + 1]) - want[t]));
      peak = std::max(peak, std::abs(double(want[t])));
      moved = std::max(moved, std::abs(double(inferred.data<float>()[t + 1]) - trained.data<float>()[t + 1]));
    }
    EXPECT_LE(diff, 1e-5 * std::max(1.0, peak));
    EXPECT_GT(peak, 1e-2);
    EXPECT_EQ(moved, 0.0);  // burn-in and truncation change gradients, not values
  }
}

TEST(TrainableLstm, the_burn_in_trains_the_head_but_not_the_layers) {
  // NAM detaches the burn-in's features, not the head's output: a loss on the burn-in samples
  // alone reaches the head's weights and none of the layers'.
  ExecContext ctx;
  const TrainableLstm net = TrainableLstm::init(ctx, *lstm_preset("nano"), 4, {.burn_in = 500, .truncate = 100});
  const std::vector<float> signal = testing::test_signal(600);
  const Array y = net.forward(ctx, Array::from_values<float>(ctx, {1, 1, 600}, signal), true);
  ag::backward(ctx, sum_all(ctx, y.slice(2, 0, 500)));
  for (const optim::Param& p : net.params()) {
    SCOPED_TRACE(p.name);
    const Array g = p.value.grad();
    double largest = 0;
    for (int64_t i = 0; g.defined() && i < g.numel(); ++i)
      largest = std::max(largest, std::abs(double(g.data<float>()[i])));
    if (p.name.starts_with("head"))
      EXPECT_GT(largest, 0.0);
    else
      EXPECT_EQ(largest, 0.0);
  }
}

TEST(TrainableLstm, trains_on_the_toy_amp) {
  const std::vector<float> x = testing::test_signal(48000, 3);
  const TrainingPair pair = prepare_pair(testing::as_audio(x), testing::toy_amp(x, 2), {.validation_seconds = 0.25});
  ExecContext ctx;
  AmpTrainOptions options = defaults_for("LSTM");
  options.ny = 2048, options.batch_size = 4;
  AmpTrainer trainer(ctx,
                     std::make_unique<TrainableLstm>(
                         TrainableLstm::init(ctx, *lstm_preset("nano"), 2, {.burn_in = 512, .truncate = 256})),
                     pair, options);
  EXPECT_EQ(trainer.model().receptive_field(), 1);
  const EpochResult first = trainer.run_epoch();
  EpochResult last;
  for (int e = 0; e < 15; ++e) last = trainer.run_epoch();
  // An LSTM learns this slowly (64 steps here): its validation ESR falls from ~1.06 to ~0.63.
  EXPECT_LT(last.loss, 0.9 * first.loss);
  EXPECT_LT(last.validation_esr, 0.75 * first.validation_esr);
}

TEST(AmpPair, the_latency_of_a_known_delay_is_found) {
  const std::vector<float> x = testing::test_signal(96000);
  for (int64_t delay : {0, 1, 17, 300, 2000}) {
    SCOPED_TRACE(delay);
    const LatencyEstimate e = estimate_latency(x, testing::toy_amp(x, delay).samples, 4800);
    EXPECT_EQ(e.onset, delay);
    EXPECT_GT(e.strength, 0.1);
    const TrainingPair pair =
        prepare_pair(testing::as_audio(x), testing::toy_amp(x, delay), {.validation_seconds = 0.5});
    EXPECT_EQ(pair.latency, std::max<int64_t>(0, delay - 1));  // NAM's safety sample
    ASSERT_EQ(pair.train_input.size() + pair.validation_input.size(), x.size() - size_t(pair.latency));
    EXPECT_EQ(pair.validation_input.size(), 24000u);
    EXPECT_EQ(pair.train_target[100], testing::toy_amp(x, delay).samples[100 + size_t(pair.latency)]);
  }
  // A given latency is taken as it is.
  EXPECT_EQ(
      prepare_pair(testing::as_audio(x), testing::toy_amp(x, 17), {.validation_seconds = 0.5, .latency = 5}).latency,
      5);
}

void expect_refused(const AudioData& x, const AudioData& y, const PairOptions& options, const std::string& words) {
  try {
    prepare_pair(x, y, options);
    ADD_FAILURE() << "no error; expected one naming '" << words << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(AmpPair, bad_pairs_are_refused_by_name) {
  const std::vector<float> x = testing::test_signal(48000);
  const AudioData in = testing::as_audio(x), out = testing::toy_amp(x, 3);
  AudioData other_rate = out;
  other_rate.sample_rate = 44100;
  expect_refused(in, other_rate, {}, "44100 Hz");
  AudioData clipped = out;
  clipped.samples[1234] = 1.0f;
  expect_refused(in, clipped, {}, "clips at sample 1234");
  AudioData long_take = out;
  long_take.samples.resize(x.size() + 60000, 0.1f);
  expect_refused(in, long_take, {}, "longer than the input");
  expect_refused(in, out, {.validation_seconds = 2.0}, "validation split");
  AudioData noise = out;
  for (size_t t = 0; t < noise.samples.size(); ++t) noise.samples[t] = 0.5f * (CounterRng::uniform(99, t) - 0.5f);
  expect_refused(in, noise, {.validation_seconds = 0.2}, "does not follow the input");
  AudioData nan = out;
  nan.samples[7] = NAN;
  expect_refused(in, nan, {}, "sample 7 of the target");
  expect_refused(in, out, {.input_channel = 1}, "channel 1 does not exist");
  expect_refused(in, out, {.validation_seconds = 0.05}, "too short to judge");
  AudioData quiet_end = out;
  std::fill(quiet_end.samples.end() - 12000, quiet_end.samples.end(), 0.0f);
  expect_refused(in, quiet_end, {.validation_seconds = 0.2}, "validation split (the target's last 0.2 s) is silent");
}

TrainingPair toy_pair(int64_t seconds_x10) {
  const std::vector<float> x = testing::test_signal(4800 * seconds_x10, 3);
  return prepare_pair(testing::as_audio(x), testing::toy_amp(x, 5), {.validation_seconds = 0.25});
}

std::vector<float> train(int threads, int epochs, std::vector<EpochResult>* results = nullptr) {
  ExecContext ctx(ExecOptions{.threads = threads});
  AmpTrainer trainer(ctx, make_trainable_amp(ctx, "nano", 3), toy_pair(20),
                     {.ny = 1024, .batch_size = 4, .lr = 0.01, .seed = 3});
  for (int e = 0; e < epochs; ++e) {
    const EpochResult r = trainer.run_epoch();
    if (results) results->push_back(r);
  }
  return trainer.profile().weights;
}

TEST(AmpTrainer, the_loss_falls_and_a_run_depends_on_its_seed_alone) {
  std::vector<EpochResult> results;
  const std::vector<float> one_thread = train(1, 6, &results);
  ASSERT_EQ(results.size(), 6u);
  // 96000 samples less the latency (4) and validation (12000): (83996 - 4092) / 1024 = 78 items,
  // 19 whole batches of 4.
  EXPECT_EQ(results[0].steps, 19);
  EXPECT_LT(results.back().loss, 0.5 * results.front().loss);
  EXPECT_LT(results.back().validation_esr, results.front().validation_esr);
  EXPECT_NEAR(results[1].lr, 0.01 * (1 - 0.007), 1e-12);
  EXPECT_EQ(train(2, 6), one_thread);  // the same bits for any thread count
}

TEST(AmpTrainer, refuses_data_too_short_for_one_item) {
  ExecContext ctx;
  try {
    AmpTrainer(ctx, make_trainable_amp(ctx, "standard", 0), toy_pair(5), {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one item needs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tempra::audio
