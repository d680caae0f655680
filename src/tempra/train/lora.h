// tempra/train/lora.h: low-rank adapters (LoRA; Hu et al., arXiv:2106.09685) over a decoder's
// frozen projections, as PEFT defines them and llama.cpp's adapter GGUFs store them.
//
// Contract:
// - A target projection W [out, in] (ggml's layout: one output per row) gains
//     y = x W^T + (alpha / rank) * (dropout(x) A^T) B^T
//   with A [rank, in] and B [out, rank], llama.cpp's `lora_a` and `lora_b` in logical
//   (row-major) order. A starts as PEFT's kaiming_uniform(a = sqrt(5)), uniform in
//   +-1/sqrt(in), drawn from the counter RNG at (seed, adapter index); B starts at zero, so a
//   fresh adapter leaves the model's output unchanged.
// - The adapters are the only parameters: each A and B is an f32 (or, for the f64 goldens, f64)
//   leaf that requires a gradient; the base weight stays the mapped array it was loaded as.
// - Dropout is ops::dropout's counter mask keyed by (seed, adapter index) and the step: never
//   stored, so an activation-checkpointed block recomputes the very mask it used.
// - Bad configurations (rank < 1, alpha <= 0, dropout outside [0, 1), an unknown or repeated
//   target name) throw tempra::Error naming the value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/core/exec_context.h"
#include "tempra/optim/optimizer.h"

namespace tempra::train {

// The projections of a decoder layer an adapter may target, by PEFT's short names.
enum class LoraTarget : uint8_t { q, k, v, o, gate, up, down };
inline constexpr int kLoraTargetCount = 7;
inline constexpr LoraTarget kAllLoraTargets[kLoraTargetCount] = {
    LoraTarget::q, LoraTarget::k, LoraTarget::v, LoraTarget::o, LoraTarget::gate, LoraTarget::up, LoraTarget::down};

// "q", "k", ..., and the GGUF tensor stem llama.cpp names it by ("attn_q", ..., "ffn_down").
std::string_view target_name(LoraTarget t);
std::string_view target_tensor(LoraTarget t);
// "blk.3.attn_q.weight": the base weight a layer's adapter of `t` adapts; its pair is named
// by appending ".lora_a" / ".lora_b" (llama.cpp's adapter GGUFs).
std::string adapted_tensor(int layer, LoraTarget t);
// "q,k,v,o" (also "all") -> targets in the enum's order; an unknown, empty or repeated name throws.
std::vector<LoraTarget> parse_targets(std::string_view list);

struct LoraConfig {
  int64_t rank = 8;
  double alpha = 16.0;
  double dropout = 0.0;
  std::vector<LoraTarget> targets = {LoraTarget::q, LoraTarget::k, LoraTarget::v, LoraTarget::o};
  uint64_t seed = 0;
  double scale() const { return alpha / double(rank); }
  void validate() const;
};

// One adapter pair.
struct LoraPair {
  Array a;  // [rank, in]
  Array b;  // [out, rank]
};

// The adapters of every layer: pair(layer, target) exists for each configured target.
class LoraAdapter {
 public:
  // Fresh adapters for n_layer layers; shape_of(target) gives that projection's {out, in}.
  template <class ShapeOf>
  static LoraAdapter create(ExecContext& ctx, const LoraConfig& config, int n_layer, ShapeOf shape_of,
                            DType dtype = DType::f32);

  // An adapter of n_layer layers with no pairs yet: a file's (adapter.h) fills it by set().
  LoraAdapter(const LoraConfig& config, int n_layer);
  LoraAdapter() = default;
  void set(int layer, LoraTarget t, LoraPair pair);

  const LoraConfig& config() const { return config_; }
  int n_layer() const { return n_layer_; }
  bool has(int layer, LoraTarget t) const { return slot(layer, t) >= 0; }
  LoraPair& pair(int layer, LoraTarget t);
  const LoraPair& pair(int layer, LoraTarget t) const;
  // Every A and B, layer by layer in the targets' order (A before B), named as llama.cpp's
  // adapter GGUFs name them ("blk.0.attn_q.weight.lora_a"): what an optimizer updates.
  std::vector<optim::Param> parameters() const;

  // x W^T plus this layer's adapter of `t` if it has one. `train_step` keys the dropout mask
  // while training; without one (evaluation) there is no dropout.
  Array project(ExecContext& ctx, const Array& x, const Array& w, int layer, LoraTarget t,
                std::optional<uint64_t> train_step) const;
  // The same with the frozen product y = x W^T already computed by the caller: y plus the adapter.
  Array adapt(ExecContext& ctx, const Array& x, const Array& y, int layer, LoraTarget t,
              std::optional<uint64_t> train_step) const;

 private:
  int slot(int layer, LoraTarget t) const;
  // PEFT's initial A (uniform in +-1/sqrt(in) from the pair's stream) and a zero B.
  LoraPair fresh_pair(ExecContext& ctx, int64_t out, int64_t in, DType dtype) const;

  LoraConfig config_;
  int n_layer_ = 0;
  std::vector<int> slot_of_;  // [layer * kLoraTargetCount + target] -> index into pairs_, or -1
  std::vector<LoraPair> pairs_;
};

template <class ShapeOf>
LoraAdapter LoraAdapter::create(ExecContext& ctx, const LoraConfig& config, int n_layer, ShapeOf shape_of,
                                DType dtype) {
  config.validate();
  LoraAdapter adapter(config, n_layer);
  for (int layer = 0; layer < n_layer; ++layer)
    for (LoraTarget t : config.targets) {
      const auto [out, in] = shape_of(t);
      adapter.set(layer, t, adapter.fresh_pair(ctx, out, in, dtype));
    }
  return adapter;
}

}  // namespace tempra::train
