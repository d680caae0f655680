// tests/backend/native_bf16_gemm_test.cpp: Kernels::gemm_bf16_products, native against scalar.
//
// Both round each activation to bf16 with half.h's rounding, so every product is the same exact
// f32 value; they differ only in how the k products are summed. Tolerance (a rounding bound,
// not a fudge): each sum is within ~k eps sum_p |a_p w_p| of the exact one (scalar: in order;
// native: lane sums then a reduction, or one in-order chain per lane), so 2 k eps sum_p
// |a_p w_p| between them; plus, for the AVX-512 BF16 arm, which takes subnormal inputs and sums
// as zero, FLT_MIN for every input and every sum it may have flushed: FLT_MIN (sum_p (|a_p| +
// |w_p|) + 2 k). Shapes cover every size of the parity list on each axis (the panels' row tiles
// of 6 and column strips of 64 with their tails), odd depths and padded strides; 1 and 2 threads
// agree bitwise.
#include <bit>
#include <cfloat>

#include "backend/parity.h"
#include "tempra/backend/native/native.h"
#include "tempra/backend/native/simd.h"

namespace tempra {
namespace {

struct Product {
  std::vector<float> a;
  std::vector<bf16_t> w;
  int64_t lda, ldw;
};

Product make_product(int64_t m, int64_t n, int64_t k, uint64_t seed) {
  Product p{.a = {}, .w = {}, .lda = k + 3, .ldw = k + 5};  // padded rows: strides are honoured
  p.a = parity::random_floats(m * p.lda, seed, -3, 3);
  const auto w = parity::random_floats(n * p.ldw, seed + 1, -2, 2);
  for (float x : w) p.w.push_back(to_bf16(x));
  return p;
}

std::vector<double> bound_for(const Product& p, int64_t m, int64_t n, int64_t k) {
  std::vector<double> bound(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double products = 0, inputs = 0;
      for (int64_t q = 0; q < k; ++q) {
        const double a = to_f32(to_bf16(p.a[i * p.lda + q])), w = to_f32(p.w[j * p.ldw + q]);
        products += std::abs(a * w);
        inputs += std::abs(a) + std::abs(w);
      }
      bound[i * n + j] = 2.0 * k * FLT_EPSILON * products + FLT_MIN * (inputs + 2.0 * k);
    }
  return bound;
}

void check(int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
  const Product p = make_product(m, n, k, 31 * m + 7 * n + k);
  ThreadPool one(1), two(2);
  std::vector<float> want(m * n), got(m * n, NAN), got2(m * n, NAN);
  scalar_kernels().gemm_bf16_products(m, n, k, p.a.data(), p.lda, p.w.data(), p.ldw, want.data(), n, one);
  const Kernels& native = kernels_for(Backend::native);
  native.gemm_bf16_products(m, n, k, p.a.data(), p.lda, p.w.data(), p.ldw, got.data(), n, one);
  native.gemm_bf16_products(m, n, k, p.a.data(), p.lda, p.w.data(), p.ldw, got2.data(), n, two);
  EXPECT_TRUE(parity::within(got, want, bound_for(p, m, n, k)));
  EXPECT_TRUE(parity::bitwise_equal(got2, got)) << "1 vs 2 threads";
}

TEST(NativeBf16Gemm, EverySizeOnEachAxisBothPaths) {
  for (int64_t s : parity::sizes()) {
    check(s <= 64 ? s : 33, 37, s);  // depth: every size, through both paths
    check(3, s, 65);                 // columns, a partial row tile
    check(40, s, 129);               // columns (strips of 64 and their tails)
    check(s, 19, 100);               // rows
  }
  check(1, 1000, 1000);   // a decode step
  check(100, 130, 1000);  // a prompt
  check(35, 5, 4097);     // a long depth
}

TEST(NativeBf16Gemm, EmptyDepthGivesZeros) {
  ThreadPool pool(1);
  for (int64_t m : {1, 40}) {
    std::vector<float> c(m * 3, NAN);
    const float a = 0;
    const bf16_t w{};
    kernels_for(Backend::native).gemm_bf16_products(m, 3, 0, &a, 0, &w, 0, c.data(), 3, pool);
    for (float x : c) EXPECT_EQ(x, 0.0f);
  }
}

// With one product against a weight of 1 and nothing to sum, c is the rounded activation
// itself: half.h's rounding, ties to even, infinities and NaN included, on both paths.
TEST(NativeBf16Gemm, RoundsActivationsAsHalfH) {
  std::vector<float> a = {1.0f, -2.5f, 3.14159f, 65504.0f, 1e30f, -1e-30f, INFINITY, -INFINITY, NAN, 3.4e38f};
  for (uint32_t mantissa : {0x8000u, 0x18000u, 0x7fffu, 0x8001u, 0x17fffu})  // ties either way, just off them
    a.push_back(std::bit_cast<float>(0x3f800000u | mantissa));
  for (int64_t m : {int64_t(a.size()), int64_t(40)}) {
    std::vector<float> rows(m);
    for (int64_t i = 0; i < m; ++i) rows[i] = a[i % a.size()];
    const bf16_t one = to_bf16(1.0f);
    std::vector<float> got(m, 0.0f), want(m);
    ThreadPool pool(1);
    kernels_for(Backend::native).gemm_bf16_products(m, 1, 1, rows.data(), 1, &one, 1, got.data(), 1, pool);
    for (int64_t i = 0; i < m; ++i) want[i] = to_f32(to_bf16(rows[i]));
    EXPECT_TRUE(parity::bitwise_equal(got, want)) << "m=" << m;
  }
}

// Activations and weights near and below FLT_MIN: the bound's subnormal term holds.
TEST(NativeBf16Gemm, SubnormalInputsStayWithinTheBound) {
  const int64_t m = 40, n = 17, k = 64;
  Product p = make_product(m, n, k, 5);
  for (size_t i = 0; i < p.a.size(); i += 3) p.a[i] *= 1e-38f;
  for (size_t i = 0; i < p.w.size(); i += 5) p.w[i] = to_bf16(to_f32(p.w[i]) * 1e-38f);
  for (int64_t rows : {int64_t(1), m}) {
    ThreadPool pool(2);
    std::vector<float> want(rows * n), got(rows * n, NAN);
    scalar_kernels().gemm_bf16_products(rows, n, k, p.a.data(), p.lda, p.w.data(), p.ldw, want.data(), n, pool);
    kernels_for(Backend::native).gemm_bf16_products(rows, n, k, p.a.data(), p.lda, p.w.data(), p.ldw, got.data(), n,
                                                   pool);
    EXPECT_TRUE(parity::within(got, want, bound_for(p, rows, n, k))) << "rows=" << rows;
  }
}

// The arm that runs is the one this CPU and build allow: the vdpbf16ps kernel wherever the CPU
// has AVX512_BF16 and the build has the AVX-512 arms, so its tests above cannot silently test the
// fallback instead.
TEST(NativeBf16Gemm, RunsTheBf16DotWhereTheCpuHasIt) {
#if TEMPRA_NATIVE_BACKEND && defined(__x86_64__) && TEMPRA_QUANT_AVX512
  __builtin_cpu_init();
  const bool has_bf16 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  EXPECT_STREQ(native::bf16_products_arm(), has_bf16 ? "avx512bf16" : "widened");
#elif TEMPRA_NATIVE_BACKEND && defined(TEMPRA_SIMD_ARM)
  EXPECT_STREQ(native::bf16_products_arm(), "widened");
#else
  GTEST_SKIP() << "no native kernels in this build";
#endif
}

}  // namespace
}  // namespace tempra
