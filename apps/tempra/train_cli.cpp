// apps/tempra/train_cli.cpp: see train_cli.h.
#include "train_cli.h"

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>

namespace tempra::app {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void request_stop(int) {
  g_stop.store(true);
}

}  // namespace

StopOnSignal::StopOnSignal() {
  g_stop = false;
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
}

StopOnSignal::~StopOnSignal() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

bool stop_requested() {
  return g_stop.load();
}

std::string duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = int64_t(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
  else
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  return buf;
}

cli::Option int_option(const char* spelling, const char* help, const char* fallback) {
  return {.spellings = {spelling}, .kind = cli::Kind::Int, .help = help, .default_value = fallback, .metavar = "N"};
}

}  // namespace tempra::app
