// tempra/llm/model/qwen3moe.cpp: see qwen3moe.h. The forward pass mirrors llama.cpp's
// src/models/qwen3moe.cpp; intermediates carry its debug-dump names.
#include "tempra/llm/model/qwen3moe.h"

#include <cmath>
#include <string>

#include "tempra/core/error.h"
#include "tempra/llm/model/model_loader.h"

namespace tempra::llm {

Qwen3MoeModel Qwen3MoeModel::load(const std::filesystem::path& path, const LoadOptions& options) {
  return load(io::GgufModel::open(path, options.tensor_mapping()), options);
}

Qwen3MoeModel Qwen3MoeModel::load(const io::GgufModel& gguf, const LoadOptions& options) {
  ModelLoader in(gguf, "qwen3moe");
  Qwen3MoeModel m;
  m.load_embeddings_and_head(in);
  m.config_.require_full_rotation(in);
  DecoderConfig& c = m.config_;
  c.read_experts(in);
  // llama.cpp: 0 or absent falls back to feed_forward_length / expert_used_count.
  c.n_ff_exp = in.count("expert_feed_forward_length", 0);
  if (c.n_ff_exp == 0) c.n_ff_exp = c.n_ff / c.n_expert_used;
  if (c.n_ff_exp <= 0 || c.n_ff_exp > DecoderConfig::kMaxWidth) in.fail("expert width ", c.n_ff_exp, " is out of range");
  c.dense_ffn = false;  // every layer's FFN is the experts
  const int64_t E = c.n_embd;
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    for (const char* extra : {"attn_q.bias", "attn_k.bias", "attn_v.bias", "ffn_gate_exps.scale", "ffn_up_exps.scale",
                              "ffn_down_exps.scale"})
      if (in.has(p + extra)) in.fail("tensor '", p, extra, "' is not supported for qwen3moe");
    m.layers_.push_back(Qwen3MoeLayer{
        .attn_norm = in.vector(p + "attn_norm.weight", E),
        .attn_q = in.matrix(p + "attn_q.weight", c.q_dim(), E),
        .attn_k = in.matrix(p + "attn_k.weight", c.kv_dim(), E),
        .attn_v = in.matrix(p + "attn_v.weight", c.kv_dim(), E),
        .attn_output = in.matrix(p + "attn_output.weight", E, c.q_dim()),
        .attn_q_norm = in.vector(p + "attn_q_norm.weight", c.head_dim),
        .attn_k_norm = in.vector(p + "attn_k_norm.weight", c.head_dim),
        .ffn_norm = in.vector(p + "ffn_norm.weight", E),
        .ffn_gate_inp = in.matrix(p + "ffn_gate_inp.weight", c.n_expert, E),
    });
    m.load_experts(in, p, options.moe_stream);
  }
  m.finish_load(in);
  return m;
}

std::vector<SynthTensor> Qwen3MoeModel::synth_tensors(const SynthSpec& s) {
  SynthTable t(s);
  const int64_t q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
  for (int i = 0; i < s.n_layer; ++i) {
    t.layer(i);
    t.norm("attn_norm", s.n_embd);
    t.matrix("attn_q", s.n_embd, q_dim);
    t.matrix("attn_k", s.n_embd, kv_dim);
    t.matrix("attn_v", s.n_embd, kv_dim);
    t.matrix("attn_output", q_dim, s.n_embd);
    t.norm("attn_k_norm", s.head_dim);
    t.norm("attn_q_norm", s.head_dim);
    t.norm("ffn_norm", s.n_embd);
    t.matrix("ffn_gate_inp", s.n_embd, s.n_expert);
    t.experts("ffn_gate_exps", s.n_embd, s.n_ff_exp, s.n_expert);
    t.experts("ffn_down_exps", s.n_ff_exp, s.n_embd, s.n_expert);
    t.experts("ffn_up_exps", s.n_embd, s.n_ff_exp, s.n_expert);
  }
  return t.take();
}

void Qwen3MoeModel::synth_hparams(io::GgufMetadata& m, const SynthSpec& s) {
  m.add("qwen3moe.expert_count", {uint32_t(s.n_expert)});
  m.add("qwen3moe.expert_used_count", {uint32_t(s.n_expert_used)});
  m.add("qwen3moe.expert_feed_forward_length", {uint32_t(s.n_ff_exp)});
}

void Qwen3MoeModel::forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const {
  check_batch("qwen3moe", info_, batch, buffers);
  const ForwardPass pass("qwen3moe", ctx, batch, buffers, numerics_);
  DecoderBuffers& b = pass.buffers();
  const DecoderConfig& c = config_;
  const int64_t n = pass.rows(), E = c.n_embd;
  const RopeParams rope = c.rope(RopeMode::neox, c.n_rot);
  const double kq_scale = 1.0f / std::sqrt(float(c.head_dim)), eps = c.rms_norm_eps;
  float *inpL = b.inpL.data<float>(), *attn_norm = b.attn_norm.data<float>(), *Qcur = b.Qcur.data<float>(),
        *Kcur = b.Kcur.data<float>(), *Vcur = b.Vcur.data<float>(), *Qcur_normed = b.Qcur_normed.data<float>(),
        *Kcur_normed = b.Kcur_normed.data<float>(), *Qrope = b.Qrope.data<float>(), *Krope = b.Krope.data<float>(),
        *kqv_out = b.kqv_out.data<float>(), *attn_out = b.attn_out.data<float>(), *ffn_inp = b.ffn_inp.data<float>(),
        *ffn_norm = b.ffn_norm.data<float>(), *ffn_moe_out = b.ffn_out.data<float>();

  pass.embed(token_embd_, inpL);
  for (int il = 0; il < c.n_layer; ++il) {
    const Qwen3MoeLayer& layer = layers_[static_cast<size_t>(il)];
    pass.rms_norm(inpL, n, E, layer.attn_norm, eps, attn_norm);
    pass.linears(attn_norm, {{layer.attn_q, Qcur}, {layer.attn_k, Kcur}, {layer.attn_v, Vcur}});
    pass.rms_norm(Qcur, n * c.n_head, c.head_dim, layer.attn_q_norm, eps, Qcur_normed);
    pass.rope(Qcur_normed, c.n_head, c.head_dim, rope, Qrope);
    pass.rms_norm(Kcur, n * c.n_head_kv, c.head_dim, layer.attn_k_norm, eps, Kcur_normed);
    pass.rope(Kcur_normed, c.n_head_kv, c.head_dim, rope, Krope);
    pass.attention(il, Qrope, Krope, Vcur, c.n_head, kq_scale, kqv_out);
    pass.linear(kqv_out, layer.attn_output, attn_out);
    pass.add(attn_out, inpL, E, ffn_inp);

    pass.rms_norm(ffn_inp, n, E, layer.ffn_norm, eps, ffn_norm);
    pass.moe_ffn(ffn_norm, layer.ffn_gate_inp, *experts_, il,
                 {.n_used = c.n_expert_used, .normalize = true, .groups = c.n_expert_groups, .groups_used = c.n_group_used},
                 ffn_moe_out);
    pass.add(ffn_moe_out, ffn_inp, E, inpL);
  }
  pass.output(inpL, output_norm_, eps, output_);
}

}  // namespace tempra::llm
