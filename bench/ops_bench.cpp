// bench/ops_bench.cpp: Google Benchmark timings of scalar-backend ops and pool dispatch.
//
// Not a test: run by hand (cmake -DTEMPRA_BUILD_BENCH=ON, then build/<preset>/bench/ops_bench).
// These are the scalar reference kernels; the native backend and its OpenBLAS comparison come
// with their own issue. Threads follow TEMPRA_THREADS (default: physical cores); rates use
// wall-clock time, since the work runs on several threads.
#include <benchmark/benchmark.h>

#include "tempra/ops/ops.h"

namespace {

tempra::ExecContext& context() {
  static tempra::ExecContext ctx;
  return ctx;
}

void BM_matmul_square(benchmark::State& state) {
  auto& ctx = context();
  const int64_t n = state.range(0);
  const tempra::Array a = tempra::normal(ctx, {n, n}), b = tempra::normal(ctx, {n, n});
  for (auto _ : state) benchmark::DoNotOptimize(tempra::matmul(ctx, a, b));
  // Printed with SI suffixes: "12.3G" is 12.3 GFLOP/s.
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n * n * n),
                                                benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}
BENCHMARK(BM_matmul_square)->Arg(64)->Arg(256)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_softmax_rows(benchmark::State& state) {
  auto& ctx = context();
  const tempra::Array x = tempra::normal(ctx, {256, state.range(0)});
  for (auto _ : state) benchmark::DoNotOptimize(tempra::softmax(ctx, x));
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(BM_softmax_rows)->Arg(1024)->Arg(32000)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_add_broadcast(benchmark::State& state) {
  auto& ctx = context();
  const tempra::Array a = tempra::normal(ctx, {state.range(0), 1024}), b = tempra::normal(ctx, {1024});
  for (auto _ : state) benchmark::DoNotOptimize(tempra::add(ctx, a, b));
  state.SetBytesProcessed(state.iterations() * a.numel() * 8);
}
BENCHMARK(BM_add_broadcast)->Arg(1)->Arg(1024)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Fork-join latency of an (almost) empty parallel_for split across every thread.
void BM_parallel_for_dispatch(benchmark::State& state) {
  auto& pool = context().threads();
  for (auto _ : state) pool.parallel_for(pool.size() * 2, 1, [](int64_t, int64_t) {});
}
BENCHMARK(BM_parallel_for_dispatch)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
