// bench/quant_bench.cpp: quantized GEMV (m = 1) and small GEMM throughput, scalar vs native.
//
// Reports weight bytes streamed per second (the decode bound: every weight is read once per
// token) next to GFLOP-equivalent rates. Run with TEMPRA_THREADS=1 and =2 to compare with the
// machine's read bandwidth (shared/MACHINE.md: ~15 GB/s one core, ~29 GB/s two). Shapes:
// 4096 x 4096 (weights fit in this machine's 260 MiB L3) and 16384 x 16384 Q4_0 / 8192 x 32768
// Q8_0 (larger than L3: memory-bound).
#include <benchmark/benchmark.h>

#include "tempra/ops/ops.h"
#include "tempra/quant/formats.h"

namespace {

void BM_gemv_quantized(benchmark::State& state, const char* format, tempra::Backend backend) {
  tempra::ExecContext ctx(tempra::ExecOptions{.backend = backend});
  const int64_t n = state.range(0), k = state.range(1), m = state.range(2);
  const tempra::quant::QuantFormat& f = *tempra::quant::find_format(format);
  const tempra::Array w = tempra::quantize(ctx, tempra::normal(ctx, {n, k}), f.dtype);
  const tempra::Array x = tempra::normal(ctx, {m, k});
  for (auto _ : state) benchmark::DoNotOptimize(tempra::matmul_quantized(ctx, x, w));
  state.counters["weight_GB/s"] = benchmark::Counter(static_cast<double>(w.nbytes()),
                                                     benchmark::Counter::kIsIterationInvariantRate,
                                                     benchmark::Counter::kIs1000);
  state.counters["GMAC/s"] = benchmark::Counter(static_cast<double>(m * n * k) / 1e9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(format) + (backend == tempra::Backend::native ? " native" : " scalar") +
                 " threads=" + std::to_string(ctx.threads().size()));
}

void shapes(benchmark::internal::Benchmark* b) {
  b->Args({4096, 4096, 1})->Args({4096, 4096, 16})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_gemv_quantized, q8_0_scalar, "q8_0", tempra::Backend::scalar)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemv_quantized, q8_0_native, "q8_0", tempra::Backend::native)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemv_quantized, q4_0_scalar, "q4_0", tempra::Backend::scalar)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemv_quantized, q4_0_native, "q4_0", tempra::Backend::native)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemv_quantized, q4_k_scalar, "q4_k", tempra::Backend::scalar)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemv_quantized, q4_k_native, "q4_k", tempra::Backend::native)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemv_quantized, q5_k_scalar, "q5_k", tempra::Backend::scalar)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemv_quantized, q5_k_native, "q5_k", tempra::Backend::native)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemv_quantized, q6_k_scalar, "q6_k", tempra::Backend::scalar)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemv_quantized, q6_k_native, "q6_k", tempra::Backend::native)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemv_quantized, tq2_0_scalar, "tq2_0", tempra::Backend::scalar)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemv_quantized, tq2_0_native, "tq2_0", tempra::Backend::native)->Apply(shapes);
// Larger than the L3: the memory-bound decode case.
BENCHMARK_CAPTURE(BM_gemv_quantized, q8_0_native_dram, "q8_0", tempra::Backend::native)
    ->Args({8192, 32768, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_gemv_quantized, q4_0_native_dram, "q4_0", tempra::Backend::native)
    ->Args({16384, 16384, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
