// tempra/backend/native/native.h: the native backend's kernels (f32, SIMD).
//
// Each has the contract of the kernel table entry it fills (tempra/backend/kernels.h) and is
// held to the scalar kernel by tests/backend/native_parity_test.cpp under the tolerance written
// at its definition. Entries not listed here, and every f64 entry, are the scalar kernels. This
// header is only meaningful when simd.h selected an arm (TEMPRA_SIMD_ARM defined).
#pragma once

#include "tempra/backend/kernels.h"

namespace tempra::native {

// The SIMD arm compiled into this build ("avx512", "avx2", "neon"), or null when there is none
// and the native table is the scalar one.
const char* simd_arm();

void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col, const float* b,
          int64_t b_row, int64_t b_col, float* c, int64_t ldc, ThreadPool& pool);

}  // namespace tempra::native
