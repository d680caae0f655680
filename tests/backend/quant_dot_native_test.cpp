// tests/backend/quant_dot_native_test.cpp: every native arm of the quantized dots against the
// scalar arm, bit for bit, with no oracle (so it also runs in cross builds, under qemu).
//
// Each arm this build has and this CPU runs (native::quant_dot_arms(): on x86-64 both AVX-512
// VNNI and AVX2 where the CPU has them, not just the one find_quant_dot picks; NEON on aarch64)
// must return exactly the scalar arm's float, on (a) rows encoded by the reference encoders from
// random floats and (b) arbitrary block bytes with extreme values (int8 -128 and 127, every
// code, 6-bit scales and mins at 63, Q6_K scales -128, arbitrary Q8_K block sums), at odd block
// counts. Only the f16 / f32 scale fields are kept finite: with NaN or infinity the floats could
// not be compared bitwise meaningfully.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tempra/backend/quant_dot.h"
#include "tempra/core/thread_pool.h"
#include "tempra/quant/blocks.h"
#include "tempra/quant/formats.h"

namespace tempra {
namespace {

// The formats every native arm covers.
const std::vector<std::string> kHotFormats = {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "tq2_0", "iq4_nl", "iq4_xs"};
const int64_t kBlockCounts[] = {1, 2, 3, 7, 16};

std::vector<uint8_t> encode(const quant::QuantFormat& f, const std::vector<float>& x) {
  std::vector<uint8_t> out(x.size() / static_cast<size_t>(f.block_elems) * static_cast<size_t>(f.block_bytes));
  f.quantize_row(x.data(), out.data(), static_cast<int64_t>(x.size()));
  return out;
}

std::string arm_names() {
  std::string names;
  for (const native::QuantDotArm& arm : native::quant_dot_arms()) names += std::string(names.empty() ? "" : ", ") + arm.name;
  return names.empty() ? "none" : names;
}

bool has_arm(const char* name) {
  for (const native::QuantDotArm& arm : native::quant_dot_arms())
    if (std::string(arm.name) == name) return true;
  return false;
}

TEST(QuantDotNative, expected_arms_are_present) {
#if TEMPRA_NATIVE_BACKEND && defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_TRUE(has_arm("avx2")) << "arms: " << arm_names();
  }
#if TEMPRA_QUANT_AVX512  // builds for AVX2 machines (the avx2 preset) leave the VNNI arm out
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512vnni")) {
    EXPECT_TRUE(has_arm("avx512vnni")) << "arms: " << arm_names();
    EXPECT_STREQ(native::quant_dot_arms().front().name, "avx512vnni") << "VNNI comes first";
  }
#else
  EXPECT_FALSE(has_arm("avx512vnni")) << "arms: " << arm_names();
#endif
#elif TEMPRA_NATIVE_BACKEND && defined(__aarch64__)
  EXPECT_TRUE(has_arm("neon")) << "arms: " << arm_names();
#endif
  std::cout << "quantized-dot arms: " << arm_names() << "\n";
}

TEST(QuantDotNative, each_arm_covers_the_hot_formats_and_find_quant_dot_prefers_the_first) {
  for (const native::QuantDotArm& arm : native::quant_dot_arms()) {
    std::set<std::string> covered;
    for (const QuantDot& d : arm.dots) {
      const quant::QuantFormat* wf = quant::find_format(d.weight);
      ASSERT_NE(wf, nullptr) << arm.name;
      covered.insert(std::string(wf->name));
      const QuantDot* scalar = find_quant_dot(d.weight, Backend::scalar);
      ASSERT_NE(scalar, nullptr) << arm.name << " " << wf->name;
      EXPECT_EQ(d.activation, scalar->activation) << arm.name << " " << wf->name;
      EXPECT_NE(d.dot, scalar->dot) << arm.name << " " << wf->name;
    }
    EXPECT_EQ(covered, std::set<std::string>(kHotFormats.begin(), kHotFormats.end())) << arm.name;
  }
  if (native::quant_dot_arms().empty()) return;
  for (const QuantDot& d : native::quant_dot_arms().front().dots)
    EXPECT_EQ(find_quant_dot(d.weight, Backend::native), &d) << quant::find_format(d.weight)->name;
}

::testing::AssertionResult same_float(const QuantDot& native, const QuantDot& scalar, int64_t n,
                                      const std::vector<uint8_t>& w, const std::vector<uint8_t>& a) {
  const float got = native.dot(n, w.data(), a.data());
  const float want = scalar.dot(n, w.data(), a.data());
  if (std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << got << " vs scalar " << want;
}

// (a) Encoded rows: gaussian weights at several spreads (all-zero rows too), activations in the
// partner format.
TEST(QuantDotNative, arms_are_bit_identical_to_scalar_on_encoded_rows) {
  std::mt19937 rng(17);
  std::normal_distribution<float> gauss;
  int compared = 0;
  for (const native::QuantDotArm& arm : native::quant_dot_arms()) {
    for (const QuantDot& d : arm.dots) {
      const quant::QuantFormat& wf = *quant::find_format(d.weight);
      const quant::QuantFormat& af = *quant::find_format(d.activation);
      const QuantDot& scalar = *find_quant_dot(d.weight, Backend::scalar);
      for (int64_t blocks : kBlockCounts) {
        const int64_t n = blocks * std::max(wf.block_elems, af.block_elems);
        for (int trial = 0; trial < 20; ++trial) {
          std::vector<float> w(static_cast<size_t>(n)), a(static_cast<size_t>(n));
          const float spread = std::exp2(static_cast<float>(trial % 7) * 3.0f - 9.0f);
          for (auto& v : w) v = gauss(rng) * spread;
          for (auto& v : a) v = gauss(rng) * (trial % 2 ? 10.0f : 0.1f);
          if (trial == 1) std::fill(w.begin(), w.end(), 0.0f);
          if (trial == 2) std::fill(a.begin(), a.begin() + n / 2, 0.0f);
          ASSERT_TRUE(same_float(d, scalar, n, encode(wf, w), encode(af, a)))
              << arm.name << " " << wf.name << " n=" << n << " trial " << trial;
          ++compared;
        }
      }
    }
  }
  if (!native::quant_dot_arms().empty()) {
    EXPECT_GT(compared, 0);
  }
}

// (b) Arbitrary block bytes.

// A finite f16 scale: mostly moderate, sometimes zero, subnormal or the largest finite value.
uint16_t finite_f16(std::mt19937& rng) {
  static const uint16_t kSpecial[] = {0x0000, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0xFBFF, 0x3C00, 0x0400};
  std::uniform_int_distribution<int> pick(0, 9);
  const int p = pick(rng);
  if (p < static_cast<int>(std::size(kSpecial)) && std::uniform_int_distribution<int>(0, 3)(rng) == 0) return kSpecial[p];
  return f32_to_f16_bits(std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng));
}

template <class Block>
void set_finite_scales(std::vector<uint8_t>& row, std::mt19937& rng) {
  auto* blocks = reinterpret_cast<Block*>(row.data());
  for (size_t b = 0; b < row.size() / sizeof(Block); ++b) {
    blocks[b].d = f16_t{finite_f16(rng)};
    if constexpr (requires { blocks[b].dmin; }) blocks[b].dmin = f16_t{finite_f16(rng)};
  }
}

void set_weight_scales(const quant::QuantFormat& wf, std::vector<uint8_t>& w, std::mt19937& rng) {
  if (wf.name == "q8_0") set_finite_scales<quant::BlockQ8_0>(w, rng);
  else if (wf.name == "q4_0") set_finite_scales<quant::BlockQ4_0>(w, rng);
  else if (wf.name == "q4_k") set_finite_scales<quant::BlockQ4_K>(w, rng);
  else if (wf.name == "q5_k") set_finite_scales<quant::BlockQ5_K>(w, rng);
  else if (wf.name == "q6_k") set_finite_scales<quant::BlockQ6_K>(w, rng);
  else if (wf.name == "tq2_0") set_finite_scales<quant::BlockTQ2_0>(w, rng);
  else if (wf.name == "iq4_nl") set_finite_scales<quant::BlockIQ4_NL>(w, rng);
  else if (wf.name == "iq4_xs") set_finite_scales<quant::BlockIQ4_XS>(w, rng);
  else FAIL() << "no scale fields known for " << wf.name;
}

// Bytes of one trial: 0 uniform, 1 all 0xFF (top codes, 6-bit scales and mins 63, Q6_K scale
// -1), 2 all 0x80 (int8 -128, Q6_K scale -128), 3 all zero, 4 drawn from the extremes.
uint8_t trial_byte(int mode, std::mt19937& rng) {
  static const uint8_t kExtremes[] = {0x00, 0x7F, 0x80, 0xFF};
  switch (mode) {
    case 1: return 0xFF;
    case 2: return 0x80;
    case 3: return 0x00;
    case 4: return kExtremes[std::uniform_int_distribution<int>(0, 3)(rng)];
    default: return static_cast<uint8_t>(std::uniform_int_distribution<int>(0, 255)(rng));
  }
}

// Activation blocks of any bytes in `mode` (trial_byte), -128 included: Q8_0 rows with finite
// scales; Q8_K rows with finite scales (some of them extreme) and the encoder's block sums, or
// (every seventh trial) any int16 at all.
void set_arbitrary_activations(const QuantDot& d, std::vector<uint8_t>& a, int trial, int mode, std::mt19937& rng) {
  if (d.activation == quant::find_format("q8_k")->dtype) {
    auto* y = reinterpret_cast<quant::BlockQ8_K*>(a.data());
    for (size_t b = 0; b < a.size() / sizeof(quant::BlockQ8_K); ++b) {
      static const float kD[] = {1.0f, -0.5f, 3e-5f, 1e4f};
      y[b].d = trial % 3 ? std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng) : kD[(trial / 3) % 4];
      for (auto& q : y[b].qs) q = static_cast<int8_t>(trial_byte(mode, rng));
      for (int j = 0; j < 16; ++j) {
        int sum = 0;
        for (int e = 16 * j; e < 16 * j + 16; ++e) sum += y[b].qs[e];
        y[b].bsums[j] = static_cast<int16_t>(
            trial % 7 == 6 ? static_cast<int16_t>(static_cast<uint16_t>(trial_byte(0, rng) << 8 | trial_byte(mode, rng)))
                           : sum);
      }
    }
  } else {
    for (auto& v : a) v = trial_byte(mode, rng);
    set_finite_scales<quant::BlockQ8_0>(a, rng);
  }
}

TEST(QuantDotNative, arms_are_bit_identical_to_scalar_on_arbitrary_block_bytes) {
  std::mt19937 rng(29);
  int compared = 0;
  for (const native::QuantDotArm& arm : native::quant_dot_arms()) {
    for (const QuantDot& d : arm.dots) {
      const quant::QuantFormat& wf = *quant::find_format(d.weight);
      const QuantDot& scalar = *find_quant_dot(d.weight, Backend::scalar);
      for (int64_t blocks : kBlockCounts) {
        const int64_t n = blocks * wf.block_elems;
        for (int trial = 0; trial < 60; ++trial) {
          // Weight and activation bytes in independent modes, so -128 meets -128 and 127.
          const int w_mode = trial % 5, a_mode = (trial / 5) % 5;
          std::vector<uint8_t> w(static_cast<size_t>(n / wf.block_elems * wf.block_bytes));
          for (auto& v : w) v = trial_byte(w_mode, rng);
          set_weight_scales(wf, w, rng);
          std::vector<uint8_t> a(d.activation.bytes_for(n));
          set_arbitrary_activations(d, a, trial, a_mode, rng);
          ASSERT_TRUE(same_float(d, scalar, n, w, a))
              << arm.name << " " << wf.name << " n=" << n << " trial " << trial << " modes " << w_mode << "/" << a_mode;
          ++compared;
        }
      }
    }
  }
  if (!native::quant_dot_arms().empty()) {
    EXPECT_GT(compared, 0);
  }
}

// Each arm's quant_dot_gemm (its integer GEMM from kQuantGemmMinRows rows, its GEMV below, the
// blocked dot loop where it has neither) gives every element exactly the scalar dot's float:
// encoded rows at two spreads and arbitrary bytes, row counts that leave every partial
// micro-tile of 3, 4 and 6 rows, column counts that leave partial groups, GEMVs wide enough to
// split across threads, GEMVs whose rows are whole chunks of sixteen blocks up to 256 blocks, up
// to 16 TQ2_0 or 32 K-quant super-blocks (read row after row) and others (read side by side: 33
// blocks or super-blocks, 272), no depth at all, 1 and 2 threads, an output row stride wider than n (nothing written
// past n).
TEST(QuantDotNative, quant_dot_gemm_is_the_scalar_dot_per_element) {
  std::mt19937 rng(31);
  std::normal_distribution<float> gauss;
  ThreadPool one(1), two(2);
  std::map<std::string, int> gemms, gemvs;  // per arm
  unsigned j_mode = 0;
  for (const native::QuantDotArm& arm : native::quant_dot_arms()) {
    for (const QuantDot& d : arm.dots) {
      gemms[arm.name] += d.gemm != nullptr;
      gemvs[arm.name] += d.gemv != nullptr;
      const quant::QuantFormat& wf = *quant::find_format(d.weight);
      const quant::QuantFormat& af = *quant::find_format(d.activation);
      const QuantDot& scalar = *find_quant_dot(d.weight, Backend::scalar);
      const int64_t unit = std::max(wf.block_elems, af.block_elems);
      for (const auto& [m, n, blocks] : std::vector<std::array<int64_t, 3>>{
               {1, 5, 1},  {2, 19, 2}, {3, 40, 3}, {4, 16, 2}, {5, 17, 3},   {6, 17, 2},  {7, 33, 1},  {8, 33, 2},
               {9, 40, 3}, {13, 70, 2}, {40, 36, 5}, {1, 140, 2}, {3, 136, 1}, {2, 9, 0}, {5, 9, 0},
               {1, 37, 16}, {2, 20, 32}, {1, 9, 33}, {1, 3, 256}, {1, 3, 272}}) {
        const int64_t k = blocks * unit;
        for (int trial = 0; trial < 3; ++trial) {
          std::vector<float> w32(static_cast<size_t>(n * k), 0.0f), a32(static_cast<size_t>(m * k), 0.0f);
          for (auto& v : w32) v = gauss(rng) * (trial == 1 ? 1e3f : 1.0f);
          for (auto& v : a32) v = gauss(rng);
          std::vector<uint8_t> w = encode(wf, w32), a = encode(af, a32);
          if (trial == 2) {  // arbitrary weight bytes: every code, scale and min
            for (auto& v : w) v = trial_byte(int(j_mode++ % 5), rng);
            set_weight_scales(wf, w, rng);
            set_arbitrary_activations(d, a, int(j_mode), 4, rng);  // and activations with -128
          }
          const int64_t ldc = n + 3;
          for (ThreadPool* pool : {&one, &two}) {
            std::vector<float> c(static_cast<size_t>(m * ldc), -7.0f);
            quant_dot_gemm(d, m, n, k, a.data(), w.data(), c.data(), ldc, *pool);
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < n; ++j) {
                const float got = c[static_cast<size_t>(i * ldc + j)];
                const float want = scalar.dot(k, w.data() + j * wf.dtype.bytes_for(k), a.data() + i * af.dtype.bytes_for(k));
                ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
                    << arm.name << " " << wf.name << " m=" << m << " n=" << n << " k=" << k << " trial " << trial
                    << " threads " << pool->size() << " at (" << i << ", " << j << "): " << got << " vs " << want;
              }
              for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[static_cast<size_t>(i * ldc + j)], -7.0f) << "wrote past n";
            }
          }
        }
      }
    }
  }
  for (const char* x86_arm : {"avx512vnni", "avx2"}) {
    if (!has_arm(x86_arm)) continue;
    EXPECT_EQ(gemms[x86_arm], 8) << x86_arm << ": Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, TQ2_0, IQ4_NL and IQ4_XS have integer GEMMs";
    EXPECT_EQ(gemvs[x86_arm], 8) << x86_arm << ": Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, TQ2_0, IQ4_NL and IQ4_XS have decode GEMVs";
  }
}

// Each arm's partner encoder writes the reference encoder's bytes: gaussian rows at several
// scales, rows of halves (x * id lands on .5 exactly, where Q8_0 rounds away from zero and Q8_K
// to even), half-zero rows, and blocks whose extreme appears with both signs (the first sets
// Q8_K's sign).
TEST(QuantDotNative, partner_encoders_write_the_reference_bytes) {
  std::mt19937 rng(37);
  std::normal_distribution<float> gauss;
  std::uniform_int_distribution<int> halves(-254, 254);
  int compared = 0;
  for (const native::QuantDotArm& arm : native::quant_dot_arms()) {
    for (const QuantDot& d : arm.dots) {
      if (d.quantize == nullptr) continue;
      ++compared;
      const quant::QuantFormat& af = *quant::find_format(d.activation);
      const int64_t k = 4 * quant::kSuperBlock;
      for (int trial = 0; trial < 40; ++trial) {
        std::vector<float> x(static_cast<size_t>(k), 0.0f);
        for (auto& v : x) v = gauss(rng) * std::exp2(static_cast<float>(trial % 9) - 4.0f);
        if (trial % 4 == 1)
          for (auto& v : x) v = static_cast<float>(halves(rng)) * 0.5f;  // amax 127: id 1, x * id on halves
        if (trial % 4 == 2) std::fill(x.begin(), x.begin() + k / 2, 0.0f);
        if (trial % 4 == 3) {
          x[5] = -100.0f;
          x[9] = 100.0f;  // the same magnitude, the negative first
          x[quant::kSuperBlock + 3] = 50.0f;
          x[quant::kSuperBlock + 7] = -50.0f;
        }
        std::vector<uint8_t> want(af.dtype.bytes_for(k)), got(want.size(), 0xAB);
        af.quantize_row(x.data(), want.data(), k);
        d.quantize(x.data(), got.data(), k);
        ASSERT_EQ(got, want) << arm.name << " " << af.name << ", trial " << trial;
      }
    }
  }
  if (has_arm("avx2")) {
    EXPECT_GE(compared, 6) << "the x86 arms encode Q8_0 and Q8_K for every format";
  }
}

}  // namespace
}  // namespace tempra
