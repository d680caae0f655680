// tests/ops/matmul_quantized_test.cpp: the quantized matmul op.
//
// The per-format dot products are held bit-exactly to ggml in tests/backend; here the op must
// quantize activations to the right partner, pair every weight row with every activation row,
// and reject bad shapes and dense weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string_view>

#include "support/errors.h"
#include "tempra/backend/quant_dot.h"
#include "tempra/ops/ops.h"
#include "tempra/quant/formats.h"

namespace tempra {
namespace {

// The quantized matmul against the float matmul of its decoded operands: the same products in
// another order, so equal within float rounding, except that the offset formats (Q4_1, Q5_1)
// fold their block minimum m in through Q8_1's s = d * sum(q), which ggml stores as f16: that
// term carries an extra error up to |m| * |s| * 2^-11 per block, added to the bound below.
TEST(MatmulQuantized, matches_float_matmul_of_the_decoded_operands) {
  ExecContext ctx(ExecOptions{.threads = 2});
  const Array x = normal(ctx, {3, 512});
  const Array w = normal(ctx, {7, 512});
  for (const char* name : {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl",
                           "iq4_xs", "tq1_0", "tq2_0"}) {
    const quant::QuantFormat& f = *quant::find_format(name);
    const Array wq = quantize(ctx, w, f.dtype);
    const Array y = matmul_quantized(ctx, x, wq);
    ASSERT_EQ(y.shape(), (Dims{3, 7}));
    const DType partner = find_quant_dot(f.dtype)->activation;
    const Array reference =
        matmul(ctx, dequantize(ctx, quantize(ctx, x, partner)), dequantize(ctx, wq).transpose(0, 1));
    const auto got = to_vector<float>(ctx, y), want = to_vector<float>(ctx, reference);
    const auto xd = to_vector<float>(ctx, dequantize(ctx, quantize(ctx, x, partner)));
    const bool offset = std::string_view(name) == "q4_1" || std::string_view(name) == "q5_1";
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 7; ++c) {
        double min_term = 0;
        for (int64_t b = 0; offset && b < 512 / 32; ++b) {
          uint16_t m_bits;  // Q4_1 and Q5_1 blocks start with f16 d, then f16 m
          std::memcpy(&m_bits, static_cast<const uint8_t*>(wq.raw_data()) + (c * 16 + b) * f.block_bytes + 2, 2);
          double block_sum = 0;
          for (int j = 0; j < 32; ++j) block_sum += xd[static_cast<size_t>(r * 512 + b * 32 + j)];
          min_term += std::abs(f16_bits_to_f32(m_bits) * block_sum) * std::ldexp(1.0, -11);
        }
        const size_t i = static_cast<size_t>(r * 7 + c);
        EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i])) + min_term) << name << " [" << r << ", " << c << "]";
      }
  }
}

TEST(MatmulQuantized, rejects_mismatched_k_and_dense_weights) {
  ExecContext ctx;
  const Array wq = quantize(ctx, normal(ctx, {4, 64}), quant::q8_0());
  const std::string k = testing::error_message([&] { matmul_quantized(ctx, normal(ctx, {2, 32}), wq); });
  EXPECT_NE(k.find("[matmul_quantized] activations [2, 32] do not match weights [4, 64] (q8_0)"), std::string::npos) << k;
  const std::string dense = testing::error_message([&] { matmul_quantized(ctx, normal(ctx, {2, 64}), normal(ctx, {4, 64})); });
  EXPECT_NE(dense.find("no quantized dot product for weights of dtype f32"), std::string::npos) << dense;
}

}  // namespace
}  // namespace tempra
