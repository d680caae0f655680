// tests/audio/nam_file_test.cpp: the `.nam` reader, writer and their errors.
#include "tempra/audio/nam_file.h"

#include <gtest/gtest.h>

#include <fstream>

#include "audio/amp_fixtures.h"
#include "support/files.h"
#include "tempra/audio/amp_model.h"
#include "tempra/core/error.h"

namespace tempra::audio {
namespace {

namespace fs = std::filesystem;

// The message parse_nam throws for `text` (empty if it parses).
std::string error_of(const std::string& text) {
  try {
    parse_nam(text, "bad.nam");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A small valid WaveNet profile's text with `from` replaced by `to` (must occur).
std::string edited(const std::string& from, const std::string& to) {
  WaveNetConfig c = *wavenet_preset("nano");
  c.layer_arrays[1].dilations = {1, 2};
  std::string text = format_nam(testing::random_profile(c, 1));
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(NamFile, the_stock_presets_take_nams_weight_counts) {
  // NeuralAmpModelerCore's example_models/wavenet_a1_standard.nam (a standard WaveNet) holds
  // 13802 weights; the other counts follow from the same formula, cross-checked by the oracle.
  EXPECT_EQ(weight_count(*wavenet_preset("standard")), 13802);
  // An LSTM of H units over one input: 4H(1 + H) + 4H + 2H per layer, then H + 1.
  EXPECT_EQ(weight_count(*lstm_preset("nano")), 4 * 12 * 13 + 4 * 12 + 2 * 12 + 12 + 1);
  EXPECT_FALSE(wavenet_preset("huge").has_value());
  EXPECT_FALSE(lstm_preset("").has_value());
}

TEST(NamFile, a_written_profile_reads_back_bit_for_bit) {
  for (const auto& [name, file] : testing::profile_zoo()) {
    SCOPED_TRACE(name);
    NamFile f = file;
    f.metadata.loudness = -18.25;
    f.metadata.json = R"({"name": "test", "gear_type": "amp"})";
    const NamFile back = parse_nam(format_nam(f));
    ASSERT_EQ(back.weights.size(), f.weights.size());
    EXPECT_EQ(std::memcmp(back.weights.data(), f.weights.data(), f.weights.size() * 4), 0);
    EXPECT_STREQ(back.architecture(), f.architecture());
    EXPECT_EQ(back.sample_rate, f.sample_rate);
    EXPECT_EQ(back.metadata.loudness, -18.25);
    EXPECT_NE(back.metadata.json.find("\"gear_type\":\"amp\""), std::string::npos);
    EXPECT_EQ(format_nam(back), format_nam(f));
  }
}

TEST(NamFile, write_nam_replaces_a_file_atomically_and_read_nam_reads_it) {
  const fs::path path = tempra::testing::scratch_dir("nam-file") / "p.nam";
  const NamFile f = testing::random_profile(*lstm_preset("lite"), 2);
  write_nam(path, f);
  write_nam(path, f);  // over an existing file
  EXPECT_EQ(read_nam(path).weights, f.weights);
  for (const auto& entry : fs::directory_iterator(path.parent_path()))
    EXPECT_EQ(entry.path().filename(), "p.nam") << "a temporary file was left behind";
  EXPECT_THROW(read_nam(path.parent_path() / "missing.nam"), Error);
}

TEST(NamFile, every_malformation_is_an_error_naming_its_field) {
  // 200 layers of dilation 65536: a few hundred bytes asking for a 26M-sample receptive field.
  std::string many_long_dilations = "65536";
  for (int i = 1; i < 200; ++i) many_long_dilations += ",65536";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"{\"version\": ", "not valid JSON"},
      {"[1, 2]", "expected a JSON object"},
      {edited(R"("version":"0.5.4")", R"("version":"0.7.0")"), "version: '0.7.0' is not supported"},
      {edited(R"("version":"0.5.4")", R"("version":5)"), "version: expected a string"},
      {edited(R"("architecture":"WaveNet")", R"("architecture":"ConvNet")"),
       "architecture: 'ConvNet' is not supported"},
      {edited(R"("channels":4)", R"("channels":0)"),
       "config.layers[0].channels: expected an integer in 1 ... 1024, got 0"},
      {edited(R"("channels":4)", R"("channels":"4")"), "config.layers[0].channels: expected an integer"},
      {edited(R"("dilations":[1,2])", R"("dilations":[1,-2])"), "config.layers[1].dilations[1]: expected an integer"},
      {edited(R"("dilations":[1,2])", R"("dilations":[])"), "config.layers[1].dilations: expected a list"},
      {edited(R"("activation":"Tanh")", R"("activation":"Swish9")"),
       "config.layers[0].activation: unknown activation 'Swish9'"},
      {edited(R"("gated":false)", R"("gated":0)"), "config.layers[0].gated: expected true or false"},
      {edited(R"("head_bias":false})", R"("head_bias":false,"gating_mode":"gated"})"),
       "config.layers[0].gating_mode: not supported"},
      {edited(R"("head":null)", R"("head":{"channels":2})"), "config.head: a post-stack head is not supported"},
      {edited(R"("input_size":4)", R"("input_size":3)"),
       "config.layers[1].input_size: 3 differs from the channels of layer array 0"},
      {edited(R"("kernel_size":3,"dilations":[1,2,4)", R"("kernel_size":300,"dilations":[1,2,4)"),
       "config.layers[0].kernel_size: expected an integer in 1 ... 64"},
      {edited(R"("weights":[)", R"("weights":[0.5,)"), "weights: the WaveNet config takes"},
      {edited(R"("weights":[)", R"("weights":["x",)"), "weights[0]: expected a number, got \"x\""},
      {edited(R"("sample_rate":48000.0)", R"("sample_rate":-1)"), "sample_rate: expected a rate"},
      {edited(R"("metadata":{})", R"("metadata":[1])"), "metadata: expected an object"},
      {edited(R"("metadata":{})", R"("metadata":{"loudness":"loud"})"), "metadata.loudness: expected a number"},
      {edited(R"("dilations":[1,2])", "\"dilations\":[" + many_long_dilations + "]"),
       "config.layers: a receptive field of 26214655 samples"},
      {R"({"version":"0.5.4","architecture":"LSTM","config":{"num_layers":1,"input_size":1},"weights":[]})",
       "config.hidden_size: missing"},
      {R"({"version":"0.5.4","architecture":"LSTM","config":{"num_layers":1,"input_size":1,"hidden_size":1},"weights":[1]})",
       "weights: the LSTM config takes 16 weights, the file has 1"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string message = error_of(text);
    EXPECT_NE(message.find("bad.nam"), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << "expected '" << expected << "' in: " << message;
  }
}

TEST(NamFile, hostile_json_is_an_error_not_a_crash) {
  // Nesting that would overflow the stack when printed, a number beyond double's range, a key
  // of a later core that changes what a file plays.
  std::string deep =
      edited(R"("metadata":{})", R"("metadata":{"x":)" + std::string(100000, '[') + std::string(100000, ']') + "}");
  EXPECT_NE(error_of(deep).find("nested deeper than 64"), std::string::npos) << error_of(deep).substr(0, 200);
  EXPECT_NE(error_of(edited(R"("sample_rate":48000.0)", R"("sample_rate":1e999)")).find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of(edited(R"("head":null)", R"("head":null,"condition_dsp":{})"))
                .find("config.condition_dsp: not supported"),
            std::string::npos);
  EXPECT_EQ(error_of(edited(R"("head":null)", R"("head":null,"in_channels":1,"out_channels":1)")), "");
  EXPECT_NE(error_of(edited(R"("metadata":{})", R"("metadata":{"loudness":1e300})"))
                .find("metadata.loudness: expected a level"),
            std::string::npos);
}

TEST(NamFile, histories_past_a_gibibyte_are_refused) {
  // 1024 channels over 256 layers: no dilation is long, but each layer keeps two maximum blocks.
  NamFile f;
  WaveNetConfig w;
  w.layer_arrays.push_back({.input_size = 1,
                            .condition_size = 1,
                            .head_size = 1,
                            .channels = 1024,
                            .kernel_size = 3,
                            .dilations = std::vector<int>(256, 1)});
  f.config = w;
  try {
    validate(f, "wide.nam");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wide.nam: config.layers: the layers' histories would take 8194 MiB"),
              std::string::npos)
        << e.what();
  }
}

TEST(NamFile, a_profile_built_by_hand_is_checked_before_a_model_is_built) {
  NamFile f = testing::random_profile(*wavenet_preset("nano"), 1);
  std::get<WaveNetConfig>(f.config).layer_arrays[1].channels = 3;  // no longer the previous head size
  EXPECT_THROW(make_amp_model(f), Error);
  NamFile l = testing::random_profile(*lstm_preset("nano"), 1);
  std::get<LstmConfig>(l.config).input_size = 2;  // would read past the one input sample
  EXPECT_THROW(make_amp_model(l), Error);
  l = testing::random_profile(*lstm_preset("nano"), 1);
  l.weights.pop_back();
  EXPECT_THROW(make_amp_model(l), Error);
}

TEST(NamFile, resets_that_would_take_too_long_are_refused) {
  // A 1000-unit LSTM at 1 MHz: half a second of prewarm is 5e5 steps of 4e6 multiply-adds.
  const LstmConfig big{.num_layers = 1, .input_size = 1, .hidden_size = 1000};
  NamFile f = testing::random_profile(big, 1);
  f.sample_rate = 1e6;
  try {
    validate(f, "big.nam");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("big.nam: config: prewarming would take"), std::string::npos) << e.what();
  }
  // Without a rate NAM prewarms an LSTM by one sample (its expected rate is unknown).
  f = testing::random_profile(*lstm_preset("nano"), 1);
  f.sample_rate.reset();
  EXPECT_EQ(make_amp_model(f)->prewarm_samples(), 1);
  f.sample_rate = 44100.0;
  EXPECT_EQ(make_amp_model(f)->prewarm_samples(), 22050);
}

TEST(NamFile, a_weight_that_is_not_a_number_is_named) {
  std::string text = edited(R"("weights":[)", R"("weights":["x",)");
  // Drop one real weight so the count matches and the type check is what fails.
  const size_t comma = text.find(',', text.find("\"x\",") + 4);
  text.erase(text.find("\"x\",") + 4, comma - (text.find("\"x\",") + 4) + 1);
  EXPECT_NE(error_of(text).find("weights[0]: expected a number, got \"x\""), std::string::npos) << error_of(text);
}

TEST(NamFile, every_truncation_of_a_file_is_an_error_never_a_crash) {
  const std::string text = format_nam(testing::random_profile(*lstm_preset("nano"), 4));
  for (size_t n = 0; n + 1 < text.size(); n += 7) EXPECT_FALSE(error_of(text.substr(0, n)).empty()) << n;
}

}  // namespace
}  // namespace tempra::audio
