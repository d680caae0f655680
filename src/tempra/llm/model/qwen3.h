// tempra/llm/model/qwen3.h: the Qwen3 decoder (general.architecture = qwen3), forward pass over a KV cache.
//
// Contract: Qwen3Model::load reads the hyperparameters from the GGUF metadata (qwen3.*,
// DecoderConfig) and keeps every weight as the zero-copy Array the file maps (f32, f16, bf16 or
// block-quantized matrices; f32 norms), checking each tensor's presence and shape against the
// metadata and throwing tempra::Error naming the file and the tensor (model_loader.h). The
// weights keep the mapping alive, so the GgufModel need not outlive the Qwen3Model.
//
// Qwen3Model is a Model (model.h): its forward runs a batch of rows from many sequences, each
// over its own KvCache, reading every weight matrix once for the whole batch.
//
// The graph is llama.cpp's src/models/qwen3.cpp: Llama's (llama.h) with each head's query and
// key RMS-normed before NeoX rope. Parity: with an f32 cache the logits match
// tools/qwen3_reference.py (float64 NumPy, same file) to 1e-5 of each position's largest logit
// on both backends for model-scaled f32/f16/bf16 weights (measured <= 1.7e-6 up to 64 tokens)
// and for Q8_0 weights in batches past 32 tokens under Numerics::exact (<= 2.0e-6), and to
// 5e-5 on the quantizer-stress fixture weights (tests/llm/qwen3_test.cpp).
//
// Allocation: one forward pass writes every intermediate into DecoderBuffers (decoder.h; made
// by make_buffers from the ExecContext's pool) and reads the KV cache in place
// (KvCache::attend), so a forward pass over buffers made once allocates nothing at all
// (tests/llm/qwen3_decode_alloc_test.cpp counts operator new calls) with any cache type.
#pragma once

#include <filesystem>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/decoder.h"
#include "tempra/llm/model/synth.h"

namespace tempra::llm {

struct Qwen3Layer {
  Array attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm;
  Array ffn_norm, ffn_gate, ffn_up, ffn_down;
};

class Qwen3Model final : public DecoderModel {
 public:
  static Qwen3Model load(const std::filesystem::path& path);
  static Qwen3Model load(const io::GgufModel& gguf);
  // The tensors llama.cpp creates for this architecture at spec's shape, in the synthesizer's
  // order (synth.h): the table load() reads, written out.
  static std::vector<SynthTensor> synth_tensors(const SynthSpec& spec);

  // The batch of model.h's contract, into `buffers` (made by make_buffers). Allocates nothing.
  void forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const override;
  using Model::forward;
  // The layers' weights as loaded (mapped views of the file), for the training forward.
  const std::vector<Qwen3Layer>& layers() const { return layers_; }

 private:
  std::vector<Qwen3Layer> layers_;
};

}  // namespace tempra::llm
