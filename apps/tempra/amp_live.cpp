// apps/tempra/amp_live.cpp
#include "amp_live.h"

#include <jack/jack.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "train_cli.h"

namespace tempra::app {
namespace {

int64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);  // vDSO: no system call, safe in the callback
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// The calling thread's CPU time: a system call (no vDSO for it), but one that never sleeps.
int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// Callback times in bins of 1/128 of the deadline up to twice it (the last bin holds the
// rest), so that the main thread can read percentiles while the callback only increments.
struct TimeHistogram {
  static constexpr int kBinsPerDeadline = 128, kBins = 2 * kBinsPerDeadline + 1;
  std::array<std::atomic<int64_t>, kBins> counts{};

  void add(int64_t ns, int64_t deadline_ns) {
    const int64_t bin = deadline_ns > 0 ? ns * kBinsPerDeadline / deadline_ns : kBins - 1;
    counts[size_t(std::min<int64_t>(bin, kBins - 1))].fetch_add(1, std::memory_order_relaxed);
  }
  // The upper edge of the bin holding the q-th quantile (a bound, not an estimate); in the
  // last bin, twice the deadline (a lower bound there: the summary says "over").
  double quantile_ns(double q, int64_t deadline_ns) const {
    int64_t total = 0;
    for (const auto& c : counts) total += c.load(std::memory_order_relaxed);
    if (total == 0) return 0;
    int64_t seen = 0;
    for (int b = 0; b < kBins; ++b) {
      seen += counts[size_t(b)].load(std::memory_order_relaxed);
      if (double(seen) >= q * double(total))
        return double(std::min(b + 1, kBins - 1)) * double(deadline_ns) / kBinsPerDeadline;
    }
    return 2.0 * double(deadline_ns);
  }
};

// Everything the callback touches: set up before activation, then only atomics change.
struct Engine {
  audio::AmpModel* model = nullptr;
  jack_port_t* in = nullptr;
  jack_port_t* out = nullptr;
  float input_gain = 1, output_gain = 1;
  double rate = 48000;                // fixed for a server's life
  std::atomic<int64_t> period_ns{0};  // the deadline: buffer size / rate
  std::atomic<int64_t> callbacks{0}, frames{0}, busy_ns{0}, worst_ns{0}, late{0}, xruns{0};
  // What happened to the callback's thread inside the callbacks since activation (getrusage
  // deltas): page faults and voluntary switches (waits) are the callback's own doing;
  // involuntary switches are the kernel preempting it. Time the host takes from a virtual
  // machine shows in none of these: as wall time beyond the CPU time, or as CPU time where the
  // guest kernel does not account steal apart (both seen on one guest), and in the summary's steal.
  std::atomic<int64_t> faults{0}, waits{0}, preemptions{0};
  TimeHistogram wall, cpu;
  std::atomic<bool> shut_down{false};
};

int process(jack_nframes_t n, void* arg) {
  Engine& e = *static_cast<Engine*>(arg);
  const int64_t start = monotonic_ns(), cpu_start = thread_cpu_ns();
  rusage before{};
  getrusage(RUSAGE_THREAD, &before);
  const auto* in = static_cast<const float*>(jack_port_get_buffer(e.in, n));
  auto* out = static_cast<float*>(jack_port_get_buffer(e.out, n));
  for (jack_nframes_t i = 0; i < n; ++i) out[i] = in[i] * e.input_gain;
  e.model->process(out, out, int64_t(n));
  for (jack_nframes_t i = 0; i < n; ++i) out[i] *= e.output_gain;
  rusage after{};
  getrusage(RUSAGE_THREAD, &after);
  const int64_t took = monotonic_ns() - start, cpu = thread_cpu_ns() - cpu_start;
  const int64_t deadline = e.period_ns.load(std::memory_order_relaxed);
  e.callbacks.fetch_add(1, std::memory_order_relaxed);
  e.frames.fetch_add(n, std::memory_order_relaxed);
  e.busy_ns.fetch_add(took, std::memory_order_relaxed);
  e.faults.fetch_add((after.ru_minflt - before.ru_minflt) + (after.ru_majflt - before.ru_majflt),
                     std::memory_order_relaxed);
  e.waits.fetch_add(after.ru_nvcsw - before.ru_nvcsw, std::memory_order_relaxed);
  e.preemptions.fetch_add(after.ru_nivcsw - before.ru_nivcsw, std::memory_order_relaxed);
  e.wall.add(took, deadline);
  e.cpu.add(cpu, deadline);
  int64_t worst = e.worst_ns.load(std::memory_order_relaxed);
  while (took > worst && !e.worst_ns.compare_exchange_weak(worst, took, std::memory_order_relaxed)) {
  }
  if (took > deadline) e.late.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

// Runs once on JACK's process thread before its first callback: touches the top of the
// thread's stack so that the callbacks' frames find their pages mapped. Without it the first
// callback took a page fault (measured with getrusage, 2026-12-07), a kernel entry at the worst
// moment; 64 KiB is several times what the callback's frames use.
// The clocks the callback reads are called once here too, so that their symbols are bound
// before the first period (lazy binding would resolve them inside it).
void prefault_stack(void*) {
  volatile char frames[64 * 1024];
  for (size_t i = 0; i < sizeof frames; i += 4096) frames[i] = 0;
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  (void)thread_cpu_ns();
}

int on_xrun(void* arg) {
  static_cast<Engine*>(arg)->xruns.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

int on_buffer_size(jack_nframes_t n, void* arg) {
  Engine& e = *static_cast<Engine*>(arg);
  e.period_ns.store(int64_t(std::llround(1e9 * n / e.rate)), std::memory_order_relaxed);
  return 0;
}

void on_shutdown(void* arg) {
  static_cast<Engine*>(arg)->shut_down.store(true);
}

struct ClientCloser {
  void operator()(jack_client_t* c) const {
    jack_deactivate(c);
    jack_client_close(c);
  }
};

struct Figures {
  int64_t callbacks, frames, busy_ns, worst_ns, late, xruns;
};

// The counters so far, and the worst callback since the last read (which restarts it).
Figures read(Engine& e) {
  return {e.callbacks.load(), e.frames.load(), e.busy_ns.load(), e.worst_ns.exchange(0), e.late.load(), e.xruns.load()};
}

// CPU time the host of a virtual machine took from all of this machine's CPUs so far
// (/proc/stat's steal), in seconds; nullopt where the kernel does not say.
std::optional<double> host_steal_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  int64_t user, nice, system, idle, iowait, irq, softirq, steal;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || cpu != "cpu")
    return std::nullopt;
  return double(steal) / double(sysconf(_SC_CLK_TCK));
}

// The first port of `flags` (physical, input or output), or "".
std::string first_physical(jack_client_t* client, unsigned long flags, int index = 0) {
  const char** ports = jack_get_ports(client, nullptr, JACK_DEFAULT_AUDIO_TYPE, JackPortIsPhysical | flags);
  std::string name;
  if (ports) {
    for (int i = 0; ports[i]; ++i)
      if (i == index) name = ports[i];
    jack_free(ports);
  }
  return name;
}

}  // namespace

int run_live(audio::AmpModel& model, const LiveOptions& options) {
  Engine engine;  // before the client: JACK may call into it until the client is closed
  jack_status_t status{};
  std::unique_ptr<jack_client_t, ClientCloser> client(jack_client_open("tempra-amp", JackNoStartServer, &status));
  if (!client) {
    std::fprintf(stderr,
                 "tempra amp --live: no JACK server is running (jack_client_open status 0x%x). Start one first: "
                 "jackd -d alsa for a sound card, or jackd -d dummy -p 64 to try without one.\n",
                 unsigned(status));
    return 1;
  }
  const double rate = jack_get_sample_rate(client.get());
  if (options.profile_rate && std::abs(*options.profile_rate - rate) >= 0.5) {
    std::fprintf(stderr, "tempra amp --live: the JACK server runs at %.0f Hz but the profile expects %.0f Hz\n", rate,
                 *options.profile_rate);
    return 1;
  }
  engine.model = &model;
  engine.input_gain = float(options.input_gain);
  engine.output_gain = float(options.output_gain);
  engine.rate = rate;
  const jack_nframes_t buffer = jack_get_buffer_size(client.get());
  on_buffer_size(buffer, &engine);
  engine.in = jack_port_register(client.get(), "in", JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
  engine.out = jack_port_register(client.get(), "out", JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
  if (!engine.in || !engine.out) {
    std::fprintf(stderr, "tempra amp --live: JACK refused to register the ports\n");
    return 1;
  }
  jack_set_thread_init_callback(client.get(), prefault_stack, nullptr);
  jack_set_process_callback(client.get(), process, &engine);
  jack_set_xrun_callback(client.get(), on_xrun, &engine);
  jack_set_buffer_size_callback(client.get(), on_buffer_size, &engine);
  jack_on_shutdown(client.get(), on_shutdown, &engine);
  if (jack_activate(client.get()) != 0) {
    std::fprintf(stderr, "tempra amp --live: JACK refused to activate the client\n");
    return 1;
  }
  const std::string in_name = jack_port_name(engine.in), out_name = jack_port_name(engine.out);
  if (options.connect) {
    const std::string source =
        options.input_port.empty() ? first_physical(client.get(), JackPortIsOutput) : options.input_port;
    if (!source.empty() && jack_connect(client.get(), source.c_str(), in_name.c_str()) != 0)
      std::fprintf(stderr, "tempra amp --live: could not connect %s to %s\n", source.c_str(), in_name.c_str());
    for (int i = 0; i < (options.output_port.empty() ? 2 : 1); ++i) {
      const std::string sink =
          options.output_port.empty() ? first_physical(client.get(), JackPortIsInput, i) : options.output_port;
      if (!sink.empty() && jack_connect(client.get(), out_name.c_str(), sink.c_str()) != 0)
        std::fprintf(stderr, "tempra amp --live: could not connect %s to %s\n", out_name.c_str(), sink.c_str());
    }
  }
  std::printf("live: JACK at %.0f Hz, %u-sample buffers (a %.0f us deadline); %s -> %s%s\n", rate, buffer,
              engine.period_ns.load() / 1e3, in_name.c_str(), out_name.c_str(),
              options.seconds > 0 ? "" : "; Ctrl-C stops");
  std::fflush(stdout);

  StopOnSignal stop_on_signal;
  const auto start = std::chrono::steady_clock::now();
  Figures last = read(engine);
  auto report = [&](const Figures& f, const Figures& since, const char* label) {
    const int64_t calls = f.callbacks - since.callbacks;
    const double mean_us = calls > 0 ? double(f.busy_ns - since.busy_ns) / double(calls) / 1e3 : 0.0;
    std::printf(
        "%s%s%lld callbacks, mean %.1f us, worst %.1f us (deadline %.0f us, mean load %.1f%%), late %lld, "
        "xruns %lld\n",
        label, *label ? " " : "", (long long)calls, mean_us, f.worst_ns / 1e3, engine.period_ns.load() / 1e3,
        100.0 * mean_us * 1e3 / double(engine.period_ns.load()), (long long)(f.late - since.late),
        (long long)(f.xruns - since.xruns));
    std::fflush(stdout);
  };
  const Figures first = last;
  const std::optional<double> steal_at_start = host_steal_seconds();
  int64_t shown = 0, worst_ns = 0;  // whole seconds reported; the worst callback of the run
  while (!stop_requested() && !engine.shut_down.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.seconds > 0 && elapsed >= options.seconds) break;
    if (int64_t(elapsed) > shown) {
      shown = int64_t(elapsed);
      const Figures now = read(engine);
      worst_ns = std::max(worst_ns, now.worst_ns);
      char label[32];
      std::snprintf(label, sizeof label, "%5lld s:", (long long)shown);
      report(now, last, label);
      last = now;
    }
  }
  Figures end = read(engine);
  end.worst_ns = std::max(worst_ns, end.worst_ns);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  client.reset();  // deactivate and close before the model goes
  std::printf("live summary: %.1f s, %lld buffers (%lld samples); ", elapsed,
              (long long)(end.callbacks - first.callbacks), (long long)(end.frames - first.frames));
  report(end, first, "");
  // A late callback is a missed buffer; JACK's xruns count the ones it saw (often the same
  // buffers, so the larger count, not the sum).
  std::printf("missed buffers: %lld\n", (long long)std::max(end.late - first.late, end.xruns - first.xruns));
  // Which of them were tempra's: its compute (CPU time against the deadline) and what its
  // callback did to its thread. A late callback whose CPU time was short waited on the machine.
  const int64_t deadline = engine.period_ns.load();
  const auto share = [deadline](const TimeHistogram& h, double q) {  // "median 52 us", "99% under 94 us"
    const double ns = h.quantile_ns(q, deadline);
    char text[48];
    const bool beyond = ns >= 2.0 * double(deadline);  // the last bin: a lower bound
    std::snprintf(text, sizeof text, "%s%s %.0f us", q == 0.5 ? "median" : "99%",
                  beyond ? " over" : (q == 0.5 ? "" : " under"), ns / 1e3);
    return std::string(text);
  };
  std::printf("callback time: %s, %s; CPU time: %s, %s\n", share(engine.wall, 0.5).c_str(),
              share(engine.wall, 0.99).c_str(), share(engine.cpu, 0.5).c_str(), share(engine.cpu, 0.99).c_str());
  std::printf("inside the callbacks: %lld page faults, %lld waits, %lld preemptions", (long long)engine.faults.load(),
              (long long)engine.waits.load(), (long long)engine.preemptions.load());
  const std::optional<double> steal_at_end = host_steal_seconds();
  if (steal_at_start && steal_at_end)
    std::printf("; the host took %.0f ms of CPU time from this machine (steal)",
                1e3 * (*steal_at_end - *steal_at_start));
  std::printf("\n");
  if (engine.shut_down.load()) {
    std::fprintf(stderr, "tempra amp --live: the JACK server shut down\n");
    return 1;
  }
  return 0;
}

}  // namespace tempra::app
