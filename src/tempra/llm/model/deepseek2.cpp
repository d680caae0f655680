// tempra/llm/model/deepseek2.cpp: see deepseek2.h. The forward pass mirrors llama.cpp's
// src/models/deepseek2.cpp (its is_mla branch); intermediates carry its debug-dump names.
#include "tempra/llm/model/deepseek2.h"

#include <cmath>
#include <string>

#include "tempra/core/error.h"
#include "tempra/llm/model/model_loader.h"

namespace tempra::llm {

DeepSeek2Model DeepSeek2Model::load(const std::filesystem::path& path, const LoadOptions& options) {
  return load(io::GgufModel::open(path, options.tensor_mapping()), options);
}

DeepSeek2Model DeepSeek2Model::load(const io::GgufModel& gguf, const LoadOptions& options) {
  ModelLoader in(gguf, "deepseek2");
  DeepSeek2Model m;
  m.load_embeddings_and_head(in, /*latent_attention=*/true);
  DecoderConfig& c = m.config_;
  const bool lite = c.n_layer == 27 || c.n_layer == 26 || (c.n_layer == 48 && c.n_vocab == 128256);
  // llama.cpp's "lite" variants (27 or 26 layers, or 48 over a 128256-token vocab) have no
  // query bottleneck, whatever the file says; every other file must give its rank (0: none).
  c.q_lora_rank = lite ? 0 : in.count("attention.q_lora_rank", -1);
  if (c.q_lora_rank < 0) in.fail("key 'deepseek2.attention.q_lora_rank' is missing (only the lite models may omit it)");
  constexpr int64_t kMaxWidth = DecoderConfig::kMaxWidth;
  c.kv_lora_rank = in.integer("attention.kv_lora_rank");
  if (c.kv_lora_rank > kMaxWidth || c.q_lora_rank > kMaxWidth) in.fail("a latent rank is out of range");
  if (!in.has_key("attention.key_length_mla") || !in.has_key("attention.value_length_mla"))
    in.fail("attention.key_length_mla and value_length_mla are missing: files with the unsplit attn_kv_b "
            "(converted before llama.cpp's MLA support) are not supported; convert the model again");
  const int64_t key_mla = in.integer("attention.key_length_mla");
  c.v_head_dim = in.integer("attention.value_length_mla");
  c.rope_dim = in.integer("rope.dimension_count");
  for (int64_t v : {key_mla, c.v_head_dim, c.rope_dim})
    if (v > kMaxWidth || v * c.n_head > kMaxWidth) in.fail("a latent attention width of ", v, " is out of range");
  c.qk_nope_dim = key_mla - c.rope_dim;
  if (c.qk_nope_dim < 1 || c.rope_dim % 2 != 0)
    in.fail("key_length_mla ", key_mla, " must exceed the even rope.dimension_count ", c.rope_dim);
  if (c.head_dim != c.kv_lora_rank + c.rope_dim || in.integer("attention.value_length") != c.kv_lora_rank ||
      c.n_head_kv != 1)
    in.fail("latent attention caches rows of kv_lora_rank + rope dims = ", c.kv_lora_rank + c.rope_dim,
            " in one KV head, so key_length must be that, value_length kv_lora_rank and head_count_kv 1; got ",
            c.head_dim, ", ", in.integer("attention.value_length"), " and ", c.n_head_kv);
  // YaRN: llama.cpp reads the multiplier divided by the converter's 0.1 (its
  // TAG_DEEPSEEK2_YARN_LOG_MUL_FIX), in f32, and lets it set mscale too.
  c.rope_yarn_log_mul = double(float(in.real("rope.scaling.yarn_log_multiplier", 0.0)) / 0.1f);
  if (!std::isfinite(c.rope_yarn_log_mul) || std::abs(c.rope_yarn_log_mul) > 1e3)
    in.fail("rope.scaling.yarn_log_multiplier ", c.rope_yarn_log_mul, " is out of range");
  c.yarn_log_mul_sets_mscale = true;
  // Mistral Large 3's attention temperature (llama.cpp scales the queries by position).
  if (in.real("attention.temperature_scale", 0.0) != 0.0)
    in.fail("attention.temperature_scale (attention temperature tuning) is not supported");

  const int64_t lead = in.count("leading_dense_block_count", 0);
  if (lead > c.n_layer) in.fail("leading_dense_block_count ", lead, " exceeds block_count ", c.n_layer);
  c.n_layer_dense_lead = int(lead);
  const bool moe = c.n_layer_dense_lead < c.n_layer;
  c.dense_ffn = c.n_layer_dense_lead > 0;
  if (moe) {
    c.read_experts(in);
    c.n_ff_exp = in.integer("expert_feed_forward_length");
    const int64_t shared = in.count("expert_shared_count", 0);
    if (c.n_ff_exp > kMaxWidth || shared > kMaxWidth || c.n_ff_exp * shared > kMaxWidth)
      in.fail("expert_feed_forward_length ", c.n_ff_exp, " x expert_shared_count ", shared, " is out of range");
    c.n_ff_shexp = c.n_ff_exp * shared;
    // llama_expert_gating_func_type: softmax 1, sigmoid 2; absent or 0 (none) is softmax for
    // DeepSeek-V2's files and sigmoid for GLM 4.7 Lite's (47 or 48 layers over 154880 tokens),
    // as llama.cpp decides.
    int64_t gating = in.count("expert_gating_func", 0);
    if (gating == 0) gating = (c.n_layer == 47 || c.n_layer == 48) && c.n_vocab == 154880 ? 2 : 1;
    if (gating > 2) in.fail("expert_gating_func ", gating, " is not supported (softmax, 1, and sigmoid, 2, are)");
    m.routing_ = MoeRouting{.n_used = c.n_expert_used,
                            .normalize = in.flag("expert_weights_norm", false),
                            .scale = float(in.real("expert_weights_scale", 0.0)),
                            .groups = c.n_expert_groups,
                            .groups_used = c.n_group_used,
                            .sigmoid = gating == 2};
    if (!std::isfinite(m.routing_.scale)) in.fail("expert_weights_scale is not finite");
  }
  if (in.count("nextn_predict_layers", 0) > 0) in.fail("multi-token-prediction layers are not supported");

  const int64_t E = c.n_embd, H = c.n_head, qk = c.qk_nope_dim + c.rope_dim;
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    if (in.has(p + "attn_kv_b.weight") && !in.has(p + "attn_k_b.weight"))
      in.fail("tensor '", p, "attn_kv_b.weight' (the unsplit form) is not supported; convert the model again");
    DeepSeek2Layer layer;
    layer.attn_norm = in.vector(p + "attn_norm.weight", E);
    LatentAttentionWeights& a = layer.attention;
    if (c.q_lora_rank > 0) {
      a.attn_q_a = in.matrix(p + "attn_q_a.weight", c.q_lora_rank, E);
      a.attn_q_a_norm = in.vector(p + "attn_q_a_norm.weight", c.q_lora_rank);
      a.attn_q_b = in.matrix(p + "attn_q_b.weight", H * qk, c.q_lora_rank);
    } else {
      a.attn_q = in.matrix(p + "attn_q.weight", H * qk, E);
    }
    a.attn_kv_a_mqa = in.matrix(p + "attn_kv_a_mqa.weight", c.kv_lora_rank + c.rope_dim, E);
    a.attn_kv_a_norm = in.vector(p + "attn_kv_a_norm.weight", c.kv_lora_rank);
    a.attn_k_b = in.experts(p + "attn_k_b.weight", H, c.kv_lora_rank, c.qk_nope_dim);
    a.attn_v_b = in.experts(p + "attn_v_b.weight", H, c.v_head_dim, c.kv_lora_rank);
    a.attn_output = in.matrix(p + "attn_output.weight", E, H * c.v_head_dim);
    layer.ffn_norm = in.vector(p + "ffn_norm.weight", E);
    if (i < c.n_layer_dense_lead) {
      layer.ffn_gate = in.matrix(p + "ffn_gate.weight", c.n_ff, E);
      layer.ffn_up = in.matrix(p + "ffn_up.weight", c.n_ff, E);
      layer.ffn_down = in.matrix(p + "ffn_down.weight", E, c.n_ff);
    } else {
      layer.ffn_gate_inp = in.matrix(p + "ffn_gate_inp.weight", c.n_expert, E);
      layer.exp_probs_b = in.optional_vector(p + "exp_probs_b.bias", c.n_expert);
      if (c.n_ff_shexp > 0) {
        layer.ffn_gate_shexp = in.matrix(p + "ffn_gate_shexp.weight", c.n_ff_shexp, E);
        layer.ffn_up_shexp = in.matrix(p + "ffn_up_shexp.weight", c.n_ff_shexp, E);
        layer.ffn_down_shexp = in.matrix(p + "ffn_down_shexp.weight", E, c.n_ff_shexp);
      }
      m.load_experts(in, p, options.moe_stream);
    }
    m.layers_.push_back(std::move(layer));
  }
  // llama.cpp's kq_scale: attn_factor's YaRN adjustment undone, then mscale^2 / sqrt(key_length_mla), in f32.
  const float freq_scale = float(c.rope_freq_scale), attn_factor = float(c.yarn_attn_factor());
  const float attn_factor_org = attn_factor * (1.0f + 0.1f * std::log(1.0f / freq_scale));
  const float mscale = attn_factor_org * (1.0f + 0.1f * float(c.rope_yarn_log_mul) * std::log(1.0f / freq_scale));
  m.kq_scale_ = double(1.0f * mscale * mscale / std::sqrt(float(key_mla)));
  m.finish_load(in);
  return m;
}

std::vector<SynthTensor> DeepSeek2Model::synth_tensors(const SynthSpec& s) {
  SynthTable t(s);
  const int64_t qk = s.qk_nope_dim + s.qk_rope_dim, shexp = s.n_ff_exp * s.n_expert_shared;
  for (int i = 0; i < s.n_layer; ++i) {
    t.layer(i);
    t.norm("attn_norm", s.n_embd);
    if (s.q_lora_rank > 0) {
      t.norm("attn_q_a_norm", s.q_lora_rank);
      t.matrix("attn_q_a", s.n_embd, s.q_lora_rank);
      t.matrix("attn_q_b", s.q_lora_rank, s.n_head * qk);
    } else {
      t.matrix("attn_q", s.n_embd, s.n_head * qk);
    }
    t.norm("attn_kv_a_norm", s.kv_lora_rank);
    t.matrix("attn_kv_a_mqa", s.n_embd, s.kv_lora_rank + s.qk_rope_dim);
    t.experts("attn_k_b", s.qk_nope_dim, s.kv_lora_rank, s.n_head);
    t.experts("attn_v_b", s.kv_lora_rank, s.v_head_dim, s.n_head);
    t.matrix("attn_output", s.n_head * s.v_head_dim, s.n_embd);
    t.norm("ffn_norm", s.n_embd);
    if (i < s.n_layer_dense_lead) {
      t.matrix("ffn_gate", s.n_embd, s.n_ff);
      t.matrix("ffn_down", s.n_ff, s.n_embd);
      t.matrix("ffn_up", s.n_embd, s.n_ff);
      continue;
    }
    t.matrix("ffn_gate_inp", s.n_embd, s.n_expert);
    if (s.sigmoid_gating) t.bias("exp_probs_b", s.n_expert);
    t.experts("ffn_down_exps", s.n_ff_exp, s.n_embd, s.n_expert);
    t.experts("ffn_gate_exps", s.n_embd, s.n_ff_exp, s.n_expert);
    t.experts("ffn_up_exps", s.n_embd, s.n_ff_exp, s.n_expert);
    if (shexp > 0) {
      t.matrix("ffn_gate_shexp", s.n_embd, shexp);
      t.matrix("ffn_down_shexp", shexp, s.n_embd);
      t.matrix("ffn_up_shexp", s.n_embd, shexp);
    }
  }
  return t.take();
}

void DeepSeek2Model::synth_hparams(io::GgufMetadata& m, const SynthSpec& s) {
  m.add("deepseek2.vocab_size", {uint32_t(s.n_vocab)});
  m.add("deepseek2.leading_dense_block_count", {uint32_t(s.n_layer_dense_lead)});
  m.add("deepseek2.attention.q_lora_rank", {uint32_t(s.q_lora_rank)});
  m.add("deepseek2.attention.kv_lora_rank", {uint32_t(s.kv_lora_rank)});
  m.add("deepseek2.attention.key_length_mla", {uint32_t(s.qk_nope_dim + s.qk_rope_dim)});
  m.add("deepseek2.attention.value_length_mla", {uint32_t(s.v_head_dim)});
  m.add("deepseek2.rope.dimension_count", {uint32_t(s.qk_rope_dim)});
  m.add("deepseek2.expert_feed_forward_length", {uint32_t(s.n_ff_exp)});
  m.add("deepseek2.expert_count", {uint32_t(s.n_expert)});
  m.add("deepseek2.expert_used_count", {uint32_t(s.n_expert_used)});
  m.add("deepseek2.expert_shared_count", {uint32_t(s.n_expert_shared)});
  m.add("deepseek2.expert_weights_scale", {static_cast<float>(s.expert_weights_scale)});
  if (s.expert_weights_norm) m.add("deepseek2.expert_weights_norm", {true});
  if (s.sigmoid_gating) m.add("deepseek2.expert_gating_func", {uint32_t{2}});
  if (s.n_expert_groups > 0) {
    m.add("deepseek2.expert_group_count", {uint32_t(s.n_expert_groups)});
    m.add("deepseek2.expert_group_used_count", {uint32_t(s.n_group_used)});
  }
  if (s.yarn_mscale_all_dim > 0)
    m.add("deepseek2.rope.scaling.yarn_log_multiplier", {static_cast<float>(0.1 * s.yarn_mscale_all_dim)});
}

void DeepSeek2Model::forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const {
  check_batch("deepseek2", info_, batch, buffers);
  const ForwardPass pass("deepseek2", ctx, batch, buffers, numerics_);
  DecoderBuffers& b = pass.buffers();
  const DecoderConfig& c = config_;
  const int64_t n = pass.rows(), E = c.n_embd;
  const RopeParams rope = c.rope(RopeMode::normal, c.rope_dim);
  const double eps = c.rms_norm_eps;
  float *inpL = b.inpL.data<float>(), *attn_norm = b.attn_norm.data<float>(), *attn_out = b.attn_out.data<float>(),
        *ffn_inp = b.ffn_inp.data<float>(), *ffn_norm = b.ffn_norm.data<float>(), *ffn_out = b.ffn_out.data<float>();

  pass.embed(token_embd_, inpL);
  for (int il = 0; il < c.n_layer; ++il) {
    const DeepSeek2Layer& layer = layers_[static_cast<size_t>(il)];
    pass.rms_norm(inpL, n, E, layer.attn_norm, eps, attn_norm);
    pass.latent_attention(il, attn_norm, layer.attention, rope, kq_scale_, eps, attn_out);
    pass.add(attn_out, inpL, E, ffn_inp);

    pass.rms_norm(ffn_inp, n, E, layer.ffn_norm, eps, ffn_norm);
    if (il < c.n_layer_dense_lead) {
      pass.gated_ffn(ffn_norm, layer.ffn_gate, layer.ffn_up, layer.ffn_down, UnaryOp::silu, ffn_out);
    } else {
      // ffn_moe_out, then the shared experts' ffn_shexp added to it (attn_out is free by now).
      MoeRouting routing = routing_;
      routing.selection_bias = layer.exp_probs_b.defined() ? layer.exp_probs_b.data<float>() : nullptr;
      pass.moe_ffn(ffn_norm, layer.ffn_gate_inp, *experts_, il - c.n_layer_dense_lead, routing, ffn_out);
      if (c.n_ff_shexp > 0) {
        pass.gated_ffn(ffn_norm, layer.ffn_gate_shexp, layer.ffn_up_shexp, layer.ffn_down_shexp, UnaryOp::silu,
                       attn_out);
        pass.add(ffn_out, attn_out, E, ffn_out);
      }
    }
    pass.add(ffn_out, ffn_inp, E, inpL);
  }
  pass.output(inpL, output_norm_, eps, output_);
}

}  // namespace tempra::llm
