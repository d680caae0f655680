// tempra/llm/model/decoder.h: the shared blocks every decoder-only architecture's forward is
// written in (llama.cpp's llm_graph_context, for eager code): the hyperparameters they share,
// the buffers of one forward pass, and ForwardPass, whose steps (embed, linear, rms_norm, rope,
// attention, the gated FFN, the output head) each run on every row of a batch at once.
//
// Contract: a ForwardPass is made per forward() after check_batch; it lays the batch's rows out
// sequence after sequence (rows(), positions()) and writes only into the DecoderBuffers it was
// given and the sequences' caches, so a pass allocates nothing. Each step calls the kernel table
// directly with the very arguments the ops (rms_norm, linear, rope, silu, add, mul) would pass
// for the same arrays, so its bits are those of the op-by-op graph; shapes were validated at load
// (model_loader.h) and by check_batch. output() writes the logits of each sequence's last
// logit_rows rows and then advances every cache by its rows: call it last.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tempra/backend/kernel_args.h"
#include "tempra/core/array.h"
#include "tempra/core/exec_context.h"
#include "tempra/llm/model/expert_cache.h"
#include "tempra/llm/model/experts.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/model/model_loader.h"

namespace tempra::llm {

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
enum class Numerics : uint8_t { standard, exact, ggml };

// The hyperparameters the decoder-only architectures share, under the `ARCH.*` keys llama.cpp's
// loader reads (src/llama-model.cpp, load_hparams).
struct DecoderConfig {
  int n_layer = 0;
  int64_t n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_vocab = 0;
  int64_t context_length = 0;
  double rms_norm_eps = 1e-6;
  double rope_freq_base = 10000.0;
  double rope_freq_scale = 1.0;  // 1 / rope.scaling.factor for linear scaling
  // Mixtures of experts (0 for dense models): experts per layer, experts each token uses, and
  // each expert's feed-forward width.
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
  // False when no layer has a dense gated FFN (every one a mixture of experts): the buffers
  // then have no ffn_gate, ffn_up, ffn_act of n_ff columns.
  bool dense_ffn = true;

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  // The ModelInfo of a model of this shape.
  ModelInfo info(std::string architecture) const;

  // block_count, context_length, embedding_length, feed_forward_length, attention.head_count,
  // head_count_kv (default head_count), key_length (default n_embd / n_head; value_length must
  // equal it), layer_norm_rms_epsilon (default 1e-6), rope.freq_base (default 10000), and
  // rope.scaling.type none/linear with rope.scaling.factor; n_vocab is token_embd's row count.
  static DecoderConfig read(const ModelLoader& in);
};

// The intermediates of one forward pass of up to `tokens` rows, f32 and token-major, named after
// llama.cpp's tensors, plus the scratch the kernels need (the attention score rows for up to
// kv_capacity keys, the activations quantized to each weight format's partner). Every buffer
// comes from ctx's pool at construction; the logits are the base's.
struct DecoderBuffers final : ForwardBuffers {
  DecoderBuffers(ExecContext& ctx, const DecoderConfig& config, size_t quantized_row_bytes, int64_t tokens,
                 int64_t logit_rows, int64_t kv_capacity);

  Array inpL, attn_norm, Qcur, Kcur, Vcur, Qcur_normed, Kcur_normed, Qrope, Krope, kqv_out, attn_out, ffn_inp,
      ffn_norm, ffn_gate, ffn_up, ffn_act, ffn_out, result_norm;
  // Mixtures of experts (empty for dense models): router logits and probabilities [tokens,
  // n_expert]; each token's chosen experts and their weights [tokens, n_expert_used]; the rows
  // routed to one expert gathered [tokens, n_embd], its gate/up/product [tokens, n_ff_exp] and
  // output [tokens, n_embd]; every (token, choice)'s weighted output [tokens, n_expert_used,
  // n_embd]; and the routing lists: the (token, choice) slots of each expert, expert by expert.
  Array moe_probs, moe_weights, moe_rows, moe_gate, moe_up, moe_act, moe_down, moe_slots;
  std::vector<int32_t> moe_selected, moe_order, moe_offsets, moe_cursor, moe_sequence, moe_rank;
  // After a forward pass, per MoE layer (moe_ffn's `layer`: the ExpertSource index; for
  // qwen3moe every decoder layer) and row: the experts chosen, most probable first
  // (moe_routes [layer][row][n_expert_used]), and how close the choice was (moe_margins
  // [layer][row]: the last chosen expert's probability lead over the best expert left out,
  // relative to it; 1 when no choice was made or every expert is used). A margin within the
  // engines' rounding noise means another engine may route the token differently: the oracle
  // tests compare the routes with llama.cpp's (tests/llm/qwen3moe_oracle_test.cpp).
  std::vector<int32_t> moe_routes;
  std::vector<float> moe_margins;
  Array kq_scratch;  // q_heads * min(tokens, kv_capacity) * kv_capacity floats (the scalar kernel's score rows)
  Array quantized_scratch;  // bytes of `tokens` activation rows in the widest partner format
  std::vector<int32_t> positions;
};

// What every decoder-only architecture keeps beside its layers: the shared hyperparameters, the
// token embedding, the final norm and the output head, the numerics, and buffers sized for them.
// An architecture derives from it, loads its layers, and writes forward() with a ForwardPass.
class DecoderModel : public Model {
 public:
  const ModelInfo& info() const override { return info_; }
  const DecoderConfig& config() const { return config_; }
  // Bytes of one activation row quantized for the widest block-quantized weight (0 if none).
  size_t quantized_row_bytes() const { return quantized_row_bytes_; }
  Numerics numerics() const { return numerics_; }
  void set_numerics(Numerics mode) { numerics_ = mode; }

  std::unique_ptr<ForwardBuffers> make_buffers(ExecContext& ctx, int64_t tokens, int64_t logit_rows,
                                               int64_t kv_capacity) const override;
  const ExpertCache* expert_cache() const override { return expert_cache_.get(); }

 protected:
  // Reads `config` (DecoderConfig::read plus n_vocab) and token_embd, output_norm and output
  // (tied to token_embd when the file has no output.weight). Call first: an architecture adds
  // its own keys to config_ after it.
  void load_embeddings_and_head(ModelLoader& in);
  // Mixtures of experts: the routed experts of the next MoE layer (ffn_gate_exps, ffn_up_exps,
  // ffn_down_exps under `prefix`, config_'s n_expert x n_ff_exp x n_embd), as views of the
  // mapped file, or, when `stream` is set, as the file ranges an ExpertCache reads. Call once per
  // MoE layer in order (ExpertSource's layer index is the call's), before finish_load.
  void load_experts(ModelLoader& in, const std::string& prefix, const std::optional<ExpertStreaming>& stream);
  // Records the scratch the loaded matrices need and the ModelInfo, and makes experts_; call
  // after the layers.
  void finish_load(const ModelLoader& in);

  ModelInfo info_;
  DecoderConfig config_;
  Array token_embd_, output_norm_, output_;  // output_ is token_embd_ when the embeddings are tied
  size_t quantized_row_bytes_ = 0;           // also room for a row rounded to f16/bf16 (as f32)
  Numerics numerics_ = Numerics::standard;
  // The routed experts of an MoE model, layer by layer (null for dense models): resident views
  // or expert_cache_. Shared: the Model interface copies models by value while loading.
  std::shared_ptr<const ExpertSource> experts_;

 private:
  std::shared_ptr<ResidentExperts> resident_experts_;     // while loading, when not streaming
  std::vector<ExpertCache::Layer> streamed_experts_;      // while loading, when streaming
  std::optional<ExpertStreaming> stream_;
  std::shared_ptr<ExpertCache> expert_cache_;
};

class ForwardPass {
 public:
  // `buffers` must be a DecoderBuffers; `op` names the architecture in errors.
  ForwardPass(std::string_view op, ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers,
              Numerics numerics);

  int64_t rows() const { return n_; }  // rows in the batch, sequence after sequence
  const int32_t* positions() const { return b_.positions.data(); }
  DecoderBuffers& buffers() const { return b_; }
  ThreadPool& pool() const { return ctx_.threads(); }

  // Each row's token embedding, widened to f32 (exact for f16/bf16; the format's reference
  // decoder for block-quantized tables, as ops::embedding decodes them): rows() x width.
  void embed(const Array& table, float* out) const;
  // y [rows, n] = x [rows, k] w^T for w [n, k]: ops::linear's arithmetic (see product_rows in
  // decoder.cpp for the one dispatch that differs).
  void linear(const float* x, const Array& w, float* y) const;
  // The same, then y += bias on every row when `bias` (f32 [n]) is defined (ggml_add's order).
  void linear(const float* x, const Array& w, float* y, const Array& bias) const;
  // y = rms_norm(x) * weight over `rows` rows of `width` (a head's rows: rows() * heads).
  void rms_norm(const float* x, int64_t rows, int64_t width, const Array& weight, double eps, float* y) const;
  // Rotates each of rows() x heads head vectors of head_dim by its row's position.
  void rope(const float* x, int64_t heads, int64_t head_dim, const RopeParams& params, float* y) const;
  // Causal self-attention per sequence over its own cache at layer `il`: writes the rows'
  // keys and values (k, v: [rows, n_head_kv * head_dim]) into the cache, then each query row
  // (q: [rows, n_head * head_dim]) attends to its sequence's keys up to its own position.
  // window > 0: sliding attention over the last `window` positions (KvCache::attend).
  void attention(int il, const float* q, const float* k, const float* v, int64_t n_head, double scale,
                 float* out, int64_t window = 0) const;
  // out = down(act(gate x) * up x), through the buffers' ffn_gate, ffn_up and ffn_act; `act`
  // is silu for SwiGLU (Llama, Qwen), gelu_tanh for GeGLU (Gemma; under Numerics::ggml as
  // ggml's CPU GeGLU rounds it: the gate to f16, its gelu to f16, 0 below -10, x from 10).
  void gated_ffn(const float* x, const Array& gate, const Array& up, const Array& down, UnaryOp act,
                 float* out) const;
  // The mixture-of-experts FFN (llama.cpp's build_moe_ffn with softmax gating, SwiGLU experts):
  // router probabilities softmax(router x); each token's n_expert_used most probable experts,
  // their probabilities as weights (divided by their sum when normalize, then times `scale`
  // unless it is 0 or 1); out = sum over the chosen experts, most probable first, of weight x
  // down_e(silu(gate_e x) * up_e x). Tokens are grouped by expert, so each expert's matrices are
  // read once per batch for all the rows routed to it (each sequence's rows on the path its
  // own count of them takes, so batching changes no row's bits). The experts are `layer`'s of
  // `experts` (experts.h), asked for one at a time in ascending order after one will_use().
  void moe_ffn(const float* x, const Array& router, const ExpertSource& experts, int layer, int64_t n_used,
               bool normalize, float scale, float* out) const;
  // out[j] = a[j] + b[j] over rows() x width.
  void add(const float* a, const float* b, int64_t width, float* out) const;
  // x[j] *= s over rows() x width (ggml_scale).
  void scale(float* x, int64_t width, float s) const;
  // The logits: each sequence's last logit_rows rows of `hidden` [rows, n_embd] normed by
  // `norm`, times `head`, soft-capped to cap * tanh(logit / cap) when softcap > 0; then every
  // cache advances by its rows.
  void output(const float* hidden, const Array& norm, double eps, const Array& head, double softcap = 0) const;

 private:
  ExecContext& ctx_;
  std::span<const SequenceRows> batch_;
  DecoderBuffers& b_;
  Numerics numerics_;
  int64_t n_ = 0;
};

}  // namespace tempra::llm
