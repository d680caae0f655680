// tests/backend/quant_dot_test.cpp: the scalar quantized dots against ggml's generic kernels.
//
// ggml's CPU backend (libggml-cpu-x64.so from the oracle) exports ggml_vec_dot_<w>_<a>_generic,
// the scalar kernels its SIMD arms are written against. Ours must return the same float, bit
// for bit, on random weight rows encoded by the reference encoders and activation rows in the
// partner format, for several row lengths.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tempra/backend/quant_dot.h"
#include "tempra/quant/blocks.h"
#include "tempra/quant/formats.h"

extern "C" {
// From ggml-cpu/quants.h (an internal header of the CPU backend); the signature of every vec_dot.
using ggml_vec_dot_t = void (*)(int n, float* s, size_t bs, const void* vx, size_t bx, const void* vy, size_t by,
                                int nrc);
void ggml_vec_dot_q4_0_q8_0_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q4_1_q8_1_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q5_0_q8_0_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q5_1_q8_1_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q8_0_q8_0_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q2_K_q8_K_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q3_K_q8_K_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q4_K_q8_K_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q5_K_q8_K_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_q6_K_q8_K_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_iq4_nl_q8_0_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_iq4_xs_q8_K_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_tq1_0_q8_K_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_vec_dot_tq2_0_q8_K_generic(int, float*, size_t, const void*, size_t, const void*, size_t, int);
void ggml_cpu_init(void);  // fills the f16 -> f32 table the generic kernels read
}

namespace tempra {
namespace {

struct OracleDot {
  const char* weight;
  ggml_vec_dot_t generic;
};

const OracleDot kOracle[] = {
    {"q4_0", ggml_vec_dot_q4_0_q8_0_generic}, {"q4_1", ggml_vec_dot_q4_1_q8_1_generic},
    {"q5_0", ggml_vec_dot_q5_0_q8_0_generic}, {"q5_1", ggml_vec_dot_q5_1_q8_1_generic},
    {"q8_0", ggml_vec_dot_q8_0_q8_0_generic}, {"q2_k", ggml_vec_dot_q2_K_q8_K_generic},
    {"q3_k", ggml_vec_dot_q3_K_q8_K_generic}, {"q4_k", ggml_vec_dot_q4_K_q8_K_generic},
    {"q5_k", ggml_vec_dot_q5_K_q8_K_generic}, {"q6_k", ggml_vec_dot_q6_K_q8_K_generic},
    {"iq4_nl", ggml_vec_dot_iq4_nl_q8_0_generic}, {"iq4_xs", ggml_vec_dot_iq4_xs_q8_K_generic},
    {"tq1_0", ggml_vec_dot_tq1_0_q8_K_generic}, {"tq2_0", ggml_vec_dot_tq2_0_q8_K_generic},
};

std::vector<uint8_t> encode(const quant::QuantFormat& f, const std::vector<float>& x) {
  std::vector<uint8_t> out(x.size() / static_cast<size_t>(f.block_elems) * static_cast<size_t>(f.block_bytes));
  f.quantize_row(x.data(), out.data(), static_cast<int64_t>(x.size()));
  return out;
}

TEST(QuantDot, scalar_dots_are_bit_identical_to_ggml_generic_kernels) {
  ggml_cpu_init();
  std::mt19937 rng(2024);
  std::normal_distribution<float> gauss;
  for (const OracleDot& o : kOracle) {
    const quant::QuantFormat& wf = *quant::find_format(o.weight);
    const QuantDot* dot = find_quant_dot(wf.dtype);
    ASSERT_NE(dot, nullptr) << o.weight;
    const quant::QuantFormat& af = *quant::find_format(dot->activation);
    for (int64_t blocks : {1, 2, 5, 16}) {
      const int64_t n = blocks * std::max(wf.block_elems, af.block_elems);
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<float> w(static_cast<size_t>(n)), a(static_cast<size_t>(n));
        const float spread = std::exp2(static_cast<float>(trial % 7) - 3.0f);
        for (auto& v : w) v = gauss(rng) * spread;
        for (auto& v : a) v = gauss(rng) * (trial % 2 ? 10.0f : 0.1f);
        if (trial == 3) std::fill(a.begin(), a.begin() + n / 2, 0.0f);  // zero activation blocks
        const auto wq = encode(wf, w), aq = encode(af, a);
        const float ours = dot->dot(n, wq.data(), aq.data());
        float theirs = 0;
        o.generic(static_cast<int>(n), &theirs, 0, wq.data(), 0, aq.data(), 0, 1);
        ASSERT_EQ(std::bit_cast<uint32_t>(ours), std::bit_cast<uint32_t>(theirs))
            << o.weight << " n=" << n << " trial " << trial << ": " << ours << " vs " << theirs;
      }
    }
  }
}

TEST(QuantDot, dot_approximates_the_float_dot_of_the_decoded_rows) {
  std::mt19937 rng(7);
  std::normal_distribution<float> gauss;
  for (const OracleDot& o : kOracle) {
    const quant::QuantFormat& wf = *quant::find_format(o.weight);
    const QuantDot* dot = find_quant_dot(wf.dtype);
    const quant::QuantFormat& af = *quant::find_format(dot->activation);
    const int64_t n = 1024;
    std::vector<float> w(n), a(n);
    for (auto& v : w) v = gauss(rng);
    for (auto& v : a) v = gauss(rng);
    const auto wq = encode(wf, w), aq = encode(af, a);
    std::vector<float> wd(n), ad(n);
    wf.dequantize_row(wq.data(), wd.data(), n);
    af.dequantize_row(aq.data(), ad.data(), n);
    double reference = 0, magnitude = 0;
    for (int64_t i = 0; i < n; ++i) {
      reference += static_cast<double>(wd[i]) * ad[i];
      magnitude += std::abs(static_cast<double>(wd[i]) * ad[i]);
    }
    // The same products in another order, plus f16 rounding of Q8_1's d * sum(q) term.
    EXPECT_NEAR(dot->dot(n, wq.data(), aq.data()), reference, 1e-4 * magnitude) << o.weight;
  }
}

// The native arms must return exactly the scalar arm's float (same integer sums, same float
// order), on rows with every code value and on odd block counts.
TEST(QuantDot, native_arms_are_bit_identical_to_scalar) {
  std::mt19937 rng(11);
  std::normal_distribution<float> gauss;
  int compared = 0;
  for (const quant::QuantFormat& wf : quant::formats()) {
    const QuantDot* native = find_quant_dot(wf.dtype, Backend::native);
    const QuantDot* scalar = find_quant_dot(wf.dtype, Backend::scalar);
    if (!native || native == scalar) continue;
    ++compared;
    const quant::QuantFormat& af = *quant::find_format(native->activation);
    for (int64_t blocks : {1, 3, 7, 64}) {
      const int64_t n = blocks * wf.block_elems;
      for (int trial = 0; trial < 50; ++trial) {
        std::vector<float> w(static_cast<size_t>(n)), a(static_cast<size_t>(n));
        for (auto& v : w) v = gauss(rng) * (trial % 3 ? 1.0f : 1e3f);
        for (auto& v : a) v = gauss(rng);
        if (trial == 1) std::fill(w.begin(), w.end(), 0.0f);
        const auto wq = encode(wf, w), aq = encode(af, a);
        ASSERT_EQ(std::bit_cast<uint32_t>(native->dot(n, wq.data(), aq.data())),
                  std::bit_cast<uint32_t>(scalar->dot(n, wq.data(), aq.data())))
            << wf.name << " n=" << n << " trial " << trial;
      }
    }
  }
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512vnni")) {
    EXPECT_EQ(compared, 8) << "Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, TQ2_0, IQ4_NL and IQ4_XS have native x86 arms";
  }
#endif
}

// Random block bytes reach codes, scales and activations the encoders never write (Q8 value
// -128, Q6_K scale -128, every 6-bit Q4_K/Q5_K scale and min): the native arms must still
// return the scalar arm's float. Only the f16 scales are set, to finite values.
template <class Block>
void set_finite_scales(std::vector<uint8_t>& row, std::mt19937& rng) {
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  auto* blocks = reinterpret_cast<Block*>(row.data());
  for (size_t b = 0; b < row.size() / sizeof(Block); ++b) {
    blocks[b].d = f16_t{f32_to_f16_bits(scale(rng))};
    if constexpr (requires { blocks[b].dmin; }) blocks[b].dmin = f16_t{f32_to_f16_bits(scale(rng))};
  }
}

TEST(QuantDot, native_arms_match_scalar_on_arbitrary_block_bytes) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.01f, 1.0f);
  for (const char* name : {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "tq2_0", "iq4_nl", "iq4_xs"}) {
    const quant::QuantFormat& wf = *quant::find_format(name);
    const QuantDot* native = find_quant_dot(wf.dtype, Backend::native);
    const QuantDot* scalar = find_quant_dot(wf.dtype, Backend::scalar);
    if (native == scalar) continue;  // no native arm in this build or on this CPU
    for (int64_t blocks : {1, 4}) {
      const int64_t n = blocks * wf.block_elems;
      for (int trial = 0; trial < 200; ++trial) {
        std::vector<uint8_t> w(static_cast<size_t>(n / wf.block_elems * wf.block_bytes));
        for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
        std::vector<uint8_t> a(native->activation.bytes_for(n));
        if (wf.block_elems == quant::kSuperBlock) {
          if (wf.name == "q6_k") set_finite_scales<quant::BlockQ6_K>(w, rng);
          if (wf.name == "q5_k") set_finite_scales<quant::BlockQ5_K>(w, rng);
          if (wf.name == "q4_k") set_finite_scales<quant::BlockQ4_K>(w, rng);
          if (wf.name == "tq2_0") set_finite_scales<quant::BlockTQ2_0>(w, rng);
          if (wf.name == "iq4_xs") set_finite_scales<quant::BlockIQ4_XS>(w, rng);
          auto* y = reinterpret_cast<quant::BlockQ8_K*>(a.data());
          for (int64_t b = 0; b < n / quant::kSuperBlock; ++b) {
            y[b].d = scale(rng);
            for (int j = 0; j < 16; ++j) {
              int sum = 0;
              for (int e = 16 * j; e < 16 * j + 16; ++e) sum += y[b].qs[e] = static_cast<int8_t>(byte(rng) - 128);
              y[b].bsums[j] = static_cast<int16_t>(sum);
            }
          }
        } else {
          if (wf.name == "q8_0") set_finite_scales<quant::BlockQ8_0>(w, rng);
          if (wf.name == "q4_0") set_finite_scales<quant::BlockQ4_0>(w, rng);
          if (wf.name == "iq4_nl") set_finite_scales<quant::BlockIQ4_NL>(w, rng);
          for (auto& v : a) v = static_cast<uint8_t>(byte(rng));
          set_finite_scales<quant::BlockQ8_0>(a, rng);
        }
        ASSERT_EQ(std::bit_cast<uint32_t>(native->dot(n, w.data(), a.data())),
                  std::bit_cast<uint32_t>(scalar->dot(n, w.data(), a.data())))
            << name << " n=" << n << " trial " << trial;
      }
    }
  }
}

}  // namespace
}  // namespace tempra
