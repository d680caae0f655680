// apps/tempra/train_cli.h: what the training commands (finetune, train) share: stopping on a
// signal between steps, durations for ETAs, integer options.
#pragma once

#include <string>

#include "args.h"

namespace tempra::app {

// Exit status of a run stopped by SIGINT/SIGTERM after writing its checkpoint (128 + SIGINT).
inline constexpr int kExitInterrupted = 130;

// SIGINT and SIGTERM ask the training loop to stop (stop_requested()) while in scope; the default
// handlers come back after, however the scope is left.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
};
bool stop_requested();

// "12m05s", "1h02m", or "?" for a negative or infinite time.
std::string duration(double seconds);

cli::Option int_option(const char* spelling, const char* help, const char* fallback);

}  // namespace tempra::app
