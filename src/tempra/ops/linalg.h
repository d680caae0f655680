// tempra/ops/linalg.h: matrix products.
//
// matmul follows torch.matmul: a [..., m, k] . b [..., k, n] -> [..., m, n] with the batch axes
// broadcast; a rank-1 operand is a row (left) or column (right) vector whose axis is dropped
// from the result. Operands may be any views: the GEMM kernel reads rows and columns by stride.
//
// einsum is the single contraction lowering the named-axis layer uses. Labels are characters:
// einsum(ctx, "bik,bkj->bij", a, b). A label in both operands and the output is a batch axis,
// in both operands but not the output is contracted, in one operand must appear in the output.
// It lowers to one batched matmul (a GEMM per batch item): each operand is viewed as
// [batch, free, contracted] (a strided view when its axes allow, else a copy), multiplied, and
// the result permuted to the output order.
//
// linear is a layer's product with its weights as they are stored in model files: y = x . w^T
// with w [n, k] (one output per row, ggml's and torch.nn.Linear's layout) in f32, f64, f16,
// bf16 or any block-quantized format. Half weights are widened in registers, never copied to
// f32; quantized ones go through matmul_quantized (tempra/ops/quantize.h). x [..., k] may be
// any floating dtype and layout; the result is [..., n] in f32 (f64 when x and w are f64).
//
// Gradients (linalg.cpp): each op records its VJP when an operand requires a gradient. Block-
// quantized and half weights of linear are frozen in practice (only f32/f64 arrays can be
// parameters): x still gets its gradient, linear_input_grad, which reads such weights as stored
// (decoded panel by panel inside the GEMM, no f32 copy of them).
#pragma once

#include <string_view>

#include "tempra/core/array.h"

namespace tempra {

Array matmul(ExecContext& ctx, const Array& a, const Array& b);
Array linear(ExecContext& ctx, const Array& x, const Array& w);
// The gradient linear(x, w) sends its input: g [..., n] . w [n, k] -> [..., k], for w of any type
// linear takes, in g's compute type (f32 for half g). Records no gradient itself: what linear's
// VJP computes, public for blocks that replay a saved product (train/qwen3_train.cpp).
Array linear_input_grad(ExecContext& ctx, const Array& g, const Array& w);
Array bmm(ExecContext& ctx, const Array& a, const Array& b);  // [B, m, k] . [B, k, n]
Array einsum(ExecContext& ctx, std::string_view equation, const Array& a, const Array& b);
Array einsum(ExecContext& ctx, const Array& a, std::string_view a_labels, const Array& b, std::string_view b_labels,
             std::string_view out_labels);

}  // namespace tempra
