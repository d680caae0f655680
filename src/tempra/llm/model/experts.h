// tempra/llm/model/experts.h: where a mixture-of-experts layer's routed experts come from.
//
// Contract: ForwardPass::moe_ffn asks an ExpertSource for one expert's three matrices at a time.
// Before a layer's experts run it calls will_use() once with the experts the batch routes to (in
// ascending order, the order get() then asks for them); get() returns the expert's gate, up and
// down matrices [rows, cols], valid until the next get() or will_use(). A source hands out the
// very bytes of the file, so every source gives the same bits: ResidentExperts are views of the
// mapped file, ExpertCache (expert_cache.h) reads them from disk into a bounded cache.
//
// StackedExperts describes one stacked tensor (ggml ne {cols, rows, n_expert}) without mapping
// it: its type, shape and where each expert's bytes lie in the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"

namespace tempra::llm {

struct ExpertMatrices {
  const Array* gate = nullptr;
  const Array* up = nullptr;
  const Array* down = nullptr;
};

class ExpertSource {
 public:
  virtual ~ExpertSource() = default;
  // The experts layer `layer` is about to use (ascending, distinct, non-empty).
  virtual void will_use(int layer, std::span<const int32_t> experts) const = 0;
  // Expert `expert` of layer `layer` (one of the last will_use's).
  virtual ExpertMatrices get(int layer, int32_t expert) const = 0;
};

// Every expert a view of the mapped file: what a model loaded without --moe-stream uses.
class ResidentExperts final : public ExpertSource {
 public:
  // One layer's experts, one [rows, cols] view per expert in each of the three lists.
  void add_layer(std::vector<Array> gate, std::vector<Array> up, std::vector<Array> down);

  void will_use(int, std::span<const int32_t>) const override {}
  ExpertMatrices get(int layer, int32_t expert) const override;

 private:
  struct Layer {
    std::vector<Array> gate, up, down;
  };
  std::vector<Layer> layers_;
};

// --moe-stream: routed experts read from the file into a cache of `cache_bytes`
// (expert_cache.h) instead of mapped with the rest of the model.
struct ExpertStreaming {
  uint64_t cache_bytes = 0;          // the budget for experts in memory
  std::filesystem::path usage_file;  // the usage histogram kept across runs; empty: none
  bool prefetch = true;              // start reading the experts a layer will need early
};

// One stacked expert tensor as the file holds it.
struct StackedExperts {
  std::string name;
  DType dtype = DType::f32;
  int64_t n_expert = 0, rows = 0, cols = 0;
  size_t expert_bytes = 0;  // one expert's matrix: rows * dtype.bytes_for(cols)
  io::GgufModel::TensorSource source;
  uint64_t offset(int64_t expert) const { return source.offset + uint64_t(expert) * expert_bytes; }
};

}  // namespace tempra::llm
