// tempra/backend/kernel_args.h: the vocabulary shared by ops and kernels.
//
// Enumerations of the elementwise/reduction families and the small parameter structs the
// neural kernels take. Ops fill these after validation; kernels read them without checks.
#pragma once

#include <cstdint>

#include "tempra/core/tensor_ref.h"

namespace tempra {

enum class UnaryOp : uint8_t {
  neg, abs, exp, log, sqrt, rsqrt, square, tanh, sigmoid, relu, gelu_tanh, gelu_erf, silu, softplus, sin, cos
};
enum class BinaryOp : uint8_t { add, sub, mul, div, pow, maximum, minimum };
enum class ReduceOp : uint8_t { sum, mean, max, min, variance, logsumexp };

// llama.cpp's two rope layouts: `normal` rotates adjacent pairs (x[2i], x[2i+1]) (LLaMA);
// `neox` rotates (x[i], x[i + n_dims/2]) (GPT-NeoX, Qwen).
enum class RopeMode : uint8_t { normal, neox };

struct RopeParams {
  RopeMode mode = RopeMode::neox;
  int64_t n_dims = 0;         // leading dims of each head that rotate; the rest pass through
  double freq_base = 10000.0;  // theta_i = pos * freq_scale * freq_base^(-2i / n_dims) / freq_factors[i]
  double freq_scale = 1.0;
  // n_dims / 2 per-pair divisors of theta (ggml's rope freq_factors: Llama 3's rope scaling,
  // GGUF's rope_freqs.weight); null: all 1.
  const float* freq_factors = nullptr;
};

// Softmax over the last axis of a [rows, n] block; see tempra/ops/neural.h for the op contract.
template <class T>
struct SoftmaxArgs {
  double scale = 1.0;
  bool log = false;              // log_softmax
  bool causal = false;           // rows are [..., q, n]: key j > i + (n - q_len) is masked
  int64_t q_len = 1;
  TensorRef<const T> mask;       // additive, broadcast to the input's shape; data null: none
};

struct AttentionShape {
  int64_t batch, q_heads, kv_heads, q_len, kv_len, head_dim, value_dim;
};

// Causal attention of q_len new queries over the first kv_len positions of a KV cache, read in
// place (tempra/llm/model/kv_cache.h's layout): no copy of the prefix, no widening of an f16 cache.
// Query i sits at position kv_len - q_len + i and sees keys 0 ... kv_len - q_len + i; query head
// h reads kv head h / (q_heads / kv_heads). q and out are token-major, the layout a projection
// writes: element (i, h, d) at (i * q_heads + h) * head_dim + d, both contiguous. Key and value
// rows of kv head g, position j, sit at k / v + g * kv_head_stride + j * head_dim. KV is float,
// f16_t (tempra/core/half.h) or quant::BlockQ8_0; rows are widened to f32 as they are read. For
// Q8_0 the offsets count elements, not blocks (element e is in block e / 32), and head_dim and
// kv_head_stride are multiples of 32, so a row is whole blocks and no vector straddles two.
// window > 0 makes the attention sliding (llama.cpp's LLAMA_SWA_TYPE_STANDARD): the query at
// position p sees only keys j with p - j < window.
// The first key a query sees when `visible` keys pass its causal test: the sliding window's
// start, or 0 without one.
inline int64_t first_visible_key(int64_t visible, int64_t window) {
  return window > 0 && visible > window ? visible - window : 0;
}

template <class KV>
struct CacheAttentionArgs {
  const float* q;
  const KV* k;
  const KV* v;
  float* out;
  int64_t q_heads, kv_heads, q_len, kv_len, head_dim, kv_head_stride;
  double scale;
  int64_t window = 0;
};

struct Conv1dShape {
  int64_t batch, in_channels, in_len, out_channels, kernel, out_len;
  int64_t stride, pad_left, dilation, groups;
};

}  // namespace tempra
