// tempra/ops/elementwise.h: unary and binary elementwise ops.
//
// Contract: inputs are floating (f32, f64, f16, bf16); the output has the input's dtype and is
// contiguous; f16/bf16 compute in f32 and round once. Binary ops broadcast by numpy rules
// (trailing axes aligned, extent 1 stretches) and need equal dtypes; the scalar forms apply
// `x op s` with s converted to the compute type. Any input layout (views, zero strides) works.
#pragma once

#include "tempra/backend/kernel_args.h"
#include "tempra/core/array.h"

namespace tempra {

Array unary(ExecContext& ctx, UnaryOp op, const Array& x);
Array binary(ExecContext& ctx, BinaryOp op, const Array& a, const Array& b);
Array binary(ExecContext& ctx, BinaryOp op, const Array& a, double scalar);

inline Array neg(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::neg, x); }
inline Array abs(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::abs, x); }
inline Array exp(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::exp, x); }
inline Array log(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::log, x); }
inline Array sqrt(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::sqrt, x); }
inline Array rsqrt(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::rsqrt, x); }
inline Array square(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::square, x); }
inline Array tanh(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::tanh, x); }
inline Array sigmoid(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::sigmoid, x); }
inline Array relu(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::relu, x); }
inline Array gelu_tanh(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::gelu_tanh, x); }
inline Array gelu_erf(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::gelu_erf, x); }
inline Array silu(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::silu, x); }
inline Array softplus(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::softplus, x); }
inline Array sin(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::sin, x); }
inline Array cos(ExecContext& ctx, const Array& x) { return unary(ctx, UnaryOp::cos, x); }

inline Array add(ExecContext& ctx, const Array& a, const Array& b) { return binary(ctx, BinaryOp::add, a, b); }
inline Array sub(ExecContext& ctx, const Array& a, const Array& b) { return binary(ctx, BinaryOp::sub, a, b); }
inline Array mul(ExecContext& ctx, const Array& a, const Array& b) { return binary(ctx, BinaryOp::mul, a, b); }
inline Array div(ExecContext& ctx, const Array& a, const Array& b) { return binary(ctx, BinaryOp::div, a, b); }
inline Array pow(ExecContext& ctx, const Array& a, const Array& b) { return binary(ctx, BinaryOp::pow, a, b); }
inline Array maximum(ExecContext& ctx, const Array& a, const Array& b) {
  return binary(ctx, BinaryOp::maximum, a, b);
}
inline Array minimum(ExecContext& ctx, const Array& a, const Array& b) {
  return binary(ctx, BinaryOp::minimum, a, b);
}
inline Array add(ExecContext& ctx, const Array& a, double s) { return binary(ctx, BinaryOp::add, a, s); }
inline Array sub(ExecContext& ctx, const Array& a, double s) { return binary(ctx, BinaryOp::sub, a, s); }
inline Array mul(ExecContext& ctx, const Array& a, double s) { return binary(ctx, BinaryOp::mul, a, s); }
inline Array div(ExecContext& ctx, const Array& a, double s) { return binary(ctx, BinaryOp::div, a, s); }
inline Array pow(ExecContext& ctx, const Array& a, double s) { return binary(ctx, BinaryOp::pow, a, s); }
inline Array maximum(ExecContext& ctx, const Array& a, double s) { return binary(ctx, BinaryOp::maximum, a, s); }
inline Array minimum(ExecContext& ctx, const Array& a, double s) { return binary(ctx, BinaryOp::minimum, a, s); }

// cond ? a : b, elementwise; cond is bool; all three broadcast together; a and b share a dtype.
Array where(ExecContext& ctx, const Array& cond, const Array& a, const Array& b);

const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);

}  // namespace tempra
