// tempra/backend/native/gemm.cpp: the native f32 matrix multiply.
//
// Two paths, chosen by shape alone (never by thread count, so results are identical for any
// number of threads):
//
// - Packed (m > kSkinnyRows): the Goto/BLIS loop nest. For each kKc-deep slice of k and kNc-wide
//   slice of n, a panel of b is packed once into kNr-column strips (shared by all threads); each
//   task packs a kMc-row block of a into kMr-row strips and runs the register-tiled micro-kernel
//   over it: kMr x kNr accumulators live in registers for the whole slice, each step broadcasts
//   kMr values of a and loads kNr/lanes vectors of b. The first slice stores into c, later ones
//   add to it, so every c[i, j] is sum over slices (in order) of an in-order fused-multiply-add
//   chain: one fixed order whatever the blocking of m and n and the threads.
// - Skinny (m <= kSkinnyRows, the decode and short-prompt case), no packing of b, which would
//   cost as much as the product: if b's rows are contiguous (b[k, n] row-major), the micro-kernel
//   reads them in place; if its columns are (b = w^T with w[n, k] row-major, how weights are
//   stored), each c[i, j] is a vectorized dot product of a row of a with a row of w, in tiles
//   of four rows of a by one to six rows of w (gemm_skinny_dots says which). A product with few
//   columns (n <= kSkinnyRows) and contiguous rows of a is computed transposed through the same
//   dot products.
// - Few columns (n <= kSkinnyRows), many rows, a stored transposed (a LoRA factor's gradient
//   dY^T X: the depth is the tokens): c^T = b^T a^T on the skinny path, whose row-major b is
//   then a's contiguous rows, into a scratch block transposed back; strips of b would have been
//   mostly padding (kNr = 48 columns on AVX-512 for a rank of 16).
// - Weights in f16/bf16 (gemm_half_weights, c = a w^T): the same two paths, the weights widened
//   to f32 exactly (in registers on the skinny path, while packing on the other), so the
//   rounding class and tolerance are those of the f32 GEMM.
// - Block-quantized weights (gemm_quant_weights, c = a w^T, w in any format of quant/formats.h):
//   the packed path only, its slices kQuantKc = 256 deep (kKc's depth today, but fixed apart
//   from it), so that every slice of a weight row is whole blocks (a block is 32 or 256
//   elements). Packing a panel decodes each weight row's blocks in [p0, p0 + kc) with the
//   format's reference dequantize_row and scatters them into the strips, once per panel for all
//   threads; a last partial panel decodes only its own rows. The decoded weights are the
//   reference decoder's exact f32 values, so the rounding class and tolerance are again those
//   of the f32 GEMM, on the decoded weights. Decoding costs n k per product whatever m is and
//   pays off only over many rows: the prefill path. Decode steps (m <= kSkinnyRows) belong to
//   the quantized dots (backend/quant_dot.h), which never dequantize; choosing between them is
//   the caller's (llm/model/qwen3.cpp's linear_rows).
// - Stored weights, untransposed (gemm_stored_weights_nn, c = a w with w[n, k] in f16, bf16 or a
//   block-quantized format: a linear layer's input gradient): the packed path over w's rows as the
//   depth; packing a panel widens, or decodes with dequantize_row, each row's whole-block
//   segment [j0, j0 + nc) (kNc is a multiple of every block) once, so no f32 copy of w is ever
//   made. The rounding class is again the f32 GEMM's on the decoded weights.
// - With -DTEMPRA_BLAS=openblas, f32 products that would take the packed path and whose
//   operands each have a unit stride go to cblas_sgemm on as many OpenBLAS threads as the pool
//   has. That gives up one promise: OpenBLAS's results can change with its thread count
//   (seen: 1000 x 1000 x 64 differs in the last bits between 1 and 2 threads), so such a build
//   is deterministic for a fixed thread count only. gemm_provider() says which build this is.
//
// Against the scalar kernel (plain multiply-add in increasing p) the difference is rounding
// only: |native - scalar| <= ~2 k eps sum_p |a_ip b_pj| (tests/backend/native_gemm_parity_test.cpp),
// and quantized weights are held to that bound against a float64 product
// (tests/backend/native_quant_gemm_test.cpp).
#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "tempra/backend/native/native.h"
#include "tempra/backend/native/prefetch.h"
#include "tempra/backend/native/scratch.h"
#include "tempra/backend/native/simd.h"
#include "tempra/quant/blocks.h"
#include "tempra/quant/formats.h"

#if TEMPRA_BLAS_OPENBLAS
#include <cblas.h>
#endif

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native {
namespace {

using namespace simd;

#if TEMPRA_SIMD_AVX512
constexpr int kMr = 8, kNv = 3;  // 24 accumulators of 32 registers
#elif TEMPRA_SIMD_AVX2
constexpr int kMr = 6, kNv = 2;  // 12 accumulators of 16 registers
#else
constexpr int kMr = 8, kNv = 3;  // NEON: 24 accumulators of 32 registers
#endif
constexpr int kNr = kNv * kLanes;
// A kKc x kNr strip of b (48 KiB on AVX-512) is read by every kMr-row strip of an a block, from
// L1 where it fits (a 48 KiB L1: Zen 5, recent Xeons), else from L2. 384 (72 KiB) ran 4-15%
// slower on a Zen 5 (session 29, docs/BENCHMARK.md); 128 no faster than 256.
constexpr int64_t kKc = 256;
// Quantized weights: a multiple of every block size (the 256 of the K-quants' super-block), and
// no deeper than kKc so the strips stay where kKc's do.
constexpr int64_t kQuantKc = quant::kSuperBlock;
constexpr int64_t kMc = kMr * 32;  // an a block of kMc x kKc (256 KiB on AVX-512, 192 on AVX2) stays in L2
constexpr int64_t kNc = kNr * 128;                // a packed b panel of kKc x kNc stays in L3
constexpr int64_t kSkinnyRows = 32;
constexpr int64_t kUnpackedB = 64 * 1024;  // floats of a row-major b used in place (256 KiB)
constexpr int64_t kTransposedOut = 256 * 1024;  // floats of c computed transposed (1 MiB of scratch)

// b's elements: f32, or a 16-bit float widened to f32 exactly (in registers where vectorized).
inline float widen(float x) { return x; }
inline float widen(f16_t x) { return to_f32(x); }
inline float widen(bf16_t x) { return to_f32(x); }
inline V load_row(const float* p) { return load(p); }
inline V load_row(const f16_t* p) { return load_f16(reinterpret_cast<const uint16_t*>(p)); }
inline V load_row(const bf16_t* p) { return load_bf16(reinterpret_cast<const uint16_t*>(p)); }
// The first `count` (< kLanes) elements at p, the rest zero.
template <class B>
inline V load_row_partial(const B* p, int count) {
  if constexpr (std::is_same_v<B, float>) {
    return load_partial(p, count);
  } else {
    B lanes[kLanes] = {};
    std::copy(p, p + count, lanes);
    return load_row(lanes);
  }
}

// c[rows, cols] (+)= a[rows, kc] . b[kc, cols] for rows <= MR, cols <= kNr. a(i, p) is
// a[i * a_row + p * a_col]; b(p, j) is b[p * b_row + j] (kNr valid floats per p, zero-padded
// past cols when packed). kPacked fixes the strides to the packed layout at compile time (a
// strip is [p][kMr], b's [p][kNr]), which keeps the address arithmetic out of the inner loop.
template <int MR, bool kPacked>
inline void micro_kernel(int64_t kc, const float* a, int64_t a_row, int64_t a_col, const float* b, int64_t b_row,
                         float* c, int64_t ldc, int rows, int cols, bool accumulate) {
  if constexpr (kPacked) {
    a_row = 1, a_col = MR, b_row = kNr;
    // The c tile is read (or written) once the kc steps are done; asking for its lines now
    // hides their miss behind those steps. c's rows are ldc apart (16 KiB at n = 4096), a line
    // each the hardware prefetchers do not guess: 4096^3 on one Zen 5 thread, 164 -> 185 GFLOP/s.
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int j = 0; j < kNr; j += 16)  // a cache line at a time
        if (i < rows)
          __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(c + i * ldc) + 4 * j), 1, 3);
  }
  V acc[MR][kNv];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kNv; ++v) acc[i][v] = zero();
  for (int64_t p = 0; p < kc; ++p) {
    V bv[kNv];
#pragma GCC unroll 4
    for (int v = 0; v < kNv; ++v) bv[v] = load(b + p * b_row + v * kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V ai = set1(a[i * a_row + p * a_col]);
#pragma GCC unroll 4
      for (int v = 0; v < kNv; ++v) acc[i][v] = fma(ai, bv[v], acc[i][v]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    if (i >= rows) break;
    float* ci = c + i * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < kNv; ++v) {
      const int n = std::min(kLanes, cols - v * kLanes);
      if (n <= 0) break;
      if (n == kLanes) store(ci + v * kLanes, accumulate ? add(load(ci + v * kLanes), acc[i][v]) : acc[i][v]);
      else store_partial(ci + v * kLanes, accumulate ? add(load_partial(ci + v * kLanes, n), acc[i][v]) : acc[i][v], n);
    }
  }
}

using MicroKernel = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t, int,
                             int, bool);

// micro_kernel<rows> for rows in 1..kMr, unpacked: direct reads of a must not touch rows past m.
template <int... R>
constexpr auto make_kernels(std::integer_sequence<int, R...>) {
  return std::array<MicroKernel, sizeof...(R)>{&micro_kernel<R + 1, false>...};
}
constexpr auto kKernelsByRows = make_kernels(std::make_integer_sequence<int, kMr>{});

// Packs b[p0 : p0 + kc, j0 : j0 + nc] into kNr-column strips: strip s holds b(p, j0 + s kNr + j)
// at [s][p][j], zero past n.
template <class B>
void pack_b(const B* b, int64_t b_row, int64_t b_col, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
            float* packed, ThreadPool& pool) {
  const int64_t strips = (nc + kNr - 1) / kNr;
  pool.parallel_for(strips, std::max<int64_t>(1, 1024 / kc), [&](int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) {
      float* dst = packed + s * kc * kNr;
      const int64_t width = std::min<int64_t>(kNr, nc - s * kNr);
      const B* src = b + p0 * b_row + (j0 + s * kNr) * b_col;
      if (width < kNr)
        for (int64_t p = 0; p < kc; ++p) std::fill(dst + p * kNr + width, dst + (p + 1) * kNr, 0.0f);
      if (b_col == 1 && width == kNr) {  // rows of b are contiguous: a vector at a time
        for (int64_t p = 0; p < kc; ++p)
          for (int v = 0; v < kNv; ++v) store(dst + p * kNr + v * kLanes, load_row(src + p * b_row + v * kLanes));
      } else if (b_col == 1) {
        for (int64_t p = 0; p < kc; ++p)
          for (int64_t j = 0; j < width; ++j) dst[p * kNr + j] = widen(src[p * b_row + j]);
      } else if (b_row == 1 && width == kNr) {  // columns are (b = w^T): kLanes x kLanes blocks transposed
        int64_t p = 0;
        for (; p + kLanes <= kc; p += kLanes)
          for (int v = 0; v < kNv; ++v) {
            V block[kLanes];  // rows v kLanes + i of w, depth p .. p + kLanes
            for (int i = 0; i < kLanes; ++i) block[i] = load_row(src + (v * kLanes + i) * b_col + p);
            transpose(block);
            for (int l = 0; l < kLanes; ++l) store(dst + (p + l) * kNr + v * kLanes, block[l]);
          }
        for (; p < kc; ++p)
          for (int64_t j = 0; j < width; ++j) dst[p * kNr + j] = widen(src[p + j * b_col]);
      } else if (b_row == 1) {  // a last, partial strip: widen a vector of each column at a time
        for (int64_t j = 0; j < width; ++j) {
          const B* column = src + j * b_col;
          float lanes[kLanes];
          int64_t p = 0;
          for (; p + kLanes <= kc; p += kLanes) {
            store(lanes, load_row(column + p));
            for (int l = 0; l < kLanes; ++l) dst[(p + l) * kNr + j] = lanes[l];
          }
          for (; p < kc; ++p) dst[p * kNr + j] = widen(column[p]);
        }
      } else {
        for (int64_t j = 0; j < width; ++j)
          for (int64_t p = 0; p < kc; ++p) dst[p * kNr + j] = widen(src[p * b_row + j * b_col]);
      }
    }
  });
}

// Packs a[i0 : i0 + mc, p0 : p0 + kc] into kMr-row strips: strip s holds a(i0 + s kMr + i, p)
// at [s][p][i], zero past m.
void pack_a(const float* a, int64_t a_row, int64_t a_col, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            float* packed) {
  for (int64_t s = 0; s * kMr < mc; ++s) {
    float* dst = packed + s * kc * kMr;
    const int64_t height = std::min<int64_t>(kMr, mc - s * kMr);
    const float* src = a + (i0 + s * kMr) * a_row + p0 * a_col;
    if (height < kMr) std::fill(dst, dst + kc * kMr, 0.0f);
    if (a_row == 1) {  // a is a transposed view (a weight gradient's g^T): each depth's rows are adjacent
      for (int64_t p = 0; p < kc; ++p) std::copy(src + p * a_col, src + p * a_col + height, dst + p * kMr);
      continue;
    }
    for (int64_t i = 0; i < height; ++i)
      for (int64_t p = 0; p < kc; ++p) dst[p * kMr + i] = src[i * a_row + p * a_col];
  }
}

// Packs rows j0 .. j0 + nc of a block-quantized w[n, k] (b = w^T; rows of row_bytes bytes) over
// the block-aligned depth [p0, p0 + kc), kc <= Kc, into pack_b's strips. Each row's segment is
// decoded whole, only the blocks in range, then scattered into its column of the strip, as
// pack_b's "columns" branch widens f16 rows.
template <int64_t Kc>
void pack_b_quantized(const uint8_t* w, size_t row_bytes, const quant::QuantFormat& format, int64_t p0, int64_t kc,
                      int64_t j0, int64_t nc, float* packed, ThreadPool& pool) {
  const int64_t strips = (nc + kNr - 1) / kNr;
  const size_t segment_offset = size_t(p0 / format.block_elems) * size_t(format.block_bytes);
  // A strip decodes kNr x kc weights (12k on AVX-512), enough to be a task of its own.
  pool.parallel_for(strips, 1, [&](int64_t first, int64_t last) {
    alignas(64) float segment[Kc];
    for (int64_t s = first; s < last; ++s) {
      float* dst = packed + s * kc * kNr;
      const int64_t width = std::min<int64_t>(kNr, nc - s * kNr);
      if (width < kNr)
        for (int64_t p = 0; p < kc; ++p) std::fill(dst + p * kNr + width, dst + (p + 1) * kNr, 0.0f);
      for (int64_t j = 0; j < width; ++j) {
        format.dequantize_row(w + size_t(j0 + s * kNr + j) * row_bytes + segment_offset, segment, kc);
        for (int64_t p = 0; p < kc; ++p) dst[p * kNr + j] = segment[p];
      }
    }
  });
}

// Packs w[p0 : p0 + kc, j0 : j0 + nc] of a block-quantized w[n, k] (b = w itself: the product
// a w; rows of row_bytes bytes, j0 and nc whole blocks) into pack_b's strips. Each of the kc rows'
// segment is decoded once and cut into the strips; tasks take rows, so each decodes its own.
void pack_b_quantized_rows(const uint8_t* w, size_t row_bytes, const quant::QuantFormat& format, int64_t p0,
                           int64_t kc, int64_t j0, int64_t nc, float* packed, ThreadPool& pool) {
  const int64_t strips = (nc + kNr - 1) / kNr;
  const size_t segment_offset = size_t(j0 / format.block_elems) * size_t(format.block_bytes);
  pool.parallel_for(kc, std::max<int64_t>(1, 4096 / nc), [&](int64_t first, int64_t last) {
    alignas(64) float segment[kNc];
    for (int64_t p = first; p < last; ++p) {
      format.dequantize_row(w + size_t(p0 + p) * row_bytes + segment_offset, segment, nc);
      std::fill(segment + nc, segment + strips * kNr, 0.0f);
      for (int64_t s = 0; s < strips; ++s)
        for (int v = 0; v < kNv; ++v)
          store(packed + s * kc * kNr + p * kNr + v * kLanes, load(segment + s * kNr + v * kLanes));
    }
  });
}

// c = a b over Kc-deep slices of k (Kc: kKc, or kQuantKc for block-aligned slices of quantized
// weights). pack_panel(p0, kc, j0, nc, packed) packs b[p0 : p0 + kc, j0 : j0 + nc] into
// kNr-column strips laid out as pack_b's.
template <int64_t Kc, class PackPanel>
void gemm_packed(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col,
                 const PackPanel& pack_panel, float* c, int64_t ldc, ThreadPool& pool) {
  // Blocks of at most kMc rows, as many as a multiple of the threads where there are enough of
  // them: an odd count keeps one of two threads idle for the last block (11 blocks of a 1024-row
  // product once cost 8% of it that way). The blocking of m does not change any c[i, j]'s order.
  const int64_t threads = pool.size(), fewest = (m + kMc - 1) / kMc;
  const int64_t wanted = fewest >= threads ? (fewest + threads - 1) / threads * threads : fewest;
  const int64_t mc_block = ((m + wanted - 1) / wanted + kMr - 1) / kMr * kMr;
  const int64_t row_blocks = (m + mc_block - 1) / mc_block;
  float* packed_b = thread_scratch(0).floats(Kc * ((std::min(n, kNc) + kNr - 1) / kNr) * kNr);
  for (int64_t j0 = 0; j0 < n; j0 += kNc) {
    const int64_t nc = std::min(kNc, n - j0);
    const int64_t strips = (nc + kNr - 1) / kNr;
    // Split the panel's strips into column groups so that small-m products still give every
    // thread work; each task re-packs its a block, which costs 1/group_strips of its compute.
    const int64_t groups = std::clamp<int64_t>(2 * threads / row_blocks, 1, std::max<int64_t>(1, strips / 8));
    const int64_t strips_per_group = (strips + groups - 1) / groups;
    for (int64_t p0 = 0; p0 < k; p0 += Kc) {
      const int64_t kc = std::min(Kc, k - p0);
      pack_panel(p0, kc, j0, nc, packed_b);
      pool.parallel_for(row_blocks * groups, 1, [&](int64_t first, int64_t last) {
        float* packed_a = thread_scratch(1).floats(Kc * kMc);
        for (int64_t task = first; task < last; ++task) {
          const int64_t i0 = (task / groups) * mc_block, mc = std::min(mc_block, m - i0);
          const int64_t s0 = (task % groups) * strips_per_group, s1 = std::min(strips, s0 + strips_per_group);
          if (s0 >= s1) continue;
          pack_a(a, a_row, a_col, i0, mc, p0, kc, packed_a);
          for (int64_t s = s0; s < s1; ++s) {
            const int64_t j = j0 + s * kNr;
            const int cols = static_cast<int>(std::min<int64_t>(kNr, n - j));
            for (int64_t r = 0; r < mc; r += kMr) {
              const int rows = static_cast<int>(std::min<int64_t>(kMr, mc - r));
              micro_kernel<kMr, true>(kc, packed_a + (r / kMr) * kc * kMr, 1, kMr, packed_b + s * kc * kNr, kNr,
                                      c + (i0 + r) * ldc + j, ldc, rows, cols, p0 > 0);
            }
          }
        }
      });
    }
  }
}

// Skinny, b row-major: the micro-kernel reads a and b in place, one kNr-column strip per task.
// Columns past n would be read from b, so the last strip (narrower than kNr) goes through a
// small zero-padded copy.
void gemm_skinny_rows(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col, const float* b,
                      int64_t b_row, float* c, int64_t ldc, ThreadPool& pool) {
  const int64_t strips = (n + kNr - 1) / kNr;
  const int64_t grain = std::max<int64_t>(1, 32768 / (k * m + 1));
  pool.parallel_for(strips, grain, [&](int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) {
      const int64_t j = s * kNr;
      const int cols = static_cast<int>(std::min<int64_t>(kNr, n - j));
      const float* bs = b + j;
      int64_t bs_row = b_row;
      if (cols < kNr) {
        float* tail = thread_scratch(2).floats(k * kNr);
        for (int64_t p = 0; p < k; ++p) {
          std::copy(b + p * b_row + j, b + p * b_row + j + cols, tail + p * kNr);
          std::fill(tail + p * kNr + cols, tail + (p + 1) * kNr, 0.0f);
        }
        bs = tail;
        bs_row = kNr;
      }
      for (int64_t i = 0; i < m; i += kMr) {
        const int rows = static_cast<int>(std::min<int64_t>(kMr, m - i));
        kKernelsByRows[rows - 1](k, a + i * a_row, a_row, a_col, bs, bs_row, c + i * ldc + j, ldc, rows, cols, false);
      }
    }
  });
}

// acc[r][q] += x[r][p] y[q][p] lane-wise for p in [p0, p1), R rows x (f32) and C rows y (f32 or
// 16-bit floats). Lane l of acc[r][q] sums the products with p = l (mod kLanes) in increasing
// p, so cutting [0, k) into chunks (multiples of kLanes but the last) changes nothing. Only the
// chunk that ends at k has a partial vector.
// Each y row's bytes `ahead` bytes on are prefetched as it is read (0: none).
template <int R, int C, class W>
inline void dot_tile_chunk(int64_t p0, int64_t p1, const float* const* x, const W* const* y, V (&acc_io)[R][C],
                           size_t ahead) {
  V acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < C; ++q) acc[r][q] = acc_io[r][q];
  int64_t p = p0;
  for (; p + kLanes <= p1; p += kLanes) {
    if (ahead != 0)
      for (int q = 0; q < C; ++q)
        prefetch_weights(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(y[q] + p) + ahead));
    V yv[C];
    for (int q = 0; q < C; ++q) yv[q] = load_row(y[q] + p);
    for (int r = 0; r < R; ++r) {
      const V xv = load(x[r] + p);
      for (int q = 0; q < C; ++q) acc[r][q] = fma(xv, yv[q], acc[r][q]);
    }
  }
  if (p < p1) {
    const int tail = static_cast<int>(p1 - p);
    V yv[C];
    for (int q = 0; q < C; ++q) yv[q] = load_row_partial(y[q] + p, tail);
    for (int r = 0; r < R; ++r) {
      const V xv = load_partial(x[r] + p, tail);
      for (int q = 0; q < C; ++q) acc[r][q] = fma(xv, yv[q], acc[r][q]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < C; ++q) acc_io[r][q] = acc[r][q];
}

// dot_tile_chunk over the first `rows` (1..R) of x and acc: a last tile of fewer rows runs a
// narrower kernel instead of repeating a row (m = 1: decode, where a repeated row would be
// R - 1 FMAs wasted for every useful one).
template <int R, int C, class W>
inline void dot_tile_rows(int rows, int64_t p0, int64_t p1, const float* const* x, const W* const* y,
                          V (&acc)[R][C], size_t ahead) {
  if constexpr (R > 1)
    if (rows < R) return dot_tile_rows<R - 1, C>(rows, p0, p1, x, y, reinterpret_cast<V(&)[R - 1][C]>(acc), ahead);
  dot_tile_chunk<R, C>(p0, p1, x, y, acc, ahead);
}

// Skinny, b = w^T with w[n, k] row-major (b_row == 1): c[i, j] = dot(a_i, w_j). Rows of a are
// made contiguous first when they are not (m x k floats: small). A task takes C rows of w and
// walks k in chunks small enough that those rows stay in L1 while every row of a streams past
// them; the partial sums wait in acc between chunks. Each w row's bytes `ahead` bytes on are
// prefetched as the first row tile reads it.
template <int C, int R, class W>
void skinny_dots(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col, const W* w,
                 int64_t w_row, float* c, int64_t c_row, int64_t c_col, size_t ahead, ThreadPool& pool) {
  if (a_col != 1) {
    float* copy = thread_scratch(3).floats(m * k);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) copy[i * k + p] = a[i * a_row + p * a_col];
    a = copy;
    a_row = k;
  }
  constexpr int64_t kChunk = 256 * 16;  // elements of k per pass: each row of w in 16 KiB (f32)
  static_assert(kChunk % kLanes == 0 && kSkinnyRows % R == 0);
  const int64_t column_blocks = (n + C - 1) / C, row_tiles = (m + R - 1) / R;
  const int64_t grain = std::max<int64_t>(1, 32768 / (k * m + 1));
  pool.parallel_for(column_blocks, grain, [&](int64_t first, int64_t last) {
    V acc[kSkinnyRows / R][R][C];
    for (int64_t jb = first; jb < last; ++jb) {
      const int64_t j0 = jb * C;
      const int cols = static_cast<int>(std::min<int64_t>(C, n - j0));
      const W* y[C];
      for (int q = 0; q < C; ++q) y[q] = w + (j0 + std::min(q, cols - 1)) * w_row;  // repeat the last row
      for (int64_t t = 0; t < row_tiles; ++t)
        for (int r = 0; r < R; ++r)
          for (int q = 0; q < C; ++q) acc[t][r][q] = zero();
      for (int64_t p0 = 0; p0 < k; p0 += kChunk) {
        const int64_t p1 = std::min(k, p0 + kChunk);
        for (int64_t t = 0; t < row_tiles; ++t) {
          const int64_t i0 = t * R;
          const float* x[R];
          for (int r = 0; r < R; ++r) x[r] = a + std::min(i0 + r, m - 1) * a_row;
          // The first tile brings the C rows of w into L1 and asks for the next block's; the
          // other tiles read them from there, where a prefetch each would be a wasted request
          // (m = 16 on a Zen 5: 77-87 -> 93-100 GFLOP/s for prefetching from the first only).
          const size_t tile_ahead = t == 0 ? ahead : 0;
          dot_tile_rows<R, C>(static_cast<int>(std::min<int64_t>(R, m - i0)), p0, p1, x, y, acc[t], tile_ahead);
        }
      }
      for (int64_t t = 0; t < row_tiles; ++t)
        for (int r = 0; r < R && t * R + r < m; ++r)
          for (int q = 0; q < cols; ++q) c[(t * R + r) * c_row + (j0 + q) * c_col] = reduce_add(acc[t][r][q]);
    }
  });
}

// The skinny dots, their tiling chosen by m. On AVX-512 a decode step (m = 1) reads one row of
// w at a time, front to back, as one stream through the whole matrix, prefetched 8 KiB on: four
// rows side by side (below) are four streams 2 KiB apart (f16, k = 1024) that an AMD EPYC Zen
// 5's prefetchers do not follow. Qwen3-0.6B F16, tempra bench -n 32 there, four rows against
// one: 20.9-21.3 against 25.6-29.1 tok/s on one thread, 28.8-31.1 against 34.2-41.7 on two. A
// row's one chain of FMAs then bounds the rate: 8-lane vectors (the AVX2 arm, on the same CPU)
// read 14.1-14.8 tok/s one row at a time, 21.2 two, 21.9-24.5 four, so the other arms keep
// four. With more rows of a, each row of w read serves them all from L1 and four rows keep 16
// FMA chains going. From 8 rows of a on AVX-512, six rows of w a block (24 accumulators, six
// rows of w and one of a in 32 registers): each vector of a's rows read serves six rows of w
// instead of four (k-chunks that keep m rows of a in L1 changed nothing, so L2 was not it).
// One Zen 5 thread, f32 (GFLOP/s, 4 -> 6): m = 16 ~100 -> ~120 at 1024 x 1024, 78-82 -> 86-96 at
// 4096 x 4096; f16 weights m = 16 and 32, 2048 x 2048: 117-133 -> 149-165, 122-136 -> 168-182;
// m = 2 and 4 ran slower with six. AVX2's 16 registers hold 12 accumulators, three rows of w
// and one of a (four rows of w: 16 accumulators in 16 registers): on the same Zen 5 through the
// avx2 preset, 50-73 -> 57-83 GFLOP/s for 8 <= m <= 32, 48 -> 53-55 at m = 2. Every output's
// order is the same whatever the tiling (acc[r][q] is its own lane-wise chain), so the tiling
// changes no bits.
template <class W>
void gemm_skinny_dots(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col, const W* w,
                      int64_t w_row, float* c, int64_t c_row, int64_t c_col, ThreadPool& pool) {
  // The next column block's rows are prefetched as a block's are read: the same task reads them
  // next (prefetch.h says why).
  if constexpr (kLanes >= 16) {
    if (m == 1)
      return skinny_dots<1, 4>(m, n, k, a, a_row, a_col, w, w_row, c, c_row, c_col, kRowStreamPrefetchBytes, pool);
    if (m >= 8)
      return skinny_dots<6, 4>(m, n, k, a, a_row, a_col, w, w_row, c, c_row, c_col, w_row * 6 * sizeof(W), pool);
  } else if constexpr (kLanes == 8) {
    if (m >= 2)
      return skinny_dots<3, 4>(m, n, k, a, a_row, a_col, w, w_row, c, c_row, c_col, w_row * 3 * sizeof(W), pool);
  }
  skinny_dots<4, 4>(m, n, k, a, a_row, a_col, w, w_row, c, c_row, c_col, w_row * 4 * sizeof(W), pool);
}

// gemm_packed's pack_panel for a b of floats or 16-bit floats at (row, column) strides.
template <class B>
auto panels_of(const B* b, int64_t b_row, int64_t b_col, ThreadPool& pool) {
  return [=, &pool](int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* packed) {
    pack_b(b, b_row, b_col, p0, kc, j0, nc, packed, pool);
  };
}

// Products with no output, or no depth (c = 0): true when handled here.
bool empty_product(int64_t m, int64_t n, int64_t k, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return true;
  if (k != 0) return false;
  for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
  return true;
}

}  // namespace

const char* gemm_provider() {
#if TEMPRA_BLAS_OPENBLAS
  return "openblas";
#else
  return "tempra";
#endif
}

void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col, const float* b,
          int64_t b_row, int64_t b_col, float* c, int64_t ldc, ThreadPool& pool) {
  if (empty_product(m, n, k, c, ldc)) return;
  // Few columns, many rows, a stored transposed (a(i, p) = a[i + p * a_col]: a gradient's rows
  // as the depth, as in a LoRA factor's dW = dY^T X): strips of b would be mostly padding, so
  // compute c^T = b^T a^T, whose b is a's contiguous rows, on the skinny path and transpose it
  // back. One in-order FMA chain per element: the bits of the skinny path it replaces (products
  // that took the packed path, past kUnpackedB, were sums of kKc-deep slices and round apart).
  if (n <= kSkinnyRows && m > kSkinnyRows && a_row == 1 && a_col != 1 && m * n <= kTransposedOut) {
    float* ct = thread_scratch(3).floats(m * n);
    gemm_skinny_rows(n, m, k, b, b_col, b_row, a, a_col, ct, m, pool);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = ct[j * m + i];
    return;
  }
  // Row-major b: read in place for short products, and for any product whose b is small
  // enough to stay in L2 across the row blocks (packing would cost more than it saves).
  if (b_col == 1 && (m <= kSkinnyRows || k * n <= kUnpackedB))
    return gemm_skinny_rows(m, n, k, a, a_row, a_col, b, b_row, c, ldc, pool);
  if (m <= kSkinnyRows && b_row == 1) return gemm_skinny_dots(m, n, k, a, a_row, a_col, b, b_col, c, ldc, 1, pool);
#if TEMPRA_BLAS_OPENBLAS
  if (m > kSkinnyRows && n > kSkinnyRows && (a_col == 1 || a_row == 1) && (b_col == 1 || b_row == 1)) {
    openblas_set_num_threads(pool.size());
    cblas_sgemm(CblasRowMajor, a_col == 1 ? CblasNoTrans : CblasTrans, b_col == 1 ? CblasNoTrans : CblasTrans,
                int(m), int(n), int(k), 1.0f, a, int(a_col == 1 ? a_row : a_col), b, int(b_col == 1 ? b_row : b_col),
                0.0f, c, int(ldc));
    return;
  }
#endif
  // Few columns, many rows (a matrix times a few vectors): packing b into kNr-wide strips would
  // waste most of the micro-kernel on padding. Transposed, c^T = b^T a^T is the skinny case,
  // with the rows of a (contiguous) as the "weights".
  if (n <= kSkinnyRows && a_col == 1) return gemm_skinny_dots(n, m, k, b, b_col, b_row, a, a_row, c, 1, ldc, pool);
  gemm_packed<kKc>(m, n, k, a, a_row, a_col, panels_of(b, b_row, b_col, pool), c, ldc, pool);
}

template <class W>
void gemm_half_weights(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const W* w, int64_t ldw,
                       float* c, int64_t ldc, ThreadPool& pool) {
  if (empty_product(m, n, k, c, ldc)) return;
  if (m <= kSkinnyRows) return gemm_skinny_dots(m, n, k, a, lda, 1, w, ldw, c, ldc, 1, pool);
  gemm_packed<kKc>(m, n, k, a, lda, 1, panels_of(w, 1, ldw, pool), c, ldc, pool);
}

void gemm_quant_weights(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* w, DType w_type,
                        float* c, int64_t ldc, ThreadPool& pool) {
  if (empty_product(m, n, k, c, ldc)) return;
  const quant::QuantFormat& format = *quant::find_format(w_type);
  assert(kQuantKc % format.block_elems == 0);
  const size_t row_bytes = w_type.bytes_for(k);
  const auto* rows = static_cast<const uint8_t*>(w);
  auto panels = [&](int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* packed) {
    pack_b_quantized<kQuantKc>(rows, row_bytes, format, p0, kc, j0, nc, packed, pool);
  };
  gemm_packed<kQuantKc>(m, n, k, a, lda, 1, panels, c, ldc, pool);
}

void gemm_stored_weights_nn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const void* w,
                            DType w_type, float* c, int64_t ldc, ThreadPool& pool) {
  // c is m x k and the depth is n (w's rows).
  if (empty_product(m, k, n, c, ldc)) return;
  if (w_type == DType::f16)
    return gemm_packed<kKc>(m, k, n, a, lda, 1, panels_of(static_cast<const f16_t*>(w), k, 1, pool), c, ldc, pool);
  if (w_type == DType::bf16)
    return gemm_packed<kKc>(m, k, n, a, lda, 1, panels_of(static_cast<const bf16_t*>(w), k, 1, pool), c, ldc, pool);
  const quant::QuantFormat& format = *quant::find_format(w_type);
  assert(kNc % format.block_elems == 0);
  const size_t row_bytes = w_type.bytes_for(k);
  const auto* rows = static_cast<const uint8_t*>(w);
  auto panels = [&](int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* packed) {
    pack_b_quantized_rows(rows, row_bytes, format, p0, kc, j0, nc, packed, pool);
  };
  gemm_packed<kKc>(m, k, n, a, lda, 1, panels, c, ldc, pool);
}

#if !TEMPRA_QUANT_AVX512
Bf16ProductGemm bf16_products_avx512() { return nullptr; }
#endif

const char* bf16_products_arm() { return bf16_products_avx512() != nullptr ? "avx512bf16" : "widened"; }

void gemm_bf16_products(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const bf16_t* w, int64_t ldw,
                        float* c, int64_t ldc, ThreadPool& pool) {
  static const Bf16ProductGemm arm = bf16_products_avx512();
  if (empty_product(m, n, k, c, ldc)) return;
  if (arm != nullptr) return arm(m, n, k, a, lda, w, ldw, c, ldc, pool);
  // The rounded activations, widened back to f32 (exactly), against the weights widened in
  // registers: the same exact products, summed in f32.
  float* rounded = thread_scratch(4).floats(m * k);
  pool.parallel_for(m, std::max<int64_t>(1, 16384 / k), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i)
      for (int64_t p = 0; p < k; ++p) rounded[i * k + p] = bf16_bits_to_f32(f32_to_bf16_bits(a[i * lda + p]));
  });
  gemm_half_weights(m, n, k, rounded, k, w, ldw, c, ldc, pool);
}

template void gemm_half_weights<f16_t>(int64_t, int64_t, int64_t, const float*, int64_t, const f16_t*, int64_t,
                                       float*, int64_t, ThreadPool&);
template void gemm_half_weights<bf16_t>(int64_t, int64_t, int64_t, const float*, int64_t, const bf16_t*, int64_t,
                                        float*, int64_t, ThreadPool&);

}  // namespace tempra::native
#endif  // TEMPRA_SIMD_ARM
