// tempra/backend/scalar/quant_dot.cpp: the scalar quantized dot products.
//
// Each follows ggml's generic kernel (ggml-cpu/quants.c) in what it adds and in what order:
// - 32-element formats: an exact integer sum per block, then one float term per block with
//   ggml's grouping of the scale products (which differs between formats, so it is spelled out).
// - K-quants: per super-block, exact integer sums in eight lanes (lane = element index mod 8,
//   each element weighted by its sub-block scale), then sums[lane] += d * lane_sum across
//   super-blocks, the mins term subtracted per super-block, and the eight lanes added last.
// - IQ4_XS: one float term per 32-element sub-block, (d * scale) * sum; TQ1_0, TQ2_0: one
//   integer sum per super-block.
// Compiled with -ffp-contract=off so no multiply-add is fused.
#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "tempra/backend/quant_dot.h"
#include "tempra/backend/scalar/k_quant_lanes.h"
#include "tempra/quant/blocks.h"
#include "tempra/quant/formats.h"

namespace tempra {
namespace {

using namespace tempra::quant;

constexpr int kHalf = kBlock32 / 2;

// A 32-element block keeps element j in the low nibble of qs[j] and element j + 16 in its high
// nibble (plus, for Q5, bits j and j + 16 of qh as fifth bits); the loops below walk the 16
// bytes and take both elements of each. (Written this way on purpose: selecting the source byte
// with j < 16 ? ... : ... inside one 32-step loop was miscompiled by g++ 12 with
// -march=native, -O2 and -O3, AVX-512 masked loads; tests/backend/quant_dot_test.cpp caught it.)
inline uint32_t fifth_bits(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  return bits;
}
inline int low_code(const uint8_t* qs, uint32_t qh, int j) { return (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4); }
inline int high_code(const uint8_t* qs, uint32_t qh, int j) {
  return (qs[j] >> 4) | static_cast<int>(((qh >> (j + kHalf)) & 1u) << 4);
}

// sum_j code(j) * a(j) + offset * sum_j a(j) over one block, exact in int.
template <class CodeBlock>
int block_sum(const CodeBlock& x, const int8_t* a, uint32_t qh, int offset) {
  int s = 0;
  for (int j = 0; j < kHalf; ++j) {
    s += (low_code(x.qs, qh, j) + offset) * a[j];
    s += (high_code(x.qs, qh, j) + offset) * a[j + kHalf];
  }
  return s;
}

float dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    const int s = block_sum(x[b], y[b].qs, 0, -8);
    sum += static_cast<float>(s) * to_f32(x[b].d) * to_f32(y[b].d);
  }
  return sum;
}

float dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    const int s = block_sum(x[b], y[b].qs, 0, 0);
    // The minimum folds in through the activation block's precomputed d * sum(q).
    sum += (to_f32(x[b].d) * to_f32(y[b].d)) * static_cast<float>(s) + to_f32(x[b].m) * to_f32(y[b].s);
  }
  return sum;
}

float dot_q5_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    const int s = block_sum(x[b], y[b].qs, fifth_bits(x[b].qh), -16);
    sum += (to_f32(x[b].d) * to_f32(y[b].d)) * static_cast<float>(s);
  }
  return sum;
}

float dot_q5_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    const int s = block_sum(x[b], y[b].qs, fifth_bits(x[b].qh), 0);
    sum += (to_f32(x[b].d) * to_f32(y[b].d)) * static_cast<float>(s) + to_f32(x[b].m) * to_f32(y[b].s);
  }
  return sum;
}

float dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    int s = 0;
    for (int j = 0; j < kBlock32; ++j) s += x[b].qs[j] * y[b].qs[j];
    sum += static_cast<float>(s) * (to_f32(x[b].d) * to_f32(y[b].d));
  }
  return sum;
}

// ---- K-quants ----

using LaneSums = detail::KQuantLaneSums;  // the eight-lane float accumulation (see the file header)

// lanes[e % 8] += scale(e) * codes[e] * q8[e] over one super-block; scale_of(e) picks the
// sub-block scale of element e.
template <class ScaleOf>
void lane_dot(const int8_t* codes, const int8_t* q8, ScaleOf scale_of, int32_t* lanes) {
  for (int l = 0; l < 8; ++l) lanes[l] = 0;
  for (int e = 0; e < kSuperBlock; ++e) lanes[e % 8] += scale_of(e) * (codes[e] * q8[e]);
}

float dot_q2_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ2_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    int mins = 0;
    for (int j = 0; j < 16; ++j) mins += y[b].bsums[j] * (x[b].scales[j] >> 4);
    int s = 0;
    for (int e = 0; e < kSuperBlock; ++e) {
      const int half = e / 128, plane = (e % 128) / 32, lane = e % 32;
      const int q = (x[b].qs[half * 32 + lane] >> (2 * plane)) & 3;
      s += (x[b].scales[e / 16] & 0xF) * (y[b].qs[e] * q);
    }
    const float dall = y[b].d * to_f32(x[b].d), dmin = y[b].d * to_f32(x[b].dmin);
    sum += dall * static_cast<float>(s) - dmin * static_cast<float>(mins);
  }
  return sum;
}

float dot_q3_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ3_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  LaneSums acc;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    int8_t codes[kSuperBlock];
    for (int e = 0; e < kSuperBlock; ++e) {
      const int half = e / 128, plane = (e % 128) / 32, lane = e % 32;
      const int low = (x[b].qs[half * 32 + lane] >> (2 * plane)) & 3;
      const bool high = x[b].hmask[lane] & (1u << (half * 4 + plane));
      codes[e] = static_cast<int8_t>(low - (high ? 0 : 4));
    }
    int scales[16];
    for (int s = 0; s < 16; ++s) {
      const int low = s < 8 ? x[b].scales[s] & 0xF : x[b].scales[s - 8] >> 4;
      const int high = (x[b].scales[8 + s % 4] >> (2 * (s / 4))) & 3;
      scales[s] = (low | (high << 4)) - 32;
    }
    int32_t lanes[8];
    lane_dot(codes, y[b].qs, [&](int e) { return scales[e / 16]; }, lanes);
    acc.add_super_block(to_f32(x[b].d) * y[b].d, lanes);
  }
  return acc.finish();
}

template <bool kFifthBit, class Block>
float dot_q45_k(int64_t n, const Block* x, const BlockQ8_K* y) {
  LaneSums acc;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    int8_t codes[kSuperBlock];
    for (int s = 0; s < 8; ++s) {
      const uint8_t* q = x[b].qs + 32 * (s / 2);
      for (int l = 0; l < 32; ++l) {
        int code = s % 2 ? q[l] >> 4 : q[l] & 0xF;
        if constexpr (kFifthBit) code += ((x[b].qh[l] >> s) & 1) << 4;
        codes[32 * s + l] = static_cast<int8_t>(code);
      }
    }
    int16_t scales[8], mins[8];
    detail::unpack_scales_mins_k4(x[b].scales, scales, mins);
    int min_sum = 0;
    for (int j = 0; j < 16; ++j) min_sum += y[b].bsums[j] * mins[j / 2];
    int32_t lanes[8];
    lane_dot(codes, y[b].qs, [&](int e) { return scales[e / 32]; }, lanes);
    acc.add_super_block(to_f32(x[b].d) * y[b].d, lanes);
    acc.total -= to_f32(x[b].dmin) * y[b].d * static_cast<float>(min_sum);
  }
  return acc.finish();
}

float dot_q4_k(int64_t n, const void* w, const void* a) {
  return dot_q45_k<false>(n, static_cast<const BlockQ4_K*>(w), static_cast<const BlockQ8_K*>(a));
}
float dot_q5_k(int64_t n, const void* w, const void* a) {
  return dot_q45_k<true>(n, static_cast<const BlockQ5_K*>(w), static_cast<const BlockQ8_K*>(a));
}

float dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  LaneSums acc;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    int8_t codes[kSuperBlock];
    for (int e = 0; e < kSuperBlock; ++e) {
      const int half = e / 128, quarter = (e % 128) / 32, lane = e % 32;
      const uint8_t ql = x[b].ql[64 * half + lane + 32 * (quarter % 2)];
      const int low = quarter < 2 ? ql & 0xF : ql >> 4;
      const int high = (x[b].qh[32 * half + lane] >> (2 * quarter)) & 3;
      codes[e] = static_cast<int8_t>((low | (high << 4)) - 32);
    }
    int32_t lanes[8];
    lane_dot(codes, y[b].qs, [&](int e) { return static_cast<int>(x[b].scales[e / 16]); }, lanes);
    acc.add_super_block(to_f32(x[b].d) * y[b].d, lanes);
  }
  return acc.finish();
}

// ---- Ternary formats ----

// The trit at position `power` (0 = first) of a TQ1_0 byte: the byte stores
// ceil(256 * base3 / 243), so multiplying by 3^power (mod 256) brings that trit's fraction to
// the top and * 3 >> 8 reads it (ggml's decoder and dot kernel do the same).
inline int trit(uint8_t byte, int power) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto shifted = static_cast<uint8_t>(byte * kPow3[power]);
  return (shifted * 3) >> 8;
}

float dot_tq1_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockTQ1_0*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  constexpr int kQs = sizeof(BlockTQ1_0::qs), kQh = sizeof(BlockTQ1_0::qh);
  constexpr int kWide = kQs - kQs % 32;  // the first 32 bytes: five runs of 32 elements
  float sum = 0;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const int8_t* q8 = y[b].qs;
    int s = 0;
    // Element order (ggml's): byte m of a run of `width` bytes starting at qs[j] holds elements
    // 5 j + t * width + m for its trits t = 0..4; qh byte m holds 5 * kQs + t * kQh + m, t = 0..3.
    for (int j = 0; j < kQs; j += j < kWide ? 32 : 16) {
      const int width = j < kWide ? 32 : 16;
      for (int t = 0; t < 5; ++t)
        for (int m = 0; m < width; ++m) s += (trit(x[b].qs[j + m], t) - 1) * q8[5 * j + t * width + m];
    }
    for (int t = 0; t < 4; ++t)
      for (int m = 0; m < kQh; ++m) s += (trit(x[b].qh[m], t) - 1) * q8[5 * kQs + t * kQh + m];
    sum += static_cast<float>(s) * (to_f32(x[b].d) * y[b].d);
  }
  return sum;
}

float dot_tq2_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockTQ2_0*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    int s = 0;
    // Byte m of 32-byte group g holds elements 128 g + 32 p + m in bits 2p, 2p + 1.
    for (int e = 0; e < kSuperBlock; ++e) {
      const int group = e / 128, plane = (e % 128) / 32, m = e % 32;
      s += (((x[b].qs[32 * group + m] >> (2 * plane)) & 3) - 1) * y[b].qs[e];
    }
    sum += static_cast<float>(s) * (y[b].d * to_f32(x[b].d));
  }
  return sum;
}

// ---- Non-linear 4-bit formats ----

// sum_j kIq4nlGrid[code(j)] * a[j] over 32 elements packed as in Q4_0; exact in int.
int iq4_block_sum(const uint8_t* qs, const int8_t* a) {
  int s = 0;
  for (int j = 0; j < kHalf; ++j) {
    s += kIq4nlGrid[qs[j] & 0xF] * a[j];
    s += kIq4nlGrid[qs[j] >> 4] * a[j + kHalf];
  }
  return s;
}

float dot_iq4_nl(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_NL*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kBlock32; ++b) {
    const float d = to_f32(y[b].d) * to_f32(x[b].d);
    sum += d * static_cast<float>(iq4_block_sum(x[b].qs, y[b].qs));
  }
  return sum;
}

float dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_XS*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kSuperBlock; ++b) {
    const float d = to_f32(x[b].d) * y[b].d;
    for (int s = 0; s < kSuperBlock / 32; ++s) {
      const float sub_d = d * static_cast<float>(iq4_xs_scale(x[b], s));
      sum += sub_d * static_cast<float>(iq4_block_sum(x[b].qs + 16 * s, y[b].qs + 32 * s));
    }
  }
  return sum;
}

}  // namespace

namespace native {

std::vector<QuantDot> hot_format_dots(const HotFormatDots& d) {
  using quant::find_format;
  const DType q8_k = find_format("q8_k")->dtype;
  const QuantDot all[] = {
      {quant::q8_0(), quant::q8_0(), d.q8_0, d.q8_0_gemm, d.q8_0_gemv, d.q8_0_rows},
      {quant::q4_0(), quant::q8_0(), d.q4_0, d.q4_0_gemm, d.q4_0_gemv, d.q8_0_rows},
      {find_format("q4_k")->dtype, q8_k, d.q4_k, d.q4_k_gemm, d.q4_k_gemv, d.q8_k_rows},
      {find_format("q5_k")->dtype, q8_k, d.q5_k, d.q5_k_gemm, d.q5_k_gemv, d.q8_k_rows},
      {find_format("q6_k")->dtype, q8_k, d.q6_k, d.q6_k_gemm, d.q6_k_gemv, d.q8_k_rows},
      {find_format("tq2_0")->dtype, q8_k, d.tq2_0, d.tq2_0_gemm, d.tq2_0_gemv, d.q8_k_rows},
      {find_format("iq4_nl")->dtype, quant::q8_0(), d.iq4_nl, d.iq4_nl_gemm, d.iq4_nl_gemv, d.q8_0_rows},
      {find_format("iq4_xs")->dtype, q8_k, d.iq4_xs, d.iq4_xs_gemm, d.iq4_xs_gemv, d.q8_k_rows},
  };
  std::vector<QuantDot> dots;
  for (const QuantDot& dot : all)
    if (dot.dot != nullptr) dots.push_back(dot);
  return dots;
}

#if TEMPRA_NATIVE_QUANT_DOT && defined(__x86_64__)
#if TEMPRA_QUANT_AVX512
std::span<const QuantDot> quant_dots_avx512();  // backend/native/quant_dot_avx512.cpp
#endif
std::span<const QuantDot> quant_dots_avx2();  // backend/native/quant_dot_avx2.cpp
#elif TEMPRA_NATIVE_QUANT_DOT && defined(__aarch64__)
std::span<const QuantDot> quant_dots_neon();  // backend/native/quant_dot_neon.cpp
#endif

std::span<const QuantDotArm> quant_dot_arms() {
  static const std::vector<QuantDotArm> arms = [] {
    std::vector<QuantDotArm> found;
#if TEMPRA_NATIVE_QUANT_DOT && defined(__x86_64__)
    // Each returns no dots when the CPU lacks its instructions.
#if TEMPRA_QUANT_AVX512
    if (const auto dots = quant_dots_avx512(); !dots.empty()) found.push_back({"avx512vnni", dots});
#endif
    if (const auto dots = quant_dots_avx2(); !dots.empty()) found.push_back({"avx2", dots});
#elif TEMPRA_NATIVE_QUANT_DOT && defined(__aarch64__)
    found.push_back({"neon", quant_dots_neon()});
#endif
    return found;
  }();
  return arms;
}

}  // namespace native

const QuantDot* find_quant_dot(DType weight, Backend backend) {
  if (backend == Backend::native)
    for (const native::QuantDotArm& arm : native::quant_dot_arms())
      for (const QuantDot& d : arm.dots)
        if (d.weight == weight) return &d;
  static const QuantDot table[] = {
      {q4_0(), q8_0(), &dot_q4_0},
      {q4_1(), q8_1(), &dot_q4_1},
      {q5_0(), q8_0(), &dot_q5_0},
      {q5_1(), q8_1(), &dot_q5_1},
      {q8_0(), q8_0(), &dot_q8_0},
      {find_format("q2_k")->dtype, find_format("q8_k")->dtype, &dot_q2_k},
      {find_format("q3_k")->dtype, find_format("q8_k")->dtype, &dot_q3_k},
      {find_format("q4_k")->dtype, find_format("q8_k")->dtype, &dot_q4_k},
      {find_format("q5_k")->dtype, find_format("q8_k")->dtype, &dot_q5_k},
      {find_format("q6_k")->dtype, find_format("q8_k")->dtype, &dot_q6_k},
      {find_format("iq4_nl")->dtype, q8_0(), &dot_iq4_nl},
      {find_format("iq4_xs")->dtype, find_format("q8_k")->dtype, &dot_iq4_xs},
      {find_format("tq1_0")->dtype, find_format("q8_k")->dtype, &dot_tq1_0},
      {find_format("tq2_0")->dtype, find_format("q8_k")->dtype, &dot_tq2_0},
  };
  for (const QuantDot& d : table)
    if (d.weight == weight) return &d;
  return nullptr;
}

RowEncoder row_encoder(DType format, Backend backend) {
  if (backend == Backend::native)
    for (const native::QuantDotArm& arm : native::quant_dot_arms())
      for (const QuantDot& d : arm.dots)
        if (d.activation == format && d.quantize != nullptr) return d.quantize;
  const quant::QuantFormat* f = quant::find_format(format);
  return f != nullptr ? f->quantize_row : nullptr;
}

void quantize_activations(const QuantDot& dot, const float* x, int64_t rows, int64_t k, void* out, ThreadPool& pool) {
  auto* encode = dot.quantize != nullptr ? dot.quantize : quant::find_format(dot.activation)->quantize_row;
  const size_t row_bytes = dot.activation.bytes_for(k);
  auto* o = static_cast<uint8_t*>(out);
  pool.parallel_for(rows, 1 + 16384 / (k + 1), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) encode(x + r * k, o + size_t(r) * row_bytes, k);
  });
}

void quant_dot_gemm(const QuantDot& dot, int64_t m, int64_t n, int64_t k, const void* a, const void* w, float* c,
                    int64_t ldc, ThreadPool& pool) {
  if (m <= 0 || n <= 0) return;
  if (dot.gemm != nullptr && m >= kQuantGemmMinRows) return dot.gemm(m, n, k, a, w, c, ldc, pool);
  if (dot.gemv != nullptr && m < kQuantGemmMinRows) return dot.gemv(m, n, k, a, w, c, ldc, pool);
  const size_t w_row = dot.weight.bytes_for(k), a_row = dot.activation.bytes_for(k);
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  // A task is a block of kWeightRows weight rows against every activation row: the block
  // (~17 KiB of Q8_0 at k = 1024) stays in L1 while the activations stream past it. Each output
  // element is still one dot with one owner: any split, any blocking gives the same bits.
  constexpr int64_t kWeightRows = 16;
  const int64_t blocks = (n + kWeightRows - 1) / kWeightRows;
  pool.parallel_for(blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t j0 = first * kWeightRows; j0 < std::min(n, last * kWeightRows); j0 += kWeightRows) {
      const int64_t j1 = std::min(n, j0 + kWeightRows);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = j0; j < j1; ++j) c[r * ldc + j] = dot.dot(k, wp + size_t(j) * w_row, ap + size_t(r) * a_row);
    }
  });
}

}  // namespace tempra
