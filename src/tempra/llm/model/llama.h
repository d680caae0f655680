// tempra/llm/model/llama.h: the Llama decoder (general.architecture = llama): Llama 2 and 3.x,
// SmolLM, Mistral-style models, and the plain pre-norm transformer the other families vary.
//
// Contract: LlamaModel::load reads llama.* (DecoderConfig) and the tensor table of llama.cpp's src/models/llama.cpp (token_embd,
// output_norm, output or tied to token_embd; per layer attn_norm, attn_q/k/v/output with
// optional biases, ffn_norm, ffn_gate/up/down; one rope_freqs for every layer when the file
// carries Llama 3's rope scaling), through ModelLoader's checks. A file of experts (Mixtral,
// llama.expert_count > 0), a rope dimension other than the head's (DecoderConfig), or FFN
// biases are refused by name. Forward, buffers and allocation as Qwen3Model's (qwen3.h, decoder.h).
//
// The graph: x = embd(tokens); per layer h = x + wo attn(rope(wq n(x)), rope(wk n(x)), wv n(x)),
// x = h + down(silu(gate n(h)) * up n(h)) with n = RMSNorm; logits = output(n(x)). Rope rotates
// adjacent pairs (llama.cpp's LLAMA_ROPE_TYPE_NORM), theta divided by rope_freqs when present.
// Parity: tests/llm/llama_oracle_test.cpp against llama.cpp on synthesized models.
#pragma once

#include <filesystem>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/decoder.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {

struct LlamaLayer {
  Array attn_norm, attn_q, attn_k, attn_v, attn_output;
  Array attn_q_bias, attn_k_bias, attn_v_bias, attn_output_bias;  // empty when the file has none
  Array ffn_norm, ffn_gate, ffn_up, ffn_down;
};

class LlamaModel final : public DecoderModel {
 public:
  static LlamaModel load(const std::filesystem::path& path);
  static LlamaModel load(const io::GgufModel& gguf);
  // The tensors llama.cpp creates for this architecture at spec's shape, in the synthesizer's
  // order (synth.h): the table load() reads, written out.
  static std::vector<SynthTensor> synth_tensors(const SynthSpec& spec);
  // The llama.* keys beyond the shared ones (rope.dimension_count, vocab_size).
  static void synth_hparams(io::GgufMetadata& metadata, const SynthSpec& spec);

  void forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const override;
  using Model::forward;

 private:
  std::vector<LlamaLayer> layers_;
  Array rope_freqs_;     // [head_dim / 2] divisors of each pair's angle, or empty
  double kq_scale_ = 0;  // 1 / sqrt(head_dim), in float as llama.cpp computes it
};

}  // namespace tempra::llm
