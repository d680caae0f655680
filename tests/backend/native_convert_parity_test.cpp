// tests/backend/native_convert_parity_test.cpp: native f16/bf16 <-> f32 conversions against
// scalar (tempra/core/half.h), bit for bit, NaN payloads included.
//
// Widening: all 65536 patterns of each format. Narrowing: every f32 whose top 16 bits and
// lowest bits vary (so ties, near-ties, subnormals, overflow, infinities and NaNs with payloads
// all occur), plus a million random patterns; each at an odd length so the vector tails run.
#include <bit>
#include <cstring>

#include "backend/parity.h"

namespace tempra {
namespace {

template <class A, class B>
::testing::AssertionResult same_bits(const std::vector<A>& got, const std::vector<B>& want) {
  static_assert(sizeof(A) == sizeof(B));
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(A)) != 0) return ::testing::AssertionFailure() << "element " << i;
  return ::testing::AssertionSuccess();
}

template <class Half>
void check_widening(Conversion<Half, float> (Kernels::*entry)) {
  std::vector<Half> in(65536 + 7);
  for (size_t i = 0; i < in.size(); ++i) in[i] = Half{static_cast<uint16_t>(i)};
  std::vector<float> want(in.size()), got(in.size()), got2(in.size());
  ThreadPool one(1), two(2);
  (scalar_kernels().*entry)(in.data(), want.data(), int64_t(in.size()), one);
  (kernels_for(Backend::native).*entry)(in.data(), got.data(), int64_t(in.size()), one);
  (kernels_for(Backend::native).*entry)(in.data(), got2.data(), int64_t(in.size()), two);
  EXPECT_TRUE(same_bits(got, want));
  EXPECT_TRUE(same_bits(got2, want));
}

template <class Half>
void check_narrowing(Conversion<float, Half> (Kernels::*entry)) {
  std::vector<float> in;
  for (uint32_t top = 0; top < 65536; ++top)
    for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x1000u, 0x0fffu})
      in.push_back(std::bit_cast<float>(top << 16 | low));
  std::mt19937 rng(5);
  for (int i = 0; i < 1000000; ++i) in.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  in.resize(in.size() | 1);
  std::vector<Half> want(in.size()), got(in.size()), got2(in.size());
  ThreadPool one(1), two(2);
  (scalar_kernels().*entry)(in.data(), want.data(), int64_t(in.size()), one);
  (kernels_for(Backend::native).*entry)(in.data(), got.data(), int64_t(in.size()), one);
  (kernels_for(Backend::native).*entry)(in.data(), got2.data(), int64_t(in.size()), two);
  EXPECT_TRUE(same_bits(got, want));
  EXPECT_TRUE(same_bits(got2, want));
}

TEST(NativeConvertParity, F16ToF32EveryPattern) { check_widening<f16_t>(&Kernels::f16_to_f32); }
TEST(NativeConvertParity, Bf16ToF32EveryPattern) { check_widening<bf16_t>(&Kernels::bf16_to_f32); }
TEST(NativeConvertParity, F32ToF16EdgesAndRandom) { check_narrowing<f16_t>(&Kernels::f32_to_f16); }
TEST(NativeConvertParity, F32ToBf16EdgesAndRandom) { check_narrowing<bf16_t>(&Kernels::f32_to_bf16); }

}  // namespace
}  // namespace tempra
