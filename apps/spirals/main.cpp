// apps/spirals: the README demo. Trains the named-axis MLP of spirals.h on the two-spirals
// dataset with SGD, SGD+momentum, AdamW, Muon and APOLLO, shows live progress and a final table,
// proves that a run resumed from a checkpoint is bit-identical to a straight run, and classifies
// held-out points.
//
// With no arguments it runs the whole demo. The flags below drive one optimizer, and let a test
// run "N steps straight" and "K steps + save, then load in a fresh process + N - K steps" and
// compare the parameter hashes they print (tests/apps/CMakeLists.txt):
//   --optimizer NAME  one of sgd, sgd-momentum, adamw, muon, apollo (default: all of them)
//   --steps N         training steps (default 800)
//   --seed S          seed of the weights and minibatches (default 1); the data has its own
//   --threads T       worker threads (default: TEMPRA_THREADS or the physical cores)
//   --save-at K --checkpoint FILE   save a checkpoint after step K (training continues)
//   --resume FILE     load FILE first and continue to step N
//   --print-hash      print the FNV-1a hash of the final parameters
// Exit status: 0 on success, 1 if a run fails (an error, or the demo's resume check differs),
// 2 on bad arguments.
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "spirals.h"
#include "tempra/core/error.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kTrainSeed = 20261130, kTestSeed = 777;
constexpr int64_t kTrainPerClass = 500, kTestPerClass = 500;
constexpr double kNoise = 0.02;

struct Options {
  std::vector<std::string> optimizers = spirals::optimizer_names();
  bool all = true;
  int64_t steps = 800;
  uint64_t seed = 1;
  int threads = 0;
  std::optional<int64_t> save_at;
  std::string checkpoint;
  std::string resume;
  bool print_hash = false;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "spirals: %s\n", message.c_str());
  std::fprintf(stderr,
               "usage: spirals [--optimizer NAME] [--steps N] [--seed S] [--threads T]\n"
               "               [--save-at K --checkpoint FILE] [--resume FILE] [--print-hash]\n");
  std::exit(2);
}

int64_t parse_int(const std::string& flag, const std::string& text, int64_t low, int64_t high) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < low || v > high)
    usage_error(flag + " must be an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "], got '" +
                text + "'");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h") {
      std::printf(
          "usage: spirals [--optimizer NAME] [--steps N] [--seed S] [--threads T]\n"
          "               [--save-at K --checkpoint FILE] [--resume FILE] [--print-hash]\n"
          "Trains a named-axis MLP on two spirals; with no flags, compares every optimizer.\n");
      std::exit(0);
    } else if (flag == "--optimizer") {
      const std::string name = value();
      bool known = false;
      for (const auto& n : spirals::optimizer_names()) known = known || n == name;
      if (!known) usage_error("unknown optimizer '" + name + "' (sgd, sgd-momentum, adamw, muon or apollo)");
      o.optimizers = {name};
      o.all = false;
    } else if (flag == "--steps") {
      o.steps = parse_int(flag, value(), 1, 1'000'000);
    } else if (flag == "--seed") {
      o.seed = static_cast<uint64_t>(parse_int(flag, value(), 0, INT64_MAX));
    } else if (flag == "--threads") {
      o.threads = static_cast<int>(parse_int(flag, value(), 0, 1024));
    } else if (flag == "--save-at") {
      o.save_at = parse_int(flag, value(), 1, 1'000'000);
    } else if (flag == "--checkpoint") {
      o.checkpoint = value();
    } else if (flag == "--resume") {
      o.resume = value();
    } else if (flag == "--print-hash") {
      o.print_hash = true;
    } else {
      usage_error("unknown option '" + flag + "'");
    }
  }
  if (o.save_at.has_value() != !o.checkpoint.empty()) usage_error("--save-at and --checkpoint go together");
  if (o.save_at && *o.save_at > o.steps) usage_error("--save-at must be at most --steps");
  if (o.all && (o.save_at || !o.resume.empty() || o.print_hash))
    usage_error("--save-at, --resume and --print-hash need one --optimizer");
  return o;
}

// Live progress: one line redrawn in place on a terminal, a few plain lines otherwise.
class Progress {
 public:
  Progress(const std::string& name, int64_t total)
      : name_(name), total_(total), tty_(::isatty(::fileno(stdout)) != 0), start_(Clock::now()), last_(start_) {}

  void update(int64_t step, const spirals::Evaluation& e, int64_t steps_this_run) {
    const auto now = Clock::now();
    const bool last = step == total_;
    if (tty_) {
      if (!last && now - last_ < std::chrono::milliseconds(100)) return;
    } else if (!last && step % std::max<int64_t>(1, total_ / 4) != 0) {
      return;
    }
    last_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(steps_this_run) / seconds : 0.0;
    std::printf("%s  %-12s step %5" PRId64 "/%-5" PRId64 "  loss %.4f  acc %5.1f%%  %6.0f steps/s%s", tty_ ? "\r" : "",
                name_.c_str(), step, total_, e.loss, 100 * e.accuracy, rate, tty_ ? (last ? "\n" : "\x1b[K") : "\n");
    std::fflush(stdout);
  }

 private:
  std::string name_;
  int64_t total_;
  bool tty_;
  Clock::time_point start_, last_;
};

struct Result {
  std::string optimizer;
  spirals::Evaluation train, test;
  double seconds = 0;
  uint64_t hash = 0;
};

// Trains one optimizer from step 0 (or from `resume`) to `steps`, saving at `save_at`.
Result train(const Options& o, const std::string& name, const spirals::Dataset& train_set,
             const spirals::Dataset& test_set, spirals::Trainer& trainer, bool show_progress) {
  Progress progress(name, o.steps);
  const auto start = Clock::now();
  const int64_t first = trainer.steps_done();
  while (trainer.steps_done() < o.steps) {
    const spirals::Evaluation e = trainer.step();
    if (show_progress) progress.update(trainer.steps_done(), e, trainer.steps_done() - first);
    if (o.save_at && trainer.steps_done() == *o.save_at) {
      trainer.save(o.checkpoint);
      std::printf("saved %s at step %" PRId64 "\n", o.checkpoint.c_str(), *o.save_at);
    }
  }
  Result r;
  r.optimizer = name;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.train = trainer.evaluate(train_set);
  r.test = trainer.evaluate(test_set);
  r.hash = trainer.params_hash();
  return r;
}

void print_table(const std::vector<Result>& results) {
  std::printf("\n%-14s %11s %10s %9s %8s\n", "optimizer", "train loss", "test loss", "test acc", "time");
  for (const Result& r : results)
    std::printf("%-14s %11.4f %10.4f %8.2f%% %6.2f s\n", r.optimizer.c_str(), r.train.loss, r.test.loss,
                100 * r.test.accuracy, r.seconds);
}

// A coarse map of the decision regions with some held-out points on it.
void show_inference(spirals::Trainer& trainer, const spirals::Dataset& test_set) {
  constexpr int kCols = 48, kRows = 20;
  std::vector<float> grid;
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) {
      grid.push_back(-1.1f + 2.2f * (static_cast<float>(c) + 0.5f) / kCols);
      grid.push_back(1.1f - 2.2f * (static_cast<float>(r) + 0.5f) / kRows);
    }
  const std::vector<float> p = trainer.predict(grid);
  std::printf("\ninference (%s): decision regions ('.' class 0, '#' class 1), test points as 0 and 1\n",
              trainer.optimizer_name().c_str());
  std::vector<std::string> canvas(kRows, std::string(kCols, ' '));
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) canvas[r][c] = p[static_cast<size_t>(r * kCols + c)] > 0.5f ? '#' : '.';
  for (int64_t i = 0; i < test_set.size(); i += 9) {
    const float x = test_set.x[2 * static_cast<size_t>(i)], y = test_set.x[2 * static_cast<size_t>(i) + 1];
    const int c = static_cast<int>((x + 1.1f) / 2.2f * kCols), r = static_cast<int>((1.1f - y) / 2.2f * kRows);
    if (c >= 0 && c < kCols && r >= 0 && r < kRows) canvas[r][c] = test_set.y[static_cast<size_t>(i)] ? '1' : '0';
  }
  for (const std::string& line : canvas) std::printf("  %s\n", line.c_str());

  std::vector<float> some;
  for (int64_t i = 0; i < 6; ++i) {
    some.push_back(test_set.x[2 * static_cast<size_t>(i)]);
    some.push_back(test_set.x[2 * static_cast<size_t>(i) + 1]);
  }
  const std::vector<float> q = trainer.predict(some);
  for (size_t i = 0; i < q.size(); ++i)
    std::printf("  held-out (% .3f, % .3f)  label %d  p(class 1) = %.4f  -> %d\n", some[2 * i], some[2 * i + 1],
                test_set.y[i], q[i], q[i] > 0.5f ? 1 : 0);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    const auto demo_start = Clock::now();
    const spirals::Dataset train_set = spirals::make_spirals(kTrainSeed, kTrainPerClass, kNoise);
    const spirals::Dataset test_set = spirals::make_spirals(kTestSeed, kTestPerClass, kNoise);
    if (o.all)
      std::printf("two spirals: %" PRId64 " training and %" PRId64
                  " held-out points; MLP 2 -> 64 -> 64 -> 2 (tanh); %" PRId64 " steps of %" PRId64 "\n\n",
                  train_set.size(), test_set.size(), o.steps, spirals::Trainer::kBatch);

    std::vector<Result> results;
    std::unique_ptr<spirals::Trainer> adamw;
    for (const std::string& name : o.optimizers) {
      auto trainer = std::make_unique<spirals::Trainer>(name, o.seed, o.steps, o.threads, train_set);
      if (!o.resume.empty()) {
        trainer->load(o.resume);
        std::printf("resumed %s from %s at step %" PRId64 "\n", name.c_str(), o.resume.c_str(), trainer->steps_done());
        tempra::check(!o.save_at || *o.save_at > trainer->steps_done(), "spirals", "--save-at ", o.save_at.value_or(0),
                      " is not after the checkpoint's step ", trainer->steps_done());
      }
      results.push_back(train(o, name, train_set, test_set, *trainer, true));
      if (name == "adamw") adamw = std::move(trainer);
    }
    print_table(results);
    if (o.print_hash) std::printf("params hash %016" PRIx64 "\n", results.back().hash);
    if (!o.all) return 0;

    // Bit-exact resume: K steps, save, load into a freshly built trainer, N - K more steps.
    const int64_t k = o.steps * 2 / 5;
    const std::string path = (std::filesystem::temp_directory_path() / ("spirals-adamw-" + std::to_string(::getpid()) +
                                                                        "-step" + std::to_string(k) + ".safetensors"))
                                 .string();
    uint64_t resumed_hash = 0;
    {
      spirals::Trainer a("adamw", o.seed, o.steps, o.threads, train_set);
      while (a.steps_done() < k) a.step();
      a.save(path);
      spirals::Trainer b("adamw", o.seed + 1, o.steps, o.threads, train_set);  // other weights: the file must win
      b.load(path);
      while (b.steps_done() < o.steps) b.step();
      resumed_hash = b.params_hash();
    }
    std::remove(path.c_str());
    const uint64_t straight_hash = adamw ? adamw->params_hash() : 0;
    const bool same = resumed_hash == straight_hash;
    std::printf("\nresume check (adamw): %" PRId64 " steps straight %016" PRIx64 ", %" PRId64 " + checkpoint + %" PRId64
                " steps %016" PRIx64 ": %s\n",
                o.steps, straight_hash, k, o.steps - k, resumed_hash, same ? "bit-identical" : "DIFFERENT");

    if (adamw) show_inference(*adamw, test_set);
    std::printf("\ndemo time %.1f s\n", std::chrono::duration<double>(Clock::now() - demo_start).count());
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spirals: %s\n", e.what());
    return 1;
  }
}
