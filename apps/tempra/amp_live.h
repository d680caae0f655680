// apps/tempra/amp_live.h: `tempra amp --live`, a profile inside a real audio callback (JACK).
//
// Connects to a running JACK server (never starts one), registers a mono input and output,
// and runs the model in JACK's process callback: input gain, process() in place, output gain.
// The callback allocates nothing, takes no lock of its own and does no I/O (amp_model.h's
// contract); it reads the monotonic clock, its thread's CPU time and getrusage before and after
// (system calls that never sleep on a standard kernel; getrusage takes the task's lock briefly,
// a sleeping lock on PREEMPT_RT kernels), and keeps its figures in atomics (times in fixed
// histograms). The main thread connects the ports (the
// first physical capture port to the input, the output to the first two physical playback
// ports, unless told otherwise), then reports once a second and at the end: callbacks, their
// mean and worst time against the deadline (one period, buffer size / rate), the callbacks that
// overran it and the xruns JACK reported. The missed buffers of the summary are the larger of
// those two counts (an overrun JACK saw is both). The summary then says whose they were: the
// callbacks' wall and CPU time (median, 99th percentile), the page faults, waits and
// preemptions inside them, and the CPU time the host of a virtual machine took meanwhile
// (/proc/stat's steal): a late callback with little CPU time waited on the machine.
//
// Without a JACK server it says so and exits (status 1) without waiting; a profile trained at
// another rate than the server's is refused. SIGINT/SIGTERM stop it between reports.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tempra/audio/amp_model.h"

namespace tempra::app {

struct LiveOptions {
  double seconds = 0;  // 0: until interrupted
  double input_gain = 1, output_gain = 1;
  std::string input_port;   // "" : the first physical capture port
  std::string output_port;  // "" : the first two physical playback ports
  bool connect = true;
  std::optional<double> profile_rate;  // the rate the profile was trained at, when it says
};

// Returns the process exit status.
int run_live(audio::AmpModel& model, const LiveOptions& options);

}  // namespace tempra::app
