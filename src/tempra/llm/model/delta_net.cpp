// tempra/llm/model/delta_net.cpp: see delta_net.h, and ForwardPass::gated_delta_net (decoder.h),
// which mirrors llama.cpp's qwen35 build_layer_attn_linear step for step.
#include "tempra/llm/model/delta_net.h"

#include <algorithm>
#include <cmath>

#include "tempra/backend/kernels.h"
#include "tempra/llm/model/decoder.h"

namespace tempra::llm {
namespace {

// a . b over n floats in eight running sums (so the compiler vectorizes the loop), added in a
// fixed order: the same bits for a token whatever the batch.
float dot(const float* a, const float* b, int64_t n) {
  float lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += a[i + l] * b[i + l];
  float sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

void delta_net_conv(const float* x, int64_t n, int64_t channels, const float* kernel, int64_t taps, float* conv_state,
                    float* out, int64_t first, int64_t last) {
  const int64_t cached = taps - 1;
  // Row r of the convolution's input: a cached row, then the sequence's own.
  const auto in = [&](int64_t r, int64_t c) {
    return r < cached ? conv_state[r * channels + c] : x[(r - cached) * channels + c];
  };
  for (int64_t c = first; c < last; ++c) {
    const float* w = kernel + c * taps;
    for (int64_t t = 0; t < n; ++t) {
      float sum = 0.0f;
      for (int64_t i = 0; i < taps; ++i) sum += in(t + i, c) * w[i];
      out[t * channels + c] = sum;
    }
    // The last `cached` input rows; row r reads row n + r >= r, not yet overwritten.
    for (int64_t r = 0; r < cached; ++r) conv_state[r * channels + c] = in(n + r, c);
  }
}

void delta_rule(const float* q, const float* k, int64_t q_stride, const float* v, int64_t v_stride, const float* g,
                const float* beta, int64_t v_heads, int64_t h, int64_t n, int64_t head_dim, float* state, float* out,
                int64_t out_stride) {
  const int64_t S = head_dim;
  const float scale = 1.0f / std::sqrt(float(S));
  for (int64_t t = 0; t < n; ++t) {
    const float *qt = q + t * q_stride, *kt = k + t * q_stride, *vt = v + t * v_stride + h * S;
    const float decay = std::exp(g[t * v_heads + h]), b = beta[t * v_heads + h];
    float* ot = out + t * out_stride + h * S;
    // Each row of M evolves on its own (decay, its delta, its update, its output), so one row
    // at a time, in two sweeps that stay in L1: the bits of ggml's four sweeps over all of M.
    for (int64_t j = 0; j < S; ++j) {
      float* row = state + j * S;
      for (int64_t i = 0; i < S; ++i) row[i] *= decay;
      const float d = (vt[j] - dot(row, kt, S)) * b;
      for (int64_t i = 0; i < S; ++i) row[i] += kt[i] * d;
      ot[j] = dot(row, qt, S) * scale;
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
  linear(x, w.attn_qkv, qkv_mixed);
  linear(x, w.attn_gate, z);
  linear(x, w.ssm_beta, beta);
  unary(UnaryOp::sigmoid, beta, Hv);
  // gate = softplus(alpha + ssm_dt) * ssm_a, ssm_a = -exp(A_log): the log of each head's decay.
  linear(x, w.ssm_alpha, g);
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

  // The delta rule, per sequence over its own state; value head h reads key head h % Hk.
  row = 0;
  for (const SequenceRows& seq : batch_) {
    const auto m = int64_t(seq.tokens.size());
    float* matrices = seq.cache->recurrent_state(layer) + shape.conv_floats();
    const float* rows = conv + row * C;
    pool().parallel_for(Hv, 1, [&](int64_t first, int64_t last) {
      for (int64_t h = first; h < last; ++h) {
        const int64_t kh = h % Hk;
        delta_rule(rows + kh * S, rows + Kd + kh * S, C, rows + 2 * Kd, C, g + row * Hv, beta + row * Hv, Hv, h, m, S,
                   matrices + h * S * S, o + row * Vd, Vd);
      }
    });
    row += m;
  }
  // norm_gated: rms_norm(o) * ssm_norm per head, times silu(z).
  rms_norm(o, n_ * Hv, S, w.ssm_norm, eps, o_norm);
  unary(UnaryOp::silu, z, Vd);
  mul(o_norm, z, Vd, o_norm);
  linear(o_norm, w.ssm_out, out);
}

}  // namespace tempra::llm
