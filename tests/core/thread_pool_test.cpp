// Tests for tempra/core/thread_pool.h: exact coverage of [0, n), the grain contract, stress with
// many tiny jobs, nesting, concurrent callers, exceptions, and the thread-count defaults.
//
// Nothing here sleeps to synchronize: every wait is a join, a parallel_for return, or an atomic.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tempra/core/exec_context.h"
#include "tempra/core/function_ref.h"
#include "tempra/core/thread_pool.h"

namespace {

using tempra::ThreadPool;

// Runs one parallel_for and checks every index in [0, n) was visited exactly once, ranges were
// non-empty, inside [0, n), and at least `grain` long except the one that ends at n.
void expect_exact_cover(ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  pool.parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    {
      std::lock_guard lock(m);
      ranges.emplace_back(begin, end);
    }
    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
  });
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i << " n=" << n << " grain=" << grain;
  }
  if (n == 0) {
    EXPECT_TRUE(ranges.empty()) << "an empty range must not call the body";
  }
  for (auto [b, e] : ranges) {
    ASSERT_LT(b, e) << "n=" << n << " grain=" << grain;
    ASSERT_GE(b, 0);
    ASSERT_LE(e, n);
    if (e != n) {
      ASSERT_GE(e - b, std::max<int64_t>(grain, 1)) << "short range [" << b << ", " << e << ")";
    }
  }
}

class ScopedEnv {
 public:
  explicit ScopedEnv(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) saved_ = v;
  }
  ~ScopedEnv() {
    if (saved_) setenv(name_, saved_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

TEST(CoreThreadPool, SizeCountsTheCallerAndIsAtLeastOne) {
  EXPECT_EQ(ThreadPool(1).size(), 1);
  EXPECT_EQ(ThreadPool(3).size(), 3);
  EXPECT_EQ(ThreadPool(0).size(), 1);
  EXPECT_EQ(ThreadPool(-4).size(), 1);
}

TEST(CoreThreadPool, ParallelForCoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 7, 8, 63, 64, 65, 1000, 4099, 100003}) {
      for (int64_t grain : {0, 1, 2, 7, 64, 1000, 50000, 200000}) {
        SCOPED_TRACE("threads=" + std::to_string(threads) + " n=" + std::to_string(n) +
                     " grain=" + std::to_string(grain));
        expect_exact_cover(pool, n, grain);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(CoreThreadPool, SmallRangesRunInlineOnTheCaller) {
  ThreadPool pool(4);
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  std::thread::id ran_on;
  // n < 2 * grain: one call covering everything, on the calling thread.
  pool.parallel_for(99, 50, [&](int64_t b, int64_t e) {
    ++calls;
    ran_on = std::this_thread::get_id();
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 99);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ran_on, caller);
  pool.parallel_for(0, 1, [&](int64_t, int64_t) { ++calls; });
  pool.parallel_for(-5, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 1) << "n <= 0 must not call the body";
}

// Many tiny jobs that really go through the pool (n >= 2 * grain): a lost wakeup or a worker
// that skips or repeats a generation shows up as a hang or a wrong total.
void stress_tiny_jobs(int threads, int jobs) {
  ThreadPool pool(threads);
  std::atomic<int64_t> covered{0};
  int64_t expected = 0;
  for (int j = 0; j < jobs; ++j) {
    const int64_t n = 2 + j % 15;  // 2..16 indices, grain 1: always dispatched to the workers
    expected += n;
    pool.parallel_for(n, 1, [&](int64_t b, int64_t e) { covered.fetch_add(e - b, std::memory_order_relaxed); });
  }
  EXPECT_EQ(covered.load(), expected);
}

TEST(CoreThreadPool, StressHundredThousandTinyJobsOnTwoThreads) { stress_tiny_jobs(2, 100000); }
TEST(CoreThreadPool, StressHundredThousandTinyJobsOnFourThreads) { stress_tiny_jobs(4, 100000); }

TEST(CoreThreadPool, NestedParallelForRunsInlineAndCompletes) {
  ThreadPool pool(4);
  constexpr int64_t kOuter = 64, kInner = 1000;
  std::vector<std::atomic<int>> hits(kOuter * kInner);
  std::atomic<int> foreign_inner{0};
  pool.parallel_for(kOuter, 1, [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o) {
      const auto outer_thread = std::this_thread::get_id();
      pool.parallel_for(kInner, 1, [&](int64_t ib, int64_t ie) {
        if (std::this_thread::get_id() != outer_thread) ++foreign_inner;
        for (int64_t i = ib; i < ie; ++i) hits[static_cast<size_t>(o * kInner + i)].fetch_add(1);
      });
    }
  });
  for (size_t k = 0; k < hits.size(); ++k) ASSERT_EQ(hits[k].load(), 1) << k;
  EXPECT_EQ(foreign_inner.load(), 0) << "a nested parallel_for must run inline on the body's thread";
}

TEST(CoreThreadPool, ConcurrentCallersFromTwoThreadsBothGetFullCoverage) {
  ThreadPool pool(3);
  std::atomic<int> failures{0};
  auto caller = [&](int seed) {
    for (int j = 0; j < 2000; ++j) {
      const int64_t n = 1 + (j * 37 + seed) % 300;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, 4, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
      for (auto& h : hits)
        if (h.load() != 1) ++failures;
    }
  };
  std::thread a(caller, 1), b(caller, 2);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  expect_exact_cover(pool, 10000, 16);  // still healthy
}

TEST(CoreThreadPool, ExceptionIsRethrownAfterTheJoinAndPoolStillWorks) {
  for (int threads : {1, 2, 4}) {
    SCOPED_TRACE(threads);
    ThreadPool pool(threads);
    std::atomic<int> in_flight{0}, ran{0}, covered{0};
    try {
      pool.parallel_for(1000, 1, [&](int64_t b, int64_t e) {
        ++in_flight;
        ++ran;
        for (int64_t i = b; i < e; ++i) covered.fetch_add(1);  // work that takes a while
        const bool boom = b <= 500 && 500 < e;
        --in_flight;
        if (boom) throw std::runtime_error("boom at 500");
      });
      ADD_FAILURE() << "the body's exception was swallowed";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "boom at 500");
      EXPECT_EQ(in_flight.load(), 0) << "rethrown before every chunk finished";
    }
    EXPECT_GE(ran.load(), 1);
    // Several chunks throwing: exactly one exception reaches the caller.
    EXPECT_THROW(pool.parallel_for(1000, 1, [](int64_t, int64_t) { throw std::logic_error("every chunk"); }),
                 std::logic_error);
    // Inline path too.
    EXPECT_THROW(pool.parallel_for(3, 100, [](int64_t, int64_t) { throw std::runtime_error("inline"); }),
                 std::runtime_error);
    expect_exact_cover(pool, 5000, 7);
  }
}

TEST(CoreThreadPool, DestroyingIdleAndJustUsedPoolsDoesNotHang) {
  for (int i = 0; i < 50; ++i) {
    { ThreadPool idle(4); }
    ThreadPool used(3);
    std::atomic<int64_t> sum{0};
    used.parallel_for(64, 1, [&](int64_t b, int64_t e) { sum += e - b; });
    EXPECT_EQ(sum.load(), 64);
  }
}

TEST(CoreFunctionRef, CallsTheReferencedCallableInPlace) {
  int counter = 0;
  auto add = [&counter](int64_t a, int64_t b) { counter += static_cast<int>(b - a); };
  const tempra::FunctionRef<void(int64_t, int64_t)> ref(add);
  ref(2, 5);
  ref(0, 1);
  EXPECT_EQ(counter, 4);  // the lambda's captured state, not a copy
  // A mutable callable is called by reference: its own state advances.
  auto next = [n = 0]() mutable { return ++n; };
  const tempra::FunctionRef<int()> gen(next);
  EXPECT_EQ(gen(), 1);
  EXPECT_EQ(gen(), 2);
  EXPECT_EQ(next(), 3);
  // Plain functions and return-type conversion.
  double (*fp)(int) = [](int x) { return x / 2.0; };
  const tempra::FunctionRef<double(int)> half_of(fp);  // refers to fp, which outlives it
  EXPECT_EQ(half_of(7), 3.5);
}

TEST(CoreThreadPool, PhysicalCoreCountIsPositive) {
  const int cores = ThreadPool::physical_core_count();
  EXPECT_GE(cores, 1);
  const unsigned logical = std::thread::hardware_concurrency();
  if (logical > 0) {
    EXPECT_LE(cores, static_cast<int>(logical));
  }
}

TEST(CoreThreadPool, DefaultThreadCountHonorsTempraThreadsAndFallsBackOnInvalidValues) {
  ScopedEnv guard("TEMPRA_THREADS");
  const int physical = ThreadPool::physical_core_count();
  setenv("TEMPRA_THREADS", "3", 1);
  EXPECT_EQ(ThreadPool::default_thread_count(), 3);
  setenv("TEMPRA_THREADS", "1", 1);
  EXPECT_EQ(ThreadPool::default_thread_count(), 1);
  setenv("TEMPRA_THREADS", "1024", 1);
  EXPECT_EQ(ThreadPool::default_thread_count(), 1024);
  for (const char* bad : {"0", "-2", "abc", "3x", "", " ", "1025", "99999999999999999999"}) {
    setenv("TEMPRA_THREADS", bad, 1);
    EXPECT_EQ(ThreadPool::default_thread_count(), physical) << "TEMPRA_THREADS='" << bad << "'";
  }
  unsetenv("TEMPRA_THREADS");
  EXPECT_EQ(ThreadPool::default_thread_count(), physical);
  // An ExecContext with threads = 0 takes the default.
  setenv("TEMPRA_THREADS", "3", 1);
  tempra::ExecContext ctx;
  EXPECT_EQ(ctx.threads().size(), 3);
  tempra::ExecContext explicit_ctx(tempra::ExecOptions{.threads = 2});
  EXPECT_EQ(explicit_ctx.threads().size(), 2);
}

}  // namespace
