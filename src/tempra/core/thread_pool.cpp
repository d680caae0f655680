// tempra/core/thread_pool.cpp
#include "tempra/core/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TEMPRA_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define TEMPRA_CPU_RELAX() asm volatile("yield")
#else
#define TEMPRA_CPU_RELAX() ((void)0)
#endif

namespace tempra {

struct ThreadPool::Job {
  Job(Body b, int64_t count, int64_t chunk_size, uint64_t gen) : body(b), n(count), chunk(chunk_size), generation(gen) {}
  Body body;
  int64_t n;
  int64_t chunk;
  uint64_t generation;
  std::atomic<int64_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
};

namespace {
thread_local bool inside_parallel_body = false;
// ~50 microseconds of polling before a worker parks.
constexpr int kSpinIterations = 20000;

// One poll of a spin-wait. Every kYieldEvery polls the thread yields its core: when the pool has
// more threads than free cores, the thread being waited for may be runnable but not running, and
// a pure pause loop would hold the core until the scheduler preempts it (milliseconds per job).
constexpr int kYieldEvery = 64;
inline void spin_wait_step(int spin) {
  if (spin % kYieldEvery == kYieldEvery - 1) std::this_thread::yield();
  else TEMPRA_CPU_RELAX();
}
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_chunks(Job& job) {
  const bool was_inside = std::exchange(inside_parallel_body, true);
  for (;;) {
    const int64_t begin = job.next.fetch_add(job.chunk);
    if (begin >= job.n) break;
    try {
      job.body(begin, std::min(job.n, begin + job.chunk));
    } catch (...) {
      std::lock_guard lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
    }
  }
  inside_parallel_body = was_inside;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    uint64_t now = generation_.load(std::memory_order_acquire);
    for (int spin = 0; now == seen && spin < kSpinIterations; ++spin) {
      spin_wait_step(spin);
      now = generation_.load(std::memory_order_acquire);
    }
    if (now == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      continue;
    }
    seen = now;
    if (stopping_.load()) return;
    // Announce ourselves before looking at the job: the caller waits for every announced worker
    // before its Job leaves scope, and a worker that announces too late finds no job (or a newer
    // one, which it skips). A worker that sleeps through a job is never waited for, so one
    // descheduled thread cannot stall a caller on a loaded machine.
    active_workers_.fetch_add(1);
    Job* job = job_.load();
    if (job && job->generation == seen) run_chunks(*job);
    active_workers_.fetch_sub(1);
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, Body body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (n_threads_ == 1 || n < 2 * grain || inside_parallel_body) {
    body(0, n);
    return;
  }
  std::unique_lock lock(submit_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {  // another thread is using the pool: do our share alone
    body(0, n);
    return;
  }
  // About four chunks per thread balances uneven rows without many atomic grabs.
  const int64_t chunks_wanted = static_cast<int64_t>(n_threads_) * 4;
  const uint64_t generation = generation_.load() + 1;  // only this thread (holding the lock) bumps it
  Job job(body, n, std::max(grain, (n + chunks_wanted - 1) / chunks_wanted), generation);
  split_jobs_.fetch_add(1, std::memory_order_relaxed);
  job_.store(&job);
  generation_.store(generation);
  generation_.notify_all();
  run_chunks(job);  // returns once every chunk is claimed; workers may still run theirs
  job_.store(nullptr);
  for (int spin = 0; active_workers_.load() != 0; ++spin) spin_wait_step(spin);
  if (job.error) std::rethrow_exception(job.error);
}

int ThreadPool::physical_core_count() {
  // Count distinct (package, core) pairs: SMT siblings share a core and its FMA units.
  std::set<std::pair<std::string, std::string>> cores;
  for (unsigned cpu = 0; cpu < 4096; ++cpu) {
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream core(base + "core_id"), package(base + "physical_package_id");
    if (!core) {
      if (cpu > 0) break;
      continue;
    }
    std::string c, p;
    core >> c;
    package >> p;
    cores.emplace(p, c);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  return std::max(1u, std::thread::hardware_concurrency());
}

int ThreadPool::default_thread_count() {
  if (const char* env = std::getenv("TEMPRA_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1 && v <= 1024) return static_cast<int>(v);
  }
  return physical_core_count();
}

}  // namespace tempra
