// tempra/ops/creation.cpp
#include "tempra/ops/creation.h"

#include "tempra/core/grad_node.h"

#include "tempra/backend/scalar/movement.h"
#include "tempra/core/rng.h"
#include "tempra/ops/dispatch.h"

namespace tempra {

Array full(ExecContext& ctx, const Dims& shape, double value, DType dtype) {
  Array out = Array::empty(ctx, shape, dtype);
  visit_dtype(dtype, "full", [&](auto tag) {
    using T = decltype(tag);
    scalar::fill<T>(out.ref<T>(), scalar::convert_element<T>(value));
  });
  return out;
}

Array arange(ExecContext& ctx, int64_t n, DType dtype) {
  check(n >= 0, "arange", "length must be >= 0, got ", n);
  Array out = Array::empty(ctx, {n}, dtype);
  visit_dtype(dtype, "arange", [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = scalar::convert_element<T>(static_cast<double>(i));
  });
  return out;
}

namespace {
template <class Draw>
Array random_fill(ExecContext& ctx, const Dims& shape, Draw draw) {
  Array out = Array::empty(ctx, shape, DType::f32);
  float* p = out.data<float>();
  ctx.threads().parallel_for(out.numel(), 16384, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) p[i] = draw(static_cast<uint64_t>(i));
  });
  return out;
}
}  // namespace

Array uniform(ExecContext& ctx, const Dims& shape, double low, double high, uint64_t seed, uint64_t offset) {
  check(low <= high, "uniform", "low ", low, " exceeds high ", high);
  const float lo = static_cast<float>(low), span = static_cast<float>(high - low);
  return random_fill(ctx, shape,
                     [&](uint64_t i) { return lo + span * CounterRng::uniform(seed, offset + i); });
}

Array normal(ExecContext& ctx, const Dims& shape, double mean, double stddev, uint64_t seed, uint64_t offset) {
  check(stddev >= 0, "normal", "stddev must be >= 0, got ", stddev);
  const float mu = static_cast<float>(mean), sigma = static_cast<float>(stddev);
  return random_fill(ctx, shape,
                     [&](uint64_t i) { return mu + sigma * CounterRng::normal(seed, offset + i); });
}

Array uniform(ExecContext& ctx, const Dims& shape, double low, double high) {
  check(low <= high, "uniform", "low ", low, " exceeds high ", high);  // before the stream advances
  for (int64_t extent : shape) check(extent >= 0, "uniform", "negative extent in shape ", shape);
  const uint64_t offset = ctx.rng().advance(static_cast<uint64_t>(shape.product()));
  return uniform(ctx, shape, low, high, ctx.rng().seed, offset);
}

Array normal(ExecContext& ctx, const Dims& shape, double mean, double stddev) {
  check(stddev >= 0, "normal", "stddev must be >= 0, got ", stddev);  // before the stream advances
  for (int64_t extent : shape) check(extent >= 0, "normal", "negative extent in shape ", shape);
  const uint64_t offset = ctx.rng().advance(static_cast<uint64_t>(shape.product()));
  return normal(ctx, shape, mean, stddev, ctx.rng().seed, offset);
}

void copy_into(ExecContext& ctx, const Array& src, const Array& dst) {
  check(src.defined() && dst.defined(), "copy_into", "empty array");
  check(src.shape() == dst.shape(), "copy_into", "shapes differ: ", src.shape(), " vs ", dst.shape());
  check(src.dtype() == dst.dtype(), "copy_into", "dtypes differ: ", src.dtype().name(), " vs ", dst.dtype().name());
  visit_dtype(src.dtype(), "copy_into", [&](auto tag) {
    using T = decltype(tag);
    scalar::convert<T, T>(src.cref<T>(), dst.ref<T>(), ctx.threads());
  });
}

namespace {

// Contiguous f16/bf16 <-> f32 through the backend's vectorized conversions (the same bits as
// the element-by-element convert). Returns false for any other pair.
bool convert_half_run(ExecContext& ctx, const Array& x, Array& out) {
  const Kernels& k = kernels_for(ctx.backend());
  const DType from = x.dtype(), to = out.dtype();
  const int64_t n = x.numel();
  if (from == DType::f16 && to == DType::f32) k.f16_to_f32(x.data<f16_t>(), out.data<float>(), n, ctx.threads());
  else if (from == DType::bf16 && to == DType::f32) k.bf16_to_f32(x.data<bf16_t>(), out.data<float>(), n, ctx.threads());
  else if (from == DType::f32 && to == DType::f16) k.f32_to_f16(x.data<float>(), out.data<f16_t>(), n, ctx.threads());
  else if (from == DType::f32 && to == DType::bf16) k.f32_to_bf16(x.data<float>(), out.data<bf16_t>(), n, ctx.threads());
  else return false;
  return true;
}

}  // namespace

namespace {

Array cast_value(ExecContext& ctx, const Array& x, DType dtype) {
  check(x.defined(), "cast", "input is an empty array");
  Array out = Array::empty(ctx, x.shape(), dtype);
  if (x.is_contiguous() && convert_half_run(ctx, x, out)) return out;
  visit_dtype(x.dtype(), "cast", [&](auto from_tag) {
    using From = decltype(from_tag);
    visit_dtype(dtype, "cast", [&](auto to_tag) {
      using To = decltype(to_tag);
      scalar::convert<To, From>(x.cref<From>(), out.ref<To>(), ctx.threads());
    });
  });
  return out;
}

}  // namespace

// The VJP of a cast is the cast back: a float-to-float conversion's derivative is 1.
Array cast(ExecContext& ctx, const Array& x, DType dtype) {
  if (!any_requires_grad({&x})) return cast_value(ctx, x, dtype);
  check(dtype.is_floating(), "cast", "casting a value that requires a gradient to ", dtype.name(),
        " would drop its gradient; detach() it first");
  Array out = cast_value(ctx, x.detach(), dtype);
  attach_grad_node(out, "cast", {x}, [from = x.dtype()](ExecContext& c, const Array& g, const std::vector<bool>&) {
    return std::vector<Array>{cast_value(c, g, from)};
  });
  return out;
}

Array copy(ExecContext& ctx, const Array& x) { return cast(ctx, x, x.dtype()); }

Array contiguous(ExecContext& ctx, const Array& x) {
  check(x.defined(), "contiguous", "input is an empty array");
  return x.is_contiguous() ? x : copy(ctx, x);
}

template <class T>
std::vector<T> to_vector(ExecContext& ctx, const Array& x) {
  const Array c = cast(ctx, x, dtype_of<T>::value);
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}

template std::vector<float> to_vector<float>(ExecContext&, const Array&);
template std::vector<double> to_vector<double>(ExecContext&, const Array&);
template std::vector<int32_t> to_vector<int32_t>(ExecContext&, const Array&);
template std::vector<int64_t> to_vector<int64_t>(ExecContext&, const Array&);
template std::vector<uint8_t> to_vector<uint8_t>(ExecContext&, const Array&);

namespace detail {
Array index_as_i64(ExecContext& ctx, const Array& index, const char* op) {
  check(index.defined(), op, "index is an empty array");
  check(index.dtype() == DType::i64 || index.dtype() == DType::i32, op, "indices must be i32 or i64, got ",
        index.dtype().name(), " with shape ", index.shape());
  return index.dtype() == DType::i64 ? contiguous(ctx, index) : cast(ctx, index, DType::i64);
}
}  // namespace detail

}  // namespace tempra
