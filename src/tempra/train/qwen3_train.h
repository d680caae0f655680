// tempra/train/qwen3_train.h: the Qwen3 forward written on the op library, so that it trains.
//
// Contract:
// - Qwen3Weights are views of a loaded Qwen3Model's mapped arrays (Qwen3Weights::of): the same
//   model description and the same weights inference reads, zero-copy, of whatever type the file
//   holds (f32, f16, bf16, any block-quantized format). Tests may also fill one by hand (the f64
//   goldens).
// - qwen3_logits runs the graph of llama.cpp's src/models/qwen3.cpp, the one Qwen3Model::forward
//   runs (tempra/llm/model/qwen3.cpp), op by op: each call records its VJP when something
//   requires a gradient: the LoRA adapters when fine-tuning (the base weights are frozen and pass
//   gradients to the activations only, ops::linear's VJP for every weight type), or every
//   weight when pretraining (pretrain.h's f32 copies).
// - tokens are i32 [B, T], every row a sequence at positions 0 .. T-1 (no cache); the logits are
//   [B, T, n_vocab], f32 (f64 when the weights are f64). They equal the inference forward's
//   under Numerics::standard within 1e-5 of each position's largest logit on every weight type
//   (tests/train/qwen3_train_test.cpp; measured: bit for bit on f32, f16, bf16, Q8_0 and Q4_K
//   for rows within the GEMM's skinny path): both call the same kernels.
// - checkpoint: activation checkpointing per decoder block (ag::checkpoint): the backward pass
//   reruns each block from its saved input, with bitwise the same gradients. By default a block
//   also keeps the products of its frozen weights (x W^T of its seven projections: 12 floats per
//   token and model-width unit at Qwen3's shapes, 12 MiB per 0.6B block at 256 tokens), which
//   the rerun replays instead of recomputing, so only the cheap rest runs twice (a 0.6B LoRA
//   step on an f16 base: 3.4 s recomputing them, 2.7 s replaying; docs/BENCHMARK.md);
//   recompute_products keeps the input alone (least memory), as do weights that require a
//   gradient themselves (pretraining, pretrain.h).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/core/exec_context.h"
#include "tempra/llm/model/decoder.h"
#include "tempra/llm/model/qwen3.h"
#include "tempra/train/lora.h"

namespace tempra::train {

struct Qwen3Weights {
  llm::DecoderConfig config;
  Array token_embd, output_norm, output;
  std::vector<llm::Qwen3Layer> layers;

  static Qwen3Weights of(const llm::Qwen3Model& model);
  // {out, in} of a layer's projection: what LoraAdapter::create asks.
  std::pair<int64_t, int64_t> projection_shape(LoraTarget t) const;
};

struct TrainForwardOptions {
  const LoraAdapter* lora = nullptr;
  bool checkpoint = false;
  std::optional<uint64_t> train_step;  // keys LoRA dropout while training; none: evaluation
  bool recompute_products = false;     // with checkpoint: rerun the frozen products too
};

// The weights and the adapter must outlive the backward pass (checkpointed blocks rerun on them).
Array qwen3_logits(ExecContext& ctx, const Qwen3Weights& weights, const Array& tokens,
                   const TrainForwardOptions& options = {});

// The language-model loss: the mean cross entropy of logits [B, T, V] against targets i32
// [B, T] (the next tokens), over the positions whose target is not -100 (prompt tokens, padding).
Array lm_loss(ExecContext& ctx, const Array& logits, const Array& targets);

// An f32 copy of a weight of any stored type (decoded from f16, bf16 or a block format), in new
// storage: never a view of the read-only mapping. What the trainers of every weight start from.
Array f32_copy(ExecContext& ctx, const Array& w);

// Fresh adapters of `config` for every layer of `weights`, in the weights' float type (f64 for
// f64 weights, else f32).
LoraAdapter make_lora(ExecContext& ctx, const Qwen3Weights& weights, const LoraConfig& config);

}  // namespace tempra::train
