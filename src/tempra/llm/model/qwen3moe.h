// tempra/llm/model/qwen3moe.h: the Qwen3 mixture-of-experts decoder (general.architecture =
// qwen3moe: Qwen3-30B-A3B, Qwen3-235B-A22B).
//
// Contract: Qwen3MoeModel::load reads qwen3moe.* (DecoderConfig; expert_count,
// expert_used_count (at most 1024 experts), expert_feed_forward_length (0 or absent:
// feed_forward_length / used); like llama.cpp it reads no expert_weights_scale for this
// architecture) and the tensor table of llama.cpp's src/models/qwen3moe.cpp: Qwen3's
// attention (qwen3.h) and, per layer, the router ffn_gate_inp [n_expert, n_embd] and the
// experts stacked as ffn_gate_exps / ffn_up_exps [n_expert, n_ff_exp, n_embd] and ffn_down_exps
// [n_expert, n_embd, n_ff_exp], through ModelLoader's checks; attention biases, per-expert
// scales are refused by name; group-limited routing (expert_group_count > 1) as llama.cpp does it. Forward, buffers and allocation as
// the other decoders' (decoder.h).
//
// The graph: Qwen3's, with the feed-forward block replaced by ForwardPass::moe_ffn: softmax
// router, the expert_used_count most probable experts with their probabilities renormalized to
// sum 1, SwiGLU experts. Prefill groups the batch's tokens by expert, so each expert's matrices
// are read once for all the tokens routed to it. Parity: tests/llm/qwen3moe_oracle_test.cpp.
#pragma once

#include <filesystem>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/decoder.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {

struct Qwen3MoeLayer {
  Array attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm;
  Array ffn_norm, ffn_gate_inp;  // the experts are DecoderModel::experts_ (resident or streamed)
};

class Qwen3MoeModel final : public DecoderModel {
 public:
  // options.moe_stream: the experts are read from the file into an ExpertCache (expert_cache.h).
  static Qwen3MoeModel load(const std::filesystem::path& path, const LoadOptions& options = {});
  static Qwen3MoeModel load(const io::GgufModel& gguf, const LoadOptions& options = {});
  // The tensors llama.cpp creates for this architecture at spec's shape (synth.h).
  static std::vector<SynthTensor> synth_tensors(const SynthSpec& spec);
  // The qwen3moe.* keys beyond the shared ones (expert counts and width).
  static void synth_hparams(io::GgufMetadata& metadata, const SynthSpec& spec);

  void forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const override;
  using Model::forward;

 private:
  std::vector<Qwen3MoeLayer> layers_;
};

}  // namespace tempra::llm
