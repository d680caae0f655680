// tempra/quant/formats.cpp: the traits table.
#include "tempra/quant/formats.h"

#include <type_traits>
#include <vector>

#include "tempra/quant/reference.h"

namespace tempra::quant {
namespace {

// Adapts a typed row function to the table's untyped signature.
template <class Block, void (*Decode)(const Block*, float*, int64_t)>
void decode_row(const void* blocks, float* out, int64_t k) {
  Decode(static_cast<const Block*>(blocks), out, k);
}
template <class Block, void (*Encode)(const float*, Block*, int64_t)>
void encode_row(const float* in, void* blocks, int64_t k) {
  Encode(in, static_cast<Block*>(blocks), k);
}

// Encode is `auto` so that a missing encoder arrives as std::nullptr_t: g++ with UBSan does not
// accept comparing a function address with nullptr in a constant expression.
template <class Block, void (*Decode)(const Block*, float*, int64_t), auto Encode>
QuantFormat row(std::string_view name, int ggml_type, int block_elems) {
  const DType dtype = register_dtype(
      DTypeInfo{std::string(name), DTypeKind::block_quantized, static_cast<size_t>(block_elems), sizeof(Block)});
  void (*encode)(const float*, void*, int64_t) = nullptr;
  if constexpr (!std::is_null_pointer_v<decltype(Encode)>) encode = &encode_row<Block, Encode>;
  return QuantFormat{name, ggml_type, block_elems, static_cast<int>(sizeof(Block)), dtype, &decode_row<Block, Decode>,
                     encode};
}

const std::vector<QuantFormat>& table() {
  static const std::vector<QuantFormat> rows{
      row<BlockQ4_0, dequantize_row_q4_0, quantize_row_q4_0>("q4_0", 2, kBlock32),
      row<BlockQ4_1, dequantize_row_q4_1, quantize_row_q4_1>("q4_1", 3, kBlock32),
      row<BlockQ5_0, dequantize_row_q5_0, quantize_row_q5_0>("q5_0", 6, kBlock32),
      row<BlockQ5_1, dequantize_row_q5_1, quantize_row_q5_1>("q5_1", 7, kBlock32),
      row<BlockQ8_0, dequantize_row_q8_0, quantize_row_q8_0>("q8_0", 8, kBlock32),
      row<BlockQ8_1, dequantize_row_q8_1, quantize_row_q8_1>("q8_1", 9, kBlock32),
      row<BlockQ2_K, dequantize_row_q2_k, quantize_row_q2_k>("q2_k", 10, kSuperBlock),
      row<BlockQ3_K, dequantize_row_q3_k, quantize_row_q3_k>("q3_k", 11, kSuperBlock),
      row<BlockQ4_K, dequantize_row_q4_k, quantize_row_q4_k>("q4_k", 12, kSuperBlock),
      row<BlockQ5_K, dequantize_row_q5_k, quantize_row_q5_k>("q5_k", 13, kSuperBlock),
      row<BlockQ6_K, dequantize_row_q6_k, quantize_row_q6_k>("q6_k", 14, kSuperBlock),
      row<BlockQ8_K, dequantize_row_q8_k, quantize_row_q8_k>("q8_k", 15, kSuperBlock),
      row<BlockIQ4_NL, dequantize_row_iq4_nl, quantize_row_iq4_nl>("iq4_nl", 20, kBlock32),
      row<BlockIQ4_XS, dequantize_row_iq4_xs, quantize_row_iq4_xs>("iq4_xs", 23, kSuperBlock),
      row<BlockTQ1_0, dequantize_row_tq1_0, quantize_row_tq1_0>("tq1_0", 34, kSuperBlock),
      row<BlockTQ2_0, dequantize_row_tq2_0, quantize_row_tq2_0>("tq2_0", 35, kSuperBlock),
  };
  return rows;
}

}  // namespace

std::span<const QuantFormat> formats() { return table(); }

const QuantFormat* find_format(DType dtype) {
  for (const QuantFormat& f : table())
    if (f.dtype == dtype) return &f;
  return nullptr;
}

const QuantFormat* find_format(std::string_view name) {
  for (const QuantFormat& f : table())
    if (f.name == name) return &f;
  return nullptr;
}

const QuantFormat* find_format_by_ggml_type(int ggml_type) {
  for (const QuantFormat& f : table())
    if (f.ggml_type == ggml_type) return &f;
  return nullptr;
}

DType q4_0() { return find_format("q4_0")->dtype; }
DType q4_1() { return find_format("q4_1")->dtype; }
DType q5_0() { return find_format("q5_0")->dtype; }
DType q5_1() { return find_format("q5_1")->dtype; }
DType q8_0() { return find_format("q8_0")->dtype; }
DType q8_1() { return find_format("q8_1")->dtype; }

}  // namespace tempra::quant
