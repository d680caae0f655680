// tempra/backend/native/native.h: the native backend's kernels (f32, SIMD).
//
// Each has the contract of the kernel table entry it fills (tempra/backend/kernels.h) and is
// held to the scalar kernel by tests/backend/native_parity_test.cpp under the tolerance written
// at its definition. Entries not listed here, and every f64 entry, are the scalar kernels. This
// header is only meaningful when simd.h selected an arm (TEMPRA_SIMD_ARM defined).
#pragma once

#include "tempra/backend/kernels.h"

namespace tempra::native {

// The SIMD arm compiled into this build ("avx512", "avx2", "neon"), or null when there is none
// and the native table is the scalar one.
const char* simd_arm();

void unary(UnaryOp op, TensorRef<const float> in, TensorRef<float> out, ThreadPool& pool);
void binary(BinaryOp op, TensorRef<const float> a, TensorRef<const float> b, TensorRef<float> out, ThreadPool& pool);
void unary_grad(UnaryOp op, TensorRef<const float> x, TensorRef<const float> y, TensorRef<const float> g,
                TensorRef<float> gx, ThreadPool& pool);
void reduce(ReduceOp op, const float* in, int64_t outer, int64_t n, int64_t inner, int64_t correction, float* out,
            ThreadPool& pool);
void softmax(TensorRef<const float> in, const SoftmaxArgs<float>& args, float* out, ThreadPool& pool);
void cross_entropy(const float* logits, int64_t rows, int64_t classes, const int64_t* targets, int64_t ignore_index,
                   float* loss, ThreadPool& pool);
void rms_norm(const float* in, int64_t rows, int64_t n, const float* weight, double eps, float* out,
              ThreadPool& pool);
void layer_norm(const float* in, int64_t rows, int64_t n, const float* weight, const float* bias, double eps,
                float* out, ThreadPool& pool);
void rope(const float* in, int64_t outer, int64_t seq, int64_t heads, int64_t head_dim, const int32_t* positions,
          const RopeParams& params, float* out, ThreadPool& pool);
void attention(const float* q, const float* k, const float* v, const AttentionShape& shape, TensorRef<const float> mask,
               bool causal, double scale, float* scores, float* out, ThreadPool& pool);
// Backward kernels (native/reduce_grad.cpp, native/neural_grad.cpp).
void softmax_grad(const float* y, const float* g, int64_t rows, int64_t n, const SoftmaxArgs<float>& args,
                  double grad_scale, float* gz, ThreadPool& pool);
void cross_entropy_grad(const float* logits, int64_t rows, int64_t classes, const int64_t* targets,
                        int64_t ignore_index, const float* g, float* gx, ThreadPool& pool);
void rms_norm_grad(const float* x, const float* weight, const float* g, int64_t rows, int64_t n, double eps, float* gx,
                   float* gw, float* scratch, ThreadPool& pool);
void layer_norm_grad(const float* x, const float* weight, const float* g, int64_t rows, int64_t n, double eps,
                     float* gx, float* gw, float* gb, float* scratch, ThreadPool& pool);
void attention_grad(const float* q, const float* k, const float* v, const float* out, const float* g,
                    const AttentionShape& shape, TensorRef<const float> mask, bool causal, double scale, float* scores,
                    float* gq, float* gk, float* gv, ThreadPool& pool);
template <class KV>
void cache_attention(const CacheAttentionArgs<KV>& args, float* scores, ThreadPool& pool);
// Bitwise scalar's: the rows of M in vector lanes (delta_rule.cpp).
void gated_delta_rule(const DeltaRuleArgs& args, ThreadPool& pool);
// Stride-1 convolutions that read no padding (conv1d.cpp); others call scalar's.
void conv1d(const float* x, const float* w, const float* bias, const Conv1dShape& shape, float* out, ThreadPool& pool);
void conv1d_grad(const float* x, const float* w, const float* g, const Conv1dShape& shape, float* gx, float* gw,
                 float* gb, ThreadPool& pool);
void f16_to_f32(const f16_t* in, float* out, int64_t n, ThreadPool& pool);
void bf16_to_f32(const bf16_t* in, float* out, int64_t n, ThreadPool& pool);
void f32_to_f16(const float* in, f16_t* out, int64_t n, ThreadPool& pool);
void f32_to_bf16(const float* in, bf16_t* out, int64_t n, ThreadPool& pool);
// Who computes large f32 products: "tempra" (bitwise the same for any thread count) or
// "openblas" (-DTEMPRA_BLAS=openblas: the same for a fixed thread count only).
const char* gemm_provider();

template <class W>
void gemm_half_weights(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const W* w, int64_t ldw,
                       float* c, int64_t ldc, ThreadPool& pool);
// Kernels::gemm_bf16_products: the AVX-512 BF16 arm where this build and CPU have it, else the
// activations rounded to bf16 (kept as f32) through gemm_half_weights.
void gemm_bf16_products(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const bf16_t* w, int64_t ldw,
                        float* c, int64_t ldc, ThreadPool& pool);
// Which gemm_bf16_products runs here: "avx512bf16" or "widened".
const char* bf16_products_arm();
// The AVX-512 BF16 (vdpbf16ps) arm of gemm_bf16_products (bf16_gemm_avx512.cpp), or null where
// the build left the AVX-512 arms out or the CPU lacks AVX512_BF16.
Bf16ProductGemm bf16_products_avx512();
void gemm_quant_weights(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* w, DType w_type,
                        float* c, int64_t ldc, ThreadPool& pool);
void gemm_stored_weights_nn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* w,
                            DType w_type, float* c, int64_t ldc, ThreadPool& pool);
void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col, const float* b,
          int64_t b_row, int64_t b_col, float* c, int64_t ldc, ThreadPool& pool);

}  // namespace tempra::native
