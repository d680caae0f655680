// tempra/train/qwen3_train.cpp: see qwen3_train.h. Names follow llama.cpp's debug dumps, as
// Qwen3Model::forward does, so the two read side by side.
#include "tempra/train/qwen3_train.h"

#include <cmath>
#include <memory>

#include "tempra/ag/custom_op.h"
#include "tempra/core/error.h"
#include "tempra/ops/ops.h"

namespace tempra::train {

Qwen3Weights Qwen3Weights::of(const llm::Qwen3Model& model) {
  return Qwen3Weights{.config = model.config(),
                      .token_embd = model.token_embd(),
                      .output_norm = model.output_norm(),
                      .output = model.output_head(),
                      .layers = model.layers()};
}

std::pair<int64_t, int64_t> Qwen3Weights::projection_shape(LoraTarget t) const {
  const llm::DecoderConfig& c = config;
  switch (t) {
    case LoraTarget::q: return {c.q_dim(), c.n_embd};
    case LoraTarget::k:
    case LoraTarget::v: return {c.kv_dim(), c.n_embd};
    case LoraTarget::o: return {c.n_embd, c.q_dim()};
    case LoraTarget::gate:
    case LoraTarget::up: return {c.n_ff, c.n_embd};
    case LoraTarget::down: return {c.n_embd, c.n_ff};
  }
  fail("lora", "unknown target");
}

Array f32_copy(ExecContext& ctx, const Array& w) {
  // New storage either way (cast copies even to the same type).
  return contiguous(ctx, w.dtype().is_block_quantized() ? dequantize(ctx, w) : cast(ctx, w, DType::f32));
}

LoraAdapter make_lora(ExecContext& ctx, const Qwen3Weights& weights, const LoraConfig& config) {
  const DType dtype = weights.output_norm.dtype() == DType::f64 ? DType::f64 : DType::f32;
  return LoraAdapter::create(
      ctx, config, weights.config.n_layer, [&](LoraTarget t) { return weights.projection_shape(t); }, dtype);
}

namespace {

// The products of a checkpointed block's frozen weights (x W^T, in the order the block computes
// them): its first run, without recording, keeps them; the backward pass's rerun replays each as
// an op whose VJP is linear's input gradient (W is frozen), so the rerun records the same graph
// with the same gradients without redoing the block's largest products.
struct FrozenProducts {
  std::vector<Array> values;
  size_t replayed = 0;
};

// One decoder block: x [B, T, E] -> x + attention, then + the SwiGLU FFN. `products`: null, or a
// checkpointed block's store (empty: fill it; full: replay it).
Array qwen3_block(ExecContext& ctx, const Qwen3Weights& w, int il, const Array& inpL, const Array& positions,
                  const TrainForwardOptions& o, FrozenProducts* products) {
  const llm::DecoderConfig& c = w.config;
  const llm::Qwen3Layer& layer = w.layers[size_t(il)];
  const int64_t B = inpL.dim(0), T = inpL.dim(1);
  const double eps = c.rms_norm_eps;
  const RopeParams rope_params = c.rope(RopeMode::neox, c.n_rot);
  static const LoraAdapter kNoAdapter;
  const LoraAdapter& lora = o.lora ? *o.lora : kNoAdapter;
  const bool replay = products != nullptr && !products->values.empty();  // decided once per run
  const auto project = [&](const Array& x, const Array& weight, LoraTarget t) {
    Array y;
    if (replay) {
      check(products->replayed < products->values.size(), "qwen3_logits",
            "a checkpointed block's rerun asked for more frozen products than its first run made");
      y = ag::custom_op(
          ctx, "linear", {x},
          [saved = products->values[products->replayed++]](ExecContext&, const std::vector<Array>&) { return saved; },
          [weight](ExecContext& c, const Array& g, const std::vector<bool>&) {
            return std::vector<Array>{linear_input_grad(c, g, weight)};
          });
    } else {
      y = linear(ctx, x, weight);
      if (products != nullptr) products->values.push_back(y.detach());
    }
    return lora.adapt(ctx, x, y, il, t, o.train_step);
  };

  const Array attn_norm = rms_norm(ctx, inpL, layer.attn_norm, eps);
  const Array Qcur = project(attn_norm, layer.attn_q, LoraTarget::q).reshape({B, T, c.n_head, c.head_dim});
  const Array Kcur = project(attn_norm, layer.attn_k, LoraTarget::k).reshape({B, T, c.n_head_kv, c.head_dim});
  const Array Vcur = project(attn_norm, layer.attn_v, LoraTarget::v).reshape({B, T, c.n_head_kv, c.head_dim});
  const Array Qrope = rope(ctx, rms_norm(ctx, Qcur, layer.attn_q_norm, eps), positions, rope_params);
  const Array Krope = rope(ctx, rms_norm(ctx, Kcur, layer.attn_k_norm, eps), positions, rope_params);
  const Array kqv = attention(ctx, Qrope.transpose(1, 2), Krope.transpose(1, 2), Vcur.transpose(1, 2),
                              {.causal = true, .scale = 1.0 / std::sqrt(double(c.head_dim))});
  const Array kqv_out = contiguous(ctx, kqv.transpose(1, 2)).reshape({B, T, c.q_dim()});
  const Array ffn_inp = add(ctx, project(kqv_out, layer.attn_output, LoraTarget::o), inpL);

  const Array ffn_norm = rms_norm(ctx, ffn_inp, layer.ffn_norm, eps);
  const Array gated = mul(ctx, silu(ctx, project(ffn_norm, layer.ffn_gate, LoraTarget::gate)),
                          project(ffn_norm, layer.ffn_up, LoraTarget::up));
  return add(ctx, project(gated, layer.ffn_down, LoraTarget::down), ffn_inp);
}

}  // namespace

Array qwen3_logits(ExecContext& ctx, const Qwen3Weights& w, const Array& tokens, const TrainForwardOptions& o) {
  const llm::DecoderConfig& c = w.config;
  check(tokens.defined() && tokens.rank() == 2 && tokens.dtype() == DType::i32, "qwen3_logits",
        "tokens must be i32 [batch, seq], got ", tokens.defined() ? tokens.shape() : Dims{});
  check(tokens.dim(1) >= 1, "qwen3_logits", "empty sequences");
  check(int(w.layers.size()) == c.n_layer, "qwen3_logits", "the weights hold ", w.layers.size(), " layers of ",
        c.n_layer);
  if (o.lora)
    check(o.lora->n_layer() == c.n_layer, "qwen3_logits", "the adapter has ", o.lora->n_layer(),
          " layers, the model ", c.n_layer);
  const int64_t T = tokens.dim(1);
  const Array positions = arange(ctx, T, DType::i32);

  Array inpL = embedding(ctx, w.token_embd, tokens);  // checks every id against the vocab
  if (inpL.dtype() == DType::f16 || inpL.dtype() == DType::bf16) inpL = cast(ctx, inpL, DType::f32);
  for (int il = 0; il < c.n_layer; ++il) {
    if (!o.checkpoint) {
      inpL = qwen3_block(ctx, w, il, inpL, positions, o, nullptr);
      continue;
    }
    // The store lives in the checkpoint's VJP, freed when its node fires. Only frozen weights'
    // products can be replayed: a weight that trains needs its own gradient from the rerun.
    const llm::Qwen3Layer& l = w.layers[size_t(il)];
    const bool trains_weights = l.attn_q.requires_grad() || l.attn_k.requires_grad() || l.attn_v.requires_grad() ||
                                l.attn_output.requires_grad() || l.ffn_gate.requires_grad() ||
                                l.ffn_up.requires_grad() || l.ffn_down.requires_grad();
    auto products = o.recompute_products || trains_weights ? nullptr : std::make_shared<FrozenProducts>();
    inpL = ag::checkpoint(
        ctx,
        [&w, il, positions, o, products](ExecContext& c2, const std::vector<Array>& in) {
          return qwen3_block(c2, w, il, in[0], positions, o, products.get());
        },
        {inpL});
  }
  return linear(ctx, rms_norm(ctx, inpL, w.output_norm, c.rms_norm_eps), w.output);
}

Array lm_loss(ExecContext& ctx, const Array& logits, const Array& targets) {
  check(logits.defined() && logits.rank() == 3 && targets.defined() && targets.rank() == 2 &&
            targets.dim(0) == logits.dim(0) && targets.dim(1) == logits.dim(1),
        "lm_loss", "logits [B, T, V] and targets [B, T] disagree: ", logits.defined() ? logits.shape() : Dims{}, " and ",
        targets.defined() ? targets.shape() : Dims{});
  return cross_entropy(ctx, logits.reshape({-1, logits.dim(2)}), targets.reshape({-1}),
                       {.ignore_index = -100, .reduction = Reduction::mean});
}

}  // namespace tempra::train
