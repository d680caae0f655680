// tempra/ops/neural.h: the layers of a neural network, forward only.
//
// Shapes, by convention:
//   rms_norm / layer_norm   normalize the last axis; weight and bias are 1-D of its extent.
//   rope                    x [..., seq, heads, head_dim], positions i32 [seq].
//   attention               q [B, Hq, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv] -> [B, Hq, Tq, Dv];
//                           Hq must be a multiple of Hkv (grouped-query attention).
//   cross_entropy           logits [N, C], targets i32/i64 [N]; rows whose target is ignore_index
//                           count neither in the sum nor in the mean's divisor (as torch).
//   conv1d                  x [B, Cin, T], weight [Cout, Cin / groups, K], bias [Cout].
// All float-only; f16/bf16 inputs compute in f32.
#pragma once

#include <optional>

#include "tempra/backend/kernel_args.h"
#include "tempra/core/array.h"

namespace tempra {

Array rms_norm(ExecContext& ctx, const Array& x, const Array& weight, double eps = 1e-6);
Array layer_norm(ExecContext& ctx, const Array& x, const Array& weight, const Array& bias, double eps = 1e-5);

Array rope(ExecContext& ctx, const Array& x, const Array& positions, const RopeParams& params);

struct AttentionOptions {
  bool causal = false;          // key j hidden from query i when j > i + (Tk - Tq)
  std::optional<double> scale{};  // default 1 / sqrt(D)
  Array mask{};                   // optional additive mask broadcastable to [B, Hq, Tq, Tk]
};
Array attention(ExecContext& ctx, const Array& q, const Array& k, const Array& v, const AttentionOptions& options = {});

enum class Reduction : uint8_t { none, mean, sum };

struct CrossEntropyOptions {
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::mean;
};
Array cross_entropy(ExecContext& ctx, const Array& logits, const Array& targets, const CrossEntropyOptions& options = {});
Array mse(ExecContext& ctx, const Array& prediction, const Array& target, Reduction reduction = Reduction::mean);

struct Conv1dOptions {
  int64_t stride = 1;
  int64_t padding = 0;   // zeros on both ends of the time axis
  int64_t dilation = 1;
  int64_t groups = 1;
  bool causal = false;   // left-pad by (K - 1) * dilation instead (WaveNet); needs padding 0
};
Array conv1d(ExecContext& ctx, const Array& x, const Array& weight, const Array& bias = {},
             const Conv1dOptions& options = {});

}  // namespace tempra
