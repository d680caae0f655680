// tempra/llm/model/llama.cpp: see llama.h. The forward pass mirrors llama.cpp's
// src/models/llama.cpp; intermediates carry its debug-dump names.
#include "tempra/llm/model/llama.h"

#include <cmath>
#include <string>

#include "tempra/core/error.h"
#include "tempra/llm/model/model_loader.h"

namespace tempra::llm {

LlamaModel LlamaModel::load(const std::filesystem::path& path) {
  return load(io::GgufModel::open(path));
}

LlamaModel LlamaModel::load(const io::GgufModel& gguf) {
  ModelLoader in(gguf, "llama");
  // llama.cpp's own saver writes expert_count 0 for dense models.
  if (const int64_t experts = in.count("expert_count", 0); experts > 0)
    in.fail("llama.expert_count is ", experts, ": mixtures of experts are not supported");
  LlamaModel m;
  m.load_embeddings_and_head(in);
  const DecoderConfig& c = m.config_;
  c.require_full_rotation(in);
  // llama.cpp's kq_scale for llama (it reads no attention.scale for this architecture).
  m.kq_scale_ = 1.0f / std::sqrt(float(c.head_dim));
  m.rope_freqs_ = in.optional_vector("rope_freqs.weight", c.head_dim / 2);
  const int64_t E = c.n_embd;
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    for (const char* bias : {"ffn_gate.bias", "ffn_up.bias", "ffn_down.bias"})
      if (in.has(p + bias)) in.fail("tensor '", p, bias, "': feed-forward biases are not supported");
    m.layers_.push_back(LlamaLayer{
        .attn_norm = in.vector(p + "attn_norm.weight", E),
        .attn_q = in.matrix(p + "attn_q.weight", c.q_dim(), E),
        .attn_k = in.matrix(p + "attn_k.weight", c.kv_dim(), E),
        .attn_v = in.matrix(p + "attn_v.weight", c.kv_dim(), E),
        .attn_output = in.matrix(p + "attn_output.weight", E, c.q_dim()),
        .attn_q_bias = in.optional_vector(p + "attn_q.bias", c.q_dim()),
        .attn_k_bias = in.optional_vector(p + "attn_k.bias", c.kv_dim()),
        .attn_v_bias = in.optional_vector(p + "attn_v.bias", c.kv_dim()),
        .attn_output_bias = in.optional_vector(p + "attn_output.bias", E),
        .ffn_norm = in.vector(p + "ffn_norm.weight", E),
        .ffn_gate = in.matrix(p + "ffn_gate.weight", c.n_ff, E),
        .ffn_up = in.matrix(p + "ffn_up.weight", c.n_ff, E),
        .ffn_down = in.matrix(p + "ffn_down.weight", E, c.n_ff),
    });
  }
  m.finish_load(in);
  return m;
}

std::vector<SynthTensor> LlamaModel::synth_tensors(const SynthSpec& s) {
  SynthTable t(s);
  const int64_t q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
  if (s.llama3_rope_scaling) t.fixed("rope_freqs", llama3_rope_factors(s.head_dim, s.rope_freq_base));
  for (int i = 0; i < s.n_layer; ++i) {
    t.layer(i);
    t.norm("attn_norm", s.n_embd);
    t.matrix("attn_q", s.n_embd, q_dim);
    t.matrix("attn_k", s.n_embd, kv_dim);
    t.matrix("attn_v", s.n_embd, kv_dim);
    t.matrix("attn_output", q_dim, s.n_embd);
    t.norm("ffn_norm", s.n_embd);
    t.matrix("ffn_gate", s.n_embd, s.n_ff);
    t.matrix("ffn_up", s.n_embd, s.n_ff);
    t.matrix("ffn_down", s.n_ff, s.n_embd);
  }
  return t.take();
}

void LlamaModel::synth_hparams(io::GgufMetadata& m, const SynthSpec& s) {
  m.add("llama.rope.dimension_count", {uint32_t(s.head_dim)});
  m.add("llama.vocab_size", {uint32_t(s.n_vocab)});
}

void LlamaModel::forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const {
  check_batch("llama", info_, batch, buffers);
  const ForwardPass pass("llama", ctx, batch, buffers, numerics_);
  DecoderBuffers& b = pass.buffers();
  const DecoderConfig& c = config_;
  const int64_t n = pass.rows(), E = c.n_embd;
  RopeParams rope = c.rope(RopeMode::normal, c.n_rot);
  rope.freq_factors = rope_freqs_.defined() ? rope_freqs_.data<float>() : nullptr;
  const double eps = c.rms_norm_eps;
  float *inpL = b.inpL.data<float>(), *attn_norm = b.attn_norm.data<float>(), *Qcur = b.Qcur.data<float>(),
        *Kcur = b.Kcur.data<float>(), *Vcur = b.Vcur.data<float>(), *Qrope = b.Qrope.data<float>(),
        *Krope = b.Krope.data<float>(), *kqv_out = b.kqv_out.data<float>(), *attn_out = b.attn_out.data<float>(),
        *ffn_inp = b.ffn_inp.data<float>(), *ffn_norm = b.ffn_norm.data<float>(), *ffn_out = b.ffn_out.data<float>();

  pass.embed(token_embd_, inpL);
  for (int il = 0; il < c.n_layer; ++il) {
    const LlamaLayer& layer = layers_[static_cast<size_t>(il)];
    pass.rms_norm(inpL, n, E, layer.attn_norm, eps, attn_norm);
    pass.linears(attn_norm, {{layer.attn_q, Qcur, &layer.attn_q_bias},
                             {layer.attn_k, Kcur, &layer.attn_k_bias},
                             {layer.attn_v, Vcur, &layer.attn_v_bias}});
    pass.rope(Qcur, c.n_head, c.head_dim, rope, Qrope);
    pass.rope(Kcur, c.n_head_kv, c.head_dim, rope, Krope);
    pass.attention(il, Qrope, Krope, Vcur, c.n_head, kq_scale_, kqv_out);
    pass.linear(kqv_out, layer.attn_output, attn_out, layer.attn_output_bias);
    pass.add(attn_out, inpL, E, ffn_inp);

    pass.rms_norm(ffn_inp, n, E, layer.ffn_norm, eps, ffn_norm);
    pass.gated_ffn(ffn_norm, layer.ffn_gate, layer.ffn_up, layer.ffn_down, UnaryOp::silu, ffn_out);
    pass.add(ffn_out, ffn_inp, E, inpL);
  }
  pass.output(inpL, output_norm_, eps, output_);
}

}  // namespace tempra::llm
