// tempra/llm/model/model_loader.h: what every architecture's load reads from a GGUF, checked once.
//
// Contract: a ModelLoader reads one architecture's `ARCH.*` hyperparameters and its tensors,
// and every failure throws tempra::Error naming the architecture, the file and the key or
// tensor: a missing required key, a value of the wrong kind, a missing tensor, a shape other
// than the table's, a matrix of a type with no product (quant_dot.h) or not stored row-major, a
// norm that is not f32. Tensors are the zero-copy Arrays the file maps (io::GgufModel), so they
// keep the mapping alive. Matrices record the widest row of activations their products need
// (quantized_row_bytes: an activation row in the partner format of a block-quantized weight,
// or rounded to f16/bf16 and kept as f32 under Numerics::ggml), which sizes the forward's
// scratch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tempra/core/array.h"
#include "tempra/io/gguf_model.h"
#include "tempra/llm/model/experts.h"

namespace tempra::llm {

class ModelLoader {
 public:
  // Checks that general.architecture is `architecture`.
  ModelLoader(const io::GgufModel& gguf, std::string architecture);

  const std::string& architecture() const { return arch_; }
  const std::string& file() const { return file_; }

  // `ARCH.key`, a positive integer; without a fallback, required.
  int64_t integer(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const;
  // `ARCH.key`, a non-negative integer (0 allowed: "none"), or `fallback` when absent.
  int64_t count(const std::string& key, int64_t fallback) const;
  // `ARCH.key`, a bool, or `fallback` when absent.
  bool flag(const std::string& key, bool fallback) const;
  // `ARCH.key`, a float (f32 or f64 in the file), or `fallback` when absent.
  double real(const std::string& key, double fallback) const;
  // `ARCH.key`, a string, or `fallback` when absent.
  std::string string(const std::string& key, const std::string& fallback) const;
  // `ARCH.key`, an array of `size` non-negative integers or bools (as 0 and 1), or empty when
  // absent; an array of another length or type fails.
  std::vector<int64_t> integers(const std::string& key, size_t size) const;
  bool has_key(const std::string& key) const;

  bool has(const std::string& tensor) const { return gguf_.find_tensor(tensor) != nullptr; }
  // The outermost dimension of a required tensor (the vocab size of token_embd.weight).
  int64_t tensor_rows(const std::string& name) const;
  // The tensor `name` with tempra shape `shape` (outermost first), any type.
  Array tensor(const std::string& name, const Dims& shape) const;
  // A weight matrix [rows, cols]: f32, f16, bf16 or a block format with a quantized dot.
  Array matrix(const std::string& name, int64_t rows, int64_t cols);
  // Stacked experts [n_expert, rows, cols] (ggml ne {cols, rows, n_expert}), checked as matrix()
  // checks one, returned as one [rows, cols] view per expert.
  std::vector<Array> experts(const std::string& name, int64_t n_expert, int64_t rows, int64_t cols);
  // The same checks, without mapping the tensor: where each expert's bytes lie in the file
  // (expert streaming reads them from there).
  StackedExperts stacked_experts(const std::string& name, int64_t n_expert, int64_t rows, int64_t cols);
  // A matrix if the file has it, else an empty Array.
  Array optional_matrix(const std::string& name, int64_t rows, int64_t cols);
  // An f32 vector of n elements (a norm's weight, a bias, rope's frequency factors).
  Array vector(const std::string& name, int64_t n) const;
  Array optional_vector(const std::string& name, int64_t n) const;

  // The widest activation row any matrix loaded so far needs in scratch, in bytes.
  size_t quantized_row_bytes() const { return quantized_row_bytes_; }

  // Throws the loader's error (architecture, file, then the message).
  template <class... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    tempra::fail(arch_, file_, ": ", parts...);
  }

 private:
  // matrix()'s checks of a weight whose rows are `cols` long; records its scratch.
  void check_matrix(const std::string& name, const Array& w, int64_t cols);
  void check_matrix_type(const std::string& name, DType dtype, int64_t cols);

  const io::GgufModel& gguf_;
  std::string arch_, file_;
  size_t quantized_row_bytes_ = 0;
};

}  // namespace tempra::llm
