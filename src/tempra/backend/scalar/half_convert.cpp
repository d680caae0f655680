// tempra/backend/scalar/half_convert.cpp: f16/bf16 <-> f32 runs, one element at a time.
#include "tempra/backend/scalar/scalar.h"

namespace tempra::scalar {
namespace {
inline float convert_one(f16_t h, float) { return to_f32(h); }
inline float convert_one(bf16_t h, float) { return to_f32(h); }
inline f16_t convert_one(float x, f16_t) { return to_f16(x); }
inline bf16_t convert_one(float x, bf16_t) { return to_bf16(x); }
}  // namespace

template <class From, class To>
void convert_half(const From* in, To* out, int64_t n, ThreadPool& pool) {
  pool.parallel_for(n, 1 << 16, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) out[i] = convert_one(in[i], To{});
  });
}

template void convert_half<f16_t, float>(const f16_t*, float*, int64_t, ThreadPool&);
template void convert_half<bf16_t, float>(const bf16_t*, float*, int64_t, ThreadPool&);
template void convert_half<float, f16_t>(const float*, f16_t*, int64_t, ThreadPool&);
template void convert_half<float, bf16_t>(const float*, bf16_t*, int64_t, ThreadPool&);

}  // namespace tempra::scalar
