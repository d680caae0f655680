// tests/ops/quantize_test.cpp: the quantize/dequantize ops over whole arrays.
//
// The row encoders themselves are held to ggml in tests/quant; here the ops must apply them row
// by row over any input layout, keep the logical shape, reject bad shapes and dtypes, and round
// trip within the format's resolution.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "support/errors.h"
#include "tempra/ops/ops.h"
#include "tempra/quant/formats.h"

namespace tempra {
namespace {

TEST(Quantize, rows_are_encoded_exactly_as_the_reference_row_encoder) {
  ExecContext ctx(ExecOptions{.threads = 2});
  const Array x = normal(ctx, {5, 768});  // three 256-element super-blocks, 24 32-element blocks
  for (const quant::QuantFormat& f : quant::formats()) {
    if (!f.quantize_row) continue;
    const Array q = quantize(ctx, x, f.dtype);
    EXPECT_EQ(q.shape(), x.shape());
    EXPECT_EQ(q.dtype(), f.dtype);
    const int64_t row_bytes = 768 / f.block_elems * f.block_bytes;
    std::vector<uint8_t> expected(static_cast<size_t>(5 * row_bytes));
    for (int64_t r = 0; r < 5; ++r) f.quantize_row(x.data<float>() + r * 768, expected.data() + r * row_bytes, 768);
    ASSERT_EQ(std::memcmp(q.raw_data(), expected.data(), expected.size()), 0) << f.name;
    // Decoding goes row by row through the format's decoder too.
    const auto decoded = to_vector<float>(ctx, dequantize(ctx, q));
    std::vector<float> direct(768);
    f.dequantize_row(expected.data() + 4 * row_bytes, direct.data(), 768);
    ASSERT_TRUE(std::equal(direct.begin(), direct.end(), decoded.begin() + 4 * 768)) << f.name;
  }
}

TEST(Quantize, non_contiguous_and_half_inputs_quantize_like_their_f32_copy) {
  ExecContext ctx;
  const Array base = normal(ctx, {64, 6});
  const Array view = base.transpose(0, 1);  // [6, 64], strided
  const Array a = quantize(ctx, view, quant::q4_0()), b = quantize(ctx, contiguous(ctx, view), quant::q4_0());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0);
  const Array half = cast(ctx, view, DType::bf16);
  const Array c = quantize(ctx, half, quant::q8_0()), d = quantize(ctx, cast(ctx, half, DType::f32), quant::q8_0());
  EXPECT_EQ(std::memcmp(c.raw_data(), d.raw_data(), c.nbytes()), 0);
}

// Per block, with amax the largest magnitude and [lo, hi] the range:
//   q8_0: step amax / 127, nearest level: error <= step / 2.
//   q4_1, q5_1: step (hi - lo) / 15 or / 31, nearest level: error <= step / 2.
//   q4_0, q5_0: step amax / 8 or / 16, and the codes reach only 7 / 8 (15 / 16) of amax on the
//   side opposite the extreme, so that side can be off by one whole step.
// Plus the f16 rounding of the scale (and minimum), relative 2^-11 of the value.
TEST(Quantize, round_trip_error_is_within_the_format_resolution) {
  ExecContext ctx;
  const Array x = normal(ctx, {4, 256});
  const auto original = to_vector<float>(ctx, x);
  struct Case {
    const char* name;
    bool offset;     // q*_1: affine codes over [lo, hi]
    float divisor;   // step = span / divisor
    float allowance; // error bound in steps
  };
  for (const Case& c : {Case{"q8_0", false, 127, 0.5f}, Case{"q4_1", true, 15, 0.5f}, Case{"q5_1", true, 31, 0.5f},
                        Case{"q4_0", false, 8, 1.0f}, Case{"q5_0", false, 16, 1.0f}}) {
    const quant::QuantFormat& f = *quant::find_format(c.name);
    const auto back = to_vector<float>(ctx, dequantize(ctx, quantize(ctx, x, f.dtype)));
    for (size_t b = 0; b < original.size() / 32; ++b) {
      float lo = original[b * 32], hi = lo, amax = 0;
      for (size_t j = 0; j < 32; ++j) {
        lo = std::min(lo, original[b * 32 + j]);
        hi = std::max(hi, original[b * 32 + j]);
        amax = std::max(amax, std::abs(original[b * 32 + j]));
      }
      const float step = (c.offset ? hi - lo : amax) / c.divisor;
      for (size_t j = 0; j < 32; ++j) {
        const float want = original[b * 32 + j];
        ASSERT_LE(std::abs(back[b * 32 + j] - want), c.allowance * step * (1 + 1e-3f) + 1e-3f * (std::abs(want) + std::abs(lo)))
            << c.name << " block " << b << " element " << j;
      }
    }
  }
}

// Relative RMS error of a gaussian round trip, per format: fewer bits, larger error, each
// within the published ballpark of its bits per weight (each bound is 1.5 to 2 times what we
// measured, 2026-11-30: 0.30, 0.15, 0.072, 0.036, 0.018, 0.0069).
TEST(Quantize, k_quant_round_trip_error_shrinks_with_bits) {
  ExecContext ctx;
  const Array x = normal(ctx, {16, 1024});
  const auto original = to_vector<float>(ctx, x);
  double previous = 1.0;
  for (auto [name, bound] : {std::pair{"q2_k", 0.60}, std::pair{"q3_k", 0.30}, std::pair{"q4_k", 0.15},
                             std::pair{"q5_k", 0.075}, std::pair{"q6_k", 0.04}, std::pair{"q8_k", 0.01}}) {
    const auto back = to_vector<float>(ctx, dequantize(ctx, quantize(ctx, x, quant::find_format(name)->dtype)));
    double err = 0, norm = 0;
    for (size_t i = 0; i < original.size(); ++i) {
      err += (back[i] - original[i]) * (back[i] - original[i]);
      norm += original[i] * original[i];
    }
    const double relative = std::sqrt(err / norm);
    std::printf("%s relative rms error %.4f\n", name, relative);
    EXPECT_LT(relative, bound) << name;
    EXPECT_LT(relative, previous) << name << " should beat the format with fewer bits";
    previous = relative;
  }
}

TEST(Quantize, ternary_rows_round_trip_exactly) {
  // Values in {-a, 0, a} with a a power of two: the scale is a, every trit exact.
  ExecContext ctx;
  std::vector<float> values(512);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(static_cast<int>(i * 7 % 3) - 1) * 0.5f;
  const Array x = Array::from_values<float>(ctx, {2, 256}, std::span<const float>(values));
  for (const char* name : {"tq1_0", "tq2_0"}) {
    const auto back = to_vector<float>(ctx, dequantize(ctx, quantize(ctx, x, quant::find_format(name)->dtype)));
    EXPECT_EQ(back, values) << name;
  }
}

TEST(Quantize, rejects_partial_blocks_and_plain_dtypes) {
  ExecContext ctx;
  const Array x = normal(ctx, {2, 40});
  const std::string partial = testing::error_message([&] { quantize(ctx, x, quant::q8_0()); });
  EXPECT_NE(partial.find("[quantize] the last axis of shape [2, 40] must be a multiple of q8_0's block of 32"),
            std::string::npos)
      << partial;
  const std::string plain = testing::error_message([&] { quantize(ctx, normal(ctx, {32}), DType::f16); });
  EXPECT_NE(plain.find("f16 is not a block-quantized format"), std::string::npos) << plain;
  const std::string dense = testing::error_message([&] { dequantize(ctx, x); });
  EXPECT_NE(dense.find("[dequantize] dtype f32 is not a block-quantized format"), std::string::npos) << dense;
}

// Token embeddings stored quantized: looking rows up decodes just those rows, bit for bit what
// dequantizing the whole table and selecting would give.
TEST(Quantize, embedding_of_a_quantized_table_decodes_the_selected_rows) {
  ExecContext ctx(ExecOptions{.threads = 2});
  const Array table = normal(ctx, {50, 256});
  const Array ids = Array::from_values<int32_t>(ctx, {2, 3}, {7, 0, 49, 7, 13, 2});
  for (const char* name : {"q8_0", "q4_k", "q6_k"}) {
    const Array q = quantize(ctx, table, quant::find_format(name)->dtype);
    const Array got = embedding(ctx, q, ids);
    ASSERT_EQ(got.shape(), (Dims{2, 3, 256})) << name;
    ASSERT_EQ(got.dtype(), DType::f32) << name;
    EXPECT_EQ(to_vector<float>(ctx, got), to_vector<float>(ctx, embedding(ctx, dequantize(ctx, q), ids))) << name;
  }
  const Array q = quantize(ctx, table, quant::q8_0());
  const std::string bad = testing::error_message(
      [&] { embedding(ctx, q, Array::from_values<int32_t>(ctx, {1}, {50})); });
  EXPECT_NE(bad.find("embedding"), std::string::npos) << bad;
  EXPECT_NE(bad.find("50"), std::string::npos) << bad;
}

TEST(Quantize, block_dtypes_are_registered_with_ggml_geometry) {
  EXPECT_EQ(quant::q8_0().name(), "q8_0");
  EXPECT_TRUE(quant::q8_0().is_block_quantized());
  EXPECT_EQ(quant::q8_0().bytes_for(64), 68u);
}

}  // namespace
}  // namespace tempra
