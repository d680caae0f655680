// apps/tempra/amp.cpp
#include "amp.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "amp_live.h"
#include "tempra/audio/amp_model.h"
#include "tempra/audio/wav.h"
#include "tempra/core/error.h"

namespace tempra::app {
namespace {

// NAM's plugin normalizes a profile's output to this loudness (dB) when asked to.
constexpr double kTargetLoudness = -18.0;

double db_to_gain(double db) {
  return std::pow(10.0, db / 20.0);
}

double finite_db(const cli::Args& args, const char* option) {
  const double db = args.number(option);
  if (db < -120.0 || db > 60.0) throw cli::UsageError(std::string(option) + " must be in -120 ... 60 dB");
  return db;
}

}  // namespace

cli::Command amp_command() {
  return {
      .name = "amp",
      .summary = "Run a guitar recording through a Neural Amp Modeler profile (.nam).",
      .options = {{.spellings = {"-m", "--model"},
                   .kind = cli::Kind::String,
                   .help = "the .nam profile",
                   .required = true,
                   .metavar = "FILE"},
                  {.spellings = {"--input-gain"},
                   .kind = cli::Kind::Float,
                   .help = "gain before the model, dB",
                   .default_value = "0",
                   .metavar = "DB"},
                  {.spellings = {"--output-gain"},
                   .kind = cli::Kind::Float,
                   .help = "gain after the model, dB",
                   .default_value = "0",
                   .metavar = "DB"},
                  {.spellings = {"--normalize"},
                   .kind = cli::Kind::Flag,
                   .help = "bring the profile's loudness (metadata) to -18 dB, as NAM's plugin does"},
                  {.spellings = {"--block"},
                   .kind = cli::Kind::Int,
                   .help = "samples per model call, 1 ... 4096 (the result does not depend on it)",
                   .default_value = "64"},
                  {.spellings = {"--channel"},
                   .kind = cli::Kind::Int,
                   .help = "the input channel to use, from 0",
                   .default_value = "0"},
                  {.spellings = {"--exact-tanh"},
                   .kind = cli::Kind::Flag,
                   .help = "tanhf instead of NAM's fast tanh (the plugin's default)"},
                  {.spellings = {"--live"},
                   .kind = cli::Kind::Flag,
                   .help = "play live through a running JACK server instead of files (amp_live.h)"},
                  {.spellings = {"--seconds"},
                   .kind = cli::Kind::Float,
                   .help = "with --live: stop after this long (0: at Ctrl-C)",
                   .default_value = "0"},
                  {.spellings = {"--input-port"},
                   .kind = cli::Kind::String,
                   .help = "with --live: the JACK port to play (default: the first capture port)",
                   .metavar = "PORT"},
                  {.spellings = {"--output-port"},
                   .kind = cli::Kind::String,
                   .help = "with --live: the JACK port to feed (default: the first two playback ports)",
                   .metavar = "PORT"},
                  {.spellings = {"--no-connect"},
                   .kind = cli::Kind::Flag,
                   .help = "with --live: connect no ports (connect them yourself)"}},
      .positionals = {
          {.name = "input", .help = "the dry (DI) recording: WAV, FLAC, AIFF, ...", .required = false},
          {.name = "output", .help = "the mono 32-bit float WAV to write (via a temporary file)", .required = false}}};
}

int run_amp(const cli::Args& args) {
  const int64_t block = args.integer("--block");
  if (block < 1 || block > audio::AmpModel::kMaxBlock) throw cli::UsageError("--block must be in 1 ... 4096");
  const double input_gain = db_to_gain(finite_db(args, "--input-gain"));
  double output_gain = db_to_gain(finite_db(args, "--output-gain"));
  const audio::NamFile profile = audio::read_nam(args.string("--model"));
  if (args.flag("--live")) {
    if (args.has("input")) throw cli::UsageError("--live plays through JACK: give no input or output file");
    const double seconds = args.number("--seconds");
    if (!(seconds >= 0 && seconds <= 1e7)) throw cli::UsageError("--seconds must be at least 0");
    LiveOptions live{.seconds = seconds,
                     .input_gain = input_gain,
                     .output_gain = output_gain,
                     .input_port = args.has("--input-port") ? args.string("--input-port") : "",
                     .output_port = args.has("--output-port") ? args.string("--output-port") : "",
                     .connect = !args.flag("--no-connect"),
                     .profile_rate = profile.sample_rate};
    if (args.flag("--normalize") && profile.metadata.loudness)
      live.output_gain *= db_to_gain(kTargetLoudness - *profile.metadata.loudness);
    const auto model = audio::make_amp_model(profile, {.fast_tanh = !args.flag("--exact-tanh")});
    return run_live(*model, live);
  }
  if (!args.has("input") || !args.has("output")) throw cli::UsageError("give the input and output files, or --live");
  const audio::AudioData input = audio::read_audio(args.positional("input"));
  const int64_t channel = args.integer("--channel");
  if (channel < 0 || channel >= input.channels)
    throw cli::UsageError("--channel " + std::to_string(channel) + ": the input has " + std::to_string(input.channels) +
                          " channel(s)");
  const double rate = profile.sample_rate.value_or(48000.0);
  check(std::abs(rate - input.sample_rate) < 0.5, "amp", args.positional("input"), " is at ", input.sample_rate,
        " Hz but the profile expects ", rate, " Hz: resample the input first");

  std::printf("profile: %s %s, %.0f Hz", profile.architecture(), profile.version.c_str(), rate);
  if (profile.metadata.loudness) std::printf(", loudness %.1f dB", *profile.metadata.loudness);
  std::printf("\n");
  if (args.flag("--normalize")) {
    if (profile.metadata.loudness)
      output_gain *= db_to_gain(kTargetLoudness - *profile.metadata.loudness);
    else
      std::printf("note: the profile records no loudness; --normalize changes nothing\n");
  }

  std::vector<float> signal = input.channel(int(channel));
  for (float& x : signal) x = float(x * input_gain);
  const auto model = audio::make_amp_model(profile, {.fast_tanh = !args.flag("--exact-tanh")});
  const auto start = std::chrono::steady_clock::now();
  for (size_t at = 0; at < signal.size(); at += size_t(block)) {
    const int64_t n = std::min<int64_t>(block, int64_t(signal.size() - at));
    model->process(signal.data() + at, signal.data() + at, n);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (float& x : signal) x = float(x * output_gain);
  audio::write_wav(args.positional("output"), signal, input.sample_rate);

  const double audio_seconds = double(signal.size()) / input.sample_rate;
  std::printf("processed %.2f s of audio in %.3f s (%.1fx real time, blocks of %lld)\n", audio_seconds, seconds,
              seconds > 0 ? audio_seconds / seconds : 0.0, static_cast<long long>(block));
  std::printf("wrote %s\n", args.positional("output").c_str());
  return 0;
}

}  // namespace tempra::app
