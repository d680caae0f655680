// tests/audio/amp_train_cli_test.cpp: `tempra amp train` end to end.
//
// - A short run writes a profile that tempra and NAM's core load, the PNG, and a log whose best
//   validation ESR is the one the profile's metadata records; bad pairs and options are non-zero
//   exits naming what was wrong, with nothing written.
// - Heavy (release only): the goal. scripts/amp/virtual_amp.py makes 30 s of test signal
//   and its virtual amp's output (delayed by 17 samples); the standard WaveNet trained on them
//   with NAM's recipe reaches a validation ESR of at most 0.01, the latency is found, and the
//   profile agrees with NAM's WebAssembly core within 1e-5 on the validation audio.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "audio/amp_fixtures.h"
#include "support/command.h"
#include "support/files.h"
#include "tempra/audio/amp_model.h"
#include "tempra/audio/wav.h"

namespace tempra::audio {
namespace {

namespace fs = std::filesystem;
using tempra::testing::CommandRun;
using tempra::testing::quoted;

CommandRun tempra_amp_train(const fs::path& dir, const std::string& arguments) {
  return tempra::testing::run_command(std::string("'") + TEMPRA_BINARY + "' amp train " + arguments, dir / "log.txt");
}

// The rows of the --log CSV after its header: each row's fields.
std::vector<std::vector<double>> read_log(const fs::path& path) {
  std::istringstream text(tempra::testing::read_text(path));
  std::string line;
  std::getline(text, line);
  EXPECT_EQ(line, "epoch,steps,lr,loss,train_esr,validation_esr,seconds,validation_seconds");
  std::vector<std::vector<double>> rows;
  while (std::getline(text, line)) {
    std::vector<double> row;
    std::istringstream fields(line);
    for (std::string field; std::getline(fields, field, ',');) row.push_back(std::stod(field));
    rows.push_back(row);
  }
  return rows;
}

bool is_png(const fs::path& path) {
  const std::string bytes = tempra::testing::read_text(path);
  return bytes.size() > 1000 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0;
}

double best_validation_esr(const std::vector<std::vector<double>>& rows) {
  double best = INFINITY;
  for (const auto& row : rows) best = std::min(best, row.at(5));
  return best;
}

class AmpTrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tempra::testing::scratch_dir("amp-train-cli");
    x_ = testing::test_signal(72000, 5);
    write_wav(dir_ / "di.wav", x_, 48000);
    write_wav(dir_ / "amp.wav", testing::toy_amp(x_, 9).samples, 48000);
    pair_ = "--input " + quoted(dir_ / "di.wav") + " --target " + quoted(dir_ / "amp.wav");
  }
  fs::path dir_;
  std::vector<float> x_;
  std::string pair_;
};

TEST_F(AmpTrainCli, a_short_run_writes_the_profile_its_picture_and_its_log) {
  const CommandRun run = tempra_amp_train(dir_, pair_ + " --arch nano --epochs 3 --ny 2048 --batch-size 4 " +
                                                    "--validation-seconds 0.25 --name toy -o " +
                                                    quoted(dir_ / "toy.nam") + " --log " + quoted(dir_ / "toy.csv"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("latency 8 samples (estimated: onset 9"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("epoch    3/3"), std::string::npos) << run.output;
  const auto rows = read_log(dir_ / "toy.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(is_png(dir_ / "toy.png"));
  const NamFile file = read_nam(dir_ / "toy.nam");
  EXPECT_EQ(file.sample_rate, 48000.0);
  EXPECT_EQ(std::get<WaveNetConfig>(file.config).layer_arrays.at(0).channels, 4);  // nano
  const auto metadata = nlohmann::json::parse(file.metadata.json);
  EXPECT_EQ(metadata["name"], "toy");
  EXPECT_EQ(metadata["training"]["data"]["latency"]["calibration"]["recommended"], 8);
  // The profile holds the best epoch's weights: its validation ESR, recomputed here through the
  // streaming model, is the log's best.
  const double logged = metadata["training"]["validation_esr"];
  EXPECT_NEAR(logged, best_validation_esr(rows), 1e-8 * logged);  // the log prints 9 digits
  const std::vector<float> target = testing::toy_amp(x_, 9).samples;
  const size_t validation = 12000, start = x_.size() - 8 - validation;
  const auto model = make_amp_model(file, {.fast_tanh = false});
  std::vector<float> in(x_.begin() + ptrdiff_t(start), x_.end() - 8), out(validation);
  model->process(in.data(), out.data(), int64_t(validation));
  double error = 0, energy = 0;
  for (size_t t = 0; t < validation; ++t) {
    const double y = target[start + 8 + t];
    error += (out[t] - y) * (out[t] - y), energy += y * y;
  }
  EXPECT_NEAR(error / energy, logged, 1e-9 + 1e-6 * logged);
}

TEST_F(AmpTrainCli, bad_pairs_and_options_exit_non_zero_naming_the_problem_and_write_nothing) {
  std::vector<float> loud = testing::toy_amp(x_, 9).samples;
  loud[5000] = 1.5f;
  write_wav(dir_ / "clipped.wav", loud, 48000);
  const std::string out = " -o " + quoted(dir_ / "bad.nam");
  struct Case {
    std::string arguments;
    int exit_code;
    std::string words;
  };
  const std::vector<Case> cases = {
      {pair_ + " --arch huge" + out, 2, "--arch must be standard, lite, feather, nano (WaveNets) or lstm"},
      {pair_ + " --epochs 0" + out, 2, "--epochs must be in"},
      {pair_ + " --lr -1" + out, 2, "--lr must be in"},
      {pair_ + " -o " + quoted(dir_ / "di.wav"), 2, "would overwrite audio"},
      {pair_ + " -o " + quoted(dir_ / "no-such-folder" / "x.nam"), 2, "does not exist or is not writable"},
      {pair_ + out + " --plot " + quoted(dir_ / "amp.wav"), 2, "would overwrite an input recording"},
      {pair_ + " -o " + quoted(dir_ / "bad.png"), 2, "--plot and --output name the same file"},
      {pair_ + out + " --log " + quoted(dir_ / "bad.nam"), 2, "--log and --output name the same file"},
      {pair_ + out + " --batch-size 4096 --ny 65536", 2, "at most 16777216 samples a step"},
      {"--input " + quoted(dir_ / "di.wav") + " --target " + quoted(dir_ / "clipped.wav") + out, 1,
       "clips at sample 5000"},
      {"--input " + quoted(dir_ / "none.wav") + " --target " + quoted(dir_ / "amp.wav") + out, 1, "none.wav"},
      {pair_ + " --validation-seconds 10" + out, 1, "does not fit"},
      // 1.25 s cannot fill one item of 65536 outputs and the receptive field.
      {pair_ + " --validation-seconds 0.25 --ny 65536" + out, 1, "one item needs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.arguments);
    const CommandRun run = tempra_amp_train(dir_, c.arguments);
    EXPECT_EQ(run.exit_code, c.exit_code) << run.output;
    EXPECT_NE(run.output.find(c.words), std::string::npos) << run.output;
    EXPECT_FALSE(fs::exists(dir_ / "bad.nam"));
    EXPECT_FALSE(fs::exists(dir_ / "bad.png"));
    EXPECT_FALSE(fs::exists(dir_ / "no-such-folder"));
  }
  EXPECT_EQ(read_audio(dir_ / "di.wav").samples.size(), x_.size());  // -o di.wav left it alone
}

TEST(AmpTrainHeavy, the_standard_wavenet_reaches_esr_0_01_on_the_virtual_amp) {
  const fs::path dir = tempra::testing::scratch_dir("amp-train-heavy");
  const CommandRun made =
      tempra::testing::run_command(std::string("/usr/bin/python3 '") + TEMPRA_SOURCE_DIR +
                                       "/scripts/amp/virtual_amp.py' " + quoted(dir) + " --seconds 30",
                                   dir / "script.txt");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const CommandRun run = tempra_amp_train(dir, "--input " + quoted(dir / "di.wav") + " --target " +
                                                   quoted(dir / "amp.wav") + " --epochs 80 -o " +
                                                   quoted(dir / "standard.nam") + " --log " + quoted(dir / "log.csv"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::printf("%s", run.output.c_str());
  EXPECT_NE(run.output.find("latency 17 samples"), std::string::npos);  // the script's delay
  const double best = best_validation_esr(read_log(dir / "log.csv"));
  EXPECT_LE(best, 0.01);
  EXPECT_TRUE(is_png(dir / "standard.png"));

  // The trained profile in NAM's core: the validation audio (the last 9 s of the input), in
  // blocks of 64, within 1e-5 of tempra's output (both with NAM's fast tanh, as players run).
  const AudioData di = read_audio(dir / "di.wav");
  const std::vector<float> validation(di.samples.end() - 9 * 48000, di.samples.end());
  const std::vector<float> theirs = testing::nam_core_outputs(dir, {dir / "standard.nam"}, validation)[0];
  ASSERT_EQ(theirs.size(), validation.size());
  std::vector<float> ours(validation.size());
  make_amp_model(read_nam(dir / "standard.nam"))->process(validation.data(), ours.data(), int64_t(ours.size()));
  double diff = 0, peak = 0;
  for (size_t t = 0; t < ours.size(); ++t)
    diff = std::max(diff, std::abs(double(ours[t]) - theirs[t])), peak = std::max(peak, std::abs(double(theirs[t])));
  std::printf("validation ESR %.5f; trained profile against NAM's core: max |diff| %.3g, peak %.3f\n", best, diff,
              peak);
  EXPECT_LE(diff, 1e-5);
  EXPECT_GT(peak, 0.1);
}

}  // namespace
}  // namespace tempra::audio
