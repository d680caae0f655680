// tempra/llm/model/delta_net.cpp: see delta_net.h, and ForwardPass::gated_delta_net (decoder.h),
// which mirrors llama.cpp's qwen35 build_layer_attn_linear step for step.
#include "tempra/llm/model/delta_net.h"

#include <algorithm>
#include <cmath>

#include "tempra/backend/kernels.h"
#include "tempra/llm/model/decoder.h"

namespace tempra::llm {

void delta_net_conv(const float* x, int64_t n, int64_t channels, const float* kernel, int64_t taps, float* conv_state,
                    float* out, int64_t first, int64_t last) {
  if (n == 0) return;  // nothing to convolve, and the state keeps its rows
  const int64_t cached = taps - 1;
  // Row r of the convolution's input: a cached row, then the sequence's own.
  const auto row = [&](int64_t r) { return r < cached ? conv_state + r * channels : x + (r - cached) * channels; };
  // Bands of channels, row by row (rows are contiguous; a band's kernel, transposed to tap by
  // tap, stays in L1). Each output is summed over the taps in order from 0, as the contract says.
  constexpr int64_t kBand = 64;
  float taps_by_channel[kMaxConvTaps * kBand];
  for (int64_t c0 = first; c0 < last; c0 += kBand) {
    const int64_t width = std::min(kBand, last - c0);
    for (int64_t c = 0; c < width; ++c)
      for (int64_t i = 0; i < taps; ++i) taps_by_channel[i * kBand + c] = kernel[(c0 + c) * taps + i];
    for (int64_t t = 0; t < n; ++t) {
      float* o = out + t * channels + c0;
      std::fill(o, o + width, 0.0f);
      for (int64_t i = 0; i < taps; ++i) {
        const float* in = row(t + i) + c0;
        const float* w = taps_by_channel + i * kBand;
        for (int64_t c = 0; c < width; ++c) o[c] += in[c] * w[c];
      }
    }
    // The last `cached` input rows; row r reads row n + r >= r, not yet overwritten.
    for (int64_t r = 0; r < cached; ++r) {
      const float* kept = row(n + r) + c0;
      std::copy(kept, kept + width, conv_state + r * channels + c0);
    }
  }
}

void l2_norm(float* x, int64_t width, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < width; ++i) sum += double(x[i] * x[i]);
  const float scale = 1.0f / std::max(std::sqrt(float(sum)), eps);
  for (int64_t i = 0; i < width; ++i) x[i] *= scale;
}

void ForwardPass::gated_delta_net(int layer, const float* x, const DeltaNetWeights& w, const DeltaNetShape& shape,
                                  double eps, float* out) const {
  const int64_t C = shape.channels(), S = shape.head_dim, Hk = shape.k_heads, Hv = shape.v_heads;
  const int64_t Vd = shape.value_dim(), Kd = shape.key_dim(), taps = shape.conv_kernel;
  float *qkv_mixed = b_.qkv_mixed.data<float>(), *conv = b_.conv_output.data<float>(), *z = b_.z.data<float>(),
        *beta = b_.beta.data<float>(), *g = b_.gate.data<float>(), *o = b_.delta_out.data<float>(),
        *o_norm = b_.delta_norm.data<float>();
  linears(x, {{w.attn_qkv, qkv_mixed}, {w.attn_gate, z}, {w.ssm_beta, beta}, {w.ssm_alpha, g}});
  unary(UnaryOp::sigmoid, beta, Hv);
  // gate = softplus(alpha + ssm_dt) * ssm_a, ssm_a = -exp(A_log): the log of each head's decay.
  const float *dt = w.ssm_dt.data<float>(), *a = w.ssm_a.data<float>();
  for (int64_t j = 0; j < n_ * Hv; ++j) g[j] += dt[j % Hv];
  unary(UnaryOp::softplus, g, Hv);
  for (int64_t j = 0; j < n_ * Hv; ++j) g[j] *= a[j % Hv];

  // The short causal convolution over each sequence's rows after its cached ones, then silu,
  // then each query and key head L2-normed.
  int64_t row = 0;
  for (const SequenceRows& seq : batch_) {
    const auto m = int64_t(seq.tokens.size());
    float* conv_state = seq.cache->recurrent_state(layer);
    pool().parallel_for(C, 64, [&](int64_t first, int64_t last) {
      delta_net_conv(qkv_mixed + row * C, m, C, w.ssm_conv1d.data<float>(), taps, conv_state, conv + row * C, first,
                     last);
    });
    row += m;
  }
  unary(UnaryOp::silu, conv, C);
  pool().parallel_for(n_ * 2 * Hk, 64, [&](int64_t first, int64_t last) {
    for (int64_t j = first; j < last; ++j) l2_norm(conv + (j / (2 * Hk)) * C + (j % (2 * Hk)) * S, S, float(eps));
  });

  // The delta rule, per sequence over its own state.
  row = 0;
  for (const SequenceRows& seq : batch_) {
    const auto m = int64_t(seq.tokens.size());
    const float* rows = conv + row * C;
    kernels_for(ctx_.backend())
        .gated_delta_rule({.q = rows,
                           .k = rows + Kd,
                           .qk_stride = C,
                           .v = rows + 2 * Kd,
                           .v_stride = C,
                           .log_decay = g + row * Hv,
                           .beta = beta + row * Hv,
                           .n = m,
                           .k_heads = Hk,
                           .v_heads = Hv,
                           .head_dim = S,
                           .state = seq.cache->recurrent_state(layer) + shape.conv_floats(),
                           .out = o + row * Vd,
                           .out_stride = Vd},
                          pool());
    row += m;
  }
  // norm_gated: rms_norm(o) * ssm_norm per head, times silu(z).
  rms_norm(o, n_ * Hv, S, w.ssm_norm, eps, o_norm);
  unary(UnaryOp::silu, z, Vd);
  mul(o_norm, z, Vd, o_norm);
  linear(o_norm, w.ssm_out, out);
}

}  // namespace tempra::llm
