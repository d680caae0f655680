// tempra/llm/model/decoder.h: the shared blocks every decoder-only architecture's forward is
// written in (llama.cpp's llm_graph_context, for eager code): the hyperparameters they share,
// the buffers of one forward pass, and ForwardPass, whose steps (embed, linear, rms_norm, rope,
// attention, latent attention, the gated delta net, the gated FFN and the mixture of experts,
// the output head) each run on every row of a batch at once.
//
// Contract: a ForwardPass is made per forward() after check_batch; it lays the batch's rows out
// sequence after sequence (rows(), positions()) and writes only into the DecoderBuffers it was
// given and the sequences' caches, so a pass allocates nothing. Each step calls the kernel table
// directly with the very arguments the ops (rms_norm, linear, rope, silu, add, mul) would pass
// for the same arrays, so its bits are those of the op-by-op graph; shapes were validated at load
// (model_loader.h) and by check_batch. output() writes the logits of each sequence's last
// logit_rows rows and then advances every cache by its rows: call it last.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tempra/backend/kernel_args.h"
#include "tempra/core/array.h"
#include "tempra/core/exec_context.h"
#include "tempra/llm/model/delta_net.h"
#include "tempra/llm/model/expert_cache.h"
#include "tempra/llm/model/experts.h"
#include "tempra/llm/model/model.h"
#include "tempra/llm/model/model_loader.h"

namespace tempra::llm {

// Where tempra may round differently from llama.cpp's CPU backend.
//   standard (the default): f16 weight matrices widened to f32 times the f32 activations,
//          attention in f32 over the widened cache; bf16 matrices meet activation rows rounded
//          to bf16 (ggml's vec_dot_type for BF16), every product exact and the sums in f32
//          (for sequences of more than 10 rows Kernels::gemm_bf16_products: vdpbf16ps where the
//          CPU has AVX512_BF16, twice the multiply-adds of an f32 FMA; fewer rows take the f32
//          dots on the widened weights); block-quantized matrices meet activation
//          rows rounded to their partner format (Q8_0, Q8_K) in exact integer dots at every
//          batch size, as ggml computes them (quant_dot_gemm: the integer GEMM of the arm for
//          prompts, bit for bit the dots of a decode step), so a prompt's logits do not depend
//          on how it is split into forward passes. Where the native arm has no integer GEMM for
//          the format (quant_dot.h; for now only the AVX-512 VNNI arm has them, for Q8_0, Q4_0,
//          Q4_K, Q5_K and Q6_K), batches of more than 32 tokens take exact's decoding GEMM
//          instead, which is faster there than the dots, and the split matters again.
//   exact: as standard, except that bf16 matrices are widened to f32 and meet the f32
//          activations, and batches of more than 32 tokens multiply block-quantized
//          matrices decoded exactly by the f32 activations (Kernels::gemm_quant_weights; no
//          partner rounding: what tools/qwen3_reference.py computes in float64, which the
//          parity tests hold it to). Decode steps keep the integer dots.
//   ggml:  ggml's roundings, for logit parity with llama.cpp: each activation row rounded to the
//          weight's type before an f16 matrix, as before a bf16 one under standard (its
//          vec_dot_type is F16 / BF16, so ggml converts src1 before the dot; products of two
//          halves are exact in f32; not so in
//          ggml's AMX buffer, which the oracle tests turn off: tests/llm/logit_oracle.h), and with an
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
  // Bounds far past any released model on every width (and on its product by the head count),
  // so no product of two checked sizes can overflow.
  static constexpr int64_t kMaxWidth = int64_t{1} << 24;

  int n_layer = 0;
  int64_t n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_vocab = 0;
  int64_t context_length = 0;
  double rms_norm_eps = 1e-6;
  double rope_freq_base = 10000.0;
  double rope_freq_scale = 1.0;  // 1 / rope.scaling.factor for linear and YaRN scaling
  // YaRN (rope.scaling.type yarn; llama.cpp's cparams): the ramp's strength (1 under YaRN, 0
  // otherwise), its beta_fast/beta_slow rotations over n_ctx_orig_yarn training positions
  // (rope.scaling.original_context_length, default context_length); rope.scaling.attn_factor;
  // and YaRN's log multiplier (deepseek2's mscale_all_dim; 0: none), see yarn_attn_factor().
  double yarn_ext_factor = 0.0, yarn_beta_fast = 32.0, yarn_beta_slow = 1.0;
  int64_t n_ctx_orig_yarn = 0;
  double rope_attn_factor = 1.0, rope_yarn_log_mul = 0.0;
  // Mixtures of experts (0 for dense models): experts per layer, experts each token uses, and
  // each expert's feed-forward width.
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
  // Group-limited routing (expert_group_count > 1; 0 otherwise): the experts fall into
  // n_expert_groups equal groups and each token chooses among the n_group_used best groups.
  int64_t n_expert_groups = 0, n_group_used = 0;
  // False when no layer has a dense gated FFN (every one a mixture of experts): the buffers
  // then have no ffn_gate, ffn_up, ffn_act of n_ff columns.
  bool dense_ffn = true;

  // Multi-head latent attention (deepseek2; all 0 otherwise): queries through a rank
  // q_lora_rank bottleneck (0: one matrix); keys and values compressed to one kv_lora_rank
  // latent per token; each head's query and key have qk_nope_dim unrotated and rope_dim rotated
  // dims, its value v_head_dim. The cache holds one row per token of head_dim = kv_lora_rank +
  // rope_dim (n_head_kv 1), whose first kv_lora_rank values are also its value
  // (KvCacheShape::values_in_keys).
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_dim = 0, rope_dim = 0, v_head_dim = 0;
  bool latent_attention() const { return kv_lora_rank > 0; }
  // Shared experts beside the routed ones (deepseek2): their total width (0: none); and the
  // leading layers whose FFN is dense (n_ff wide) before the mixtures of experts begin.
  int64_t n_ff_shexp = 0;
  int n_layer_dense_lead = 0;
  // llama.cpp's special case of deepseek2: YaRN's log multiplier also sets mscale (see
  // yarn_attn_factor).
  bool yarn_log_mul_sets_mscale = false;

  // The leading dims of each head that rope rotates (rope.dimension_count, default head_dim;
  // Qwen3.5 rotates a quarter of them); the rest pass through. Latent attention rotates
  // rope_dim instead.
  int64_t n_rot = 0;
  // Hybrids of gated delta nets and attention (qwen35; empty otherwise): per layer, whether it
  // is a gated delta net, and their shape (delta_net.h). The KV cache holds the attention
  // layers' rows and the recurrent layers' states.
  std::vector<bool> recurrent;
  DeltaNetShape delta_net;
  int n_recurrent() const { return int(std::count(recurrent.begin(), recurrent.end(), true)); }

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  // The ModelInfo of a model of this shape.
  ModelInfo info(std::string architecture) const;
  // The rope of this model over the first n_dims dims of each head: base, scaling and YaRN as
  // llama.cpp's graph passes them to ggml_rope_ext.
  RopeParams rope(RopeMode mode, int64_t n_dims) const;
  // The magnitude llama.cpp gives YaRN's rotation (llama_context's yarn_attn_factor; ggml's
  // rope multiplies it by 1 + 0.1 ln(1 / freq_scale) again), in f32 as there: under YaRN
  // mscale(factor, m) / mscale(factor, log_mul) / (1 + 0.1 ln factor) with mscale(s, m) =
  // 1 + 0.1 m ln s, where m is 1, or log_mul when yarn_log_mul_sets_mscale and log_mul is not
  // 1; times rope_attn_factor.
  double yarn_attn_factor() const;

  // block_count, context_length, embedding_length, feed_forward_length, attention.head_count,
  // head_count_kv (default head_count), key_length (default n_embd / n_head; value_length must
  // equal it unless latent_attention, whose architecture reads its own), rope.dimension_count
  // (even, at most key_length), layer_norm_rms_epsilon (default 1e-6), rope.freq_base (default 10000), and
  // rope.scaling.type none/linear/yarn with rope.scaling.factor, original_context_length and
  // attn_factor; n_vocab is token_embd's row count.
  static DecoderConfig read(const ModelLoader& in, bool latent_attention = false);
  // A mixture of experts' counts as llama.cpp's load_hparams checks them: expert_count (at most
  // 1024), expert_used_count (at most expert_count), expert_group_count and
  // expert_group_used_count (groups dividing the experts, 0 < used < groups).
  void read_experts(const ModelLoader& in);
  // Refuses a partial rotation (n_rot below head_dim) by name: the architectures whose
  // llama.cpp graph rotates whole heads (llama refuses the file, qwen3 asserts).
  void require_full_rotation(const ModelLoader& in) const;
};

// How moe_ffn routes each token (llama.cpp's build_moe_ffn): the router's probabilities are
// softmax(logits), or sigmoid(logits) each when `sigmoid`; an expert's selection score is its
// probability plus selection_bias[e] (DeepSeek-V3's exp_probs_b; null: none); the token takes
// its n_used best-scored experts, among the experts of its `groups_used` best groups when
// `groups` > 1 (a group's score: the sum of its two best scores); their probabilities (without
// the bias) are the weights, divided by their sum when `normalize`, then times `scale` unless
// it is 0 or 1.
struct MoeRouting {
  int64_t n_used = 0;
  bool normalize = false;
  float scale = 0.0f;
  int64_t groups = 0, groups_used = 0;
  bool sigmoid = false;
  const float* selection_bias = nullptr;
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
  // Multi-head latent attention (empty otherwise; DecoderConfig's dims): the query's bottleneck
  // and its norm [tokens, q_lora_rank]; the query [tokens, n_head, qk_nope + rope]; its rope
  // parts gathered and rotated [tokens, n_head, rope]; one head's slice of a batch gathered
  // [tokens, max(qk_nope, kv_lora)] and its product [tokens, max(kv_lora, v_head)]; the
  // compressed KV row's latent and its norm [tokens, kv_lora], its rope part and that rotated
  // [tokens, rope]; and the heads' values [tokens, n_head * v_head].
  Array q_a, q_a_norm, q, q_pe, q_pe_rope, head_in, head_out, kv_cmpr, kv_cmpr_norm, k_pe, k_pe_rope, kqv_heads;
  // Gated delta nets and gated attention (empty otherwise; DeltaNetShape's dims): the mixed
  // q|k|v projection and its convolution [tokens, channels]; the output gate z and the heads'
  // outputs and their gated norm [tokens, value_dim]; beta and the decay g [tokens, v_heads];
  // the attention layers' query with its gate [tokens, 2 q_dim] and the gate [tokens, q_dim].
  Array qkv_mixed, conv_output, z, delta_out, delta_norm, beta, gate, Qcur_full, Qgate;
  std::vector<int32_t> moe_selected, moe_order, moe_offsets, moe_cursor, moe_sequence, moe_rank, moe_group_rank;
  std::vector<float> moe_selection, moe_group_scores;  // one token's selection scores, its groups' scores
  // After a forward pass, per MoE layer (moe_ffn's `layer`: the ExpertSource index; for
  // qwen3moe every decoder layer) and row: the experts chosen, most probable first
  // (moe_routes [layer][row][n_expert_used]), and how close the choice was (moe_margins
  // [layer][row]: the last chosen expert's probability lead over the best expert left out,
  // relative to it, and under group-limited routing the same of the last chosen group's score,
  // whichever is smaller; 1 when no choice was made or every expert is used). A margin within the
  // engines' rounding noise means another engine may route the token differently: the oracle
  // tests compare the routes with llama.cpp's (tests/llm/qwen3moe_oracle_test.cpp).
  std::vector<int32_t> moe_routes;
  std::vector<float> moe_margins;
  Array kq_scratch;  // q_heads * min(tokens, kv_capacity) * kv_capacity floats (the scalar kernel's score rows)
  Array quantized_scratch;  // bytes of `tokens` activation rows in the widest partner format
  std::vector<int32_t> positions;
  // The rope rotations of this forward pass's positions (fill_rope_rotations), one table per
  // distinct RopeParams (Gemma 3's local and global layers have two; any other model one), each
  // tokens x the widest rotation: computed by the first layer that asks, read by the rest.
  static constexpr int kRopeTables = 2;
  std::array<RopeParams, kRopeTables> rope_keys;
  int rope_tables = 0;  // filled this pass
  std::vector<float> rope_rotations;
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
  // The weights every decoder shares, as loaded (mapped views of the file): what a training
  // forward reads (tempra/train). output_head() is token_embd() when the embeddings are tied.
  const Array& token_embd() const { return token_embd_; }
  const Array& output_norm() const { return output_norm_; }
  const Array& output_head() const { return output_; }

 protected:
  // Reads `config` (DecoderConfig::read(in, latent_attention) plus n_vocab) and token_embd,
  // output_norm and output (tied to token_embd when the file has no output.weight). Call first:
  // an architecture adds its own keys to config_ after it.
  void load_embeddings_and_head(ModelLoader& in, bool latent_attention = false);
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

// The weights of one layer's multi-head latent attention (llama.cpp's deepseek2 names, in
// DecoderConfig's dims): the query as attn_q_a [q_lora, n_embd], its norm, attn_q_b [n_head *
// (qk_nope + rope), q_lora], or as one attn_q [n_head * (qk_nope + rope), n_embd] when q_lora_rank
// is 0; attn_kv_a_mqa [kv_lora + rope, n_embd] and the latent's norm; per head, attn_k_b
// [kv_lora, qk_nope] (absorbed into the query) and attn_v_b [v_head, kv_lora] (decompresses
// the attended latent); attn_output [n_embd, n_head * v_head].
struct LatentAttentionWeights {
  Array attn_q_a, attn_q_a_norm, attn_q_b, attn_q, attn_kv_a_mqa, attn_kv_a_norm;
  std::vector<Array> attn_k_b, attn_v_b;
  Array attn_output;
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
  // Products of one input with several weights (a layer's q, k and v; an FFN's gate and up),
  // each exactly as linear (then its bias, when given and defined), with the input rounded or
  // quantized to a partner format once for the weights that share it.
  struct Product {
    const Array& w;
    float* y;
    const Array* bias = nullptr;
  };
  void linears(const float* x, std::initializer_list<Product> products) const;
  // y = rms_norm(x) * weight over `rows` rows of `width` (a head's rows: rows() * heads).
  void rms_norm(const float* x, int64_t rows, int64_t width, const Array& weight, double eps, float* y) const;
  // Rotates each of rows() x heads head vectors of head_dim by its row's position.
  void rope(const float* x, int64_t heads, int64_t head_dim, const RopeParams& params, float* y) const;
  // Causal self-attention per sequence over its own cache at layer `il`: writes the rows'
  // keys and values (k, v: [rows, n_head_kv * head_dim]) into the cache, then each query row
  // (q: [rows, n_head * head_dim]) attends to its sequence's keys up to its own position.
  // window > 0: sliding attention over the last `window` positions (KvCache::attend). v is
  // null when the cache holds the values in the keys.
  void attention(int il, const float* q, const float* k, const float* v, int64_t n_head, double scale,
                 float* out, int64_t window = 0) const;
  // Multi-head latent attention with the absorption of llama.cpp's deepseek2 graph (is_mla): the
  // query q (through the bottleneck when there is one) split per head into q_nope and q_pe; the
  // compressed row kv_cmpr_pe = attn_kv_a_mqa x split into the latent (normed) and k_pe; q_pe
  // and k_pe rotated by `rope`; each head's q_nope absorbed into latent space by attn_k_b, so
  // the heads attend as multi-query attention over the cache rows [latent | k_pe] with query
  // rows [absorbed q_nope | q_pe], and each value is the row's latent (values_in_keys); each
  // head's result decompressed by attn_v_b, then out = attn_output x the heads. x: the normed
  // input [rows, n_embd]; out [rows, n_embd].
  void latent_attention(int il, const float* x, const LatentAttentionWeights& w, const RopeParams& rope,
                        double kq_scale, double eps, float* out) const;
  // A gated delta net (llama.cpp's qwen35 build_layer_attn_linear) over recurrent layer
  // `layer` of each sequence's cache (KvCache::recurrent_state: the convolution's last
  // conv_kernel - 1 input rows, then each value head's state matrix): qkv_mixed = attn_qkv x and
  // z = attn_gate x; beta = sigmoid(ssm_beta x); g = softplus(ssm_alpha x + ssm_dt) * ssm_a;
  // q|k|v = silu(causal convolution of qkv_mixed by ssm_conv1d over the sequence's rows after
  // its cached ones); q and k L2-normed per head; each value head h (key head h % k_heads) runs
  // the delta rule token after token (Kernels::gated_delta_rule, DeltaRuleArgs in
  // kernel_args.h); its outputs RMS-normed by ssm_norm, times
  // silu(z); out = ssm_out x that. x: the normed input [rows, n_embd]; out [rows, n_embd].
  void gated_delta_net(int layer, const float* x, const DeltaNetWeights& w, const DeltaNetShape& shape, double eps,
                       float* out) const;
  // out = down(act(gate x) * up x), through the buffers' ffn_gate, ffn_up and ffn_act; `act`
  // is silu for SwiGLU (Llama, Qwen), gelu_tanh for GeGLU (Gemma; under Numerics::ggml as
  // ggml's CPU GeGLU rounds it: the gate to f16, its gelu to f16, 0 below -10, x from 10).
  void gated_ffn(const float* x, const Array& gate, const Array& up, const Array& down, UnaryOp act,
                 float* out) const;
  // The mixture-of-experts FFN (llama.cpp's build_moe_ffn, SwiGLU experts): router
  // probabilities from router x; each token's experts and weights as `routing` says; out = sum
  // over the chosen experts, best first, of weight x
  // down_e(silu(gate_e x) * up_e x). Tokens are grouped by expert, so each expert's matrices are
  // read once per batch for all the rows routed to it (each sequence's rows on the path its
  // own count of them takes, so batching changes no row's bits). The experts are `layer`'s of
  // `experts` (experts.h), asked for one at a time in ascending order after one will_use().
  void moe_ffn(const float* x, const Array& router, const ExpertSource& experts, int layer, const MoeRouting& routing,
               float* out) const;
  // out[j] = a[j] + b[j] over rows() x width.
  void add(const float* a, const float* b, int64_t width, float* out) const;
  // out[j] = a[j] * b[j] over rows() x width (ggml_mul).
  void mul(const float* a, const float* b, int64_t width, float* out) const;
  // x[j] = op(x[j]) over rows() x width, in place, through the kernel table (silu, sigmoid,
  // softplus, ...).
  void unary(UnaryOp op, float* x, int64_t width) const;
  // x[j] *= s over rows() x width (ggml_scale).
  void scale(float* x, int64_t width, float s) const;
  // The logits: each sequence's last logit_rows rows of `hidden` [rows, n_embd] normed by
  // `norm`, times `head`, soft-capped to cap * tanh(logit / cap) when softcap > 0; then every
  // cache advances by its rows.
  void output(const float* hidden, const Array& norm, double eps, const Array& head, double softcap = 0) const;

 private:
  // y [rows, width] += bias on every row when `bias` is defined.
  void add_bias(int64_t width, const Array& bias, float* y) const;

  ExecContext& ctx_;
  std::span<const SequenceRows> batch_;
  DecoderBuffers& b_;
  Numerics numerics_;
  int64_t n_ = 0;
};

}  // namespace tempra::llm
