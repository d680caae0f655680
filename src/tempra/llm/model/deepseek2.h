// tempra/llm/model/deepseek2.h: the DeepSeek-V2 decoder (general.architecture = deepseek2:
// DeepSeek-V2, V2-Lite, V2.5): multi-head latent attention over a compressed KV cache, shared
// plus routed experts, YaRN rope.
//
// Contract: DeepSeek2Model::load reads deepseek2.* as llama.cpp's src/models/deepseek2.cpp does
// (DecoderConfig, with key_length = kv_lora_rank + rope dims and value_length = kv_lora_rank as
// its converter writes them; leading_dense_block_count; attention.q_lora_rank, absent for the
// "lite" models; attention.kv_lora_rank; key_length_mla and value_length_mla (files without them
// carry the older unsplit attn_kv_b and are refused); expert_count, expert_used_count,
// expert_feed_forward_length, expert_shared_count, expert_weights_scale, expert_weights_norm;
// rope.scaling.yarn_log_multiplier, written as 0.1 mscale_all_dim; expert_group_count and
// expert_group_used_count, DeepSeek-V2's group-limited routing) and its tensor table through
// ModelLoader's checks; expert_gating_func softmax (1, or 0 for older files) or sigmoid (2) with
// the optional per-layer selection bias exp_probs_b (DeepSeek-V3, R1 and Kimi K2, which
// llama.cpp also runs as deepseek2). Multi-token-prediction layers and attention temperature
// scaling (Mistral Large 3) are refused by name. Forward,
// buffers and allocation as the other decoders' (decoder.h); options.moe_stream streams the
// routed experts.
//
// The graph: per layer, RMS norm, ForwardPass::latent_attention (the absorbed form: the cache
// holds one [latent | k_pe] row per token, kv_lora_rank + rope dims, which is also the value),
// residual; RMS norm, then the leading layers' dense SwiGLU FFN or the mixture (softmax or
// sigmoid router, top expert_used_count by biased score within the best groups, weights normalized when expert_weights_norm and
// scaled by expert_weights_scale: MoeRouting) plus the shared experts' SwiGLU; residual. The attention scale is
// llama.cpp's: mscale^2 / sqrt(key_length_mla), mscale = (1 + 0.1 log_mul ln factor) under
// YaRN. Rope: normal (interleaved) pairs over the rope dims. Parity:
// tests/llm/deepseek2_oracle_test.cpp.
#pragma once

#include <filesystem>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/decoder.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {

struct DeepSeek2Layer {
  Array attn_norm;
  LatentAttentionWeights attention;
  Array ffn_norm;
  Array ffn_gate, ffn_up, ffn_down;  // the leading dense layers
  Array ffn_gate_inp, exp_probs_b, ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp;  // the MoE layers
};

class DeepSeek2Model final : public DecoderModel {
 public:
  static DeepSeek2Model load(const std::filesystem::path& path, const LoadOptions& options = {});
  static DeepSeek2Model load(const io::GgufModel& gguf, const LoadOptions& options = {});
  // The tensors llama.cpp creates for this architecture at spec's shape (synth.h).
  static std::vector<SynthTensor> synth_tensors(const SynthSpec& spec);
  // The deepseek2.* keys beyond the shared ones.
  static void synth_hparams(io::GgufMetadata& metadata, const SynthSpec& spec);

  void forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const override;
  using Model::forward;

 private:
  std::vector<DeepSeek2Layer> layers_;
  MoeRouting routing_;  // each MoE layer's, less its selection bias
  double kq_scale_ = 0.0;
};

}  // namespace tempra::llm
