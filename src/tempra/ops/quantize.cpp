// tempra/ops/quantize.cpp
#include "tempra/ops/quantize.h"

#include <string>

#include "tempra/backend/quant_dot.h"
#include "tempra/ops/creation.h"
#include "tempra/ops/dispatch.h"
#include "tempra/quant/formats.h"

namespace tempra {
namespace {

const quant::QuantFormat& require_format(DType dtype, const char* op) {
  const quant::QuantFormat* f = quant::find_format(dtype);
  check(f != nullptr, op, "dtype ", dtype.name(), " is not a block-quantized format");
  return *f;
}

void require_whole_blocks(const Dims& shape, const quant::QuantFormat& f, const char* op) {
  check(shape.size() >= 1 && shape.back() % f.block_elems == 0, op, "the last axis of shape ", shape,
        " must be a multiple of ", f.name, "'s block of ", f.block_elems);
}

}  // namespace

Array quantize(ExecContext& ctx, const Array& x, DType format) {
  detail::require_float(x, "quantize");
  const quant::QuantFormat& f = require_format(format, "quantize");
  // The native arm's SIMD encoder where it has one (the reference's bytes): per element
  // std::round was a tenth of a LoRA step on a Q8_0 base, whose activations come through here.
  const RowEncoder encode = row_encoder(format, ctx.backend());
  check(encode != nullptr, "quantize", "encoding to ", f.name, " is not implemented yet (decoding is)");
  require_whole_blocks(x.shape(), f, "quantize");
  const Array in = contiguous(ctx, cast(ctx, x, DType::f32));
  Array out = Array::empty(ctx, x.shape(), format);
  const int64_t k = x.shape().back(), rows = k ? x.numel() / k : 0;
  const int64_t row_bytes = k / f.block_elems * f.block_bytes;
  const float* src = in.data<float>();
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  ctx.threads().parallel_for(rows, 1 + 16384 / (k + 1), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) encode(src + r * k, dst + r * row_bytes, k);
  });
  return out;
}

Array dequantize(ExecContext& ctx, const Array& q) {
  check(q.defined(), "dequantize", "input is an empty array");
  const quant::QuantFormat& f = require_format(q.dtype(), "dequantize");
  require_whole_blocks(q.shape(), f, "dequantize");
  Array out = Array::empty(ctx, q.shape(), DType::f32);
  const int64_t k = q.shape().back(), rows = k ? q.numel() / k : 0;
  const int64_t row_bytes = k / f.block_elems * f.block_bytes;
  const auto* src = static_cast<const uint8_t*>(q.raw_data());
  float* dst = out.data<float>();
  ctx.threads().parallel_for(rows, 1 + 16384 / (k + 1), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) f.dequantize_row(src + r * row_bytes, dst + r * k, k);
  });
  return out;
}

Array matmul_quantized(ExecContext& ctx, const Array& x, const Array& w) {
  detail::require_float(x, "matmul_quantized", "activations");
  check(w.defined() && w.rank() == 2, "matmul_quantized", "weights must be [n, k], got ",
        w.defined() ? to_string(w.shape()) : std::string("an empty array"));
  const QuantDot* dot = find_quant_dot(w.dtype(), ctx.backend());
  check(dot != nullptr, "matmul_quantized", "no quantized dot product for weights of dtype ", w.dtype().name());
  check(x.rank() >= 1 && x.dim(-1) == w.dim(1), "matmul_quantized", "activations ", x.shape(),
        " do not match weights ", w.shape(), " (", w.dtype().name(), ") on k");
  const int64_t k = w.dim(1), n = w.dim(0), rows = k ? x.numel() / k : 0;
  const Array xq = quantize(ctx, x, dot->activation);  // checks k against the partner's block
  Dims out_shape = x.shape();
  out_shape[out_shape.size() - 1] = n;
  Array out = Array::empty(ctx, out_shape, DType::f32);
  // Each output element is one dot product, the same bits however the rows are split.
  if (rows > 0) quant_dot_gemm(*dot, rows, n, k, xq.raw_data(), w.raw_data(), out.data<float>(), n, ctx.threads());
  return out;
}

}  // namespace tempra
