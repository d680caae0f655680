// bench/bandwidth_bench.cpp: this machine's memory read bandwidth, the bound of a decode step.
//
// Not a test. A decode step reads every weight once per token, so its best speed is the read
// bandwidth divided by the bytes of weights and cache per token (issue 15's decode goal: within
// 90% of it where llama.cpp is already close). Each benchmark reads 2 GiB (far past the L3) on 1
// and 2 threads of tempra's pool, each thread a contiguous half; the machine's read bandwidth is
// the best of the ways below, since a CPU's prefetchers favour some patterns over others:
//   BM_read          four independent int64 sums, the loop the compiler vectorizes (the plain
//                    figure quoted before 2026-12-07);
//   BM_read_ahead    the same loop, each thread also requesting the line `ahead` bytes on
//                    (prefetcht0), as tempra's one-stream decode GEMVs do;
//   BM_read_streams  each thread's half cut into `streams` equal parts read side by side, a
//                    line of each in turn (a GEMV over that many rows at once).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "tempra/core/thread_pool.h"

namespace {

constexpr size_t kBytes = size_t(2) << 30;
constexpr int64_t kLine = 64 / sizeof(int64_t);  // int64s per cache line

// kBytes of ones, page-aligned so that each 64 bytes read is one cache line; touched once,
// shared by the runs.
std::span<const int64_t> data() {
  static const std::unique_ptr<int64_t, decltype(&std::free)> bytes = [] {
    std::unique_ptr<int64_t, decltype(&std::free)> p(static_cast<int64_t*>(std::aligned_alloc(4096, kBytes)),
                                                     &std::free);
    std::fill_n(p.get(), kBytes / sizeof(int64_t), int64_t(1));
    return p;
  }();
  return {bytes.get(), kBytes / sizeof(int64_t)};
}

// Runs read(p, count) over each thread's half and reports the rate over all of kBytes.
template <class Read>
void read_halves(benchmark::State& state, int threads, Read read) {
  const std::span<const int64_t> d = data();
  tempra::ThreadPool pool(threads);
  std::vector<int64_t> partial(threads);
  const int64_t chunk = int64_t(d.size()) / threads;
  for (auto _ : state) {
    pool.parallel_for(threads, 1, [&](int64_t first, int64_t last) {
      for (int64_t t = first; t < last; ++t) partial[t] = read(d.data() + t * chunk, chunk);
    });
    benchmark::DoNotOptimize(partial.data());
  }
  state.counters["read_GB/s"] =
      benchmark::Counter(double(kBytes), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

int64_t sum4(const int64_t* p, int64_t n) {
  int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int64_t i = 0; i < n; i += 4) {
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  return s0 + s1 + s2 + s3;
}

void BM_read(benchmark::State& state) {
  read_halves(state, int(state.range(0)), sum4);
}

void BM_read_ahead(benchmark::State& state) {
  const int64_t ahead = state.range(1) / int64_t(sizeof(int64_t));
  read_halves(state, int(state.range(0)), [ahead](const int64_t* p, int64_t n) {
    int64_t s = 0;
    for (int64_t i = 0; i < n; i += kLine) {
      // The address as an integer: it may lie past the data, which a prefetch never faults on.
      __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p + i) + ahead * 8), 0, 3);
      s += sum4(p + i, kLine);
    }
    return s;
  });
}

void BM_read_streams(benchmark::State& state) {
  const int64_t streams = state.range(1);
  read_halves(state, int(state.range(0)), [streams](const int64_t* p, int64_t n) {
    const int64_t part = n / streams;
    int64_t s = 0;
    for (int64_t i = 0; i < part; i += kLine)
      for (int64_t r = 0; r < streams; ++r) s += sum4(p + r * part + i, kLine);
    return s;
  });
}

BENCHMARK(BM_read)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_read_ahead)
    ->ArgsProduct({{1, 2}, {1024, 4096, 8192, 16384, 32768}})
    ->ArgNames({"threads", "ahead"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_read_streams)
    ->ArgsProduct({{1, 2}, {4, 16}})
    ->ArgNames({"threads", "streams"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
