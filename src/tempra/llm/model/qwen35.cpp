// tempra/llm/model/qwen35.cpp: see qwen35.h. The forward pass mirrors llama.cpp's
// src/models/qwen35.cpp; intermediates carry its names (attn_norm, Qcur_full, gate, ...).
#include "tempra/llm/model/qwen35.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "tempra/core/error.h"
#include "tempra/llm/model/model_loader.h"

namespace tempra::llm {
namespace {

// The gated delta nets' shape and which layers they are, as llama.cpp's load_arch_hparams reads
// them; n_layer becomes the trunk's (the multi-token-prediction blocks dropped).
void read_hybrid(const ModelLoader& in, DecoderConfig& c) {
  const int n_all = c.n_layer;
  const int64_t nextn = in.count("nextn_predict_layers", 0);
  if (nextn >= n_all) in.fail("nextn_predict_layers ", nextn, " leaves no layer of the ", n_all);
  c.n_layer = n_all - int(nextn);
  DeltaNetShape& d = c.delta_net;
  d.conv_kernel = in.integer("ssm.conv_kernel");
  d.head_dim = in.integer("ssm.state_size");
  d.k_heads = in.integer("ssm.group_count");
  d.v_heads = in.integer("ssm.time_step_rank");
  // One layer's state per sequence is bounded as a width is (DecoderConfig::kMaxWidth floats,
  // 64 MiB; Qwen3.5-0.8B's is 280,576), so a small malformed file cannot make every cache ask for
  // terabytes.
  constexpr int64_t kMax = DecoderConfig::kMaxWidth;
  if (d.conv_kernel > kMaxConvTaps || d.head_dim > 4096 || d.k_heads > 4096 || d.v_heads > 4096 ||
      d.v_heads % d.k_heads != 0 || d.channels() > kMax || d.state_floats() > kMax)
    in.fail("ssm.conv_kernel ", d.conv_kernel, " (at most 64), ssm.state_size ", d.head_dim, ", ssm.group_count ",
            d.k_heads, " and ssm.time_step_rank ", d.v_heads, " (a multiple of the groups; a state of at most ", kMax,
            " floats) are out of range");
  if (in.integer("ssm.inner_size") != d.value_dim())
    in.fail("ssm.inner_size ", in.integer("ssm.inner_size"), " differs from time_step_rank x state_size ",
            d.value_dim());
  const std::vector<int64_t> recurrent = in.integers("attention.recurrent_layers", size_t(n_all));
  const int64_t interval = recurrent.empty() ? in.integer("full_attention_interval", 4) : 0;
  for (int i = 0; i < c.n_layer; ++i)
    c.recurrent.push_back(recurrent.empty() ? (i + 1) % interval != 0 : recurrent[size_t(i)] != 0);
  if (c.n_recurrent() == c.n_layer) in.fail("no layer attends (every one of the ", c.n_layer, " is recurrent)");
  // IMROPE: pair i of the rotated dims turns by the position of its section (text, time, height
  // or width); for text the first three are the token's position and the fourth is 0, so a
  // pair that falls in none of the first three would not turn. Real files' sections cover
  // every pair ([11, 11, 10, 0] for 32); others are refused rather than rotated wrong.
  const std::vector<int64_t> s = in.integers("rope.dimension_sections", 4);
  if (s.empty()) in.fail("metadata key 'qwen35.rope.dimension_sections' is missing");
  if (std::any_of(s.begin(), s.end(), [&](int64_t v) { return v > c.head_dim; }))
    in.fail("rope.dimension_sections exceed the head dim ", c.head_dim);
  const int64_t sum = std::accumulate(s.begin(), s.end(), int64_t{0});
  for (int64_t i = 0; i < c.n_rot / 2; ++i) {
    const int64_t sector = sum > 0 ? i % sum : 0;
    if (sum == 0 || sector >= 3 * s[size_t(sector % 3)])
      in.fail("rope.dimension_sections [", s[0], ", ", s[1], ", ", s[2], ", ", s[3], "] leave rotated pair ", i, " of ",
              c.n_rot / 2, " without a text position; not supported");
  }
}

}  // namespace

Qwen35Model Qwen35Model::load(const std::filesystem::path& path) {
  return load(io::GgufModel::open(path));
}

Qwen35Model Qwen35Model::load(const io::GgufModel& gguf) {
  ModelLoader in(gguf, "qwen35");
  Qwen35Model m;
  m.load_embeddings_and_head(in);
  DecoderConfig& c = m.config_;
  read_hybrid(in, c);
  const DeltaNetShape& d = c.delta_net;
  const int64_t E = c.n_embd;
  int attention = 0, recurrent = 0;
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    Qwen35Layer layer{.attn_norm = in.vector(p + "attn_norm.weight", E)};
    if (c.recurrent[size_t(i)]) {
      layer.slot = recurrent++;
      DeltaNetWeights& w = layer.delta_net;
      w.attn_qkv = in.matrix(p + "attn_qkv.weight", d.channels(), E);
      w.attn_gate = in.matrix(p + "attn_gate.weight", d.value_dim(), E);
      w.ssm_conv1d = in.tensor(p + "ssm_conv1d.weight", {d.channels(), d.conv_kernel});
      if (w.ssm_conv1d.dtype() != DType::f32)
        in.fail("tensor '", p, "ssm_conv1d.weight' must be f32, got ", w.ssm_conv1d.dtype().name());
      w.ssm_dt = in.vector(p + "ssm_dt.bias", d.v_heads);
      w.ssm_a = in.vector(p + "ssm_a", d.v_heads);
      w.ssm_beta = in.matrix(p + "ssm_beta.weight", d.v_heads, E);
      w.ssm_alpha = in.matrix(p + "ssm_alpha.weight", d.v_heads, E);
      w.ssm_norm = in.vector(p + "ssm_norm.weight", d.head_dim);
      w.ssm_out = in.matrix(p + "ssm_out.weight", E, d.value_dim());
    } else {
      layer.slot = attention++;
      layer.attn_q = in.matrix(p + "attn_q.weight", 2 * c.q_dim(), E);
      layer.attn_k = in.matrix(p + "attn_k.weight", c.kv_dim(), E);
      layer.attn_v = in.matrix(p + "attn_v.weight", c.kv_dim(), E);
      layer.attn_output = in.matrix(p + "attn_output.weight", E, c.q_dim());
      layer.attn_q_norm = in.vector(p + "attn_q_norm.weight", c.head_dim);
      layer.attn_k_norm = in.vector(p + "attn_k_norm.weight", c.head_dim);
    }
    layer.post_attention_norm = in.vector(p + "post_attention_norm.weight", E);
    layer.ffn_gate = in.matrix(p + "ffn_gate.weight", c.n_ff, E);
    layer.ffn_up = in.matrix(p + "ffn_up.weight", c.n_ff, E);
    layer.ffn_down = in.matrix(p + "ffn_down.weight", E, c.n_ff);
    m.layers_.push_back(std::move(layer));
  }
  m.finish_load(in);
  return m;
}

void Qwen35Model::forward(ExecContext& ctx, std::span<const SequenceRows> batch, ForwardBuffers& buffers) const {
  check_batch("qwen35", info_, batch, buffers);
  const ForwardPass pass("qwen35", ctx, batch, buffers, numerics_);
  DecoderBuffers& b = pass.buffers();
  const DecoderConfig& c = config_;
  const int64_t n = pass.rows(), E = c.n_embd, H = c.n_head, hd = c.head_dim;
  const RopeParams rope = c.rope(RopeMode::neox, c.n_rot);
  const double kq_scale = 1.0 / std::sqrt(static_cast<double>(hd)), eps = c.rms_norm_eps;
  float *inpL = b.inpL.data<float>(), *attn_norm = b.attn_norm.data<float>(), *Qcur_full = b.Qcur_full.data<float>(),
        *Qcur = b.Qcur.data<float>(), *gate = b.Qgate.data<float>(), *Kcur = b.Kcur.data<float>(),
        *Vcur = b.Vcur.data<float>(), *Qcur_normed = b.Qcur_normed.data<float>(),
        *Kcur_normed = b.Kcur_normed.data<float>(), *Qrope = b.Qrope.data<float>(), *Krope = b.Krope.data<float>(),
        *kqv_out = b.kqv_out.data<float>(), *attn_out = b.attn_out.data<float>(), *ffn_inp = b.ffn_inp.data<float>(),
        *ffn_norm = b.ffn_norm.data<float>(), *ffn_out = b.ffn_out.data<float>();

  pass.embed(token_embd_, inpL);
  for (int il = 0; il < c.n_layer; ++il) {
    const Qwen35Layer& layer = layers_[static_cast<size_t>(il)];
    pass.rms_norm(inpL, n, E, layer.attn_norm, eps, attn_norm);
    if (c.recurrent[size_t(il)]) {
      pass.gated_delta_net(layer.slot, attn_norm, layer.delta_net, c.delta_net, eps, attn_out);
    } else {
      // Qcur_full [n, H, 2 hd]: each head's query, then its gate.
      pass.linears(attn_norm, {{layer.attn_q, Qcur_full}, {layer.attn_k, Kcur}, {layer.attn_v, Vcur}});
      for (int64_t r = 0; r < n * H; ++r) {
        std::copy_n(Qcur_full + r * 2 * hd, hd, Qcur + r * hd);
        std::copy_n(Qcur_full + r * 2 * hd + hd, hd, gate + r * hd);
      }
      pass.rms_norm(Qcur, n * H, hd, layer.attn_q_norm, eps, Qcur_normed);
      pass.rms_norm(Kcur, n * c.n_head_kv, hd, layer.attn_k_norm, eps, Kcur_normed);
      pass.rope(Qcur_normed, H, hd, rope, Qrope);
      pass.rope(Kcur_normed, c.n_head_kv, hd, rope, Krope);
      pass.attention(layer.slot, Qrope, Krope, Vcur, H, kq_scale, kqv_out);
      pass.unary(UnaryOp::sigmoid, gate, H * hd);
      pass.mul(kqv_out, gate, H * hd, kqv_out);  // attn_gated
      pass.linear(kqv_out, layer.attn_output, attn_out);
    }
    pass.add(attn_out, inpL, E, ffn_inp);  // attn_residual
    pass.rms_norm(ffn_inp, n, E, layer.post_attention_norm, eps, ffn_norm);
    pass.gated_ffn(ffn_norm, layer.ffn_gate, layer.ffn_up, layer.ffn_down, UnaryOp::silu, ffn_out);
    pass.add(ffn_out, ffn_inp, E, inpL);
  }
  pass.output(inpL, output_norm_, eps, output_);
}

std::vector<SynthTensor> Qwen35Model::synth_tensors(const SynthSpec& s) {
  SynthTable t(s);
  const DeltaNetShape d{.conv_kernel = s.ssm_conv_kernel,
                        .head_dim = s.ssm_state_size,
                        .k_heads = s.ssm_group_count,
                        .v_heads = s.ssm_time_step_rank};
  const int64_t q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
  for (int i = 0; i < s.n_layer; ++i) {
    t.layer(i);
    t.norm("attn_norm", s.n_embd);
    t.norm("post_attention_norm", s.n_embd);
    if ((i + 1) % s.full_attention_interval != 0) {
      t.matrix("attn_qkv", s.n_embd, d.channels());
      t.matrix("attn_gate", s.n_embd, d.value_dim());
      t.f32_matrix("ssm_conv1d", s.ssm_conv_kernel, d.channels());
      t.bias("ssm_dt", d.v_heads);
      // -exp(A_log): decays of exp(softplus(alpha + dt) * ssm_a) between about 0.95 and 0.6
      // per token, so the state carries a dozen tokens back and more.
      std::vector<float> a;
      for (int64_t h = 0; h < d.v_heads; ++h) a.push_back(-std::exp(-3.0f + 2.0f * float(h) / float(d.v_heads)));
      t.fixed("ssm_a", std::move(a), "");
      t.matrix("ssm_beta", s.n_embd, d.v_heads);
      t.matrix("ssm_alpha", s.n_embd, d.v_heads);
      t.norm("ssm_norm", d.head_dim);
      t.matrix("ssm_out", d.value_dim(), s.n_embd);
    } else {
      t.matrix("attn_q", s.n_embd, 2 * q_dim);
      t.matrix("attn_k", s.n_embd, kv_dim);
      t.matrix("attn_v", s.n_embd, kv_dim);
      t.matrix("attn_output", q_dim, s.n_embd);
      t.norm("attn_q_norm", s.head_dim);
      t.norm("attn_k_norm", s.head_dim);
    }
    t.matrix("ffn_gate", s.n_embd, s.n_ff);
    t.matrix("ffn_up", s.n_embd, s.n_ff);
    t.matrix("ffn_down", s.n_ff, s.n_embd);
  }
  return t.take();
}

void Qwen35Model::synth_hparams(io::GgufMetadata& m, const SynthSpec& s) {
  m.add("qwen35.ssm.conv_kernel", {uint32_t(s.ssm_conv_kernel)});
  m.add("qwen35.ssm.state_size", {uint32_t(s.ssm_state_size)});
  m.add("qwen35.ssm.group_count", {uint32_t(s.ssm_group_count)});
  m.add("qwen35.ssm.time_step_rank", {uint32_t(s.ssm_time_step_rank)});
  m.add("qwen35.ssm.inner_size", {uint32_t(s.ssm_time_step_rank * s.ssm_state_size)});
  m.add("qwen35.full_attention_interval", {uint32_t(s.full_attention_interval)});
  const int64_t n_rot = s.rope_dim > 0 ? s.rope_dim : s.head_dim;
  m.add("qwen35.rope.dimension_count", {uint32_t(n_rot)});
  // Qwen3.5's proportions ([11, 11, 10, 0] for 32 pairs): section k holds ceil((pairs - k) / 3),
  // so the interleaved sections give every pair a text position.
  const int64_t pairs = n_rot / 2;
  m.add(
      "qwen35.rope.dimension_sections",
      {io::GgufArray{std::vector<int32_t>{int32_t((pairs + 2) / 3), int32_t((pairs + 1) / 3), int32_t(pairs / 3), 0}}});
}

}  // namespace tempra::llm
