// apps/tempra/amp_train.cpp: `tempra amp train`, a NAM profile trained from a reamping pair.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "amp.h"
#include "amp_plot.h"
#include "tempra/audio/train/amp_trainer.h"
#include "tempra/audio/wav.h"
#include "tempra/core/error.h"
#include "tempra/io/atomic_write.h"
#include "train_cli.h"

namespace tempra::app {
namespace {

std::filesystem::path with_extension(const std::string& path, const char* extension) {
  return std::filesystem::path(path).replace_extension(extension);
}

nlohmann::ordered_json date_now() {
  const std::time_t now = std::time(nullptr);
  std::tm t{};
  localtime_r(&now, &t);
  return {{"year", t.tm_year + 1900}, {"month", t.tm_mon + 1}, {"day", t.tm_mday},
          {"hour", t.tm_hour},        {"minute", t.tm_min},    {"second", t.tm_sec}};
}

// NAM's trainer metadata, with what tempra knows of it: the date, the user's names, the latency
// and how it was found, and the validation ESR of the weights written.
std::string metadata_json(const cli::Args& args, const audio::TrainingPair& pair, double validation_esr,
                          int64_t epochs) {
  nlohmann::ordered_json m;
  m["date"] = date_now();
  m["name"] = args.has("--name") ? nlohmann::ordered_json(args.string("--name")) : nlohmann::ordered_json();
  m["modeled_by"] =
      args.has("--modeled-by") ? nlohmann::ordered_json(args.string("--modeled-by")) : nlohmann::ordered_json();
  nlohmann::ordered_json latency = {
      {"manual", pair.estimate ? nlohmann::ordered_json() : nlohmann::ordered_json(pair.latency)}};
  if (pair.estimate)
    latency["calibration"] = {{"algorithm", "tempra cross-correlation onset"},
                              {"onset", pair.estimate->onset},
                              {"peak", pair.estimate->peak},
                              {"safety_factor", 1},
                              {"recommended", pair.latency}};
  m["training"] = {{"trainer", "tempra amp train"},
                   {"epochs", epochs},
                   {"data", {{"latency", latency}}},
                   {"validation_esr", validation_esr}};
  return m.dump();
}

// Refuses, before any work, output paths whose folder is missing or not writable, and output
// paths that name each other or an input (the plot's default is the output's name with .png: a
// `-o x.png` would otherwise be overwritten by its own picture). Empty paths are not given.
void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs,
                        const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  auto same = [](const std::string& a, const std::string& b) {
    std::error_code ec;
    return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [flag, path] = outputs[i];
    if (path.empty()) continue;
    const fs::path folder = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
    std::error_code ec;
    if (!fs::is_directory(folder, ec) || ::access(folder.c_str(), W_OK) != 0)
      throw cli::UsageError(flag + " " + path + ": the folder " + folder.string() +
                            " does not exist or is not writable");
    for (const std::string& input : inputs)
      if (same(path, input)) throw cli::UsageError(flag + " " + path + " would overwrite an input recording");
    for (size_t j = 0; j < i; ++j)
      if (!outputs[j].second.empty() && same(path, outputs[j].second))
        throw cli::UsageError(flag + " and " + outputs[j].first + " name the same file, " + path);
  }
}

void write_log(const std::filesystem::path& path, const std::vector<audio::EpochResult>& epochs) {
  io::write_atomically(path, "amp train", [&](std::FILE* f, const std::string&) {
    std::fprintf(f, "epoch,steps,lr,loss,train_esr,validation_esr,seconds,validation_seconds\n");
    for (const auto& e : epochs)
      std::fprintf(f, "%lld,%lld,%.9g,%.9g,%.9g,%.9g,%.3f,%.3f\n", (long long)e.epoch, (long long)e.steps, e.lr, e.loss,
                   e.train_esr, e.validation_esr, e.seconds, e.validation_seconds);
  });
}

}  // namespace

cli::Command amp_train_command() {
  return {
      .name = "amp train",
      .summary = "Train a NAM profile (.nam) from a dry recording and the amp's output.",
      .options = {
          {.spellings = {"--input"},
           .kind = cli::Kind::String,
           .help = "the dry (DI) signal",
           .required = true,
           .metavar = "WAV"},
          {.spellings = {"--target"},
           .kind = cli::Kind::String,
           .help = "the amp's output, recorded from the DI signal",
           .required = true,
           .metavar = "WAV"},
          {.spellings = {"--arch"},
           .kind = cli::Kind::String,
           .help = "NAM's WaveNets: standard, lite, feather, nano; its LSTMs: lstm, lstm-lite, lstm-feather, lstm-nano",
           .default_value = "standard"},
          {.spellings = {"-o", "--output"},
           .kind = cli::Kind::String,
           .help = "the .nam to write (default: the target's name with .nam)",
           .metavar = "FILE"},
          {.spellings = {"--plot"},
           .kind = cli::Kind::String,
           .help = "the PNG of prediction and ESR (default: the output's name with .png)",
           .metavar = "FILE"},
          {.spellings = {"--log"},
           .kind = cli::Kind::String,
           .help = "a CSV of every epoch's figures",
           .metavar = "FILE"},
          int_option("--epochs", "passes over the training split (NAM: 100)", "100"),
          int_option("--batch-size", "items per step (NAM: 16)", "16"),
          int_option("--ny", "output samples per item (NAM: 8192)", "8192"),
          {.spellings = {"--lr"},
           .kind = cli::Kind::Float,
           .help = "Adam's learning rate (NAM: 0.004 for WaveNets, 0.01 for LSTMs)"},
          {.spellings = {"--lr-decay"},
           .kind = cli::Kind::Float,
           .help = "lr *= 1 - this after each epoch (NAM: 0.007 for WaveNets, 0.005 for LSTMs)"},
          {.spellings = {"--latency"},
           .kind = cli::Kind::Int,
           .help = "the target's delay in samples (default: estimated)",
           .metavar = "N"},
          {.spellings = {"--validation-seconds"},
           .kind = cli::Kind::Float,
           .help = "the last seconds, held out for validation (NAM: 9)",
           .default_value = "9"},
          int_option("--seed", "initial weights and shuffles", "0"),
          int_option("-t", "threads; 0: TEMPRA_THREADS or the physical cores", "0"),
          {.spellings = {"--name"}, .kind = cli::Kind::String, .help = "the profile's name (metadata)"},
          {.spellings = {"--modeled-by"}, .kind = cli::Kind::String, .help = "who captured it (metadata)"}}};
}

int run_amp_train(const cli::Args& args) {
  const std::string arch = args.string("--arch");
  const int64_t epochs = args.integer("--epochs"), threads = args.integer("-t");
  if (epochs < 1 || epochs > 100000) throw cli::UsageError("--epochs must be in 1 ... 100000");
  if (threads < 0 || threads > 1024) throw cli::UsageError("-t must be in 0 ... 1024");
  ExecContext ctx(ExecOptions{.threads = int(threads)});
  std::unique_ptr<audio::TrainableAmp> model = audio::make_trainable_amp(ctx, arch, uint64_t(args.integer("--seed")));
  if (!model)
    throw cli::UsageError(
        "--arch must be standard, lite, feather, nano (WaveNets) or lstm, lstm-lite, lstm-feather, "
        "lstm-nano, got '" +
        arch + "'");
  audio::AmpTrainOptions options = audio::defaults_for(model->architecture());
  options.batch_size = args.integer("--batch-size");
  options.ny = args.integer("--ny");
  if (args.given("--lr")) options.lr = args.number("--lr");
  if (args.given("--lr-decay")) options.lr_decay = args.number("--lr-decay");
  options.seed = uint64_t(args.integer("--seed"));
  if (options.batch_size < 1 || options.batch_size > 4096) throw cli::UsageError("--batch-size must be in 1 ... 4096");
  if (options.ny < 1 || options.ny > (1 << 20)) throw cli::UsageError("--ny must be in 1 ... 1048576");
  // A step holds every layer's activations for its samples: bound them (16M samples, ~1 s per
  // item at NAM's 8192 x 16, is 128 times that).
  if (options.batch_size * options.ny > (int64_t(1) << 24))
    throw cli::UsageError("--batch-size x --ny must be at most 16777216 samples a step");
  if (!(options.lr > 0 && options.lr < 1)) throw cli::UsageError("--lr must be in (0, 1)");
  if (!(options.lr_decay >= 0 && options.lr_decay < 1)) throw cli::UsageError("--lr-decay must be in [0, 1)");
  audio::PairOptions pair_options;
  pair_options.validation_seconds = args.number("--validation-seconds");
  if (!(pair_options.validation_seconds > 0)) throw cli::UsageError("--validation-seconds must be positive");
  if (args.has("--latency")) pair_options.latency = args.integer("--latency");
  const std::string output =
      args.has("--output") ? args.string("--output") : with_extension(args.string("--target"), ".nam").string();
  const std::string plot = args.has("--plot") ? args.string("--plot") : with_extension(output, ".png").string();
  if (std::filesystem::path(output).extension() == ".wav")
    throw cli::UsageError("--output " + output + " would overwrite audio; name a .nam file");
  check_output_paths({{"--output", output}, {"--plot", plot}, {"--log", args.has("--log") ? args.string("--log") : ""}},
                     {args.string("--input"), args.string("--target")});

  const audio::TrainingPair pair = audio::prepare_pair(audio::read_audio(args.string("--input")),
                                                       audio::read_audio(args.string("--target")), pair_options);
  audio::AmpTrainer trainer(ctx, std::move(model), pair, options);
  std::printf("data: %.1f s to train on, %.1f s to validate, at %d Hz; latency %lld samples",
              double(pair.train_input.size()) / pair.sample_rate,
              double(pair.validation_input.size()) / pair.sample_rate, pair.sample_rate, (long long)pair.latency);
  if (pair.estimate)
    std::printf(" (estimated: onset %lld, peak %lld, correlation %.2f; less 1 for safety)",
                (long long)pair.estimate->onset, (long long)pair.estimate->peak, pair.estimate->strength);
  else
    std::printf(" (given)");
  std::printf("\nmodel: %s (%s), %lld weights, receptive field %lld; %lld items of %lld samples, batches of %lld\n",
              trainer.model().architecture(), arch.c_str(), (long long)trainer.profile().weights.size(),
              (long long)trainer.model().receptive_field(), (long long)trainer.items(), (long long)options.ny,
              (long long)trainer.batch_size());
  std::fflush(stdout);

  std::vector<audio::EpochResult> history;
  audio::NamFile best;
  double best_esr = INFINITY, elapsed = 0;
  bool diverged = false;
  StopOnSignal stop_on_signal;
  for (int64_t e = 1; e <= epochs && !stop_requested(); ++e) {
    const audio::EpochResult r = trainer.run_epoch();
    history.push_back(r);
    elapsed += r.seconds;
    if (!std::isfinite(r.loss) || !std::isfinite(r.validation_esr)) {
      // Adam cannot come back from a non-finite weight: stop, keep the best finite epoch.
      std::printf("epoch %4lld/%lld  loss %g  validation ESR %g: training diverged; try a lower --lr\n", (long long)e,
                  (long long)epochs, r.loss, r.validation_esr);
      diverged = true;
      break;
    }
    const bool improved = r.validation_esr < best_esr;
    if (improved) best_esr = r.validation_esr, best = trainer.profile();
    std::printf("epoch %4lld/%lld  loss %.5f  ESR train %.5f  validation %.5f%s  lr %.2e  %.1f s  ETA %s\n",
                (long long)e, (long long)epochs, r.loss, r.train_esr, r.validation_esr, improved ? " *" : "  ", r.lr,
                r.seconds, duration(elapsed / double(e) * double(epochs - e)).c_str());
    std::fflush(stdout);
    if (args.has("--log")) write_log(args.string("--log"), history);
  }
  check(!history.empty(), "amp train", "stopped before the first epoch finished; nothing written");
  check(std::isfinite(best_esr), "amp train", "no epoch ended with finite weights; nothing written");
  best.metadata.json = metadata_json(args, pair, best_esr, int64_t(history.size()));

  AmpPlot picture;
  char title[160];
  std::snprintf(title, sizeof title, "%s (%s): validation ESR %.4f after %zu epochs", trainer.model().architecture(),
                arch.c_str(), best_esr, history.size());
  picture.title = title;
  const std::vector<float> prediction = audio::predict(best, pair.validation_input);
  picture.target = pair.validation_target;
  picture.prediction = prediction;
  picture.sample_rate = pair.sample_rate;
  for (const auto& r : history)
    picture.train_esr.push_back(r.train_esr), picture.validation_esr.push_back(r.validation_esr);
  // Both files are ready before either is written (their folders were checked before training).
  const std::string png = render_amp_plot(picture);
  audio::write_nam(output, best);
  std::printf("wrote %s: validation ESR %.5f (the best of %zu epochs), %s of training\n", output.c_str(), best_esr,
              history.size(), duration(elapsed).c_str());
  io::write_atomically(plot, "amp train", [&](std::FILE* f, const std::string& temp) {
    check(std::fwrite(png.data(), 1, png.size(), f) == png.size(), "amp train", temp, ": write failed");
  });
  std::printf("wrote %s\n", plot.c_str());
  if (diverged) return 1;
  return stop_requested() ? kExitInterrupted : 0;
}

}  // namespace tempra::app
