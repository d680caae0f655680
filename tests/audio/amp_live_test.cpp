// tests/audio/amp_live_test.cpp: `tempra amp --live` inside a real JACK callback.
//
// JACK's dummy driver (Debian's jackd2: jackd -d dummy) calls its clients back at real periods
// with no sound card. A server of its own (a unique JACK_DEFAULT_SERVER name) runs at 48 kHz
// with 64-sample periods, the issue's case; tempra plays the stock standard WaveNet through it
// for 5 s. What is tempra's is asserted strictly: the callbacks run at the driver's pace, take
// no page fault and never wait, and their CPU time leaves most of the 1.33 ms deadline free.
// Whether a buffer arrives late is also the machine's: on a shared virtual machine the host
// takes the CPU for milliseconds at a time, and the dummy driver reports an xrun whenever it
// wakes even microseconds late, with no client at all (the test below says what was measured).
// Those figures are printed, not asserted. These tests run alone (RUN_SERIAL), as a guitarist's
// machine would run its amp. Without a server, --live says so and exits with status 1 at once.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include "audio/amp_fixtures.h"
#include "support/command.h"
#include "support/files.h"

namespace tempra::audio {
namespace {

namespace fs = std::filesystem;
using tempra::testing::CommandRun;
using tempra::testing::quoted;

std::string server_name(const char* what) {
  return std::string("tempra-") + what + "-" + std::to_string(::getpid());
}

CommandRun tempra_live(const fs::path& dir, const std::string& server, const std::string& arguments) {
  return tempra::testing::run_command(
      "JACK_DEFAULT_SERVER=" + server + " '" + TEMPRA_BINARY + "' amp --live " + arguments, dir / "live.txt");
}

TEST(AmpLive, without_a_jack_server_it_says_so_and_exits) {
  const fs::path dir = tempra::testing::scratch_dir("amp-live");
  write_nam(dir / "nano.nam", testing::random_profile(*wavenet_preset("nano"), 1));
  const auto start = std::chrono::steady_clock::now();
  const CommandRun run = tempra_live(dir, server_name("absent"), "-m " + quoted(dir / "nano.nam") + " --seconds 30");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("no JACK server is running"), std::string::npos) << run.output;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));  // it did not wait
  const CommandRun both = tempra_live(dir, server_name("absent"), "-m " + quoted(dir / "nano.nam") + " in.wav");
  EXPECT_EQ(both.exit_code, 2) << both.output;
}

// A jackd of its own, stopped when the test ends.
class DummyServer {
 public:
  DummyServer(const fs::path& dir, const std::string& name) : name_(name) {
    const std::string cmd = "JACK_DEFAULT_SERVER=" + name + " jackd -d dummy -r 48000 -p 64 > " +
                            quoted(dir / "jackd.txt") + " 2>&1 & echo $! > " + quoted(dir / "jackd.pid");
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    pid_ = std::stoi(tempra::testing::read_text(dir / "jackd.pid"));
    // Ready when its ports are listed (jack_lsp ships with jackd2).
    for (int i = 0; i < 100 && !ready_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ready_ = std::system(("JACK_DEFAULT_SERVER=" + name + " jack_lsp > /dev/null 2>&1").c_str()) == 0;
    }
  }
  ~DummyServer() {
    if (pid_ > 0) ::kill(pid_, SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  bool ready() const { return ready_; }

 private:
  std::string name_;
  int pid_ = -1;
  bool ready_ = false;
};

TEST(AmpLive, the_standard_wavenet_keeps_up_at_64_sample_periods) {
  const fs::path dir = tempra::testing::scratch_dir("amp-live");
  write_nam(dir / "standard.nam", testing::random_profile(*wavenet_preset("standard"), 2, 0.2f));
  const std::string server = server_name("dummy");
  DummyServer jackd(dir, server);
  ASSERT_TRUE(jackd.ready()) << tempra::testing::read_text(dir / "jackd.txt");
  const CommandRun run = tempra_live(dir, server, "-m " + quoted(dir / "standard.nam") + " --seconds 5");
  std::printf("%s", run.output.c_str());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("JACK at 48000 Hz, 64-sample buffers"), std::string::npos);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.output, m, std::regex(R"(live summary: [0-9.]+ s, ([0-9]+) buffers)")));
  // 5 s at 750 periods a second, less the start: the callback really ran at the driver's pace.
  EXPECT_GE(std::stoll(m[1]), 3500);
  EXPECT_LE(std::stoll(m[1]), 4000);
  // Nothing inside the callbacks entered the kernel on tempra's account: no page fault (the
  // stack is touched before the first callback), no wait on a lock or a system call.
  ASSERT_TRUE(
      std::regex_search(run.output, m, std::regex(R"(inside the callbacks: ([0-9]+) page faults, ([0-9]+) waits)")));
  EXPECT_EQ(std::stoll(m[1]), 0) << run.output;
  EXPECT_EQ(std::stoll(m[2]), 0) << run.output;
  // The compute: CPU time per callback, median and 99th percentile, against the 1333 us
  // deadline. A model that cannot keep up fails both; a slow callback now and then (a 100-us
  // hiccup every hundred buffers) fails the second. Measured on a 2-vCPU AMD EPYC Zen 5 guest
  // (2026-12-07): median 52-62 us, 99% under 94-125 us.
  ASSERT_TRUE(std::regex_search(run.output, m, std::regex(R"(CPU time: median ([0-9]+) us, 99% under ([0-9]+) us)")));
  EXPECT_LE(std::stoll(m[1]), 1333 / 8) << run.output;
  EXPECT_LE(std::stoll(m[2]), 1333 / 2) << run.output;
  // Late callbacks and xruns are printed above, not asserted. On that guest, the same day, the
  // host took 10-930 ms of CPU time in 5 s (/proc/stat's steal); the late callbacks had used
  // 50-230 us of CPU over 1.4-9 ms of wall time with no preemption inside the guest, and jackd
  // alone, with no client, reported 21 xruns in 2 s (its timed driver waking 5-35 us late).
  // Runs saw 1-37 late callbacks and 3-334 xruns; the CI run of 2026-12-07 failed this test
  // when it still required none.
}

TEST(AmpLive, a_profile_of_another_rate_is_refused) {
  const fs::path dir = tempra::testing::scratch_dir("amp-live");
  NamFile file = testing::random_profile(*wavenet_preset("nano"), 1);
  file.sample_rate = 44100;
  write_nam(dir / "nano44.nam", file);
  const std::string server = server_name("rate");
  DummyServer jackd(dir, server);
  ASSERT_TRUE(jackd.ready());
  const CommandRun run = tempra_live(dir, server, "-m " + quoted(dir / "nano44.nam") + " --seconds 1");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("runs at 48000 Hz but the profile expects 44100 Hz"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace tempra::audio
