// tempra/llm/model/delta_net.h: the Gated DeltaNet layer (Yang, Kautz and Hatamizadeh 2024,
// "Gated Delta Networks"), the linear attention of Qwen3-Next and Qwen3.5, as llama.cpp's CPU
// backend computes it (src/models/delta-net-base.cpp and qwen35.cpp; ggml-cpu ops ssm_conv,
// l2_norm and gated_delta_net): its shape, its weights and the convolution that carries state
// from one token to the next. ForwardPass::gated_delta_net (decoder.h) composes it with the
// projections and the delta rule, which is a backend kernel (Kernels::gated_delta_rule).
//
// Contract: the loops are plain, unchecked and allocation-free over f32 buffers whose extents
// the caller validated at load (model_loader.h) and in check_batch; they run one sequence at a
// time, since the state is the sequence's (KvCache::recurrent_state), and give each token the
// same bits whether it comes in a prompt or a decode step (the order of every sum is fixed by
// the token alone).
#pragma once

#include <cstdint>

#include "tempra/core/array.h"

namespace tempra::llm {

struct DeltaNetShape {
  int64_t conv_kernel = 0;  // ssm.conv_kernel: the short convolution's taps over time
  int64_t head_dim = 0;     // ssm.state_size: the dims of every query, key and value head
  int64_t k_heads = 0;      // ssm.group_count: query/key heads
  int64_t v_heads = 0;      // ssm.time_step_rank: value heads, a multiple of k_heads

  bool defined() const { return conv_kernel > 0; }
  int64_t key_dim() const { return k_heads * head_dim; }
  int64_t value_dim() const { return v_heads * head_dim; }
  // The convolved channels, q | k | v.
  int64_t channels() const { return 2 * key_dim() + value_dim(); }
  // One sequence's state per layer: the convolution's last conv_kernel - 1 input rows
  // [conv_kernel - 1, channels], then each value head's matrix [v_heads, head_dim, head_dim],
  // stored column by column as the delta rule's kernel takes it (DeltaRuleArgs, kernel_args.h).
  int64_t conv_floats() const { return (conv_kernel - 1) * channels(); }
  int64_t state_floats() const { return conv_floats() + v_heads * head_dim * head_dim; }
};

// One layer's weights, in llama.cpp's names (qwen35 load_block_trunk): attn_qkv [channels,
// n_embd]; attn_gate (z) [value_dim, n_embd]; ssm_conv1d f32 [channels, conv_kernel];
// ssm_dt.bias, ssm_a (-exp(A_log)) f32 [v_heads]; ssm_beta, ssm_alpha [v_heads, n_embd];
// ssm_norm f32 [head_dim]; ssm_out [n_embd, value_dim].
struct DeltaNetWeights {
  Array attn_qkv, attn_gate, ssm_conv1d, ssm_dt, ssm_a, ssm_beta, ssm_alpha, ssm_norm, ssm_out;
};

// The most taps a convolution may have (the loader refuses more).
inline constexpr int64_t kMaxConvTaps = 64;

// ggml_ssm_conv over channels [first, last) of one sequence's n rows (row stride `channels`):
// out[t][c] = sum over i < taps of kernel[c][i] * in[t + i][c], where `in` is the sequence's
// conv_state rows (taps - 1 of them) followed by its n rows of x; then conv_state holds the
// last taps - 1 rows of `in`.
void delta_net_conv(const float* x, int64_t n, int64_t channels, const float* kernel, int64_t taps, float* conv_state,
                    float* out, int64_t first, int64_t last);

// ggml_l2_norm of one vector of `width`, in place: x / max(|x|, eps), the squares summed in double.
void l2_norm(float* x, int64_t width, float eps);

}  // namespace tempra::llm
