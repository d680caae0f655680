// bench/gemm_bench.cpp: f32 GEMM, tempra's native kernel against OpenBLAS, side by side.
//
// Not a test. Run with bench/run_gemm.sh, which sets OPENBLAS_CORETYPE (Debian's OpenBLAS
// otherwise picks its SSE3 kernel on this CPU: ../shared/MACHINE.md) and prints the
// tempra/OpenBLAS ratio per shape. Each benchmark is (m, n, k, threads); tempra runs on its own
// ThreadPool of that size, OpenBLAS with openblas_set_num_threads(threads).
//   square: c[m, n] = a[m, k] b[k, n], all row-major.
//   weights: c[m, n] = a[m, k] w[n, k]^T, the layout of a linear layer's weights (decode and
//   short prompts against large matrices: m = 1..32).
//   sweep: the square layout over m, n, k in 1..4096: m from 1 to 4096 against n = k = 1024 and
//   4096, and odd shapes (no multiple of the tile sizes, skinny k, n = 1); shapes already in
//   `square` are left out. Short MinTime so the whole binary stays within a few minutes.
//   weights_f16, weights_bf16: the weights layout with w stored as f16_t / bf16_t, tempra only
//   (OpenBLAS has no half-precision GEMM; run_gemm.sh sets them beside OpenBLAS's f32 weights).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <memory>
#include <random>
#include <type_traits>
#include <vector>

#include "tempra/backend/kernels.h"
#include "tempra/core/aligned_vector.h"
#include "tempra/core/half.h"

namespace {

// Operands on cache lines, as tempra's tensors are (core/storage.h): malloc's 16-byte alignment
// would split every 64-byte load across two lines, for both libraries.
struct Operands {
  tempra::AlignedVector<float> a, b, c;
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

// The 16-bit weight format W's rounding and its entry in a kernel table.
template <class W>
W narrow(float v) {
  if constexpr (std::is_same_v<W, tempra::f16_t>) return tempra::to_f16(v);
  else return tempra::to_bf16(v);
}
template <class W>
tempra::HalfWeightGemm<W> half_weight_gemm(const tempra::Kernels& table) {
  if constexpr (std::is_same_v<W, tempra::f16_t>) return table.gemm_f16_weights;
  else return table.gemm_bf16_weights;
}

// c[m, n] = a[m, k] w[n, k]^T with w in a 16-bit format, through tempra's native table.
template <class W>
void BM_tempra_half(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  tempra::ThreadPool pool(static_cast<int>(state.range(3)));
  Operands x(m, n, k);
  tempra::AlignedVector<W> w(x.b.size());  // w[j * k + p], the f32 b rounded
  for (size_t i = 0; i < w.size(); ++i) w[i] = narrow<W>(x.b[i]);
  const auto gemm = half_weight_gemm<W>(tempra::kernels_for(tempra::Backend::native));
  for (auto _ : state) {
    gemm(m, n, k, x.a.data(), k, w.data(), k, x.c.data(), n, pool);
    benchmark::DoNotOptimize(x.c.data());
  }
  set_flops(state, m, n, k);
}

void square_shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int64_t s : {64, 256, 512, 1024, 2048, 4096}) b->Args({s, s, s, threads});
  b->ArgNames({"m", "n", "k", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.3);
}

void weight_shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int64_t nk : {1024, 2048, 4096})
      for (int64_t m : {1, 2, 4, 8, 16, 32}) b->Args({m, nk, nk, threads});
  b->ArgNames({"m", "n", "k", "threads"})->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(0.2);
}

void sweep_shapes(benchmark::internal::Benchmark* b) {
  std::vector<std::vector<int64_t>> shapes;
  for (int64_t nk : {1024, 4096})
    for (int64_t m : {1, 2, 4, 8, 16, 32, 64, 256, 1024, 4096})
      if (m != nk) shapes.push_back({m, nk, nk});  // m == n == k is in `square`
  // Odd shapes: no multiple of a tile size, skinny k or n, a matrix-vector product (n = 1).
  shapes.insert(shapes.end(), {{127, 129, 1000}, {1000, 1000, 64}, {64, 1000, 1000}, {1000, 64, 1000},
                               {3, 4095, 1025}, {4096, 4096, 16}, {4096, 1, 4096}});
  for (int threads : {1, 2})
    for (const auto& s : shapes) b->Args({s[0], s[1], s[2], threads});
  b->ArgNames({"m", "n", "k", "threads"})->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(0.1);
}

void half_weight_shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int64_t nk : {2048, 4096})
      for (int64_t m : {1, 16, 32}) b->Args({m, nk, nk, threads});
  b->ArgNames({"m", "n", "k", "threads"})->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(0.2);
}

BENCHMARK(BM_tempra<false>)->Name("square/tempra")->Apply(square_shapes);
BENCHMARK(BM_openblas<false>)->Name("square/openblas")->Apply(square_shapes);
BENCHMARK(BM_tempra<true>)->Name("weights/tempra")->Apply(weight_shapes);
BENCHMARK(BM_openblas<true>)->Name("weights/openblas")->Apply(weight_shapes);
BENCHMARK(BM_tempra<false>)->Name("sweep/tempra")->Apply(sweep_shapes);
BENCHMARK(BM_openblas<false>)->Name("sweep/openblas")->Apply(sweep_shapes);
BENCHMARK(BM_tempra_half<tempra::f16_t>)->Name("weights_f16/tempra")->Apply(half_weight_shapes);
BENCHMARK(BM_tempra_half<tempra::bf16_t>)->Name("weights_bf16/tempra")->Apply(half_weight_shapes);

}  // namespace

int main(int argc, char** argv) {
  // Which kernel OpenBLAS picked (OPENBLAS_CORETYPE or its own CPU detection), in the output's context.
  benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
