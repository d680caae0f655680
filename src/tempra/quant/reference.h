// tempra/quant/reference.h: reference encoders and decoders of the block formats.
//
// Contract: quantize_row_<fmt>(x, y, k) encodes k floats (a multiple of the block size) into
// k / 32 blocks (k / 256 super-blocks for the K-quants), byte-identical to ggml's quantize_row_<fmt>_ref (tests/quant checks this against
// the ggml library itself); dequantize_row_<fmt>(y, x, k) decodes bit-exactly as ggml's
// dequantize_row_<fmt>. Unchecked: callers validate k and the buffers. These are the scalar
// specification; fast encoders, if any, are held to them.
#pragma once

#include <cstdint>

#include "tempra/quant/blocks.h"

namespace tempra::quant {

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t k);
void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t k);
void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t k);
void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t k);
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t k);
void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t k);

void dequantize_row_q4_0(const BlockQ4_0* y, float* x, int64_t k);
void dequantize_row_q4_1(const BlockQ4_1* y, float* x, int64_t k);
void dequantize_row_q5_0(const BlockQ5_0* y, float* x, int64_t k);
void dequantize_row_q5_1(const BlockQ5_1* y, float* x, int64_t k);
void dequantize_row_q8_0(const BlockQ8_0* y, float* x, int64_t k);
void dequantize_row_q8_1(const BlockQ8_1* y, float* x, int64_t k);

// K-quants (k a multiple of 256).
void quantize_row_q2_k(const float* x, BlockQ2_K* y, int64_t k);
void quantize_row_q3_k(const float* x, BlockQ3_K* y, int64_t k);
void quantize_row_q4_k(const float* x, BlockQ4_K* y, int64_t k);
void quantize_row_q5_k(const float* x, BlockQ5_K* y, int64_t k);
void quantize_row_q6_k(const float* x, BlockQ6_K* y, int64_t k);
void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t k);

void dequantize_row_q2_k(const BlockQ2_K* y, float* x, int64_t k);
void dequantize_row_q3_k(const BlockQ3_K* y, float* x, int64_t k);
void dequantize_row_q4_k(const BlockQ4_K* y, float* x, int64_t k);
void dequantize_row_q5_k(const BlockQ5_K* y, float* x, int64_t k);
void dequantize_row_q6_k(const BlockQ6_K* y, float* x, int64_t k);
void dequantize_row_q8_k(const BlockQ8_K* y, float* x, int64_t k);

// Ternary formats (k a multiple of 256).
void quantize_row_tq1_0(const float* x, BlockTQ1_0* y, int64_t k);
void quantize_row_tq2_0(const float* x, BlockTQ2_0* y, int64_t k);
void dequantize_row_tq1_0(const BlockTQ1_0* y, float* x, int64_t k);
void dequantize_row_tq2_0(const BlockTQ2_0* y, float* x, int64_t k);

// Non-linear 4-bit formats (IQ4_NL: k a multiple of 32; IQ4_XS: of 256). The encoders are
// ggml's importance-free ones, quantize_row_iq4_nl_ref and quantize_row_iq4_xs_ref.
void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t k);
// ggml's quantize_iq4_nl without importance weights, which ggml_quantize_chunk (and so
// llama-quantize) uses: unlike quantize_row_iq4_nl_ref it searches 15 more scales per block.
void quantize_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t k);
void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t k);
void dequantize_row_iq4_nl(const BlockIQ4_NL* y, float* x, int64_t k);
void dequantize_row_iq4_xs(const BlockIQ4_XS* y, float* x, int64_t k);

}  // namespace tempra::quant
