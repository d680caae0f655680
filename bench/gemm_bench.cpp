// bench/gemm_bench.cpp: f32 GEMM, tempra's native kernel against OpenBLAS, side by side.
//
// Not a test. Run with bench/run_gemm.sh, which sets OPENBLAS_CORETYPE (Debian's OpenBLAS
// otherwise picks its SSE3 kernel on this CPU: ../shared/MACHINE.md) and prints the
// tempra/OpenBLAS ratio per shape. Each benchmark is (m, n, k, threads); tempra runs on its own
// ThreadPool of that size, OpenBLAS with openblas_set_num_threads(threads).
//   square: c[m, n] = a[m, k] b[k, n], all row-major.
//   weights: c[m, n] = a[m, k] w[n, k]^T, the layout of a linear layer's weights (decode and
//   short prompts against large matrices: m = 1..32).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <memory>
#include <random>
#include <vector>

#include "tempra/backend/kernels.h"

namespace {

struct Operands {
  std::vector<float> a, b, c;
  Operands(int64_t m, int64_t n, int64_t k) : a(m * k), b(k * n), c(m * n) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (auto& x : a) x = dist(rng);
    for (auto& x : b) x = dist(rng);
  }
};

void set_flops(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  state.counters["GFLOP/s"] = benchmark::Counter(2e-9 * double(m) * double(n) * double(k),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

template <bool kWeights>
void BM_tempra(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  tempra::ThreadPool pool(static_cast<int>(state.range(3)));
  Operands x(m, n, k);
  const auto& gemm = tempra::kernels_for(tempra::Backend::native).f32.gemm;
  // weights: b(p, j) = w[j * k + p]
  const int64_t b_row = kWeights ? 1 : n, b_col = kWeights ? k : 1;
  for (auto _ : state) {
    gemm(m, n, k, x.a.data(), k, 1, x.b.data(), b_row, b_col, x.c.data(), n, pool);
    benchmark::DoNotOptimize(x.c.data());
  }
  set_flops(state, m, n, k);
}

template <bool kWeights>
void BM_openblas(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  openblas_set_num_threads(static_cast<int>(state.range(3)));
  Operands x(m, n, k);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, kWeights ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0f,
                x.a.data(), int(k), x.b.data(), kWeights ? int(k) : int(n), 0.0f, x.c.data(), int(n));
    benchmark::DoNotOptimize(x.c.data());
  }
  set_flops(state, m, n, k);
}

void square_shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int64_t s : {64, 256, 512, 1024, 2048, 4096}) b->Args({s, s, s, threads});
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.3);
}

void weight_shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int64_t nk : {1024, 2048, 4096})
      for (int64_t m : {1, 2, 4, 8, 16, 32}) b->Args({m, nk, nk, threads});
  b->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(0.2);
}

BENCHMARK(BM_tempra<false>)->Name("square/tempra")->Apply(square_shapes);
BENCHMARK(BM_openblas<false>)->Name("square/openblas")->Apply(square_shapes);
BENCHMARK(BM_tempra<true>)->Name("weights/tempra")->Apply(weight_shapes);
BENCHMARK(BM_openblas<true>)->Name("weights/openblas")->Apply(weight_shapes);

}  // namespace

BENCHMARK_MAIN();
