// tests/backend/native_quant_gemm_test.cpp: the GEMMs over stored weights against a float64
// product, on both backends: block-quantized weights transposed (Kernels::gemm_quant_weights,
// c = a w^T, the forward of a linear layer), and any stored weights untransposed
// (Kernels::gemm_stored_weights_nn, c = a w with w in f16, bf16 or a block format: its input
// gradient).
//
// The reference decodes w with the format's reference decoder (quant/formats.h, itself held to
// ggml by tests/quant) and multiplies in double. Both kernels multiply the same decoded f32
// weights in f32, so the tolerance is the f32 GEMM's (native_gemm_parity_test.cpp): each f32
// sum of k products is within ~k eps sum_p |a_ip w_jp| of the exact one, and we allow
// 2 k eps sum_p |a_ip w_jp|. A slip in decoding or packing (a wrong block, row or column)
// misses by about sum_p |a_ip w_jp| / sqrt(k), thousands of times the bound. Shapes: m past the
// skinny threshold (33) and past one row block (257), n not a multiple of kNr, k of one to five
// 256-deep slices, one product wider than a b panel (kNc), a partial last slice of 32-element
// blocks, and rows below the skinny threshold (the kernel is correct for any m, even where the
// quantized dots are the better choice); the native kernel must agree bitwise on 1 and 2 threads.
#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <string>

#include "backend/parity.h"
#include "tempra/core/half.h"
#include "tempra/quant/formats.h"

namespace tempra {
namespace {

struct Shape {
  int64_t m, n, k;
};

// Every pair of m in {33, 100, 257} and n in {70, 301} (neither a whole number of strips on any
// arm: kNr is 48, 16 or 12), each k in {256, 768, 1280} twice. Kept small: the scalar kernel
// runs under ASan and qemu in CI.
const Shape kCover[] = {{33, 70, 256},   {33, 301, 1280}, {100, 70, 1280},
                        {100, 301, 768}, {257, 70, 768},  {257, 301, 256}};

// The worst error over the products checked so far for one format, for the summary line.
struct Worst {
  double abs_error = 0;    // max |c - reference|
  double bound_ratio = 0;  // max |c - reference| / bound
  double magnitude = 0;    // max |reference|
};

// c[i, j] = sum over p < depth of a[i, p] * weight(p, j), for i < m and j < cols, against a
// float64 product: each table's kernel (run(table, pool, c) writes c with row stride cols) within
// 2 depth eps sum_p |a_ip w_pj| of it, and the native one bitwise the same on 1 and 2 threads.
template <class Weight, class Run>
void expect_float64_product(int64_t m, int64_t cols, int64_t depth, const std::vector<float>& a, int64_t lda,
                            const Weight& weight, const Run& run, Worst& worst) {
  std::vector<double> exact(size_t(m * cols)), bound(size_t(m * cols));
  std::vector<float> want(size_t(m * cols));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < depth; ++p) {
        const double product = double(a[i * lda + p]) * weight(p, j);
        sum += product;
        magnitude += std::abs(product);
      }
      exact[i * cols + j] = sum;
      want[i * cols + j] = float(sum);  // within 0.5 eps |sum|: the bound holds this rounding too
      bound[i * cols + j] = 2.0 * depth * FLT_EPSILON * magnitude + 1e-30;
    }
  ThreadPool one(1), two(2);
  std::vector<float> scalar(m * cols, NAN), native(m * cols, NAN), native2(m * cols, NAN);
  run(scalar_kernels(), one, scalar.data());
  run(kernels_for(Backend::native), one, native.data());
  run(kernels_for(Backend::native), two, native2.data());
  EXPECT_TRUE(parity::within(scalar, want, bound)) << "scalar";
  EXPECT_TRUE(parity::within(native, want, bound)) << "native";
  EXPECT_TRUE(parity::bitwise_equal(native2, native)) << "native, 1 vs 2 threads";
  for (size_t e = 0; e < native.size(); ++e) {
    const double err = std::abs(double(native[e]) - exact[e]);
    worst.abs_error = std::max(worst.abs_error, err);
    worst.bound_ratio = std::max(worst.bound_ratio, err / bound[e]);
    worst.magnitude = std::max(worst.magnitude, std::abs(exact[e]));
  }
}

void check_quant_gemm(const quant::QuantFormat& format, Shape s, Worst& worst) {
  const int64_t m = s.m, n = s.n, k = s.k;  // not a structured binding: lambdas below capture them
  SCOPED_TRACE(std::string(format.name) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
               " k=" + std::to_string(k));
  const int64_t lda = k + 3;  // padded rows: the stride is honoured
  const auto a = parity::random_floats(size_t(m * lda), uint64_t(m + k));
  const auto w_values = parity::random_floats(size_t(n * k), uint64_t(n + k), -2, 2);
  const size_t row_bytes = format.dtype.bytes_for(k);
  // Exactly n rows: a decode past the last row or block is an ASan error.
  std::vector<uint8_t> w(n * row_bytes);
  for (int64_t j = 0; j < n; ++j) format.quantize_row(w_values.data() + j * k, w.data() + j * row_bytes, k);
  std::vector<float> decoded(size_t(n * k));
  for (int64_t j = 0; j < n; ++j) format.dequantize_row(w.data() + j * row_bytes, decoded.data() + j * k, k);

  expect_float64_product(
      m, n, k, a, lda, [&](int64_t p, int64_t j) { return decoded[j * k + p]; },
      [&](const Kernels& table, ThreadPool& pool, float* c) {
        table.gemm_quant_weights(m, n, k, a.data(), lda, w.data(), format.dtype, c, n, pool);
      },
      worst);
}

void report(const quant::QuantFormat& format, const Worst& worst) {
  std::printf("[quant gemm] %-6s native: max |error| %.3g (max |c| %.3g), max error / bound %.3g\n",
              std::string(format.name).c_str(), worst.abs_error, worst.magnitude, worst.bound_ratio);
}

TEST(NativeQuantGemm, HotFormatsMatchFloat64OverEveryShape) {
  for (const char* name : {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k"}) {
    const quant::QuantFormat& format = *quant::find_format(name);
    Worst worst;
    for (Shape s : kCover) check_quant_gemm(format, s, worst);
    report(format, worst);
  }
}

TEST(NativeQuantGemm, EveryDecodableFormatMatchesFloat64) {
  for (const quant::QuantFormat& format : quant::formats()) {
    if (format.quantize_row == nullptr) continue;  // no encoder to make test weights with
    Worst worst;
    check_quant_gemm(format, {100, 70, 768}, worst);
    report(format, worst);
  }
}

TEST(NativeQuantGemm, PanelsSlicesAndFewRows) {
  const quant::QuantFormat& q4_k = *quant::find_format("q4_k");
  const quant::QuantFormat& q8_0 = *quant::find_format("q8_0");
  Worst worst;
  check_quant_gemm(q4_k, {33, 6200, 256}, worst);  // past kNc (6144 columns on AVX-512, 2048 on AVX2)
  check_quant_gemm(q8_0, {40, 37, 288}, worst);    // a last slice of one 32-element block
  check_quant_gemm(q8_0, {100, 130, 32}, worst);   // a single, partial slice
  for (int64_t m : {1, 5, 32}) check_quant_gemm(q4_k, {m, 70, 512}, worst);
}

// c = a w (w[n, k] stored as `dtype`: f16, bf16 or a block format) against float64 over the
// decoded w (the depth is n here).
void check_stored_nn(DType dtype, Shape s, Worst& worst) {
  // c is m x k and the depth n, w's rows (not a structured binding: lambdas below capture them).
  const int64_t m = s.m, n = s.n, k = s.k;
  SCOPED_TRACE(std::string(dtype.name()) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
               " k=" + std::to_string(k));
  const int64_t lda = n + 5;
  const auto a = parity::random_floats(size_t(m * lda), uint64_t(3 * m + n));
  const auto w_values = parity::random_floats(size_t(n * k), uint64_t(n + 7 * k), -2, 2);
  const size_t row_bytes = dtype.bytes_for(k);
  std::vector<uint8_t> w(n * row_bytes);  // exactly n rows: a read past them is an ASan error
  std::vector<float> decoded(size_t(n * k));
  const quant::QuantFormat* format = quant::find_format(dtype);
  for (int64_t p = 0; p < n; ++p) {
    uint8_t* row = w.data() + p * row_bytes;
    const float* values = w_values.data() + p * k;
    float* out = decoded.data() + p * k;
    if (format) {
      format->quantize_row(values, row, k);
      format->dequantize_row(row, out, k);
    } else
      for (int64_t j = 0; j < k; ++j) {
        if (dtype == DType::f16) reinterpret_cast<f16_t*>(row)[j] = to_f16(values[j]);
        else reinterpret_cast<bf16_t*>(row)[j] = to_bf16(values[j]);
        out[j] = dtype == DType::f16 ? to_f32(reinterpret_cast<f16_t*>(row)[j])
                                     : to_f32(reinterpret_cast<bf16_t*>(row)[j]);
      }
  }
  expect_float64_product(
      m, k, n, a, lda, [&](int64_t p, int64_t j) { return decoded[p * k + j]; },
      [&](const Kernels& table, ThreadPool& pool, float* c) {
        table.gemm_stored_weights_nn(m, n, k, a.data(), lda, w.data(), dtype, c, k, pool);
      },
      worst);
}

// Shapes: n (the depth) past one k-slice and not a multiple of it, k one block to past a
// b panel (kNc: 6144 columns on AVX-512), k a whole number of 32-blocks but not of strips, and
// m below the skinny threshold.
TEST(NativeQuantGemm, StoredWeightsUntransposedMatchFloat64) {
  const Shape shapes[] = {{33, 70, 256}, {100, 401, 768}, {257, 37, 288}, {5, 130, 32}, {40, 20, 6400}};
  for (const char* name : {"f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k"}) {
    const DType dtype = *dtype_from_name(name);
    Worst worst;
    for (Shape s : shapes)
      if (s.k % (quant::find_format(dtype) ? quant::find_format(dtype)->block_elems : 1) == 0)
        check_stored_nn(dtype, s, worst);
    std::printf("[stored nn] %-6s native: max |error| %.3g (max |c| %.3g), max error / bound %.3g\n", name,
                worst.abs_error, worst.magnitude, worst.bound_ratio);
  }
}

TEST(NativeQuantGemm, EmptyProductsWriteZerosOrNothing) {
  ThreadPool pool(1);
  const quant::QuantFormat& q8_0 = *quant::find_format("q8_0");
  const float a = 0;
  const uint8_t w = 0;
  const std::vector<float> a_rows(2 * 32, 1.0f);
  std::vector<uint8_t> w_rows(3 * q8_0.dtype.bytes_for(32));
  const std::vector<float> row(32, 1.0f);
  for (int j = 0; j < 3; ++j) q8_0.quantize_row(row.data(), w_rows.data() + j * q8_0.dtype.bytes_for(32), 32);
  for (const Kernels* table : {&scalar_kernels(), &kernels_for(Backend::native)}) {
    std::vector<float> c(6, NAN);
    table->gemm_quant_weights(2, 3, 0, &a, 0, &w, q8_0.dtype, c.data(), 3, pool);  // no depth: zeros
    for (float x : c) EXPECT_EQ(x, 0.0f) << table->name;
    std::vector<float> untouched(6, NAN);  // no rows, or no columns: c is not written
    table->gemm_quant_weights(0, 3, 32, a_rows.data(), 32, w_rows.data(), q8_0.dtype, untouched.data(), 3, pool);
    table->gemm_quant_weights(2, 0, 32, a_rows.data(), 32, w_rows.data(), q8_0.dtype, untouched.data(), 3, pool);
    for (float x : untouched) EXPECT_TRUE(std::isnan(x)) << table->name;
  }
}

}  // namespace
}  // namespace tempra
