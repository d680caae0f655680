// tempra/backend/scalar/gemm.cpp: the blocked scalar matrix multiply.
//
// c[i, j] = sum_p a[i, p] * b[p, j], accumulated in the element type in increasing p, one
// k-block at a time into c. Blocking keeps a panel of b and a row strip of c in cache; it does
// not change the order in which any c[i, j] accumulates, so the result is the same for every
// blocking and thread count. Rows of c are split across threads. The f16/bf16-weight and
// block-quantized-weight products (c = a w^T) are the same in-order sums over the widened or
// decoded weights, split across threads by columns of c.
#include <algorithm>

#include "tempra/backend/scalar/scalar.h"
#include "tempra/quant/blocks.h"
#include "tempra/quant/formats.h"

namespace tempra::scalar {
namespace {
constexpr int64_t kRowBlock = 16;
constexpr int64_t kDepthBlock = 256;
constexpr int64_t kColBlock = 512;
}  // namespace

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const T* b, int64_t b_row,
          int64_t b_col, T* c, int64_t ldc, ThreadPool& pool) {
  const int64_t row_blocks = (m + kRowBlock - 1) / kRowBlock;
  // A chunk of row blocks should hold at least ~64K multiply-adds to be worth a worker.
  const int64_t grain = std::max<int64_t>(1, 65536 / (kRowBlock * n * k + 1));
  pool.parallel_for(row_blocks, grain, [&](int64_t first, int64_t last) {
    for (int64_t ib = first; ib < last; ++ib) {
      const int64_t i0 = ib * kRowBlock, i1 = std::min(m, i0 + kRowBlock);
      for (int64_t i = i0; i < i1; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
      for (int64_t j0 = 0; j0 < n; j0 += kColBlock) {
        const int64_t j1 = std::min(n, j0 + kColBlock);
        for (int64_t p0 = 0; p0 < k; p0 += kDepthBlock) {
          const int64_t p1 = std::min(k, p0 + kDepthBlock);
          for (int64_t i = i0; i < i1; ++i) {
            T* c_row = c + i * ldc;
            for (int64_t p = p0; p < p1; ++p) {
              const T a_ip = a[i * a_row + p * a_col];
              const T* b_row_p = b + p * b_row;
              for (int64_t j = j0; j < j1; ++j) c_row[j] += a_ip * b_row_p[j * b_col];
            }
          }
        }
      }
    }
  });
}

namespace {
// c[i, j] = sum_p activation(a[i, p]) * widen(w[j, p]), in increasing p: a dot product per
// element.
template <class W, class Activation>
void dot_rows(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const W* w, int64_t ldw, float* c,
              int64_t ldc, ThreadPool& pool, Activation activation) {
  pool.parallel_for(n, std::max<int64_t>(1, 65536 / (m * k + 1)), [&](int64_t first, int64_t last) {
    for (int64_t j = first; j < last; ++j)
      for (int64_t i = 0; i < m; ++i) {
        float sum = 0;
        for (int64_t p = 0; p < k; ++p) sum += activation(a[i * lda + p]) * to_f32(w[j * ldw + p]);
        c[i * ldc + j] = sum;
      }
  });
}
}  // namespace

template <class W>
void gemm_half_weights(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const W* w, int64_t ldw,
                       float* c, int64_t ldc, ThreadPool& pool) {
  dot_rows(m, n, k, a, lda, w, ldw, c, ldc, pool, [](float x) { return x; });
}

// gemm_half_weights over activations rounded to bf16 first (each product is then exact in f32).
void gemm_bf16_products(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const bf16_t* w, int64_t ldw,
                        float* c, int64_t ldc, ThreadPool& pool) {
  dot_rows(m, n, k, a, lda, w, ldw, c, ldc, pool, [](float x) { return to_f32(to_bf16(x)); });
}

// c[i, j] = sum_p a[i, p] * decode(w)[j, p], in increasing p: gemm_half_weights over the
// decoded weights. Each block of a weight row is decoded as it is reached, into a block on the
// stack (the kernel allocates nothing), and c[i, j] holds the running sum between blocks, which
// changes no rounding: a float stored and reloaded is the same float.
void gemm_quant_weights(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* w, DType w_type,
                        float* c, int64_t ldc, ThreadPool& pool) {
  const quant::QuantFormat& format = *quant::find_format(w_type);
  const int64_t block_elems = format.block_elems;
  const size_t row_bytes = w_type.bytes_for(k);
  pool.parallel_for(n, std::max<int64_t>(1, 65536 / (m * k + 1)), [&](int64_t first, int64_t last) {
    float block[quant::kSuperBlock];  // the largest block of any format
    for (int64_t j = first; j < last; ++j) {
      const auto* row = static_cast<const uint8_t*>(w) + size_t(j) * row_bytes;
      for (int64_t i = 0; i < m; ++i) c[i * ldc + j] = 0;
      for (int64_t p0 = 0; p0 < k; p0 += block_elems) {
        format.dequantize_row(row + size_t(p0 / block_elems) * format.block_bytes, block, block_elems);
        for (int64_t i = 0; i < m; ++i) {
          float sum = c[i * ldc + j];
          for (int64_t p = 0; p < block_elems; ++p) sum += a[i * lda + p0 + p] * block[p];
          c[i * ldc + j] = sum;
        }
      }
    }
  });
}

// c[i, j] = sum_p a[i, p] * decode(w)[p, j], in increasing p. A task owns whole blocks of c's
// columns (a block of the format, or 256 columns of a half w); for each p it decodes its piece
// of w's row p onto the stack and adds a[i, p] times it to every row of c.
void gemm_stored_weights_nn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* w,
                            DType w_type, float* c, int64_t ldc, ThreadPool& pool) {
  const quant::QuantFormat* format = quant::find_format(w_type);
  const int64_t block_elems = format ? format->block_elems : quant::kSuperBlock;
  const size_t row_bytes = w_type.bytes_for(k);
  const int64_t blocks = (k + block_elems - 1) / block_elems;
  pool.parallel_for(blocks, std::max<int64_t>(1, 65536 / (m * n * block_elems + 1)), [&](int64_t first, int64_t last) {
    float piece[quant::kSuperBlock];
    for (int64_t b = first; b < last; ++b) {
      const int64_t j0 = b * block_elems, width = std::min(block_elems, k - j0);
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc + j0, c + i * ldc + j0 + width, 0.0f);
      for (int64_t p = 0; p < n; ++p) {
        const auto* row = static_cast<const uint8_t*>(w) + size_t(p) * row_bytes;
        if (format) format->dequantize_row(row + size_t(b) * format->block_bytes, piece, width);
        else if (w_type == DType::f16)
          for (int64_t j = 0; j < width; ++j) piece[j] = to_f32(reinterpret_cast<const f16_t*>(row)[j0 + j]);
        else
          for (int64_t j = 0; j < width; ++j) piece[j] = to_f32(reinterpret_cast<const bf16_t*>(row)[j0 + j]);
        for (int64_t i = 0; i < m; ++i) {
          const float a_ip = a[i * lda + p];
          float* c_row = c + i * ldc + j0;
          for (int64_t j = 0; j < width; ++j) c_row[j] += a_ip * piece[j];
        }
      }
    }
  });
}

template void gemm_half_weights<f16_t>(int64_t, int64_t, int64_t, const float*, int64_t, const f16_t*, int64_t,
                                       float*, int64_t, ThreadPool&);
template void gemm_half_weights<bf16_t>(int64_t, int64_t, int64_t, const float*, int64_t, const bf16_t*, int64_t,
                                        float*, int64_t, ThreadPool&);
template void gemm<float>(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const float*, int64_t,
                          int64_t, float*, int64_t, ThreadPool&);
template void gemm<double>(int64_t, int64_t, int64_t, const double*, int64_t, int64_t, const double*, int64_t,
                           int64_t, double*, int64_t, ThreadPool&);

}  // namespace tempra::scalar
