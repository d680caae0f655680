// tempra/llm/model/model_loader.cpp: see model_loader.h.
#include "tempra/llm/model/model_loader.h"

#include <algorithm>
#include <type_traits>
#include <variant>
#include <utility>

#include "tempra/backend/quant_dot.h"
#include "tempra/core/error.h"

namespace tempra::llm {

ModelLoader::ModelLoader(const io::GgufModel& gguf, std::string architecture)
    : gguf_(gguf), arch_(std::move(architecture)), file_(gguf.shards().front().name()) {
  const io::GgufValue* arch = gguf.metadata().find("general.architecture");
  if (arch == nullptr || !arch->is<std::string>()) fail("metadata key 'general.architecture' is missing");
  if (std::get<std::string>(arch->value) != arch_)
    fail("general.architecture is '", std::get<std::string>(arch->value), "', expected '", arch_, "'");
}

bool ModelLoader::has_key(const std::string& key) const {
  return gguf_.metadata().find(arch_ + "." + key) != nullptr;
}

int64_t ModelLoader::integer(const std::string& key, std::optional<int64_t> fallback) const {
  const std::string full = arch_ + "." + key;
  const io::GgufValue* value = gguf_.metadata().find(full);
  if (value == nullptr && fallback) return *fallback;
  if (value == nullptr) fail("metadata key '", full, "' is missing");
  const std::optional<int64_t> v = io::integer_value(*value);
  if (!v || *v <= 0) fail("metadata key '", full, "' must be a positive integer");
  return *v;
}

int64_t ModelLoader::count(const std::string& key, int64_t fallback) const {
  const std::string full = arch_ + "." + key;
  const io::GgufValue* value = gguf_.metadata().find(full);
  if (value == nullptr) return fallback;
  const std::optional<int64_t> v = io::integer_value(*value);
  if (!v || *v < 0) fail("metadata key '", full, "' must be a non-negative integer");
  return *v;
}

bool ModelLoader::flag(const std::string& key, bool fallback) const {
  const std::string full = arch_ + "." + key;
  const io::GgufValue* value = gguf_.metadata().find(full);
  if (value == nullptr) return fallback;
  if (!value->is<bool>()) fail("metadata key '", full, "' must be a bool");
  return std::get<bool>(value->value);
}

std::vector<int64_t> ModelLoader::integers(const std::string& key, size_t size) const {
  const std::string full = arch_ + "." + key;
  const io::GgufValue* value = gguf_.metadata().find(full);
  if (value == nullptr) return {};
  std::vector<int64_t> out;
  if (const auto* array = std::get_if<io::GgufArray>(&value->value)) {
    std::visit(
        [&](const auto& items) {
          using T = typename std::decay_t<decltype(items)>::value_type;
          if constexpr (std::is_integral_v<T>)
            for (const T v : items) out.push_back(v < T{} ? -1 : int64_t(v));
        },
        array->items);
    if (out.size() == array->size() && out.size() == size &&
        std::all_of(out.begin(), out.end(), [](int64_t v) { return v >= 0; }))
      return out;
  }
  fail("metadata key '", full, "' must be an array of ", size, " non-negative integers");
}

double ModelLoader::real(const std::string& key, double fallback) const {
  const std::string full = arch_ + "." + key;
  const io::GgufValue* value = gguf_.metadata().find(full);
  if (value == nullptr) return fallback;
  if (value->is<float>()) return std::get<float>(value->value);
  if (value->is<double>()) return std::get<double>(value->value);
  fail("metadata key '", full, "' must be a float");
}

std::string ModelLoader::string(const std::string& key, const std::string& fallback) const {
  const std::string full = arch_ + "." + key;
  const io::GgufValue* value = gguf_.metadata().find(full);
  if (value == nullptr) return fallback;
  if (!value->is<std::string>()) fail("metadata key '", full, "' must be a string");
  return std::get<std::string>(value->value);
}

int64_t ModelLoader::tensor_rows(const std::string& name) const {
  if (!has(name)) fail("tensor '", name, "' is missing");
  return gguf_.tensor(name).dim(0);
}

Array ModelLoader::tensor(const std::string& name, const Dims& shape) const {
  if (!has(name)) fail("tensor '", name, "' is missing");
  Array t = gguf_.tensor(name);
  if (t.shape() != shape) fail("tensor '", name, "' has shape ", t.shape(), ", expected ", shape);
  return t;
}

std::vector<Array> ModelLoader::experts(const std::string& name, int64_t n_expert, int64_t rows, int64_t cols) {
  const Array stacked = tensor(name, {n_expert, rows, cols});
  check_matrix(name, stacked, cols);
  std::vector<Array> out;
  for (int64_t e = 0; e < n_expert; ++e) out.push_back(stacked.select(0, e));
  return out;
}

StackedExperts ModelLoader::stacked_experts(const std::string& name, int64_t n_expert, int64_t rows, int64_t cols) {
  const io::GgufTensorInfo* info = gguf_.find_tensor(name);
  if (info == nullptr) fail("tensor '", name, "' is missing");
  const Dims shape{n_expert, rows, cols};
  if (info->shape() != shape) fail("tensor '", name, "' has shape ", info->shape(), ", expected ", shape);
  check_matrix_type(name, info->dtype, cols);
  const size_t expert_bytes = size_t(rows) * info->dtype.bytes_for(cols);
  return StackedExperts{.name = name, .dtype = info->dtype, .n_expert = n_expert, .rows = rows, .cols = cols,
                        .expert_bytes = expert_bytes, .source = gguf_.tensor_source(name)};
}

Array ModelLoader::matrix(const std::string& name, int64_t rows, int64_t cols) {
  Array w = tensor(name, {rows, cols});
  check_matrix(name, w, cols);
  return w;
}

void ModelLoader::check_matrix(const std::string& name, const Array& w, int64_t cols) {
  check_matrix_type(name, w.dtype(), cols);
  if (!w.is_contiguous()) fail("tensor '", name, "' is not stored row-major");
}

void ModelLoader::check_matrix_type(const std::string& name, DType dtype, int64_t cols) {
  if (dtype.is_block_quantized()) {
    const QuantDot* dot = find_quant_dot(dtype);
    if (dot == nullptr) fail("tensor '", name, "' is ", dtype.name(), ", which has no quantized dot product");
    quantized_row_bytes_ = std::max(quantized_row_bytes_, dot->activation.bytes_for(cols));
  } else {
    if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
      fail("tensor '", name, "' has unsupported type ", dtype.name());
    // Numerics::ggml rounds the activation rows to f16/bf16 into the same scratch, as f32
    // (standard numerics the bf16 ones, for the few-row path).
    if (dtype != DType::f32) quantized_row_bytes_ = std::max(quantized_row_bytes_, sizeof(float) * size_t(cols));
  }
}

Array ModelLoader::optional_matrix(const std::string& name, int64_t rows, int64_t cols) {
  return has(name) ? matrix(name, rows, cols) : Array();
}

Array ModelLoader::vector(const std::string& name, int64_t n) const {
  Array v = tensor(name, {n});
  if (v.dtype() != DType::f32) fail("tensor '", name, "' must be f32, got ", v.dtype().name());
  return v;
}

Array ModelLoader::optional_vector(const std::string& name, int64_t n) const {
  return has(name) ? vector(name, n) : Array();
}

}  // namespace tempra::llm
