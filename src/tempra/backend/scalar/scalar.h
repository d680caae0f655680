// tempra/backend/scalar/scalar.h: the scalar backend, the executable specification.
//
// Each kernel is a plain loop, written for the reader: it is what the native backend is tested
// against. Work is split over rows with ThreadPool::parallel_for; every output element has one
// owner and a fixed accumulation order, so results are bitwise identical for any thread count.
// Definitions live in one file per family; each is instantiated for float and double.
#pragma once

#include "tempra/backend/kernels.h"

namespace tempra::scalar {

// Rows per parallel chunk so that a chunk holds about `target` elements of `row_len`.
inline int64_t rows_per_chunk(int64_t row_len, int64_t target = 16384) {
  return row_len >= target ? 1 : target / (row_len > 0 ? row_len : 1);
}

template <class T>
void unary(UnaryOp op, TensorRef<const T> in, TensorRef<T> out, ThreadPool& pool);
template <class T>
void binary(BinaryOp op, TensorRef<const T> a, TensorRef<const T> b, TensorRef<T> out, ThreadPool& pool);
template <class T>
void unary_grad(UnaryOp op, TensorRef<const T> x, TensorRef<const T> y, TensorRef<const T> g, TensorRef<T> gx,
                ThreadPool& pool);
template <class T>
void binary_grad(BinaryOp op, TensorRef<const T> a, TensorRef<const T> b, TensorRef<const T> g, TensorRef<T> ga,
                 TensorRef<T> gb, ThreadPool& pool);
template <class T>
void where(TensorRef<const bool> cond, TensorRef<const T> a, TensorRef<const T> b, TensorRef<T> out,
           ThreadPool& pool);
template <class T>
void reduce(ReduceOp op, const T* in, int64_t outer, int64_t n, int64_t inner, int64_t correction, T* out,
            ThreadPool& pool);
template <class T>
void argmax(const T* in, int64_t outer, int64_t n, int64_t inner, int64_t* out, ThreadPool& pool);
template <class T>
void softmax(TensorRef<const T> in, const SoftmaxArgs<T>& args, T* out, ThreadPool& pool);
template <class T>
void gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const T* b, int64_t b_row,
          int64_t b_col, T* c, int64_t ldc, ThreadPool& pool);
template <class W>
void gemm_half_weights(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const W* w, int64_t ldw,
                       float* c, int64_t ldc, ThreadPool& pool);
void gemm_bf16_products(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const bf16_t* w, int64_t ldw,
                        float* c, int64_t ldc, ThreadPool& pool);
void gemm_quant_weights(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* w, DType w_type,
                        float* c, int64_t ldc, ThreadPool& pool);
void gemm_stored_weights_nn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* w,
                            DType w_type, float* c, int64_t ldc, ThreadPool& pool);
// Element by element through tempra/core/half.h.
template <class From, class To>
void convert_half(const From* in, To* out, int64_t n, ThreadPool& pool);
template <class T>
void rms_norm(const T* in, int64_t rows, int64_t n, const T* weight, double eps, T* out, ThreadPool& pool);
template <class T>
void layer_norm(const T* in, int64_t rows, int64_t n, const T* weight, const T* bias, double eps, T* out,
                ThreadPool& pool);
template <class T>
void rope(const T* in, int64_t outer, int64_t seq, int64_t heads, int64_t head_dim, const int32_t* positions,
          const RopeParams& params, T* out, ThreadPool& pool);
template <class T>
void attention(const T* q, const T* k, const T* v, const AttentionShape& shape, TensorRef<const T> mask,
               bool causal, double scale, T* scores, T* out, ThreadPool& pool);
// KV = float or f16_t: the same loops as attention<float>, with each key and value element
// widened as it is read, so an f16 cache gives the bits of attention over its widened copy.
template <class KV>
void cache_attention(const CacheAttentionArgs<KV>& args, float* scores, ThreadPool& pool);
void gated_delta_rule(const DeltaRuleArgs& args, ThreadPool& pool);
template <class T>
void cross_entropy(const T* logits, int64_t rows, int64_t classes, const int64_t* targets, int64_t ignore_index,
                   T* loss, ThreadPool& pool);
template <class T>
void conv1d(const T* x, const T* w, const T* bias, const Conv1dShape& shape, T* out, ThreadPool& pool);

// ---- backward kernels (the VJPs' arithmetic; contracts in kernels.h) ----
template <class T>
void reduce_grad(ReduceOp op, const T* x, const T* out, const T* g, int64_t outer, int64_t n, int64_t inner,
                 int64_t correction, T* gx, ThreadPool& pool);
template <class T>
void softmax_grad(const T* y, const T* g, int64_t rows, int64_t n, const SoftmaxArgs<T>& args, double grad_scale, T* gz,
                  ThreadPool& pool);
template <class T>
void cross_entropy_grad(const T* logits, int64_t rows, int64_t classes, const int64_t* targets, int64_t ignore_index,
                        const T* g, T* gx, ThreadPool& pool);
template <class T>
void rms_norm_grad(const T* x, const T* weight, const T* g, int64_t rows, int64_t n, double eps, T* gx, T* gw,
                   T* scratch, ThreadPool& pool);
template <class T>
void layer_norm_grad(const T* x, const T* weight, const T* g, int64_t rows, int64_t n, double eps, T* gx, T* gw, T* gb,
                     T* scratch, ThreadPool& pool);
template <class T>
void attention_grad(const T* q, const T* k, const T* v, const T* out, const T* g, const AttentionShape& shape,
                    TensorRef<const T> mask, bool causal, double scale, T* scores, T* gq, T* gk, T* gv,
                    ThreadPool& pool);
template <class T>
void conv1d_grad(const T* x, const T* w, const T* g, const Conv1dShape& shape, T* gx, T* gw, T* gb, ThreadPool& pool);

}  // namespace tempra::scalar
