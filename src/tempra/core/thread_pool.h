// tempra/core/thread_pool.h: persistent fork-join workers for data-parallel kernels.
//
// Contract:
// - parallel_for(n, grain, body) calls body(begin, end) over disjoint ranges covering [0, n)
//   and returns when all have run. The calling thread works too. Ranges are at least `grain`
//   long (except the last); below 2 * grain the whole range runs inline, so tiny ops pay nothing.
// - Results must not depend on how [0, n) is cut: kernels give each output element one owner
//   and a fixed accumulation order, which is why every op is bitwise identical for 1 and N
//   threads. The pool promises nothing about which thread runs which range.
// - Workers spin briefly after a job (decode-sized work arrives every few microseconds and a
//   futex wake costs more than that), then park on an atomic wait so an idle pool burns no CPU.
// - A parallel_for issued from inside a body, or while another thread owns the pool, runs
//   inline: nesting never deadlocks. The first exception thrown by a body is rethrown to the
//   caller after the join.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "tempra/core/function_ref.h"

namespace tempra {

class ThreadPool {
 public:
  using Body = FunctionRef<void(int64_t, int64_t)>;

  // n_threads counts the caller: 1 means no workers.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  void parallel_for(int64_t n, int64_t grain, Body body);
  // How many parallel_for calls were actually split across workers (tests use it to prove a
  // determinism check exercised more than one thread).
  int64_t split_jobs() const { return split_jobs_.load(std::memory_order_relaxed); }

  // Threads to use when nobody says: TEMPRA_THREADS if set and valid, else physical cores.
  static int default_thread_count();
  static int physical_core_count();

 private:
  struct Job;
  void worker_loop();
  void run_chunks(Job& job);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex submit_mutex_;        // one job at a time
  std::atomic<uint64_t> generation_{0};
  std::atomic<Job*> job_{nullptr};
  std::atomic<int> active_workers_{0};  // workers inside the current job
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> split_jobs_{0};
};

}  // namespace tempra
