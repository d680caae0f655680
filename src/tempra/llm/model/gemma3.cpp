// tempra/llm/model/gemma3.cpp: see gemma3.h. The forward pass mirrors llama.cpp's
// src/models/gemma3.cpp; intermediates carry its debug-dump names where the buffers allow.
#include "tempra/llm/model/gemma3.h"

#include <cmath>
#include <string>

#include "tempra/core/error.h"
#include "tempra/llm/model/model_loader.h"

namespace tempra::llm {

Gemma3Model Gemma3Model::load(const std::filesystem::path& path) {
  return load(io::GgufModel::open(path));
}

Gemma3Model Gemma3Model::load(const io::GgufModel& gguf) {
  ModelLoader in(gguf, "gemma3");
  Gemma3Model m;
  m.load_embeddings_and_head(in);
  m.config_.require_full_rotation(in);
  const DecoderConfig& c = m.config_;
  for (const char* dense : {"dense_2_out.weight", "dense_3_out.weight"})
    if (in.has(dense)) in.fail("tensor '", dense, "': embedding models' dense projections are not supported");
  for (int i = 0; i < c.n_layer; ++i)
    for (const char* bias : {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias"})
      if (in.has("blk." + std::to_string(i) + "." + bias))
        in.fail("tensor 'blk.", i, ".", bias, "': attention biases are not supported for gemma3");
  if (in.count("attention.key_length_swa", c.head_dim) != c.head_dim ||
      in.count("rope.dimension_count_swa", c.head_dim) != c.head_dim)
    in.fail("local layers of another head or rope dimension than the global ones are not supported");
  int64_t pattern = 1;
  // llama.cpp: a window of 0 (or none) makes every layer global.
  if (in.count("attention.sliding_window", 0) > 0) {
    m.sliding_window_ = in.count("attention.sliding_window", 0);
    if (in.has_key("attention.sliding_window_pattern") &&
        !io::integer_value(*gguf.metadata().find("gemma3.attention.sliding_window_pattern")))
      in.fail("attention.sliding_window_pattern as a per-layer array is not supported");
    pattern = in.integer("attention.sliding_window_pattern", 6);
    m.rope_freq_base_local_ = in.real("rope.freq_base_swa", 10000.0);
  }
  // llama.cpp's f_attention_scale, a float.
  m.query_scale_ = c.n_layer == 62 ? 1.0f / std::sqrt(float(c.n_embd / c.n_head)) : 1.0f / std::sqrt(float(c.head_dim));
  m.logit_softcap_ = in.real("final_logit_softcapping", 0.0);
  if (m.logit_softcap_ < 0) in.fail("final_logit_softcapping ", m.logit_softcap_, " is negative");
  const int64_t E = c.n_embd;
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    m.layers_.push_back(Gemma3Layer{
        .attn_norm = in.vector(p + "attn_norm.weight", E),
        .attn_q = in.matrix(p + "attn_q.weight", c.q_dim(), E),
        .attn_k = in.matrix(p + "attn_k.weight", c.kv_dim(), E),
        .attn_v = in.matrix(p + "attn_v.weight", c.kv_dim(), E),
        .attn_output = in.matrix(p + "attn_output.weight", E, c.q_dim()),
        .attn_q_norm = in.vector(p + "attn_q_norm.weight", c.head_dim),
        .attn_k_norm = in.vector(p + "attn_k_norm.weight", c.head_dim),
        .attn_post_norm = in.vector(p + "post_attention_norm.weight", E),
        .ffn_norm = in.vector(p + "ffn_norm.weight", E),
        .ffn_gate = in.matrix(p + "ffn_gate.weight", c.n_ff, E),
        .ffn_up = in.matrix(p + "ffn_up.weight", c.n_ff, E),
        .ffn_down = in.matrix(p + "ffn_down.weight", E, c.n_ff),
        .ffn_post_norm = in.vector(p + "post_ffw_norm.weight", E),
        .local = m.sliding_window_ > 0 && (i % pattern < pattern - 1),
    });
  }
  m.finish_load(in);
  // The cache keeps only a window's rows for the local layers (KvCacheShape::layer_window).
  if (m.sliding_window_ > 0)
    for (const Gemma3Layer& layer : m.layers_)
      m.info_.cache.layer_window.push_back(layer.local ? m.sliding_window_ : 0);
  return m;
}

std::vector<SynthTensor> Gemma3Model::synth_tensors(const SynthSpec& s) {
  SynthTable t(s);
  const int64_t q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
  for (int i = 0; i < s.n_layer; ++i) {
    t.layer(i);
    t.norm("attn_norm", s.n_embd);
    t.matrix("attn_q", s.n_embd, q_dim);
    t.matrix("attn_k", s.n_embd, kv_dim);
    t.matrix("attn_v", s.n_embd, kv_dim);
    t.matrix("attn_output", q_dim, s.n_embd);
    t.norm("post_attention_norm", s.n_embd);
    t.norm("attn_k_norm", s.head_dim);
    t.norm("attn_q_norm", s.head_dim);
    t.norm("ffn_norm", s.n_embd);
    t.matrix("ffn_gate", s.n_embd, s.n_ff);
    t.matrix("ffn_up", s.n_embd, s.n_ff);
    t.matrix("ffn_down", s.n_ff, s.n_embd);
    t.norm("post_ffw_norm", s.n_embd);
  }
  return t.take();
}

void Gemma3Model::synth_hparams(io::GgufMetadata& m, const SynthSpec& s) {
  if (s.sliding_window > 0) {
    m.add("gemma3.attention.sliding_window", {uint32_t(s.sliding_window)});
    m.add("gemma3.attention.sliding_window_pattern", {uint32_t(s.sliding_window_pattern)});
    m.add("gemma3.rope.freq_base_swa", {static_cast<float>(s.rope_freq_base_swa)});
  }
  if (s.final_logit_softcapping > 0)
    m.add("gemma3.final_logit_softcapping", {static_cast<float>(s.final_logit_softcapping)});
}

void Gemma3Model::forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const {
  check_batch("gemma3", info_, batch, buffers);
  const ForwardPass pass("gemma3", ctx, batch, buffers, numerics_);
  DecoderBuffers& b = pass.buffers();
  const DecoderConfig& c = config_;
  const int64_t n = pass.rows(), E = c.n_embd;
  const RopeParams global_rope = c.rope(RopeMode::neox, c.n_rot);
  // Local layers: their own base, never scaled (llama.cpp's rope_freq_scale_train_swa).
  RopeParams local_rope = global_rope;
  local_rope.freq_base = rope_freq_base_local_;
  local_rope.freq_scale = 1.0;
  const double eps = c.rms_norm_eps;
  float *inpL = b.inpL.data<float>(), *attn_norm = b.attn_norm.data<float>(), *Qcur = b.Qcur.data<float>(),
        *Kcur = b.Kcur.data<float>(), *Vcur = b.Vcur.data<float>(), *Qcur_normed = b.Qcur_normed.data<float>(),
        *Kcur_normed = b.Kcur_normed.data<float>(), *Qrope = b.Qrope.data<float>(), *Krope = b.Krope.data<float>(),
        *kqv_out = b.kqv_out.data<float>(), *attn_out = b.attn_out.data<float>(), *sa_out = b.ffn_inp.data<float>(),
        *ffn_norm = b.ffn_norm.data<float>(), *ffn_out = b.ffn_out.data<float>();
  // The post-norms write where the pre-norm and the projection output were: both are spent.
  float *attn_post_norm = attn_norm, *ffn_post_norm = attn_out;

  pass.embed(token_embd_, inpL);
  pass.scale(inpL, E, std::sqrt(float(E)));  // inp_scaled
  for (int il = 0; il < c.n_layer; ++il) {
    const Gemma3Layer& layer = layers_[static_cast<size_t>(il)];
    const RopeParams& rope = layer.local ? local_rope : global_rope;
    pass.rms_norm(inpL, n, E, layer.attn_norm, eps, attn_norm);
    pass.linears(attn_norm, {{layer.attn_q, Qcur}, {layer.attn_k, Kcur}, {layer.attn_v, Vcur}});
    pass.rms_norm(Qcur, n * c.n_head, c.head_dim, layer.attn_q_norm, eps, Qcur_normed);
    pass.rope(Qcur_normed, c.n_head, c.head_dim, rope, Qrope);
    pass.rms_norm(Kcur, n * c.n_head_kv, c.head_dim, layer.attn_k_norm, eps, Kcur_normed);
    pass.rope(Kcur_normed, c.n_head_kv, c.head_dim, rope, Krope);
    pass.scale(Qrope, c.q_dim(), float(query_scale_));
    pass.attention(il, Qrope, Krope, Vcur, c.n_head, 1.0, kqv_out, layer.local ? sliding_window_ : 0);
    pass.linear(kqv_out, layer.attn_output, attn_out);
    pass.rms_norm(attn_out, n, E, layer.attn_post_norm, eps, attn_post_norm);
    pass.add(attn_post_norm, inpL, E, sa_out);

    pass.rms_norm(sa_out, n, E, layer.ffn_norm, eps, ffn_norm);
    pass.gated_ffn(ffn_norm, layer.ffn_gate, layer.ffn_up, layer.ffn_down, UnaryOp::gelu_tanh, ffn_out);
    pass.rms_norm(ffn_out, n, E, layer.ffn_post_norm, eps, ffn_post_norm);
    pass.add(ffn_post_norm, sa_out, E, inpL);
  }
  pass.output(inpL, output_norm_, eps, output_, logit_softcap_);
}

}  // namespace tempra::llm
