// tempra/llm/model/qwen3.cpp: see qwen3.h. The forward pass mirrors llama.cpp's
// src/models/qwen3.cpp line for line; intermediates carry its debug-dump names (attn_norm, Qcur,
// ffn_inp, ...).
#include "tempra/llm/model/qwen3.h"

#include <cmath>
#include <string>

#include "tempra/core/error.h"
#include "tempra/llm/model/model_loader.h"

namespace tempra::llm {

Qwen3Model Qwen3Model::load(const std::filesystem::path& path) {
  return load(io::GgufModel::open(path));
}

Qwen3Model Qwen3Model::load(const io::GgufModel& gguf) {
  ModelLoader in(gguf, "qwen3");
  Qwen3Model m;
  m.load_embeddings_and_head(in);
  m.config_.require_full_rotation(in);
  const DecoderConfig& c = m.config_;
  const int64_t E = c.n_embd;
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    m.layers_.push_back(Qwen3Layer{
        .attn_norm = in.vector(p + "attn_norm.weight", E),
        .attn_q = in.matrix(p + "attn_q.weight", c.q_dim(), E),
        .attn_k = in.matrix(p + "attn_k.weight", c.kv_dim(), E),
        .attn_v = in.matrix(p + "attn_v.weight", c.kv_dim(), E),
        .attn_output = in.matrix(p + "attn_output.weight", E, c.q_dim()),
        .attn_q_norm = in.vector(p + "attn_q_norm.weight", c.head_dim),
        .attn_k_norm = in.vector(p + "attn_k_norm.weight", c.head_dim),
        .ffn_norm = in.vector(p + "ffn_norm.weight", E),
        .ffn_gate = in.matrix(p + "ffn_gate.weight", c.n_ff, E),
        .ffn_up = in.matrix(p + "ffn_up.weight", c.n_ff, E),
        .ffn_down = in.matrix(p + "ffn_down.weight", E, c.n_ff),
    });
  }
  m.finish_load(in);
  return m;
}

std::vector<SynthTensor> Qwen3Model::synth_tensors(const SynthSpec& s) {
  SynthTable t(s);
  const int64_t q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
  for (int i = 0; i < s.n_layer; ++i) {
    t.layer(i);
    t.norm("attn_norm", s.n_embd);
    t.matrix("attn_q", s.n_embd, q_dim);
    t.matrix("attn_k", s.n_embd, kv_dim);
    t.matrix("attn_v", s.n_embd, kv_dim);
    t.matrix("attn_output", q_dim, s.n_embd);
    t.norm("attn_q_norm", s.head_dim);
    t.norm("attn_k_norm", s.head_dim);
    t.norm("ffn_norm", s.n_embd);
    t.matrix("ffn_gate", s.n_embd, s.n_ff);
    t.matrix("ffn_up", s.n_embd, s.n_ff);
    t.matrix("ffn_down", s.n_ff, s.n_embd);
  }
  return t.take();
}

void Qwen3Model::forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const {
  check_batch("qwen3", info_, batch, buffers);
  const ForwardPass pass("qwen3", ctx, batch, buffers, numerics_);
  DecoderBuffers& b = pass.buffers();
  const DecoderConfig& c = config_;
  const int64_t n = pass.rows(), E = c.n_embd;
  const RopeParams rope = c.rope(RopeMode::neox, c.n_rot);
  const double kq_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim)), eps = c.rms_norm_eps;
  float *inpL = b.inpL.data<float>(), *attn_norm = b.attn_norm.data<float>(), *Qcur = b.Qcur.data<float>(),
        *Kcur = b.Kcur.data<float>(), *Vcur = b.Vcur.data<float>(), *Qcur_normed = b.Qcur_normed.data<float>(),
        *Kcur_normed = b.Kcur_normed.data<float>(), *Qrope = b.Qrope.data<float>(), *Krope = b.Krope.data<float>(),
        *kqv_out = b.kqv_out.data<float>(), *attn_out = b.attn_out.data<float>(), *ffn_inp = b.ffn_inp.data<float>(),
        *ffn_norm = b.ffn_norm.data<float>(), *ffn_out = b.ffn_out.data<float>();

  pass.embed(token_embd_, inpL);
  for (int il = 0; il < c.n_layer; ++il) {
    const Qwen3Layer& layer = layers_[static_cast<size_t>(il)];
    pass.rms_norm(inpL, n, E, layer.attn_norm, eps, attn_norm);
    pass.linears(attn_norm, {{layer.attn_q, Qcur}, {layer.attn_k, Kcur}, {layer.attn_v, Vcur}});
    pass.rms_norm(Qcur, n * c.n_head, c.head_dim, layer.attn_q_norm, eps, Qcur_normed);
    pass.rms_norm(Kcur, n * c.n_head_kv, c.head_dim, layer.attn_k_norm, eps, Kcur_normed);
    pass.rope(Qcur_normed, c.n_head, c.head_dim, rope, Qrope);
    pass.rope(Kcur_normed, c.n_head_kv, c.head_dim, rope, Krope);
    pass.attention(il, Qrope, Krope, Vcur, c.n_head, kq_scale, kqv_out);
    pass.linear(kqv_out, layer.attn_output, attn_out);
    pass.add(attn_out, inpL, E, ffn_inp);

    pass.rms_norm(ffn_inp, n, E, layer.ffn_norm, eps, ffn_norm);
    pass.gated_ffn(ffn_norm, layer.ffn_gate, layer.ffn_up, layer.ffn_down, UnaryOp::silu, ffn_out);
    pass.add(ffn_out, ffn_inp, E, inpL);
  }
  pass.output(inpL, output_norm_, eps, output_);
}

}  // namespace tempra::llm
