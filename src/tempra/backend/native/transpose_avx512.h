// tempra/backend/native/transpose_avx512.h: the 16 x 16 transpose of 32-bit elements that the
// AVX-512 kernels compiled with a target attribute share (the bf16 products' packing, the
// streamed decode GEMVs). simd.h has its own for the f32 kernels, which are compiled for the
// build's arm; these translation units may be built for a CPU without AVX-512 and opt in per
// function, so they need one carrying its own target.
#pragma once

#include <immintrin.h>

namespace tempra::native {

// Transposes 16 rows of 16 32-bit elements in place: r[i][j] becomes r[j][i].
__attribute__((target("avx512f"))) inline void transpose16(__m512i (&r)[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {  // per 128-bit lane L: rows i, i + 1 at columns 4L .. 4L + 3, interleaved
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // u[i + c], lane L: column 4L + c of rows i .. i + 3
    u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int c = 0; c < 4; ++c) {  // column 4L + c: lane L of u[c], u[4 + c], u[8 + c], u[12 + c]
    const __m512i low0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), high0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
    const __m512i low1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
    const __m512i high1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
    r[c] = _mm512_shuffle_i32x4(low0, low1, 0x88);
    r[4 + c] = _mm512_shuffle_i32x4(low0, low1, 0xdd);
    r[8 + c] = _mm512_shuffle_i32x4(high0, high1, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(high0, high1, 0xdd);
  }
}

}  // namespace tempra::native
