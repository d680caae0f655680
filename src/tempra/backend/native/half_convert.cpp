// tempra/backend/native/half_convert.cpp: f16/bf16 <-> f32 runs, a vector at a time.
//
// f16 uses the hardware conversions (F16C / AVX-512 vcvtph2ps, vcvtps2ph with round to nearest
// even; NEON fcvtl/fcvtn), whose results are exactly tempra/core/half.h's (tested over every
// 16-bit pattern and over f32 edge cases in tests/backend/native_convert_parity_test.cpp).
// bf16 widening is a 16-bit shift; bf16 narrowing is half.h's integer rounding written as a
// branch-free loop for the compiler to vectorize (vcvtneps2bf16 flushes subnormals, which the
// contract does not).
#include <bit>

#include "tempra/backend/native/native.h"
#include "tempra/backend/native/simd.h"

#ifdef TEMPRA_SIMD_ARM
namespace tempra::native {
namespace {

using namespace simd;
constexpr int64_t kChunk = 1 << 16;  // elements per parallel task

inline const uint16_t* bits(const f16_t* p) { return reinterpret_cast<const uint16_t*>(p); }
inline const uint16_t* bits(const bf16_t* p) { return reinterpret_cast<const uint16_t*>(p); }

template <class Half>
void widen_run(const Half* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    if constexpr (std::is_same_v<Half, f16_t>) store(out + i, load_f16(bits(in + i)));
    else store(out + i, load_bf16(bits(in + i)));
  }
  for (; i < n; ++i) out[i] = to_f32(in[i]);
}

}  // namespace

void f16_to_f32(const f16_t* in, float* out, int64_t n, ThreadPool& pool) {
  pool.parallel_for(n, kChunk, [&](int64_t first, int64_t last) { widen_run(in + first, out + first, last - first); });
}

void bf16_to_f32(const bf16_t* in, float* out, int64_t n, ThreadPool& pool) {
  pool.parallel_for(n, kChunk, [&](int64_t first, int64_t last) { widen_run(in + first, out + first, last - first); });
}

void f32_to_f16(const float* in, f16_t* out, int64_t n, ThreadPool& pool) {
  pool.parallel_for(n, kChunk, [&](int64_t first, int64_t last) {
    int64_t i = first;
    for (; i + kLanes <= last; i += kLanes) store_f16(reinterpret_cast<uint16_t*>(out + i), load(in + i));
    for (; i < last; ++i) out[i] = to_f16(in[i]);
  });
}

void f32_to_bf16(const float* in, bf16_t* out, int64_t n, ThreadPool& pool) {
  pool.parallel_for(n, kChunk, [&](int64_t first, int64_t last) {
    const auto* x = reinterpret_cast<const uint32_t*>(in);
    auto* y = reinterpret_cast<uint16_t*>(out);
    for (int64_t i = first; i < last; ++i) {
      const uint32_t v = x[i];
      const uint32_t rounded = (v + 0x7fffu + ((v >> 16) & 1u)) >> 16;
      const uint32_t quiet_nan = (v >> 16) | 0x40u;
      y[i] = static_cast<uint16_t>((v & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
    }
  });
}

}  // namespace tempra::native
#endif  // TEMPRA_SIMD_ARM
