// tempra/llm/model/gemma3.h: the Gemma 3 decoder (general.architecture = gemma3).
//
// Contract: Gemma3Model::load reads gemma3.* (DecoderConfig; attention.sliding_window and
// sliding_window_pattern, rope.freq_base_swa, final_logit_softcapping) and the tensor table of
// llama.cpp's src/models/gemma3.cpp (token_embd, output_norm, output or tied; per layer
// attn_norm, attn_q/k/v/output, attn_q_norm, attn_k_norm, attn_post_norm, ffn_norm,
// ffn_gate/up/down, ffn_post_norm) through ModelLoader's checks; an embedding model's dense
// projections, attention biases, local layers of another head dimension and a per-layer
// pattern array are refused by name. Forward, buffers and
// allocation as the other decoders' (decoder.h).
//
// The graph: x = embd(tokens) * sqrt(n_embd); per layer, with n = RMSNorm,
//   h = x + n_post(wo attn(rope(n_q(wq n(x))) * s, rope(n_k(wk n(x))), wv n(x)))
//   x = h + n_post(down(gelu(gate n(h)) * up n(h)))
// and logits = cap * tanh(output(n(x)) / cap) when a soft cap is set. Rope is NeoX's; the
// query is scaled by s = 1/sqrt(head_dim) (1/sqrt(n_embd / n_head) for the 62-layer 27B) before
// the attention, whose own scale is 1. Layer il is local when il % pattern < pattern - 1: its
// attention slides over the last sliding_window positions and its rope has base
// rope.freq_base_swa (10000 by default) and no position scaling (YaRN's ext and attention
// factors still apply, as in llama.cpp); the others are global (rope.freq_base, rope scaling).
// Under Numerics::ggml the GeGLU rounds as ggml's CPU table does (the gate rounded to f16, its
// gelu rounded to f16, then times up in f32). In a cache made for a bounded batch
// (Model::make_cache's max_rows: sessions and the scheduler), local layers keep only their
// window's positions, as llama.cpp's SWA cache does (KvCacheShape::layer_window). Parity:
// tests/llm/gemma3_oracle_test.cpp.
#pragma once

#include <filesystem>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/decoder.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {

struct Gemma3Layer {
  Array attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm, attn_post_norm;
  Array ffn_norm, ffn_gate, ffn_up, ffn_down, ffn_post_norm;
  bool local = false;  // sliding-window attention and the local rope base
};

class Gemma3Model final : public DecoderModel {
 public:
  static Gemma3Model load(const std::filesystem::path& path);
  static Gemma3Model load(const io::GgufModel& gguf);
  // The tensors llama.cpp creates for this architecture at spec's shape (synth.h).
  static std::vector<SynthTensor> synth_tensors(const SynthSpec& spec);
  // The gemma3.* keys beyond the shared ones (sliding window, its pattern, the local rope base).
  static void synth_hparams(io::GgufMetadata& metadata, const SynthSpec& spec);

  void forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const override;
  using Model::forward;

 private:
  std::vector<Gemma3Layer> layers_;
  int64_t sliding_window_ = 0;  // 0: every layer global
  double rope_freq_base_local_ = 10000.0;
  double query_scale_ = 0;
  double logit_softcap_ = 0;  // 0: none
};

}  // namespace tempra::llm
