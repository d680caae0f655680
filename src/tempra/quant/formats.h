// tempra/quant/formats.h: the block formats as dtypes, with their traits.
//
// One traits row per format, as ggml keeps one type-traits table: its ggml type id (the number
// GGUF files store), block geometry, and the reference row encoder and decoder. Each format is
// a tempra dtype: the first call to format(...) or a dtype accessor registers all of them in the
// core dtype registry, so Arrays of Q8_0 blocks are ordinary block-quantized Arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "tempra/core/dtype.h"

namespace tempra::quant {

struct QuantFormat {
  std::string_view name;  // "q8_0": the dtype name
  int ggml_type;          // enum ggml_type value (GGML_TYPE_Q8_0 == 8)
  int block_elems;
  int block_bytes;
  DType dtype;
  // Decodes / encodes k elements (a multiple of block_elems); unchecked. quantize_row may be
  // null for a decode-only format (none today; tests/quant lists them).
  void (*dequantize_row)(const void* blocks, float* out, int64_t k);
  void (*quantize_row)(const float* in, void* blocks, int64_t k);
};

// Every format this build knows, in ggml type order.
std::span<const QuantFormat> formats();
// The format of a block-quantized dtype, or null for plain dtypes.
const QuantFormat* find_format(DType dtype);
const QuantFormat* find_format(std::string_view name);
const QuantFormat* find_format_by_ggml_type(int ggml_type);

DType q4_0();
DType q4_1();
DType q5_0();
DType q5_1();
DType q8_0();
DType q8_1();

}  // namespace tempra::quant
