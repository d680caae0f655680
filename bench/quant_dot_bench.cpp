// bench/quant_dot_bench.cpp: tempra's quantized row dots against ggml's own, side by side.
//
// Not a test. One thread computes y[j] = dot(w[j], a) for every row j of an n x k weight
// matrix: tempra's native arm (find_quant_dot(format, Backend::native)) against the vec_dot
// that llama.cpp itself runs on this CPU, taken from the oracle's libggml-cpu-zen4.so (the
// variant ggml's loader picks on an AVX-512 VNNI/BF16 machine like this one). Same encoded
// weights, same partner-quantized activation row, same loop. Reports weight GB/s: decode reads
// every weight once per token. 4096 x 4096 keeps the weights in the L3 (compute-bound rates);
// 16384 x 8192 does not (memory-bound).
//
// BM_gemm: tempra's quant_dot_gemm alone on one thread at a prefill shape (512 activation rows
// against Qwen3-0.6B's 1024 -> 3072 and 3072 -> 1024 weights; 32 rows, a short prompt, where
// packing the weights weighs most, against the first one and against 65536 x 1024 weights that
// do not fit the L3, as a model's do not), in multiply-adds per second; the
// arm is the first native one this build and CPU have (the avx2 preset's build runs the AVX2
// GEMMs on any x86 machine).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tempra/backend/kernels.h"
#include "tempra/backend/quant_dot.h"
#include "tempra/core/thread_pool.h"
#include "tempra/quant/formats.h"

extern "C" {
using ggml_vec_dot_t = void (*)(int n, float* s, size_t bs, const void* vx, size_t bx, const void* vy, size_t by,
                                int nrc);
void ggml_vec_dot_q8_0_q8_0(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q4_0_q8_0(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q4_K_q8_K(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q5_K_q8_K(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q6_K_q8_K(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_tq2_0_q8_K(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_f16(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_cpu_init(void);
}

namespace {

struct Rows {
  std::vector<uint8_t> weights, activation;
  size_t row_bytes;
};

Rows make_rows(const tempra::QuantDot& dot, int64_t n, int64_t k) {
  const auto& wf = *tempra::quant::find_format(dot.weight);
  const auto& af = *tempra::quant::find_format(dot.activation);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  std::vector<float> row(k);
  Rows r;
  r.row_bytes = dot.weight.bytes_for(k);
  r.weights.resize(r.row_bytes * n);
  for (int64_t j = 0; j < n; ++j) {
    for (auto& x : row) x = dist(rng);
    wf.quantize_row(row.data(), r.weights.data() + j * r.row_bytes, k);
  }
  for (auto& x : row) x = dist(rng);
  r.activation.resize(dot.activation.bytes_for(k));
  af.quantize_row(row.data(), r.activation.data(), k);
  return r;
}

void BM_dot(benchmark::State& state, const char* format, ggml_vec_dot_t ggml) {
  static const bool initialized = (ggml_cpu_init(), true);
  (void)initialized;
  const int64_t n = state.range(0), k = state.range(1);
  const bool use_ggml = state.range(2) != 0;
  const tempra::QuantDot* dot = tempra::find_quant_dot(tempra::quant::find_format(format)->dtype,
                                                       tempra::Backend::native);
  const Rows rows = make_rows(*dot, n, k);
  std::vector<float> y(n);
  for (auto _ : state) {
    for (int64_t j = 0; j < n; ++j) {
      const void* w = rows.weights.data() + j * rows.row_bytes;
      if (use_ggml) ggml(int(k), &y[j], 0, w, 0, rows.activation.data(), 0, 1);
      else y[j] = dot->dot(k, w, rows.activation.data());
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["weight_GB/s"] = benchmark::Counter(double(rows.weights.size()),
                                                     benchmark::Counter::kIsIterationInvariantRate,
                                                     benchmark::Counter::kIs1000);
  state.SetLabel(std::string(format) + (use_ggml ? " ggml (zen4)" : " tempra native"));
}

void BM_gemm(benchmark::State& state, const char* format) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const tempra::QuantDot& dot =
      *tempra::find_quant_dot(tempra::quant::find_format(format)->dtype, tempra::Backend::native);
  const Rows rows = make_rows(dot, n, k);
  std::vector<uint8_t> a(dot.activation.bytes_for(k) * m);
  for (int64_t i = 0; i < m; ++i)
    std::copy(rows.activation.begin(), rows.activation.end(), a.begin() + i * rows.activation.size());
  std::vector<float> c(m * n);
  tempra::ThreadPool pool(1);
  for (auto _ : state) {
    tempra::quant_dot_gemm(dot, m, n, k, a.data(), rows.weights.data(), c.data(), n, pool);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GMAC/s"] = benchmark::Counter(double(m * n * k), benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
  state.SetLabel(std::string(format) + " tempra native" + (dot.gemm != nullptr ? " gemm" : " dots"));
}

// BM_gemv: the same call at one activation row (decode), on `threads` threads, in weight GB/s:
// 1024 x 3072 stays in the L2/L3 (the kernel's compute rate), 151936 x 1024 (Qwen3's output
// head) does not (its memory rate). `arm` picks native::quant_dot_arms()[arm] (0: the one
// tempra runs; on an AVX-512 VNNI machine 1 is the AVX2 arm, side by side).
void BM_gemv(benchmark::State& state, const char* format) {
  const int64_t n = state.range(0), k = state.range(1);
  const auto arms = tempra::native::quant_dot_arms();
  const tempra::DType weight = tempra::quant::find_format(format)->dtype;
  const tempra::QuantDot* found = nullptr;
  if (size_t(state.range(3)) < arms.size())
    for (const tempra::QuantDot& d : arms[size_t(state.range(3))].dots)
      if (d.weight == weight) found = &d;
  if (found == nullptr) return state.SkipWithError("no such arm with this format");
  const tempra::QuantDot& dot = *found;
  const Rows rows = make_rows(dot, n, k);
  std::vector<float> c(n);
  tempra::ThreadPool pool(int(state.range(2)));
  for (auto _ : state) {
    tempra::quant_dot_gemm(dot, 1, n, k, rows.activation.data(), rows.weights.data(), c.data(), n, pool);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["weight_GB/s"] = benchmark::Counter(double(rows.weights.size()),
                                                     benchmark::Counter::kIsIterationInvariantRate,
                                                     benchmark::Counter::kIs1000);
  state.SetLabel(std::string(format) + " tempra " + arms[size_t(state.range(3))].name + " gemv");
}

// BM_gemv_half: a 16-bit float matrix's decode product, as BM_gemv. bf16: Kernels::
// gemm_bf16_products (the activation rounded to bf16: standard numerics) or gemm_bf16_weights
// (f32 activation: exact), both through the f32 dots on weights widened in registers
// (native/bf16_gemm_avx512.cpp says why); f16: gemm_f16_weights, the same dots. The weights
// start 32 bytes past a 64-byte boundary when `misaligned` (GGUF aligns tensor data to 32 bytes
// only).
enum class Half { bf16_products, bf16_widened, f16, ggml_f16 };
void BM_gemv_half(benchmark::State& state, Half half, bool misaligned) {
  const int64_t n = state.range(0), k = state.range(1);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(k), c(n);
  for (float& x : a) x = dist(rng);
  std::vector<uint16_t> storage(size_t(n * k) + 64);
  auto* base = reinterpret_cast<uint16_t*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) / 64 * 64);
  uint16_t* bits = base + (misaligned ? 16 : 0);
  auto* w_bf16 = reinterpret_cast<tempra::bf16_t*>(bits);
  auto* w_f16 = reinterpret_cast<tempra::f16_t*>(bits);
  for (int64_t i = 0; i < n * k; ++i)
    if (half == Half::f16 || half == Half::ggml_f16) w_f16[i] = tempra::to_f16(dist(rng));
    else w_bf16[i] = tempra::to_bf16(dist(rng));
  const tempra::Kernels& kernels = tempra::kernels_for(tempra::Backend::native);
  std::vector<tempra::f16_t> a_f16(k);
  for (int64_t p = 0; p < k; ++p) a_f16[p] = tempra::to_f16(a[p]);
  if (half == Half::ggml_f16 && state.range(2) != 1) return state.SkipWithError("ggml's dot runs on one thread here");
  static const bool initialized = (ggml_cpu_init(), true);
  (void)initialized;
  tempra::ThreadPool pool(int(state.range(2)));
  for (auto _ : state) {
    if (half == Half::ggml_f16)
      for (int64_t j = 0; j < n; ++j) ggml_vec_dot_f16(int(k), &c[j], 0, w_f16 + j * k, 0, a_f16.data(), 0, 1);
    else if (half == Half::bf16_products) kernels.gemm_bf16_products(1, n, k, a.data(), k, w_bf16, k, c.data(), n, pool);
    else if (half == Half::bf16_widened) kernels.gemm_bf16_weights(1, n, k, a.data(), k, w_bf16, k, c.data(), n, pool);
    else kernels.gemm_f16_weights(1, n, k, a.data(), k, w_f16, k, c.data(), n, pool);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["weight_GB/s"] = benchmark::Counter(double(n * k * 2), benchmark::Counter::kIsIterationInvariantRate,
                                                     benchmark::Counter::kIs1000);
  const char* names[] = {"bf16 products", "bf16 widened", "f16", "f16 ggml (zen4)"};
  state.SetLabel(std::string(names[int(half)]) + (misaligned ? ", 32-byte aligned" : ""));
}

void gemv_shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) b->Args({3072, 1024, threads, 0})->Args({151936, 1024, threads, 0});
  b->ArgNames({"n", "k", "threads", "arm"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_gemv, q8_0, "q8_0")->Apply(gemv_shapes);
BENCHMARK_CAPTURE(BM_gemv_half, bf16_products, Half::bf16_products, false)->Apply(gemv_shapes);
BENCHMARK_CAPTURE(BM_gemv_half, bf16_products_misaligned, Half::bf16_products, true)->Apply(gemv_shapes);
BENCHMARK_CAPTURE(BM_gemv_half, bf16_widened, Half::bf16_widened, false)->Apply(gemv_shapes);
BENCHMARK_CAPTURE(BM_gemv_half, f16, Half::f16, false)->Apply(gemv_shapes);
BENCHMARK_CAPTURE(BM_gemv_half, f16_ggml, Half::ggml_f16, false)->Apply(gemv_shapes);
BENCHMARK_CAPTURE(BM_gemv, q4_0, "q4_0")->Apply(gemv_shapes);
// The K-quants on every x86 arm (arm 1 skips where there is none).
void gemv_arm_shapes(benchmark::internal::Benchmark* b) {
  for (int arm : {0, 1})
    for (int threads : {1, 2}) b->Args({3072, 1024, threads, arm})->Args({151936, 1024, threads, arm});
  b->ArgNames({"n", "k", "threads", "arm"})->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK_CAPTURE(BM_gemv, q4_k, "q4_k")->Apply(gemv_arm_shapes);
BENCHMARK_CAPTURE(BM_gemv, q6_k, "q6_k")->Apply(gemv_arm_shapes);

void gemm_shapes(benchmark::internal::Benchmark* b) {
  b->Args({512, 3072, 1024})->Args({512, 1024, 3072})->Args({32, 3072, 1024})->Args({32, 65536, 1024});
  b->ArgNames({"m", "n", "k"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_gemm, q8_0, "q8_0")->Apply(gemm_shapes);
BENCHMARK_CAPTURE(BM_gemm, q4_0, "q4_0")->Apply(gemm_shapes);
BENCHMARK_CAPTURE(BM_gemm, q4_k, "q4_k")->Apply(gemm_shapes);
BENCHMARK_CAPTURE(BM_gemm, q6_k, "q6_k")->Apply(gemm_shapes);

void shapes(benchmark::internal::Benchmark* b) {
  for (int ggml : {0, 1}) b->Args({4096, 4096, ggml})->Args({16384, 8192, ggml});
  b->ArgNames({"n", "k", "ggml"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_dot, q8_0, "q8_0", ggml_vec_dot_q8_0_q8_0)->Apply(shapes);
BENCHMARK_CAPTURE(BM_dot, q4_0, "q4_0", ggml_vec_dot_q4_0_q8_0)->Apply(shapes);
BENCHMARK_CAPTURE(BM_dot, q4_k, "q4_k", ggml_vec_dot_q4_K_q8_K)->Apply(shapes);
BENCHMARK_CAPTURE(BM_dot, q5_k, "q5_k", ggml_vec_dot_q5_K_q8_K)->Apply(shapes);
BENCHMARK_CAPTURE(BM_dot, q6_k, "q6_k", ggml_vec_dot_q6_K_q8_K)->Apply(shapes);
BENCHMARK_CAPTURE(BM_dot, tq2_0, "tq2_0", ggml_vec_dot_tq2_0_q8_K)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
