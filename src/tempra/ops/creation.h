// tempra/ops/creation.h: making arrays and moving them between dtypes and layouts.
//
// Random fills draw from the counter RNG (tempra/core/rng.h): element i of a fill that starts at
// stream offset o is a pure function of (seed, o + i), so the same seed gives the same values for
// any thread count. The ctx overloads take the next offsets of ctx.rng(); the explicit
// overloads take (seed, offset) for replay.
#pragma once

#include <vector>

#include "tempra/core/array.h"

namespace tempra {

Array full(ExecContext& ctx, const Dims& shape, double value, DType dtype = DType::f32);
Array arange(ExecContext& ctx, int64_t n, DType dtype = DType::f32);  // 0, 1, ..., n-1

Array uniform(ExecContext& ctx, const Dims& shape, double low, double high, uint64_t seed, uint64_t offset = 0);
Array normal(ExecContext& ctx, const Dims& shape, double mean, double stddev, uint64_t seed, uint64_t offset = 0);
Array uniform(ExecContext& ctx, const Dims& shape, double low = 0.0, double high = 1.0);
Array normal(ExecContext& ctx, const Dims& shape, double mean = 0.0, double stddev = 1.0);

// Converts every element (see scalar::convert_element for the rules); same dtype: a copy.
Array cast(ExecContext& ctx, const Array& x, DType dtype);
// A contiguous copy of x, always new storage.
Array copy(ExecContext& ctx, const Array& x);
// x itself if already contiguous, else a contiguous copy.
Array contiguous(ExecContext& ctx, const Array& x);
// Writes src into dst elementwise (same shape and dtype; dst may be a strided view).
void copy_into(ExecContext& ctx, const Array& src, const Array& dst);

// The elements in row-major order, converted to T (tests, printing, small host-side reads).
template <class T>
std::vector<T> to_vector(ExecContext& ctx, const Array& x);

}  // namespace tempra
