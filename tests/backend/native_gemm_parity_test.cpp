// tests/backend/native_gemm_parity_test.cpp: native f32 GEMM against the scalar kernel.
//
// Tolerance (a rounding bound, not a fudge): both kernels compute sum_p a_ip b_pj in f32 with
// different association (the native one fuses multiply-adds and sums k-slices and SIMD lanes
// separately), so each differs from the exact sum by at most ~k eps sum_p |a_ip b_pj|; we allow
// 2 k eps sum_p |a_ip b_pj| between them. Shapes cover every size of the parity list on each
// axis, all four operand layouts (row-major, transposed, strided) and both the packed and the
// skinny paths; 1 and 2 threads must agree bitwise (with OpenBLAS GEMMs: both within the
// tolerance, backend/gemm_provider.h).
#include <cfloat>

#include "backend/gemm_provider.h"
#include "backend/parity.h"
#include "tempra/backend/native/native.h"

namespace tempra {
namespace {

using parity::sizes;

enum class Layout { row_major, transposed, strided };

struct Operand {
  std::vector<float> data;
  int64_t row, col;  // element (i, j) at data[i * row + j * col]
};

Operand make_operand(int64_t rows, int64_t cols, Layout layout, uint64_t seed) {
  Operand op;
  switch (layout) {
    case Layout::row_major: op.row = cols, op.col = 1; break;
    case Layout::transposed: op.row = 1, op.col = rows; break;
    case Layout::strided: op.row = 2 * cols + 1, op.col = 2; break;  // every other column of a wider array
  }
  op.data = parity::random_floats(static_cast<size_t>((rows - 1) * op.row + (cols - 1) * op.col + 1), seed);
  return op;
}

void check_gemm(int64_t m, int64_t n, int64_t k, Layout la, Layout lb) {
  SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
               " layouts=" + std::to_string(int(la)) + "," + std::to_string(int(lb)));
  const Operand a = make_operand(m, k, la, 1000 * m + k), b = make_operand(k, n, lb, 7 * n + k);
  ThreadPool one(1), two(2);
  std::vector<float> want(m * n), got(m * n, NAN), got2(m * n, NAN);
  parity::scalar_f32().gemm(m, n, k, a.data.data(), a.row, a.col, b.data.data(), b.row, b.col, want.data(), n, one);
  parity::native_f32().gemm(m, n, k, a.data.data(), a.row, a.col, b.data.data(), b.row, b.col, got.data(), n, one);
  parity::native_f32().gemm(m, n, k, a.data.data(), a.row, a.col, b.data.data(), b.row, b.col, got2.data(), n, two);
  std::vector<double> bound(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double magnitude = 0;
      for (int64_t p = 0; p < k; ++p)
        magnitude += std::abs(double(a.data[i * a.row + p * a.col]) * b.data[p * b.row + j * b.col]);
      bound[i * n + j] = 2.0 * k * FLT_EPSILON * magnitude + 1e-30;
    }
  EXPECT_TRUE(parity::within(got, want, bound));
  EXPECT_TRUE(parity::same_for_two_threads(got2, got, want, bound));
}

TEST(NativeGemmParity, EverySizeOnEachAxis) {
  for (int64_t s : sizes()) {
    check_gemm(s, 33, 65, Layout::row_major, Layout::row_major);
    check_gemm(17, s, 64, Layout::row_major, Layout::row_major);
    check_gemm(40, 31, s, Layout::row_major, Layout::row_major);
  }
}

TEST(NativeGemmParity, CubesUpTo129) {
  for (int64_t s : sizes())
    if (s <= 129) check_gemm(s, s, s, Layout::row_major, Layout::row_major);
}

TEST(NativeGemmParity, EveryLayoutOnBothPaths) {
  const Layout layouts[] = {Layout::row_major, Layout::transposed, Layout::strided};
  for (Layout la : layouts)
    for (Layout lb : layouts)
      for (int64_t m : {1, 5, 32, 33, 100}) check_gemm(m, 77, 129, la, lb);
}

TEST(NativeGemmParity, FewColumnsManyRows) {
  // The transposed skinny paths (n <= 32: a row-major, or a transposed, which computes c^T) and
  // the fallbacks for other layouts.
  const Layout layouts[] = {Layout::row_major, Layout::transposed, Layout::strided};
  for (Layout la : layouts)
    for (Layout lb : layouts)
      for (int64_t n : {1, 2, 17, 32, 33}) check_gemm(100, n, 129, la, lb);
  check_gemm(1000, 1, 1000, Layout::row_major, Layout::row_major);
  check_gemm(3000, 16, 256, Layout::transposed, Layout::row_major);  // a LoRA factor's dW, rank 16
  check_gemm(300, 16, 1000, Layout::transposed, Layout::row_major);  // deeper than a k-slice
}

TEST(NativeGemmParity, LargerThanOneBlock) {
  // Past the k-slice (256), m-block and n-panel sizes, with ragged edges everywhere.
  check_gemm(1000, 1000, 64, Layout::row_major, Layout::row_major);
  check_gemm(200, 130, 1000, Layout::row_major, Layout::transposed);
  check_gemm(3, 4100, 65, Layout::row_major, Layout::transposed);
  check_gemm(250, 4200, 17, Layout::row_major, Layout::row_major);
}

// c = a w^T with w in f16 or bf16: the bound of the f32 GEMM on the widened weights.
template <class W>
void check_half_weights(int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
  const int64_t lda = k + 3, ldw = k + 5;  // padded rows: strides are honoured
  const auto a = parity::random_floats(m * lda, m + k);
  const auto w_f32 = parity::random_floats(n * ldw, n + k, -2, 2);
  std::vector<W> w(w_f32.size());
  for (size_t i = 0; i < w.size(); ++i) {
    if constexpr (std::is_same_v<W, f16_t>) w[i] = to_f16(w_f32[i]);
    else w[i] = to_bf16(w_f32[i]);
  }
  ThreadPool one(1), two(2);
  std::vector<float> want(m * n), got(m * n, NAN), got2(m * n, NAN);
  const Kernels &s = scalar_kernels(), &nat = kernels_for(Backend::native);
  if constexpr (std::is_same_v<W, f16_t>) {
    s.gemm_f16_weights(m, n, k, a.data(), lda, w.data(), ldw, want.data(), n, one);
    nat.gemm_f16_weights(m, n, k, a.data(), lda, w.data(), ldw, got.data(), n, one);
    nat.gemm_f16_weights(m, n, k, a.data(), lda, w.data(), ldw, got2.data(), n, two);
  } else {
    s.gemm_bf16_weights(m, n, k, a.data(), lda, w.data(), ldw, want.data(), n, one);
    nat.gemm_bf16_weights(m, n, k, a.data(), lda, w.data(), ldw, got.data(), n, one);
    nat.gemm_bf16_weights(m, n, k, a.data(), lda, w.data(), ldw, got2.data(), n, two);
  }
  std::vector<double> bound(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double magnitude = 0;
      for (int64_t p = 0; p < k; ++p) magnitude += std::abs(double(a[i * lda + p]) * to_f32(w[j * ldw + p]));
      bound[i * n + j] = 2.0 * k * FLT_EPSILON * magnitude + 1e-30;
    }
  EXPECT_TRUE(parity::within(got, want, bound));
  EXPECT_TRUE(parity::bitwise_equal(got2, got)) << "1 vs 2 threads";
}

TEST(NativeGemmParity, HalfWeightsEverySizeBothPaths) {
  for (int64_t s : sizes()) {
    check_half_weights<f16_t>(s <= 64 ? s : 33, 37, s);
    check_half_weights<bf16_t>(s <= 64 ? s : 33, 37, s);
    check_half_weights<f16_t>(3, s, 65);
    check_half_weights<bf16_t>(40, s, 129);
  }
  check_half_weights<f16_t>(100, 130, 1000);
  check_half_weights<bf16_t>(1, 1000, 1000);
}

// The skinny dots tile a product by its row count (one, three, four or six rows of w at a time,
// by arm and m; last tiles of one to three rows of a), but each output stays its own lane-wise
// chain: a row of a gives the same bits in a product of m rows as on its own, for f32 and half
// weights alike.
TEST(NativeGemmParity, SkinnyWeightProductsGiveEachRowTheBitsOfItsOwnProduct) {
  const int64_t n = 77, k = 300;  // n: a partial block for 3, 4 and 6 rows of w
  const auto a = parity::random_floats(32 * k, 11), w = parity::random_floats(n * k, 12);
  std::vector<f16_t> w16(w.size());
  for (size_t i = 0; i < w.size(); ++i) w16[i] = to_f16(w[i]);
  ThreadPool pool(2);
  const Kernels& nat = kernels_for(Backend::native);
  for (int64_t m : {2, 5, 7, 8, 13, 30, 32}) {
    SCOPED_TRACE("m=" + std::to_string(m));
    std::vector<float> c(m * n), c16(m * n), row(n), row16(n);
    nat.f32.gemm(m, n, k, a.data(), k, 1, w.data(), 1, k, c.data(), n, pool);
    nat.gemm_f16_weights(m, n, k, a.data(), k, w16.data(), k, c16.data(), n, pool);
    for (int64_t i = 0; i < m; ++i) {
      nat.f32.gemm(1, n, k, a.data() + i * k, k, 1, w.data(), 1, k, row.data(), n, pool);
      nat.gemm_f16_weights(1, n, k, a.data() + i * k, k, w16.data(), k, row16.data(), n, pool);
      EXPECT_TRUE(parity::bitwise_equal(std::vector<float>(c.begin() + i * n, c.begin() + (i + 1) * n), row))
          << "f32, row " << i;
      EXPECT_TRUE(parity::bitwise_equal(std::vector<float>(c16.begin() + i * n, c16.begin() + (i + 1) * n), row16))
          << "f16, row " << i;
    }
  }
}

TEST(NativeGemmParity, EmptyDepthGivesZeros) {
  ThreadPool pool(1);
  std::vector<float> c(6, NAN);
  const float a = 0, b = 0;
  parity::native_f32().gemm(2, 3, 0, &a, 0, 1, &b, 3, 1, c.data(), 3, pool);
  for (float x : c) EXPECT_EQ(x, 0.0f);
}

TEST(NativeBackend, ReportsItsArm) {
  const char* arm = native::simd_arm();
#if !TEMPRA_NATIVE_BACKEND
  EXPECT_EQ(arm, nullptr);  // a scalar-only build
#elif defined(__AVX512F__)
  ASSERT_NE(arm, nullptr);
  EXPECT_STREQ(arm, "avx512");
#elif defined(__AVX2__) && defined(__FMA__)
  ASSERT_NE(arm, nullptr);
  EXPECT_STREQ(arm, "avx2");
#elif defined(__aarch64__)
  ASSERT_NE(arm, nullptr);
  EXPECT_STREQ(arm, "neon");
#else
  EXPECT_EQ(arm, nullptr);
#endif
  EXPECT_STREQ(kernels_for(Backend::native).name, "native");
}

}  // namespace
}  // namespace tempra
