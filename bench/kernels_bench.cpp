// bench/kernels_bench.cpp: every kernel family through both tables, scalar and native, side by side.
//
// Not a test. Run with bench/run_kernels.sh, which prints native's speedup over scalar per
// kernel, shape and thread count. The kernels are called directly (no op layer, no allocation in
// the timed loop) on seeded random f32 data. Each kernel body is written once and registered for
// both tables as `<kernel>/<backend>/<shape args>/threads:<n>`; the pool has that many threads
// for either backend. Rates use wall-clock time, since the work runs on several threads:
// elementwise, reduction and normalization kernels report elements (items) and bytes moved,
// attention and the half-weight GEMMs report GFLOP/s.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tempra/backend/kernels.h"

namespace {

using tempra::Kernels;
using tempra::TensorRef;

std::vector<float> random_floats(int64_t count, float lo = -4.0f, float hi = 4.0f, uint32_t seed = 42) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(static_cast<size_t>(count));
  for (auto& x : values) x = dist(rng);
  return values;
}

TensorRef<const float> contiguous(const std::vector<float>& x, tempra::Dims shape) {
  tempra::Dims strides = shape;
  int64_t step = 1;
  for (int d = shape.size() - 1; d >= 0; --d) {
    strides[d] = step;
    step *= shape[d];
  }
  return {x.data(), shape, strides};
}

TensorRef<float> contiguous(std::vector<float>& x, tempra::Dims shape) {
  const TensorRef<const float> view = contiguous(static_cast<const std::vector<float>&>(x), shape);
  return {x.data(), view.shape, view.strides};
}

// Per-iteration element and byte counts, turned into rates by Google Benchmark.
void set_traffic(benchmark::State& state, int64_t elements, int64_t bytes) {
  state.SetItemsProcessed(state.iterations() * elements);
  state.SetBytesProcessed(state.iterations() * bytes);
}

void set_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(1e-9 * flops_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}

int threads_of(const benchmark::State& state, int index) { return static_cast<int>(state.range(index)); }

// The body of one kernel's benchmark, run against one table.
using KernelBody = std::function<void(benchmark::State&, const Kernels&)>;

// Registers `body` as "<kernel>/scalar" and "<kernel>/native" with the same argument sets: each
// entry of `shapes` followed by each thread count (1, 2), named by `arg_names` (threads last).
void register_both(const std::string& kernel, const std::vector<std::vector<int64_t>>& shapes,
                   std::vector<std::string> arg_names, KernelBody body,
                   benchmark::TimeUnit unit = benchmark::kMicrosecond) {
  arg_names.push_back("threads");
  const struct {
    const char* name;
    const Kernels* table;
  } backends[] = {{"scalar", &tempra::scalar_kernels()},
                  {"native", &tempra::kernels_for(tempra::Backend::native)}};
  for (const auto& backend : backends) {
    const std::string name = kernel + "/" + backend.name;
    auto* b = benchmark::RegisterBenchmark(name.c_str(), [body, table = backend.table](benchmark::State& state) {
      body(state, *table);
    });
    for (const auto& shape : shapes)
      for (int64_t threads : {1, 2}) {
        std::vector<int64_t> args = shape;
        args.push_back(threads);
        b->Args(args);
      }
    b->ArgNames(arg_names)->Unit(unit)->UseRealTime();
  }
}

// ---- elementwise ---------------------------------------------------------------------------

void register_unary(const char* kernel, tempra::UnaryOp op, float lo, float hi) {
  register_both(kernel, {{256, 4096}}, {"rows", "n"}, [op, lo, hi](benchmark::State& state, const Kernels& kernels) {
    const int64_t rows = state.range(0), n = state.range(1);
    tempra::ThreadPool pool(threads_of(state, 2));
    const std::vector<float> in = random_floats(rows * n, lo, hi);
    std::vector<float> out(in.size());
    const auto in_ref = contiguous(in, {rows, n});
    const auto out_ref = contiguous(out, {rows, n});
    for (auto _ : state) {
      kernels.f32.unary(op, in_ref, out_ref, pool);
      benchmark::DoNotOptimize(out.data());
    }
    set_traffic(state, rows * n, rows * n * 2 * int64_t(sizeof(float)));
  });
}

// a [rows, n] op b [n], b broadcast down the rows (strides {0, 1}).
void register_binary_row_broadcast(const char* kernel, tempra::BinaryOp op) {
  register_both(kernel, {{256, 4096}}, {"rows", "n"}, [op](benchmark::State& state, const Kernels& kernels) {
    const int64_t rows = state.range(0), n = state.range(1);
    tempra::ThreadPool pool(threads_of(state, 2));
    const std::vector<float> a = random_floats(rows * n), b = random_floats(n, -4, 4, 7);
    std::vector<float> out(a.size());
    const auto a_ref = contiguous(a, {rows, n});
    const TensorRef<const float> b_ref{b.data(), {rows, n}, {0, 1}};
    const auto out_ref = contiguous(out, {rows, n});
    for (auto _ : state) {
      kernels.f32.binary(op, a_ref, b_ref, out_ref, pool);
      benchmark::DoNotOptimize(out.data());
    }
    set_traffic(state, rows * n, (rows * n * 2 + n) * int64_t(sizeof(float)));
  });
}

// ---- reductions and row-wise kernels -------------------------------------------------------

// Sum over the middle axis of a contiguous [outer, n, inner] block.
void register_reduce_sum() {
  register_both("reduce_sum", {{256, 4096, 1}, {64, 256, 64}}, {"outer", "n", "inner"},
                [](benchmark::State& state, const Kernels& kernels) {
    const int64_t outer = state.range(0), n = state.range(1), inner = state.range(2);
    tempra::ThreadPool pool(threads_of(state, 3));
    const std::vector<float> in = random_floats(outer * n * inner);
    std::vector<float> out(static_cast<size_t>(outer * inner));
    for (auto _ : state) {
      kernels.f32.reduce(tempra::ReduceOp::sum, in.data(), outer, n, inner, 0, out.data(), pool);
      benchmark::DoNotOptimize(out.data());
    }
    set_traffic(state, outer * n * inner, (outer * n * inner + outer * inner) * int64_t(sizeof(float)));
  });
}

void register_softmax() {
  register_both("softmax", {{256, 4096}, {32, 151936}}, {"rows", "n"},
                [](benchmark::State& state, const Kernels& kernels) {
    const int64_t rows = state.range(0), n = state.range(1);
    tempra::ThreadPool pool(threads_of(state, 2));
    const std::vector<float> in = random_floats(rows * n);
    std::vector<float> out(in.size());
    const auto in_ref = contiguous(in, {rows, n});
    const tempra::SoftmaxArgs<float> args;
    for (auto _ : state) {
      kernels.f32.softmax(in_ref, args, out.data(), pool);
      benchmark::DoNotOptimize(out.data());
    }
    set_traffic(state, rows * n, rows * n * 2 * int64_t(sizeof(float)));
  });
}

void register_cross_entropy() {
  register_both("cross_entropy", {{64, 32000}}, {"rows", "classes"},
                [](benchmark::State& state, const Kernels& kernels) {
    const int64_t rows = state.range(0), classes = state.range(1);
    tempra::ThreadPool pool(threads_of(state, 2));
    const std::vector<float> logits = random_floats(rows * classes);
    std::vector<int64_t> targets(static_cast<size_t>(rows));
    std::mt19937 rng(3);
    for (auto& t : targets) t = std::uniform_int_distribution<int64_t>(0, classes - 1)(rng);
    std::vector<float> loss(static_cast<size_t>(rows));
    for (auto _ : state) {
      kernels.f32.cross_entropy(logits.data(), rows, classes, targets.data(), -100, loss.data(), pool);
      benchmark::DoNotOptimize(loss.data());
    }
    set_traffic(state, rows * classes, rows * classes * int64_t(sizeof(float)));
  });
}

void register_norms() {
  register_both("rms_norm", {{512, 1024}}, {"rows", "n"}, [](benchmark::State& state, const Kernels& kernels) {
    const int64_t rows = state.range(0), n = state.range(1);
    tempra::ThreadPool pool(threads_of(state, 2));
    const std::vector<float> in = random_floats(rows * n), weight = random_floats(n, 0.5f, 1.5f, 5);
    std::vector<float> out(in.size());
    for (auto _ : state) {
      kernels.f32.rms_norm(in.data(), rows, n, weight.data(), 1e-6, out.data(), pool);
      benchmark::DoNotOptimize(out.data());
    }
    set_traffic(state, rows * n, rows * n * 2 * int64_t(sizeof(float)));
  });
  register_both("layer_norm", {{512, 1024}}, {"rows", "n"}, [](benchmark::State& state, const Kernels& kernels) {
    const int64_t rows = state.range(0), n = state.range(1);
    tempra::ThreadPool pool(threads_of(state, 2));
    const std::vector<float> in = random_floats(rows * n), weight = random_floats(n, 0.5f, 1.5f, 5),
                             bias = random_floats(n, -0.5f, 0.5f, 6);
    std::vector<float> out(in.size());
    for (auto _ : state) {
      kernels.f32.layer_norm(in.data(), rows, n, weight.data(), bias.data(), 1e-5, out.data(), pool);
      benchmark::DoNotOptimize(out.data());
    }
    set_traffic(state, rows * n, rows * n * 2 * int64_t(sizeof(float)));
  });
}

// ---- transformer kernels -------------------------------------------------------------------

// NeoX rope over x [1, seq, heads, head_dim], every dimension rotated, positions 0..seq-1.
void register_rope() {
  register_both("rope_neox", {{512, 16, 128}}, {"seq", "heads", "head_dim"},
                [](benchmark::State& state, const Kernels& kernels) {
    const int64_t seq = state.range(0), heads = state.range(1), head_dim = state.range(2);
    tempra::ThreadPool pool(threads_of(state, 3));
    const std::vector<float> in = random_floats(seq * heads * head_dim);
    std::vector<float> out(in.size());
    std::vector<int32_t> positions(static_cast<size_t>(seq));
    for (int64_t i = 0; i < seq; ++i) positions[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    tempra::RopeParams params;
    params.mode = tempra::RopeMode::neox;
    params.n_dims = head_dim;
    params.freq_base = 1e6;
    for (auto _ : state) {
      kernels.f32.rope(in.data(), 1, seq, heads, head_dim, positions.data(), params, out.data(), pool);
      benchmark::DoNotOptimize(out.data());
    }
    set_traffic(state, seq * heads * head_dim, seq * heads * head_dim * 2 * int64_t(sizeof(float)));
  });
}

// Causal grouped-query attention, batch 1, no mask: Qwen3-0.6B's heads (16 query, 8 kv, 128 wide).
// GFLOP/s counts q.k and p.v over the keys each query actually sees (2 * 2 * head_dim each).
void register_attention(const char* kernel, int64_t q_len, int64_t kv_len) {
  register_both(kernel, {{16, 8, 128, q_len, kv_len}}, {"q_heads", "kv_heads", "head_dim", "q_len", "kv_len"},
                [](benchmark::State& state, const Kernels& kernels) {
    const tempra::AttentionShape shape{1,           state.range(0), state.range(1), state.range(3),
                                       state.range(4), state.range(2), state.range(2)};
    tempra::ThreadPool pool(threads_of(state, 5));
    const std::vector<float> q = random_floats(shape.q_heads * shape.q_len * shape.head_dim, -1, 1, 11),
                             k = random_floats(shape.kv_heads * shape.kv_len * shape.head_dim, -1, 1, 12),
                             v = random_floats(shape.kv_heads * shape.kv_len * shape.value_dim, -1, 1, 13);
    std::vector<float> scores(static_cast<size_t>(shape.q_heads * shape.q_len * shape.kv_len));
    std::vector<float> out(static_cast<size_t>(shape.q_heads * shape.q_len * shape.value_dim));
    const double scale = 1.0 / std::sqrt(static_cast<double>(shape.head_dim));
    for (auto _ : state) {
      kernels.f32.attention(q.data(), k.data(), v.data(), shape, {}, true, scale, scores.data(), out.data(), pool);
      benchmark::DoNotOptimize(out.data());
    }
    int64_t visible_keys = 0;  // summed over query positions; causal, the last query sees every key
    for (int64_t i = 0; i < shape.q_len; ++i) visible_keys += i + (shape.kv_len - shape.q_len) + 1;
    set_flops(state, 2.0 * double(shape.head_dim + shape.value_dim) * double(shape.q_heads * visible_keys));
  });
}

// Attention over an f16 KV cache read in place (cache_attention_f16, a forward pass's kernel):
// Qwen3-0.6B's heads, the last 512-token chunk of a 2048-token prompt and one decode step at a
// depth of 4096. Same GFLOP/s count as above.
void register_cache_attention(const char* kernel, int64_t q_len, int64_t kv_len) {
  register_both(kernel, {{16, 8, 128, q_len, kv_len}}, {"q_heads", "kv_heads", "head_dim", "q_len", "kv_len"},
                [](benchmark::State& state, const Kernels& kernels) {
    const int64_t q_heads = state.range(0), kv_heads = state.range(1), D = state.range(2), q_len = state.range(3),
                  kv_len = state.range(4);
    tempra::ThreadPool pool(threads_of(state, 5));
    const std::vector<float> q = random_floats(q_len * q_heads * D, -1, 1, 11);
    std::vector<tempra::f16_t> k(static_cast<size_t>(kv_heads * kv_len * D)), v(k.size());
    const std::vector<float> kf = random_floats(int64_t(k.size()), -1, 1, 12),
                             vf = random_floats(int64_t(v.size()), -1, 1, 13);
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = tempra::to_f16(kf[i]);
      v[i] = tempra::to_f16(vf[i]);
    }
    std::vector<float> out(static_cast<size_t>(q_len * q_heads * D));
    std::vector<float> scores(static_cast<size_t>(q_len * q_heads * kv_len));  // scalar's; native uses none
    const tempra::CacheAttentionArgs<tempra::f16_t> args{q.data(), k.data(), v.data(), out.data(), q_heads, kv_heads,
                                                         q_len, kv_len, D, kv_len * D,
                                                         1.0 / std::sqrt(static_cast<double>(D))};
    for (auto _ : state) {
      kernels.cache_attention_f16(args, scores.data(), pool);
      benchmark::DoNotOptimize(out.data());
    }
    int64_t visible_keys = 0;
    for (int64_t i = 0; i < q_len; ++i) visible_keys += i + (kv_len - q_len) + 1;
    set_flops(state, 2.0 * double(2 * D) * double(q_heads * visible_keys));
  });
}

// ---- backward kernels ----------------------------------------------------------------------

// The VJPs' hot kernels on the transformer block the training benchmark times (batch 8, seq 128,
// d 256, 4 query / 2 kv heads of 64, a 1000-token head).
void register_backward() {
  register_both("softmax_grad", {{1024, 1000}}, {"rows", "n"}, [](benchmark::State& state, const Kernels& kernels) {
    const int64_t rows = state.range(0), n = state.range(1);
    tempra::ThreadPool pool(threads_of(state, 2));
    const std::vector<float> x = random_floats(rows * n), g = random_floats(rows * n, -1, 1, 8);
    std::vector<float> y(x.size()), gz(x.size());
    tempra::SoftmaxArgs<float> args;
    tempra::scalar_kernels().f32.softmax(contiguous(x, {rows, n}), args, y.data(), pool);
    for (auto _ : state) {
      kernels.f32.softmax_grad(y.data(), g.data(), rows, n, args, 1.0, gz.data(), pool);
      benchmark::DoNotOptimize(gz.data());
    }
    set_traffic(state, rows * n, rows * n * 3 * int64_t(sizeof(float)));
  });
  register_both(
      "cross_entropy_grad", {{1024, 1000}}, {"rows", "classes"}, [](benchmark::State& state, const Kernels& kernels) {
        const int64_t rows = state.range(0), classes = state.range(1);
        tempra::ThreadPool pool(threads_of(state, 2));
        const std::vector<float> logits = random_floats(rows * classes), g = random_floats(rows, -1, 1, 9);
        std::vector<int64_t> targets(static_cast<size_t>(rows));
        for (int64_t i = 0; i < rows; ++i) targets[static_cast<size_t>(i)] = (i * 7919) % classes;
        std::vector<float> gx(logits.size());
        for (auto _ : state) {
          kernels.f32.cross_entropy_grad(logits.data(), rows, classes, targets.data(), -100, g.data(), gx.data(), pool);
          benchmark::DoNotOptimize(gx.data());
        }
        set_traffic(state, rows * classes, rows * classes * 2 * int64_t(sizeof(float)));
      });
  register_both("rms_norm_grad", {{1024, 256}}, {"rows", "n"}, [](benchmark::State& state, const Kernels& kernels) {
    const int64_t rows = state.range(0), n = state.range(1);
    tempra::ThreadPool pool(threads_of(state, 2));
    const std::vector<float> x = random_floats(rows * n), g = random_floats(rows * n, -1, 1, 10),
                             weight = random_floats(n, 0.5f, 1.5f, 5);
    std::vector<float> gx(x.size()), gw(static_cast<size_t>(n)), scratch(static_cast<size_t>(2 * rows));
    for (auto _ : state) {
      kernels.f32.rms_norm_grad(x.data(), weight.data(), g.data(), rows, n, 1e-6, gx.data(), gw.data(), scratch.data(),
                                pool);
      benchmark::DoNotOptimize(gx.data());
    }
    set_traffic(state, rows * n, rows * n * 3 * int64_t(sizeof(float)));
  });
  // GFLOP/s counts the five products of the backward over every key (the GEMM formulation does
  // not skip the keys a causal mask hides): S, dQ, dK are head_dim deep, dP and dV value_dim.
  register_both(
      "attention_grad", {{8, 4, 2, 128, 64}}, {"batch", "q_heads", "kv_heads", "seq", "head_dim"},
      [](benchmark::State& state, const Kernels& kernels) {
        const tempra::AttentionShape shape{state.range(0), state.range(1), state.range(2), state.range(3),
                                           state.range(3), state.range(4), state.range(4)};
        tempra::ThreadPool pool(threads_of(state, 5));
        const int64_t q_size = shape.batch * shape.q_heads * shape.q_len * shape.head_dim;
        const int64_t kv_size = shape.batch * shape.kv_heads * shape.kv_len * shape.head_dim;
        const std::vector<float> q = random_floats(q_size, -1, 1, 11), k = random_floats(kv_size, -1, 1, 12),
                                 v = random_floats(kv_size, -1, 1, 13), g = random_floats(q_size, -1, 1, 14);
        std::vector<float> out(static_cast<size_t>(q_size)), gq(out.size()), gk(k.size()), gv(v.size());
        std::vector<float> scores(static_cast<size_t>(2 * shape.batch * shape.q_heads * shape.q_len * shape.kv_len));
        const double scale = 1.0 / std::sqrt(static_cast<double>(shape.head_dim));
        tempra::scalar_kernels().f32.attention(q.data(), k.data(), v.data(), shape, {}, true, scale, scores.data(),
                                               out.data(), pool);
        for (auto _ : state) {
          kernels.f32.attention_grad(q.data(), k.data(), v.data(), out.data(), g.data(), shape, {}, true, scale,
                                     scores.data(), gq.data(), gk.data(), gv.data(), pool);
          benchmark::DoNotOptimize(gq.data());
        }
        set_flops(state, 2.0 * double(3 * shape.head_dim + 2 * shape.value_dim) *
                             double(shape.batch * shape.q_heads * shape.q_len * shape.kv_len));
      });
}

// c[m, n] = a[m, k] . w[n, k]^T with 16-bit weights (a linear layer's layout).
template <class W>
void register_half_weight_gemm(const char* kernel, tempra::HalfWeightGemm<W> Kernels::*entry, W (*convert)(float)) {
  std::vector<std::vector<int64_t>> shapes;
  for (int64_t m : {1, 16, 128}) shapes.push_back({m, 2048, 2048});
  register_both(kernel, shapes, {"m", "n", "k"}, [entry, convert](benchmark::State& state, const Kernels& kernels) {
    const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
    tempra::ThreadPool pool(threads_of(state, 3));
    const std::vector<float> a = random_floats(m * k, -1, 1, 21), w_f32 = random_floats(n * k, -1, 1, 22);
    std::vector<W> w(w_f32.size());
    for (size_t i = 0; i < w.size(); ++i) w[i] = convert(w_f32[i]);
    std::vector<float> c(static_cast<size_t>(m * n));
    for (auto _ : state) {
      (kernels.*entry)(m, n, k, a.data(), k, w.data(), k, c.data(), n, pool);
      benchmark::DoNotOptimize(c.data());
    }
    set_flops(state, 2.0 * double(m) * double(n) * double(k));
  });
}

void register_all() {
  register_unary("unary_exp", tempra::UnaryOp::exp, -4, 4);
  register_unary("unary_tanh", tempra::UnaryOp::tanh, -4, 4);
  register_unary("unary_silu", tempra::UnaryOp::silu, -4, 4);
  register_unary("unary_gelu_tanh", tempra::UnaryOp::gelu_tanh, -4, 4);
  register_unary("unary_sqrt", tempra::UnaryOp::sqrt, 0, 4);
  register_binary_row_broadcast("binary_add", tempra::BinaryOp::add);
  register_binary_row_broadcast("binary_mul", tempra::BinaryOp::mul);
  register_reduce_sum();
  register_softmax();
  register_cross_entropy();
  register_norms();
  register_rope();
  register_attention("attention_prefill", 512, 512);
  register_attention("attention_decode", 1, 1024);
  register_cache_attention("cache_attention_f16_prefill", 512, 2048);
  register_cache_attention("cache_attention_f16_decode", 1, 4096);
  register_backward();
  register_half_weight_gemm<tempra::f16_t>("gemm_f16_weights", &Kernels::gemm_f16_weights, &tempra::to_f16);
  register_half_weight_gemm<tempra::bf16_t>("gemm_bf16_weights", &Kernels::gemm_bf16_weights, &tempra::to_bf16);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
