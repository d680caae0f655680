// tests/audio/amp_cli_test.cpp: `tempra amp` end to end.
//
// The executable's output WAV must hold exactly what the library computes for the same profile,
// gains and input (bit for bit, whatever --block), read from a 16-bit PCM WAV written here by
// hand (so the reader is checked against a file tempra did not write); and every bad input is
// a non-zero exit naming what was wrong, with no output file left behind.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
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

CommandRun tempra_amp(const std::string& arguments) {
  const fs::path log = tempra::testing::scratch_dir("amp-cli") / "log.txt";
  return tempra::testing::run_command(std::string("'") + TEMPRA_BINARY + "' amp " + arguments, log);
}

// A mono 16-bit PCM WAV, header by hand (RIFF/WAVE, fmt PCM, data).
void write_pcm16(const fs::path& path, const std::vector<float>& x, int rate) {
  std::ofstream out(path, std::ios::binary);
  auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  const uint32_t data = uint32_t(x.size() * 2);
  out.write("RIFF", 4), u32(36 + data), out.write("WAVEfmt ", 8), u32(16), u16(1), u16(1), u32(uint32_t(rate)),
      u32(uint32_t(rate) * 2), u16(2), u16(16), out.write("data", 4), u32(data);
  for (const float v : x) u16(uint16_t(int16_t(std::lround(std::clamp(v, -1.0f, 1.0f) * 32767.0f))));
}

class AmpCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tempra::testing::scratch_dir("amp-cli");
    profile_ = testing::random_profile(*wavenet_preset("feather"), 21);
    profile_.metadata.loudness = -24.0;
    write_nam(dir_ / "feather.nam", profile_);
    signal_ = testing::test_signal(9600);
    write_pcm16(dir_ / "di.wav", signal_, 48000);
  }
  fs::path dir_;
  NamFile profile_;
  std::vector<float> signal_;
};

TEST_F(AmpCli, the_output_file_holds_what_the_library_computes_whatever_the_block) {
  // What tempra amp should compute: the PCM input as libsndfile scales it (v / 32768), +6 dB in,
  // the model, -3 dB and the loudness normalization (-18 - -24 = +6 dB) out.
  const AudioData input = read_audio(dir_ / "di.wav");
  ASSERT_EQ(input.frames(), int64_t(signal_.size()));
  std::vector<float> expected = input.channel(0);
  for (float& v : expected) v = float(v * std::pow(10.0, 6.0 / 20.0));
  make_amp_model(profile_)->process(expected.data(), expected.data(), int64_t(expected.size()));
  for (float& v : expected) v = float(v * (std::pow(10.0, -3.0 / 20.0) * std::pow(10.0, 6.0 / 20.0)));
  for (const char* block : {"64", "7", "4096"}) {
    SCOPED_TRACE(block);
    const fs::path out = dir_ / (std::string("out-") + block + ".wav");
    const CommandRun run = tempra_amp("-m " + quoted(dir_ / "feather.nam") + " " + quoted(dir_ / "di.wav") + " " +
                                      quoted(out) + " --input-gain 6 --output-gain -3 --normalize --block " + block);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("profile: WaveNet 0.5.4, 48000 Hz, loudness -24.0 dB"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("real time"), std::string::npos) << run.output;
    const AudioData written = read_audio(out);
    EXPECT_EQ(written.sample_rate, 48000);
    ASSERT_EQ(written.samples.size(), expected.size());
    EXPECT_EQ(std::memcmp(written.samples.data(), expected.data(), expected.size() * 4), 0);
  }
}

TEST_F(AmpCli, bad_inputs_exit_non_zero_naming_what_was_wrong_and_write_nothing) {
  const std::string nam = quoted(dir_ / "feather.nam"), wav = quoted(dir_ / "di.wav");
  const fs::path out = dir_ / "never.wav";
  const std::string to = std::string(" ").append(quoted(out));
  {
    std::ofstream(dir_ / "broken.nam") << R"({"version":"0.5.4","architecture":"WaveNet","config":{"layers":[]}})";
    const CommandRun run = tempra_amp("-m " + quoted(dir_ / "broken.nam") + " " + wav + to);
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_NE(run.output.find("broken.nam: config.layers: expected a list of 1 ... 16 layer arrays"), std::string::npos)
        << run.output;
  }
  {
    const auto bytes = tempra::testing::read_file(dir_ / "di.wav");
    std::ofstream(dir_ / "cut.wav", std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), 30);
    const CommandRun run = tempra_amp("-m " + nam + " " + quoted(dir_ / "cut.wav") + to);
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_NE(run.output.find("cut.wav: cannot read audio"), std::string::npos) << run.output;
  }
  {
    write_pcm16(dir_ / "di44.wav", signal_, 44100);
    const CommandRun run = tempra_amp("-m " + nam + " " + quoted(dir_ / "di44.wav") + to);
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_NE(run.output.find("is at 44100 Hz but the profile expects 48000 Hz"), std::string::npos) << run.output;
  }
  {
    const CommandRun run = tempra_amp("-m " + nam + " " + wav + to + " --block 0");
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_NE(run.output.find("--block must be in 1 ... 4096"), std::string::npos) << run.output;
  }
  {
    const CommandRun run = tempra_amp(wav + to);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_NE(run.output.find("--model"), std::string::npos) << run.output;
  }
  {
    const CommandRun run = tempra_amp("-m " + nam + " " + wav + " " + quoted(dir_ / "no-such-dir" / "x.wav"));
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_NE(run.output.find("no-such-dir"), std::string::npos) << run.output;
  }
  EXPECT_FALSE(fs::exists(out));
  for (const auto& entry : fs::directory_iterator(dir_))  // no temporary file left behind either
    EXPECT_EQ(entry.path().filename().string().find("never"), std::string::npos) << entry.path();
}

}  // namespace
}  // namespace tempra::audio
