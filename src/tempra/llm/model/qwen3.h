// tempra/llm/model/qwen3.h: the Qwen3 decoder (general.architecture = qwen3), forward pass over a KV cache.
//
// Contract: Qwen3Model::load reads the hyperparameters from the GGUF metadata (qwen3.*) and
// keeps every weight as the zero-copy Array the file maps (f32, f16, bf16 or block-quantized
// matrices; f32 norms), checking each tensor's presence and shape against the metadata and
// throwing tempra::Error naming the file and the tensor. The weights keep the mapping alive, so
// the GgufModel need not outlive the Qwen3Model.
//
// Qwen3Session::forward appends tokens to its KvCache and returns the logits of each appended
// position, f32 [n, n_vocab]; prompts are processed in batches of at most `batch` tokens, a
// decode step is a forward of one token. truncate(n) rewinds the session to its first n tokens.
//
// The graph is llama.cpp's src/models/qwen3.cpp. Parity: with an f32 cache the logits match
// tools/qwen3_reference.py (float64 NumPy, same file) to 1e-5 of each position's largest logit
// on both backends for model-scaled f32/f16/bf16 weights (measured <= 1.7e-6 up to 64 tokens)
// and for Q8_0 weights in batches past 32 tokens (<= 2.0e-6), and to 5e-5 on the
// quantizer-stress fixture weights (tests/llm/qwen3_test.cpp).
//
// Allocation: one forward pass writes every intermediate into a Qwen3Buffers (named after
// llama.cpp's tensors, f32, token-major) and reads the KV cache in place (KvCache::attend).
// A Qwen3Session owns buffers sized for one token, made at construction, so decode() allocates
// nothing at all (tests/llm/qwen3_decode_alloc_test.cpp counts operator new calls) with any
// cache type. A prompt takes its buffers from the ExecContext's pool.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/kv_cache.h"

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
//   exact: f16/bf16 weight matrices widened to f32 times the f32 activations, attention in f32
//          over the widened cache (what tools/qwen3_reference.py computes in float64); with
//          more than 32 tokens in the batch, block-quantized matrices too are decoded exactly
//          and multiplied in f32 (Kernels::gemm_quant_weights: prefill at GEMM speed).
//   ggml:  ggml's roundings, for logit parity with llama.cpp: each activation row rounded to the
//          weight's type before an f16/bf16 matrix (its vec_dot_type is F16 / BF16, so ggml
//          converts src1 before the dot; products of two halves are exact in f32), and with an
//          f16 cache and fewer than 64 tokens in the batch, attention as ggml's CPU flash
//          attention computes it then (KvCache::attend_ggml: f16 query, f16 value accumulator;
//          from 64 query rows ggml's tiled kernel is f32 throughout, as tempra's attention).
//          tests/llm/qwen3_oracle_test.cpp measures what each costs.
// Otherwise quantized weights see their partner format (Q8_0, Q8_K) as in ggml: the activation
// rows are rounded to it and the integer dots never dequantize (every decode step, and every
// batch under ggml numerics). f32 weights are always exact.
enum class Qwen3Numerics : uint8_t { exact, ggml };

// The intermediates of one forward pass of up to `tokens` tokens, f32 and token-major, plus the
// scratch the kernels need (the attention score rows for up to kv_capacity keys, the
// activations quantized to each weight format's partner). logit_rows: how many positions get
// logits (the last ones of the batch). Every buffer comes from ctx's pool at construction.
struct Qwen3Buffers {
  Qwen3Buffers(ExecContext& ctx, const Qwen3Model& model, int64_t tokens, int64_t logit_rows, int64_t kv_capacity);

  int64_t tokens, logit_rows, kv_capacity;
  Array inpL, attn_norm, Qcur, Kcur, Vcur, Qcur_normed, Kcur_normed, Qrope, Krope, kqv_out, attn_out, ffn_inp,
      ffn_norm, ffn_gate, ffn_up, ffn_act, ffn_out, result_norm, result_output;
  Array kq_scratch;         // q_heads * tokens * kv_capacity floats (the scalar kernel's score rows)
  Array quantized_scratch;  // bytes of `tokens` activation rows in the widest partner format
  std::vector<int32_t> positions;
};

class Qwen3Model {
 public:
  static Qwen3Model load(const std::filesystem::path& path);
  static Qwen3Model load(const io::GgufModel& gguf);

  const Qwen3Config& config() const { return config_; }
  // Bytes of one activation row quantized for the widest block-quantized weight (0 if none).
  size_t quantized_row_bytes() const { return quantized_row_bytes_; }
  Qwen3Numerics numerics() const { return numerics_; }
  void set_numerics(Qwen3Numerics mode) { numerics_ = mode; }

  // Runs `token_ids` (one batch) at positions cache.size() ... and commits them to the cache;
  // returns f32 logits [n, n_vocab].
  Array forward(ExecContext& ctx, std::span<const int32_t> token_ids, KvCache& cache) const;
  // The same pass into `buffers` (which must hold token_ids.size() tokens and the cache's
  // length after them); logits of the last buffers.logit_rows positions (at most all of them)
  // land in buffers.result_output. Allocates nothing.
  void forward(ExecContext& ctx, std::span<const int32_t> token_ids, KvCache& cache, Qwen3Buffers& buffers) const;

 private:
  Qwen3Config config_;
  Array token_embd_, output_norm_, output_;  // output_ is token_embd_ when the embeddings are tied
  std::vector<Qwen3Layer> layers_;
  size_t quantized_row_bytes_ = 0;  // also room for a row rounded to f16/bf16 (as f32)
  Qwen3Numerics numerics_ = Qwen3Numerics::exact;
};

struct Qwen3SessionOptions {
  int64_t context = 0;  // KV cache capacity in tokens; 0: the model's context_length
  KvCacheType cache_type = KvCacheType::f16;  // llama.cpp's default; f32 for exact parity tests
  int64_t batch = 512;  // the most prompt tokens one forward pass processes
};

class Qwen3Session {
 public:
  Qwen3Session(ExecContext& ctx, const Qwen3Model& model, const Qwen3SessionOptions& options = {});

  // Appends the tokens (in batches) and returns the logits of every one of them, f32 [n, n_vocab].
  Array forward(ExecContext& ctx, std::span<const int32_t> token_ids);
  // Appends the tokens (in batches) and returns the logits of the last one only, n_vocab
  // floats owned by the session, valid until its next call: prefill without [n, n_vocab].
  std::span<const float> prefill(ExecContext& ctx, std::span<const int32_t> token_ids);
  // One decode step: appends `token` and returns its logits (n_vocab floats owned by the
  // session, valid until its next call). Allocates nothing.
  std::span<const float> decode(ExecContext& ctx, int32_t token);
  void truncate(int64_t n) { cache_.truncate(n); }
  int64_t size() const { return cache_.size(); }
  const KvCache& cache() const { return cache_; }

 private:
  const Qwen3Model* model_;
  int64_t batch_;
  KvCache cache_;
  Qwen3Buffers step_;  // one token's buffers, reused by every decode step
};

}  // namespace tempra::llm
