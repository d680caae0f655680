// tests/quant/ggml_parity_test.cpp: the block formats against ggml itself.
//
// The oracle is llama.cpp's libggml-base from npm (tools/oracle). For every format: our encoder's
// bytes equal ggml's quantize_row_<fmt>_ref on many rows (gaussian, wide dynamic range, zeros,
// constants, tiny and huge magnitudes, odd block counts), and our decoder's floats equal
// ggml's dequantize_row_<fmt> bit for bit on random block bytes. The f16 conversions the
// formats rest on are checked against ggml's too.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ggml-quants.h"
#include "tempra/core/half.h"
#include "tempra/quant/blocks.h"
#include "tempra/quant/formats.h"
#include "tempra/quant/reference.h"

namespace tempra::quant {
namespace {

using GgmlEncode = void (*)(const float*, void*, int64_t);
using GgmlDecode = void (*)(const void*, float*, int64_t);

struct OracleRow {
  const char* name;
  GgmlEncode encode;
  GgmlDecode decode;  // null: ggml has no decoder for this format (Q8_1 is activation-only)
};

// ggml's row functions, called through the table's untyped signatures by thunks (calling them
// through a cast pointer would be undefined: clang's -fsanitize=function). The names are
// qualified with :: because this file sits in tempra::quant, whose own dequantize_row_q4_0 and
// friends would otherwise hide ggml's and the test would compare tempra with itself.
template <class F>
struct BlockOf;
template <class Block>
struct BlockOf<void (*)(const Block*, float*, int64_t)> {
  using type = Block;
};
template <class Block>
struct BlockOf<void (*)(const float*, Block*, int64_t)> {
  using type = Block;
};
template <auto F>
void encode_thunk(const float* in, void* blocks, int64_t k) {
  F(in, static_cast<typename BlockOf<decltype(F)>::type*>(blocks), k);
}
template <auto F>
void decode_thunk(const void* blocks, float* out, int64_t k) {
  F(static_cast<const typename BlockOf<decltype(F)>::type*>(blocks), out, k);
}
template <auto F>
GgmlEncode encoder() {
  return &encode_thunk<F>;
}
template <auto F>
GgmlDecode decoder() {
  return &decode_thunk<F>;
}

const std::vector<OracleRow>& oracle() {
  static const std::vector<OracleRow> rows{
      {"q4_0", encoder<::quantize_row_q4_0_ref>(), decoder<::dequantize_row_q4_0>()},
      {"q4_1", encoder<::quantize_row_q4_1_ref>(), decoder<::dequantize_row_q4_1>()},
      {"q5_0", encoder<::quantize_row_q5_0_ref>(), decoder<::dequantize_row_q5_0>()},
      {"q5_1", encoder<::quantize_row_q5_1_ref>(), decoder<::dequantize_row_q5_1>()},
      {"q8_0", encoder<::quantize_row_q8_0_ref>(), decoder<::dequantize_row_q8_0>()},
      {"q8_1", encoder<::quantize_row_q8_1_ref>(), nullptr},
      {"q2_k", encoder<::quantize_row_q2_K_ref>(), decoder<::dequantize_row_q2_K>()},
      {"q3_k", encoder<::quantize_row_q3_K_ref>(), decoder<::dequantize_row_q3_K>()},
      {"q4_k", encoder<::quantize_row_q4_K_ref>(), decoder<::dequantize_row_q4_K>()},
      {"q5_k", encoder<::quantize_row_q5_K_ref>(), decoder<::dequantize_row_q5_K>()},
      {"q6_k", encoder<::quantize_row_q6_K_ref>(), decoder<::dequantize_row_q6_K>()},
      {"q8_k", encoder<::quantize_row_q8_K_ref>(), decoder<::dequantize_row_q8_K>()},
      {"iq4_nl", encoder<::quantize_row_iq4_nl_ref>(), decoder<::dequantize_row_iq4_nl>()},
      {"iq4_xs", encoder<::quantize_row_iq4_xs_ref>(), decoder<::dequantize_row_iq4_xs>()},
      {"tq1_0", encoder<::quantize_row_tq1_0_ref>(), decoder<::dequantize_row_tq1_0>()},
      {"tq2_0", encoder<::quantize_row_tq2_0_ref>(), decoder<::dequantize_row_tq2_0>()},
  };
  return rows;
}

// Rows that stress the encoders: each kind fills `n` floats from `rng`.
std::vector<std::vector<float>> test_rows(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> gauss;
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<std::vector<float>> rows;
  auto make = [&](auto value) {
    std::vector<float> r(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) r[static_cast<size_t>(i)] = value(i);
    rows.push_back(std::move(r));
  };
  make([&](int64_t) { return gauss(rng); });
  make([&](int64_t) { return unit(rng) * 1e-3f; });
  make([&](int64_t i) { return i % 5 == 0 ? 0.0f : gauss(rng); });                     // scattered zeros
  make([&](int64_t) { return 0.0f; });                                                 // all zeros
  make([&](int64_t) { return 3.25f; });                                                // constant
  make([&](int64_t) { return -7.0f; });
  make([&](int64_t) { return gauss(rng) * std::exp2(static_cast<float>(rng() % 40) - 20.0f); });  // wide range
  make([&](int64_t) { return gauss(rng) * 6e4f; });                                    // near f16's max
  make([&](int64_t) { return gauss(rng) * 1e30f; });                                   // scale overflows f16
  make([&](int64_t) { return gauss(rng) * 1e-7f; });                                   // scale subnormal in f16
  make([&](int64_t) { return gauss(rng) * 1e-40f; });                                  // f32 subnormals
  make([&](int64_t i) { return i % 32 == 7 ? 100.0f : unit(rng); });                   // one outlier per block
  make([&](int64_t i) { return i % 32 == 3 ? -100.0f : unit(rng); });
  make([&](int64_t i) { return static_cast<float>(i % 17) - 8.0f; });                  // exact grid values
  return rows;
}

// ggml's IQ4_NL encoder packs each block's codes from a stack array that it leaves unwritten for
// a block of magnitudes all below 1e-15 (scale 0): such a block repeats the previous block's
// codes, and before any block of the call has written the array, its codes are uninitialized
// memory. Those leading codes (which decode to zero whatever they are) are blanked on both sides;
// iq4_nl_zero_blocks_repeat_the_previous_blocks_codes checks the carried-over ones.
void blank_uninitialized_codes(std::string_view name, const std::vector<float>& row, std::vector<uint8_t>& ours,
                               std::vector<uint8_t>& theirs) {
  if (name != "iq4_nl") return;
  for (size_t b = 0; b * kBlock32 < row.size(); ++b) {
    float amax = 0;
    for (size_t j = 0; j < kBlock32; ++j) amax = std::max(amax, std::fabs(row[b * kBlock32 + j]));
    if (amax >= 1e-15f) return;
    const size_t qs = b * sizeof(BlockIQ4_NL) + offsetof(BlockIQ4_NL, qs);
    std::memset(ours.data() + qs, 0, sizeof(BlockIQ4_NL::qs));
    std::memset(theirs.data() + qs, 0, sizeof(BlockIQ4_NL::qs));
  }
}

TEST(GgmlParity, every_format_has_an_oracle_row) {
  EXPECT_EQ(formats().size(), oracle().size());
  for (const OracleRow& o : oracle()) EXPECT_NE(find_format(o.name), nullptr) << o.name;
}

// The formats still without an encoder, written down so that adding one without its parity
// check, or losing one, fails here.
TEST(GgmlParity, every_encoder_is_checked_or_listed) {
  std::vector<std::string> missing;
  for (const QuantFormat& f : formats())
    if (!f.quantize_row) missing.emplace_back(f.name);
  EXPECT_EQ(missing, (std::vector<std::string>{}));
}

TEST(GgmlParity, encoders_are_byte_identical_to_ggml_reference) {
  std::mt19937 rng(1234);
  for (const OracleRow& o : oracle()) {
    const QuantFormat& f = *find_format(o.name);
    if (!f.quantize_row) continue;  // encoder not written yet: see every_encoder_is_checked_or_listed
    // Distinct fill bytes catch a field either side leaves unwritten, except for Q8_K, whose
    // ggml encoder leaves bsums unwritten on all-zero blocks: both sides start from zeros there.
    const bool same_fill = std::string_view(o.name) == "q8_k";
    for (int64_t blocks : {1, 3, 8, 33}) {
      const int64_t n = blocks * f.block_elems;
      for (const auto& row : test_rows(n, rng)) {
        std::vector<uint8_t> ours(static_cast<size_t>(blocks * f.block_bytes), same_fill ? 0 : 0xAA);
        std::vector<uint8_t> theirs(ours.size(), same_fill ? 0 : 0x55);
        f.quantize_row(row.data(), ours.data(), n);
        o.encode(row.data(), theirs.data(), n);
        blank_uninitialized_codes(o.name, row, ours, theirs);
        ASSERT_EQ(ours, theirs) << o.name << ", " << blocks << " blocks, first value " << row[0];
      }
    }
  }
}

TEST(GgmlParity, decoders_are_bit_identical_to_ggml_on_random_blocks) {
  std::mt19937 rng(99);
  for (const OracleRow& o : oracle()) {
    if (!o.decode) continue;
    const QuantFormat& f = *find_format(o.name);
    for (int trial = 0; trial < 200; ++trial) {
      const int64_t blocks = 1 + trial % 9;
      std::vector<uint8_t> bytes(static_cast<size_t>(blocks * f.block_bytes));
      for (auto& b : bytes) b = static_cast<uint8_t>(rng());
      const size_t n = static_cast<size_t>(blocks * f.block_elems);
      std::vector<float> ours(n), theirs(n);
      f.dequantize_row(bytes.data(), ours.data(), static_cast<int64_t>(n));
      o.decode(bytes.data(), theirs.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        if (std::isnan(theirs[i])) {  // random scale bits can be NaN; the payload is not the contract
          EXPECT_TRUE(std::isnan(ours[i])) << o.name << "[" << i << "]";
          continue;
        }
        ASSERT_EQ(std::bit_cast<uint32_t>(ours[i]), std::bit_cast<uint32_t>(theirs[i]))
            << o.name << "[" << i << "]: " << ours[i] << " vs " << theirs[i];
      }
    }
  }
}

TEST(GgmlParity, q8_1_decodes_what_it_encodes_like_q8_0) {
  // ggml has no Q8_1 decoder to compare with; Q8_1 shares Q8_0's quants and scale.
  std::mt19937 rng(5);
  std::normal_distribution<float> gauss;
  std::vector<float> x(96);
  for (auto& v : x) v = gauss(rng);
  std::vector<BlockQ8_1> a(3);
  std::vector<BlockQ8_0> b(3);
  find_format("q8_1")->quantize_row(x.data(), a.data(), 96);
  find_format("q8_0")->quantize_row(x.data(), b.data(), 96);
  std::vector<float> ya(96), yb(96);
  find_format("q8_1")->dequantize_row(a.data(), ya.data(), 96);
  find_format("q8_0")->dequantize_row(b.data(), yb.data(), 96);
  EXPECT_EQ(ya, yb);
}

TEST(GgmlParity, iq4_nl_zero_blocks_repeat_the_previous_blocks_codes) {
  // Zero and sub-1e-15 blocks after a written one: ggml's codes are defined there, and ours match.
  std::mt19937 rng(17);
  std::normal_distribution<float> gauss;
  const QuantFormat& f = *find_format("iq4_nl");
  for (const char* pattern : {"x0", "x00x0", "xx0x000x", "x.x.0.", "0x0"}) {
    const int64_t blocks = static_cast<int64_t>(std::strlen(pattern));
    std::vector<float> row(static_cast<size_t>(blocks * kBlock32));
    for (size_t i = 0; i < row.size(); ++i) {
      const char kind = pattern[i / kBlock32];
      row[i] = kind == 'x' ? gauss(rng) : kind == '.' ? gauss(rng) * 1e-17f : 0.0f;
    }
    std::vector<uint8_t> ours(static_cast<size_t>(blocks) * sizeof(BlockIQ4_NL), 0xAA), theirs(ours.size(), 0x55);
    f.quantize_row(row.data(), ours.data(), blocks * kBlock32);
    quantize_row_iq4_nl_ref(row.data(), reinterpret_cast<block_iq4_nl*>(theirs.data()), blocks * kBlock32);
    blank_uninitialized_codes("iq4_nl", row, ours, theirs);  // only the leading zero block of "0x0"
    ASSERT_EQ(ours, theirs) << pattern;
  }
}

TEST(GgmlParity, quantize_iq4_nl_matches_ggml_quantize_iq4_nl_the_chunk_encoder) {
  // ggml_quantize_chunk (llama-quantize) encodes IQ4_NL with quantize_iq4_nl, which searches 15
  // more scales per block than quantize_row_iq4_nl_ref; `tempra quantize` needs that one.
  std::mt19937 rng(23);
  std::normal_distribution<float> gauss;
  for (const float scale : {1e-3f, 1.0f, 40.0f}) {
    std::vector<float> row(8 * kBlock32);
    for (float& x : row) x = scale * gauss(rng);
    row[5 + kBlock32] *= 12.0f;
    std::fill(row.begin(), row.begin() + kBlock32, 0.0f);  // zero and sub-1e-15 blocks: every code is
    for (int j = 3 * kBlock32; j < 4 * kBlock32; ++j) row[j] = 1e-17f * gauss(rng);  // defined here
    std::vector<uint8_t> ours(8 * sizeof(BlockIQ4_NL), 0xAA), theirs(ours.size(), 0x55);
    quantize_iq4_nl(row.data(), reinterpret_cast<BlockIQ4_NL*>(ours.data()), static_cast<int64_t>(row.size()));
    ::quantize_iq4_nl(row.data(), theirs.data(), 1, static_cast<int64_t>(row.size()), nullptr);
    ASSERT_EQ(ours, theirs) << "scale " << scale;
  }
}

TEST(GgmlParity, iq4_codes_break_ties_between_grid_values_as_ggml) {
  // -127 leads each block, so IQ4_NL's first scale is exactly 1 and every other value sits
  // halfway between two grid values; random rows almost never tie.
  const float midpoints[] = {-115.5f, -93.5f, -74, -57, -42, -28.5f, -16, -4.5f, 7, 19, 31.5f, 45.5f, 61, 79, 101};
  std::vector<float> row(kSuperBlock);
  for (size_t i = 0; i < row.size(); ++i) row[i] = i % kBlock32 == 0 ? -127.0f : midpoints[i % 15];
  for (const OracleRow& o : oracle()) {
    if (std::string_view(o.name).substr(0, 3) != "iq4") continue;
    const QuantFormat& f = *find_format(o.name);
    std::vector<uint8_t> ours(static_cast<size_t>(kSuperBlock / f.block_elems * f.block_bytes), 0xAA);
    std::vector<uint8_t> theirs(ours.size(), 0x55);
    f.quantize_row(row.data(), ours.data(), kSuperBlock);
    o.encode(row.data(), theirs.data(), kSuperBlock);
    ASSERT_EQ(ours, theirs) << o.name;
  }
}

TEST(GgmlParity, f16_to_f32_matches_ggml_for_all_65536_patterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float ours = f16_bits_to_f32(static_cast<uint16_t>(h));
    const float theirs = ggml_fp16_to_fp32(static_cast<ggml_fp16_t>(h));
    if (std::isnan(theirs)) {
      EXPECT_TRUE(std::isnan(ours)) << h;
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(ours), std::bit_cast<uint32_t>(theirs)) << "f16 bits " << h;
  }
}

TEST(GgmlParity, f32_to_f16_matches_ggml_on_sampled_patterns) {
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4093) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isnan(x)) continue;  // NaN payload handling is not part of the contract
    ASSERT_EQ(f32_to_f16_bits(x), ggml_fp32_to_fp16(x)) << "f32 bits " << bits << " (" << x << ")";
  }
}

}  // namespace
}  // namespace tempra::quant
