// bench/bandwidth_bench.cpp: this machine's memory read bandwidth, the bound of a decode step.
//
// Not a test. A decode step reads every weight once per token, so its best speed is the read
// bandwidth divided by the bytes of weights and cache per token (issue 15's decode goal: within
// 90% of it where llama.cpp is already close). The benchmark sums 2 GiB of int64 (far past the
// L3) on 1 and 2 threads of tempra's pool, each thread a contiguous half, four independent sums
// per thread so the adds never wait on each other; the compiler vectorizes the loop.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "tempra/core/thread_pool.h"

namespace {

void BM_read(benchmark::State& state) {
  const int threads = int(state.range(0));
  constexpr size_t kBytes = size_t(2) << 30;
  static std::vector<int64_t> data(kBytes / sizeof(int64_t), 1);  // touched once, shared by the runs
  tempra::ThreadPool pool(threads);
  std::vector<int64_t> partial(threads);
  const int64_t chunk = int64_t(data.size()) / threads;
  for (auto _ : state) {
    pool.parallel_for(threads, 1, [&](int64_t first, int64_t last) {
      for (int64_t t = first; t < last; ++t) {
        const int64_t* p = data.data() + t * chunk;
        int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (int64_t i = 0; i < chunk; i += 4) {
          s0 += p[i];
          s1 += p[i + 1];
          s2 += p[i + 2];
          s3 += p[i + 3];
        }
        partial[t] = s0 + s1 + s2 + s3;
      }
    });
    benchmark::DoNotOptimize(partial.data());
  }
  state.counters["read_GB/s"] =
      benchmark::Counter(double(kBytes), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

BENCHMARK(BM_read)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
