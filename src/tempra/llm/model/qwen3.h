// tempra/llm/model/qwen3.h: the Qwen3 decoder (general.architecture = qwen3), forward pass over a KV cache.
//
// Contract: Qwen3Model::load reads the hyperparameters from the GGUF metadata (qwen3.*) and
// keeps every weight as the zero-copy Array the file maps (f32, f16, bf16 or block-quantized
// matrices; f32 norms), checking each tensor's presence and shape against the metadata and
// throwing tempra::Error naming the file and the tensor. The weights keep the mapping alive, so
// the GgufModel need not outlive the Qwen3Model.
//
// Qwen3Model is a Model (model.h): its forward runs a batch of rows from many sequences, each
// over its own KvCache, reading every weight matrix once for the whole batch.
//
// The graph is llama.cpp's src/models/qwen3.cpp. Parity: with an f32 cache the logits match
// tools/qwen3_reference.py (float64 NumPy, same file) to 1e-5 of each position's largest logit
// on both backends for model-scaled f32/f16/bf16 weights (measured <= 1.7e-6 up to 64 tokens)
// and for Q8_0 weights in batches past 32 tokens under Qwen3Numerics::exact (<= 2.0e-6), and to
// 5e-5 on the quantizer-stress fixture weights (tests/llm/qwen3_test.cpp).
//
// Allocation: one forward pass writes every intermediate into a Qwen3Buffers (named after
// llama.cpp's tensors, f32, token-major; made by make_buffers from the ExecContext's pool) and
// reads the KV cache in place (KvCache::attend), so a forward pass over buffers made once
// allocates nothing at all (tests/llm/qwen3_decode_alloc_test.cpp counts operator new calls) with
// any cache type.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/kv_cache.h"
#include "tempra/llm/model/model.h"

namespace tempra::llm {

struct Qwen3Config {
  int n_layer = 0;
  int64_t n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_vocab = 0;
  int64_t context_length = 0;
  double rms_norm_eps = 1e-6;
  double rope_freq_base = 10000.0;
};

struct Qwen3Layer {
  Array attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm;
  Array ffn_norm, ffn_gate, ffn_up, ffn_down;
};

class Qwen3Model;

// Where tempra may round differently from llama.cpp's CPU backend.
//   standard (the default): f16/bf16 weight matrices widened to f32 times the f32 activations,
//          attention in f32 over the widened cache; block-quantized matrices meet activation
//          rows rounded to their partner format (Q8_0, Q8_K) in exact integer dots at every
//          batch size, as ggml computes them (quant_dot_gemm: the integer GEMM of the arm for
//          prompts, bit for bit the dots of a decode step), so a prompt's logits do not depend
//          on how it is split into forward passes. Where the native arm has no integer GEMM for
//          the format (quant_dot.h; for now only the AVX-512 VNNI arm has them, for Q8_0, Q4_0,
//          Q4_K, Q5_K and Q6_K), batches of more than 32 tokens take exact's decoding GEMM
//          instead, which is faster there than the dots, and the split matters again.
//   exact: as standard, except that batches of more than 32 tokens multiply block-quantized
//          matrices decoded exactly by the f32 activations (Kernels::gemm_quant_weights; no
//          partner rounding: what tools/qwen3_reference.py computes in float64, which the
//          parity tests hold it to). Decode steps keep the integer dots.
//   ggml:  ggml's roundings, for logit parity with llama.cpp: each activation row rounded to the
//          weight's type before an f16/bf16 matrix (its vec_dot_type is F16 / BF16, so ggml
//          converts src1 before the dot; products of two halves are exact in f32), and with an
//          f16 cache and fewer than 64 tokens in the batch, attention as ggml's CPU flash
//          attention computes it then (KvCache::attend_ggml: f16 query, f16 value accumulator;
//          from 64 query rows ggml's tiled kernel is f32 throughout, as tempra's attention).
//          Quantized matrices as standard. tests/llm/qwen3_oracle_test.cpp measures what each
//          costs.
// f32 weights are always exact.
enum class Qwen3Numerics : uint8_t { standard, exact, ggml };

// The intermediates of one forward pass of up to `tokens` rows, f32 and token-major, plus the
// scratch the kernels need (the attention score rows for up to kv_capacity keys, the
// activations quantized to each weight format's partner). Every buffer comes from ctx's pool at
// construction; the logits are the base's.
struct Qwen3Buffers final : ForwardBuffers {
  Qwen3Buffers(ExecContext& ctx, const Qwen3Model& model, int64_t tokens, int64_t logit_rows, int64_t kv_capacity);

  Array inpL, attn_norm, Qcur, Kcur, Vcur, Qcur_normed, Kcur_normed, Qrope, Krope, kqv_out, attn_out, ffn_inp,
      ffn_norm, ffn_gate, ffn_up, ffn_act, ffn_out, result_norm;
  Array kq_scratch;  // q_heads * min(tokens, kv_capacity) * kv_capacity floats (the scalar kernel's score rows)
  Array quantized_scratch;  // bytes of `tokens` activation rows in the widest partner format
  std::vector<int32_t> positions;
};

class Qwen3Model final : public Model {
 public:
  static Qwen3Model load(const std::filesystem::path& path);
  static Qwen3Model load(const io::GgufModel& gguf);

  const ModelInfo& info() const override { return info_; }
  const Qwen3Config& config() const { return config_; }
  // Bytes of one activation row quantized for the widest block-quantized weight (0 if none).
  size_t quantized_row_bytes() const { return quantized_row_bytes_; }
  Qwen3Numerics numerics() const { return numerics_; }
  void set_numerics(Qwen3Numerics mode) { numerics_ = mode; }

  std::unique_ptr<ForwardBuffers> make_buffers(ExecContext& ctx, int64_t tokens, int64_t logit_rows,
                                               int64_t kv_capacity) const override;
  // The batch of model.h's contract, into `buffers` (a Qwen3Buffers). Allocates nothing.
  void forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const override;
  using Model::forward;

 private:
  ModelInfo info_;
  Qwen3Config config_;
  Array token_embd_, output_norm_, output_;  // output_ is token_embd_ when the embeddings are tied
  std::vector<Qwen3Layer> layers_;
  size_t quantized_row_bytes_ = 0;  // also room for a row rounded to f16/bf16 (as f32)
  Qwen3Numerics numerics_ = Qwen3Numerics::standard;
};

}  // namespace tempra::llm
