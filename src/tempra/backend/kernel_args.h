// tempra/backend/kernel_args.h: the vocabulary shared by ops and kernels.
//
// Enumerations of the elementwise/reduction families and the small parameter structs the
// neural kernels take. Ops fill these after validation; kernels read them without checks.
#pragma once

#include <algorithm>
#include <cmath>
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
  // YaRN (Peng et al. 2023, ggml's rope_yarn): with ext_factor > 0, pair i's angle mixes the
  // interpolated one (pos * freq_scale * ...) with the extrapolated one (pos * ...) by
  // ramp(i) * ext_factor, where ramp falls from 1 at pair corr_low to 0 at corr_high, and the
  // rotation's magnitude grows by 1 + 0.1 ln(1 / freq_scale). attn_factor scales the rotation
  // (cos and sin) in every case: ggml's mscale. The defaults leave plain rope.
  double ext_factor = 0.0, attn_factor = 1.0;
  double corr_low = 0.0, corr_high = 0.0;
  // Optional: each position's rotations already computed by fill_rope_rotations (below) for
  // these parameters and the call's positions, so that the layers of a forward pass compute
  // them once. Native reads them; scalar, the specification, computes its own (the same floats).
  const float* rotations = nullptr;

  bool operator==(const RopeParams&) const = default;
};

// ggml_rope_yarn_corr_dims: the pairs where YaRN's ramp starts and ends for a model trained on
// n_ctx_orig positions (beta_fast and beta_slow rotations over that context), in f32 as ggml.
inline void rope_yarn_corr_dims(RopeParams& p, int64_t n_ctx_orig, double beta_fast, double beta_slow) {
  const auto corr_dim = [&](double n_rot) {
    return float(p.n_dims) * std::log(float(n_ctx_orig) / (float(n_rot) * 2 * 3.14159265358979323846f)) /
           (2 * std::log(float(p.freq_base)));
  };
  p.corr_low = std::max(0.0f, std::floor(corr_dim(beta_fast)));
  p.corr_high = std::min(float(p.n_dims - 1), std::ceil(corr_dim(beta_slow)));
}

// The cosine and sine of pair i's rotation at `position` (both kernels' one definition): theta
// in double, so positions in the tens of thousands keep their phase.
inline void rope_rotation(const RopeParams& p, int32_t position, int64_t i, double& cosine, double& sine) {
  const double inv_freq = std::pow(p.freq_base, -2.0 * static_cast<double>(i) / static_cast<double>(p.n_dims));
  const double divisor = p.freq_factors ? double(p.freq_factors[i]) : 1.0;
  double theta = static_cast<double>(position) * p.freq_scale * inv_freq / divisor;
  double magnitude = p.attn_factor;
  if (p.ext_factor != 0.0) {
    const double extrapolated = static_cast<double>(position) * inv_freq / divisor;
    const double y = (static_cast<double>(i) - p.corr_low) / std::max(0.001, p.corr_high - p.corr_low);
    const double mix = (1.0 - std::min(1.0, std::max(0.0, y))) * p.ext_factor;
    theta = theta * (1.0 - mix) + extrapolated * mix;
    magnitude *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
  }
  cosine = std::cos(theta) * magnitude;
  sine = std::sin(theta) * magnitude;
}

// The rotations of `seq` positions as f32: for position t, the cosines of pairs 0 .. n_dims/2 - 1
// at out + t * 2 * (n_dims / 2), then their sines.
inline void fill_rope_rotations(const RopeParams& p, const int32_t* positions, int64_t seq, float* out) {
  const int64_t half = p.n_dims / 2;
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t i = 0; i < half; ++i) {
      double cosine = 0, sine = 0;
      rope_rotation(p, positions[t], i, cosine, sine);
      out[t * 2 * half + i] = static_cast<float>(cosine);
      out[t * 2 * half + half + i] = static_cast<float>(sine);
    }
}

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

// A view of a KV cache starting at a multiple of this many positions gives every cache_attention
// kernel the bits of the whole cache (native's key blocks divide it), so a caller may hand the
// kernel only the rows from there (KvCache's sliding windows do).
inline constexpr int64_t kCacheKeyAlignment = 64;

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

// The gated delta rule (Gated DeltaNet's recurrence; llama.cpp's ggml_gated_delta_net) over one
// sequence's n tokens and all its value heads. Value head h reads key head h % k_heads. Token t's
// query and key of head h are the head_dim floats at q + t * qk_stride + h * head_dim (and k
// alike; L2-normed by the caller), its value at v + t * v_stride + h * head_dim, its log decay g
// and its beta at [t * v_heads + h]. Each value head's state M (head_dim x head_dim, row j for
// value dim j) is stored column by column: M[j][i] at state + h * head_dim^2 + i * head_dim + j,
// so that a column (one key dim of every row) is contiguous and the rows evolve side by side in
// vector lanes. Per token, row by row (each row on its own):
//   M[j] *= exp(g);  delta = (v[j] - M[j] . k) beta;  M[j] += delta k;  out[j] = (M[j] . q) / sqrt(head_dim)
// each dot summed over i in order from 0, every operation rounded on its own (no fused
// multiply-add), so every backend gives the same bits and a token's bits do not depend on the
// tokens beside it. out's token t, head h: out + t * out_stride + h * head_dim.
struct DeltaRuleArgs {
  const float* q;
  const float* k;
  int64_t qk_stride;
  const float* v;
  int64_t v_stride;
  const float* log_decay;
  const float* beta;
  int64_t n, k_heads, v_heads, head_dim;
  float* state;
  float* out;
  int64_t out_stride;
};

// Token t of value head h under DeltaRuleArgs: its query, key and value rows, its decay exp(g)
// and beta, and its output row (both kernels' one reading of the layout).
struct DeltaRuleStep {
  const float* q;
  const float* k;
  const float* v;
  float decay, beta;
  float* out;
};
inline DeltaRuleStep delta_rule_step(const DeltaRuleArgs& a, int64_t h, int64_t t) {
  const int64_t S = a.head_dim, key_head = h % a.k_heads;
  return {.q = a.q + t * a.qk_stride + key_head * S,
          .k = a.k + t * a.qk_stride + key_head * S,
          .v = a.v + t * a.v_stride + h * S,
          .decay = std::exp(a.log_decay[t * a.v_heads + h]),
          .beta = a.beta[t * a.v_heads + h],
          .out = a.out + t * a.out_stride + h * S};
}

struct Conv1dShape {
  int64_t batch, in_channels, in_len, out_channels, kernel, out_len;
  int64_t stride, pad_left, dilation, groups;
};

}  // namespace tempra
