// tempra/llm/model/qwen35.h: the Qwen3.5 decoder (general.architecture = qwen35): a hybrid of
// gated delta nets (linear attention with a short convolution and a recurrent state per
// sequence) and gated full-attention layers, three to one.
//
// Contract: Qwen35Model::load reads qwen35.* as llama.cpp's src/models/qwen35.cpp does
// (DecoderConfig, with rope.dimension_count the rotated dims of each head; ssm.conv_kernel,
// ssm.state_size, ssm.group_count, ssm.time_step_rank and ssm.inner_size = time_step_rank x
// state_size: DeltaNetShape; attention.recurrent_layers, a per-layer array, or else
// full_attention_interval (default 4: every fourth layer attends); rope.dimension_sections;
// nextn_predict_layers, the multi-token-prediction blocks at the end, which are not loaded, as
// llama.cpp loads them only for its MTP drafter) and its tensor table through ModelLoader's
// checks. Forward, buffers and allocation as the other decoders' (decoder.h). The cache holds
// the attention layers' keys and values and each recurrent layer's state
// (KvCacheShape::n_recurrent), so it rewinds only to 0 or not at all (KvCache::can_truncate).
//
// The graph, per layer: RMS norm; a gated delta net (ForwardPass::gated_delta_net) or gated
// attention (attn_q gives each head's query and its output gate; query and key RMS-normed per
// head, rope, attention, the output times sigmoid(gate), attn_output); residual;
// post_attention_norm, SwiGLU FFN; residual. Rope: llama.cpp's IMROPE, which for text (the
// time, height and width positions the token's, the fourth 0, in sections that give every
// rotated pair one of the first three) is NeoX rope over the first rope.dimension_count dims. Parity:
// tests/llm/qwen35_oracle_test.cpp.
#pragma once

#include <filesystem>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/decoder.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {

struct Qwen35Layer {
  Array attn_norm;
  int slot = 0;               // the cache layer: an attention layer's or a recurrent layer's index
  DeltaNetWeights delta_net;  // recurrent layers
  Array attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm;  // attention layers
  Array post_attention_norm, ffn_gate, ffn_up, ffn_down;
};

class Qwen35Model final : public DecoderModel {
 public:
  static Qwen35Model load(const std::filesystem::path& path);
  static Qwen35Model load(const io::GgufModel& gguf);
  // The tensors llama.cpp creates for this architecture at spec's shape (synth.h).
  static std::vector<SynthTensor> synth_tensors(const SynthSpec& spec);
  // The qwen35.* keys beyond the shared ones.
  static void synth_hparams(io::GgufMetadata& metadata, const SynthSpec& spec);

  void forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const override;
  using Model::forward;

 private:
  std::vector<Qwen35Layer> layers_;
};

}  // namespace tempra::llm
