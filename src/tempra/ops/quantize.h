// tempra/ops/quantize.h: converting between f32 arrays and block-quantized arrays.
//
// A block-quantized Array has the logical shape of its values; its last axis must be a whole
// number of blocks, and it is stored contiguous, blocks in row-major order. quantize encodes
// each row with the format's reference encoder (byte-identical to ggml); dequantize decodes to
// f32. Both run rows in parallel: each row is encoded independently, so the bytes are the same
// for any thread count.
#pragma once

#include "tempra/core/array.h"

namespace tempra {

// x: floating, any layout; format: a block-quantized dtype (tempra::quant::q8_0(), ...).
Array quantize(ExecContext& ctx, const Array& x, DType format);
// q: a block-quantized array; returns contiguous f32 of the same shape.
Array dequantize(ExecContext& ctx, const Array& q);

// y = x . w^T with w quantized, the way ggml multiplies: x [..., k] (floating) is quantized row
// by row to w's partner format, then y[..., j] = dot(w[j], x_row) with the format's integer dot
// product. w is [n, k] (ggml's weight layout, one output per row). Returns f32 [..., n].
Array matmul_quantized(ExecContext& ctx, const Array& x, const Array& w);

}  // namespace tempra
