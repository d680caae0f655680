// tempra/backend/kernels.h: the kernel table a backend provides.
//
// Ops validate and allocate, then call through this table: kernels_for(ctx.backend()) picks the
// set. `scalar` fills every entry with the readable reference loops; `native` (its own issue)
// will override the hot f32 entries with SIMD and inherit the rest, so a missing native kernel
// is never a missing feature. Kernels are unchecked and allocation-free: pointers are valid,
// shapes agree, outputs are contiguous unless a TensorRef says otherwise, scratch comes from
// the caller. Memory-movement kernels (copy, cast, gather, triangle) are dtype-generic templates
// in scalar/movement.h and serve both backends.
#pragma once

#include <cstdint>

#include "tempra/backend/kernel_args.h"
#include "tempra/core/dtype.h"
#include "tempra/core/exec_context.h"
#include "tempra/core/half.h"
#include "tempra/core/tensor_ref.h"
#include "tempra/quant/blocks.h"

namespace tempra {

template <class T>
struct FloatKernels {
  // out = op(in); same shape, any strides.
  void (*unary)(UnaryOp, TensorRef<const T> in, TensorRef<T> out, ThreadPool&);
  // out = a op b; a and b carry the output's shape with zero strides on broadcast axes.
  void (*binary)(BinaryOp, TensorRef<const T> a, TensorRef<const T> b, TensorRef<T> out, ThreadPool&);
  // out = cond ? a : b; all three broadcast to out's shape.
  void (*where)(TensorRef<const bool> cond, TensorRef<const T> a, TensorRef<const T> b, TensorRef<T> out,
                ThreadPool&);
  // Reduces the middle axis of a contiguous [outer, n, inner] block into [outer, inner].
  // `correction` is the variance's divisor offset (n - correction).
  void (*reduce)(ReduceOp, const T* in, int64_t outer, int64_t n, int64_t inner, int64_t correction, T* out,
                 ThreadPool&);
  void (*argmax)(const T* in, int64_t outer, int64_t n, int64_t inner, int64_t* out, ThreadPool&);
  // Softmax over the last axis of contiguous `in` (rows x n).
  void (*softmax)(TensorRef<const T> in, const SoftmaxArgs<T>& args, T* out, ThreadPool&);
  // c[m, n] = a[m, k] . b[k, n]; a and b by (row, column) strides, c contiguous with row stride ldc.
  void (*gemm)(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const T* b,
               int64_t b_row, int64_t b_col, T* c, int64_t ldc, ThreadPool&);
  // Normalizes each row of a contiguous [rows, n] block; weight/bias may be null.
  void (*rms_norm)(const T* in, int64_t rows, int64_t n, const T* weight, double eps, T* out, ThreadPool&);
  void (*layer_norm)(const T* in, int64_t rows, int64_t n, const T* weight, const T* bias, double eps, T* out,
                     ThreadPool&);
  // x is contiguous [outer, seq, heads, head_dim]; positions has seq entries.
  void (*rope)(const T* in, int64_t outer, int64_t seq, int64_t heads, int64_t head_dim, const int32_t* positions,
               const RopeParams& params, T* out, ThreadPool&);
  // q [B, Hq, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv] contiguous; out [B, Hq, Tq, Dv];
  // scores: caller's scratch of B*Hq*Tq*Tk; mask: additive, broadcast to [B, Hq, Tq, Tk].
  void (*attention)(const T* q, const T* k, const T* v, const AttentionShape& shape, TensorRef<const T> mask,
                    bool causal, double scale, T* scores, T* out, ThreadPool&);
  // loss[i] = logsumexp(logits[i]) - logits[i, target[i]], or 0 where target[i] == ignore_index.
  void (*cross_entropy)(const T* logits, int64_t rows, int64_t classes, const int64_t* targets,
                        int64_t ignore_index, T* loss, ThreadPool&);
  // x [B, Cin, Tin], w [Cout, Cin/groups, K], bias [Cout] or null; out [B, Cout, Tout].
  void (*conv1d)(const T* x, const T* w, const T* bias, const Conv1dShape& shape, T* out, ThreadPool&);

  // ---- backward kernels (the VJPs of tempra/ops; PyTorch's derivative formulas) ----
  // gx = g * d op(x) / dx; x, y = op(x), g and gx share one shape, any strides. The derivative
  // of exp, sqrt, rsqrt, tanh and sigmoid is read off y instead of recomputed from x.
  void (*unary_grad)(UnaryOp, TensorRef<const T> x, TensorRef<const T> y, TensorRef<const T> g, TensorRef<T> gx,
                     ThreadPool&);
  // ga = g * d(a op b)/da and gb = g * d(a op b)/db at the broadcast shape: a and b carry zero
  // strides on broadcast axes like binary's; g, ga, gb have the output's shape (any strides).
  void (*binary_grad)(BinaryOp, TensorRef<const T> a, TensorRef<const T> b, TensorRef<const T> g, TensorRef<T> ga,
                      TensorRef<T> gb, ThreadPool&);
  // max, min, variance, logsumexp (sum and mean are views): x and gx are contiguous
  // [outer, n, inner], the forward's result `out` and its gradient g contiguous [outer, inner].
  void (*reduce_grad)(ReduceOp, const T* x, const T* out, const T* g, int64_t outer, int64_t n, int64_t inner,
                      int64_t correction, T* gx, ThreadPool&);
  // Gradient of the logits z = x * scale + mask (before the scale) times grad_scale, from the
  // forward's output y; y, g and gz are contiguous [rows, n]; args as the forward's (mask unused).
  void (*softmax_grad)(const T* y, const T* g, int64_t rows, int64_t n, const SoftmaxArgs<T>& args, double grad_scale,
                       T* gz, ThreadPool&);
  // gx[i] = g[i] * (softmax(logits[i]) - onehot(target[i])), zero rows where target is ignored.
  void (*cross_entropy_grad)(const T* logits, int64_t rows, int64_t classes, const int64_t* targets,
                             int64_t ignore_index, const T* g, T* gx, ThreadPool&);
  // The norms' gradients over a contiguous [rows, n] block from the output gradient g. Any of
  // gx, gw, gb may be null (not wanted); `scratch` holds 2 * rows elements (row statistics).
  void (*rms_norm_grad)(const T* x, const T* weight, const T* g, int64_t rows, int64_t n, double eps, T* gx, T* gw,
                        T* scratch, ThreadPool&);
  void (*layer_norm_grad)(const T* x, const T* weight, const T* g, int64_t rows, int64_t n, double eps, T* gx, T* gw,
                          T* gb, T* scratch, ThreadPool&);
  // Attention's backward from the forward's inputs and output `out` and the output gradient g
  // (out and g [B, Hq, Tq, Dv]); writes gq, gk, gv (the inputs' shapes, contiguous). `scores`
  // is 2*B*Hq*Tq*Tk of scratch whose first B*Hq*Tq*Tk hold, on return, the gradient of each
  // score (after the mask, before the scale): the mask's gradient before it is summed to the
  // mask's shape.
  void (*attention_grad)(const T* q, const T* k, const T* v, const T* out, const T* g, const AttentionShape& shape,
                         TensorRef<const T> mask, bool causal, double scale, T* scores, T* gq, T* gk, T* gv,
                         ThreadPool&);
  // conv1d's gradients from g [B, Cout, Tout]; any of gx, gw, gb may be null (not wanted).
  void (*conv1d_grad)(const T* x, const T* w, const T* g, const Conv1dShape& shape, T* gx, T* gw, T* gb, ThreadPool&);
};

// c[m, n] = a[m, k] . w[n, k]^T with w stored in a 16-bit float format (W = f16_t or bf16_t):
// the layout of a linear layer's weights. Rows of a (stride lda) and of w (stride ldw) are
// contiguous; c has row stride ldc. Each weight is widened to f32 exactly and the products
// accumulate in f32, so the rounding class is that of an f32 GEMM on the widened weights.
template <class W>
using HalfWeightGemm = void (*)(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const W* w,
                                int64_t ldw, float* c, int64_t ldc, ThreadPool&);

// c[m, n] = bf16(a)[m, k] . w[n, k]^T with w in bf16: each activation is first rounded to bf16
// (half.h's rounding, nearest even), as ggml rounds a BF16 matrix's activations to its
// vec_dot_type. Every product of two bf16 values is exact in f32 (8-bit significands), so only
// the f32 sums round; the scalar kernel adds in increasing p, a native arm in its own order
// (AVX-512 BF16's vdpbf16ps also treats subnormal inputs and sums as zero): the tolerance of
// tests/backend/native_bf16_gemm_test.cpp. Arguments as HalfWeightGemm's.
using Bf16ProductGemm = void (*)(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const bf16_t* w,
                                 int64_t ldw, float* c, int64_t ldc, ThreadPool&);

// c[m, n] = a[m, k] . w[n, k]^T with w block-quantized (any dtype with a quant::QuantFormat):
// row j of w is the w_type.bytes_for(k) bytes at w + j * w_type.bytes_for(k), k a multiple of
// the format's block size. Each weight is decoded by the format's reference dequantize_row and
// the products accumulate in f32: the rounding class of an f32 GEMM on the decoded weights.
// Decoding costs n k per call whatever m is, so this is a prefill path (m > 32: Qwen3's exact
// numerics, and its standard numerics where the arm has no integer GEMM); decode steps belong to
// the quantized dots (quant_dot.h), which never dequantize.
using QuantWeightGemm = void (*)(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* w,
                                 DType w_type, float* c, int64_t ldc, ThreadPool&);

// c[m, k] = a[m, n] . w[n, k] with w stored in f16, bf16 or a block-quantized format (row p of
// w is the w_type.bytes_for(k) bytes at w + p * that; k a multiple of the format's block): the
// product a linear layer's input gradient needs (dx = dy . w, w frozen as stored), without an f32
// copy of w. Rows of a have stride lda, c has row stride ldc. Each c[i, j] is an f32 sum over p
// of a[i, p] times w[p, j] widened or decoded exactly (the reference decoder's values): the
// rounding class of an f32 GEMM on the decoded weights.
using StoredWeightGemmNN = void (*)(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* w,
                                    DType w_type, float* c, int64_t ldc, ThreadPool&);

// Conversion of n contiguous elements with tempra/core/half.h's contract: widening is exact,
// narrowing rounds to nearest even (NaN stays NaN). Every backend gives the same bits.
template <class From, class To>
using Conversion = void (*)(const From* in, To* out, int64_t n, ThreadPool&);

// Attention over a KV cache in place (CacheAttentionArgs). `scores` is the caller's scratch of
// q_heads * q_len * kv_len floats (the scalar kernel materializes the score rows; native's
// online softmax uses none). Allocation-free, so a decode step can call it on preallocated
// buffers.
template <class KV>
using CacheAttention = void (*)(const CacheAttentionArgs<KV>& args, float* scores, ThreadPool&);

// The gated delta rule in place over a sequence's recurrent state (DeltaRuleArgs); allocation-free.
using GatedDeltaRule = void (*)(const DeltaRuleArgs& args, ThreadPool&);

struct Kernels {
  const char* name;
  FloatKernels<float> f32;
  FloatKernels<double> f64;
  HalfWeightGemm<f16_t> gemm_f16_weights;
  HalfWeightGemm<bf16_t> gemm_bf16_weights;
  Bf16ProductGemm gemm_bf16_products;
  QuantWeightGemm gemm_quant_weights;
  StoredWeightGemmNN gemm_stored_weights_nn;
  Conversion<f16_t, float> f16_to_f32;
  Conversion<bf16_t, float> bf16_to_f32;
  Conversion<float, f16_t> f32_to_f16;
  Conversion<float, bf16_t> f32_to_bf16;
  CacheAttention<float> cache_attention_f32;
  CacheAttention<f16_t> cache_attention_f16;
  CacheAttention<quant::BlockQ8_0> cache_attention_q8_0;
  GatedDeltaRule gated_delta_rule;
};

// The table for a backend. A backend not compiled into this build gets the scalar table.
const Kernels& kernels_for(Backend backend);
const Kernels& scalar_kernels();

}  // namespace tempra
