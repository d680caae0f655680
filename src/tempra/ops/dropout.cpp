// tempra/ops/dropout.cpp: inverted dropout with a mask that is never stored.
//
// Contract (tempra/ops/neural.h): y[i] = keep(i) ? x[i] / (1 - p) : 0, where i is the element's
// row-major index in x's shape and keep(i) = uniform(key, i) >= p with key = bits(seed, step)
// from the counter RNG (tempra/core/rng.h). The VJP applies the same mask to the gradient,
// regenerating it from (seed, step, i): dx = dy * keep(i) / (1 - p), PyTorch's
// native_dropout_backward. The scale is rounded to the compute type once, so the forward and the
// VJP multiply by the same constant. f16/bf16 compute in f32 and round once.
#include <cstdint>

#include "tempra/core/grad_node.h"
#include "tempra/core/rng.h"
#include "tempra/ops/creation.h"
#include "tempra/ops/dispatch.h"
#include "tempra/ops/neural.h"

namespace tempra {
namespace {

// The stream of one (seed, step): a second splitmix64 key, so steps never share a stream.
uint64_t dropout_key(uint64_t seed, uint64_t step) {
  return CounterRng::bits(seed, step);
}

// out = mask(x) on x's elements in row-major order; x any layout, out contiguous.
Array apply_mask(ExecContext& ctx, const Array& x_in, double p, uint64_t key) {
  const Array x = contiguous(ctx, detail::widen(ctx, x_in));
  Array out = Array::empty(ctx, x.shape(), x.dtype());
  detail::with_float_type(x.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    const T scale = p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    ctx.threads().parallel_for(x.numel(), 16384, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i)
        dst[i] = static_cast<double>(CounterRng::uniform(key, static_cast<uint64_t>(i))) >= p ? src[i] * scale : T(0);
    });
  });
  return detail::narrow(ctx, out, x_in.dtype());
}

}  // namespace

Array dropout(ExecContext& ctx, const Array& x, double p, uint64_t seed, uint64_t step) {
  detail::require_float(x, "dropout");
  check(p >= 0.0 && p <= 1.0, "dropout", "probability must lie in [0, 1], got ", p, " for input ", x.shape());
  const uint64_t key = dropout_key(seed, step);
  if (!any_requires_grad({&x})) return apply_mask(ctx, x, p, key);
  Array out = apply_mask(ctx, x.detach(), p, key);
  attach_grad_node(out, "dropout", {x}, [p, key](ExecContext& c, const Array& g, const std::vector<bool>&) {
    return std::vector<Array>{apply_mask(c, g, p, key)};
  });
  return out;
}

}  // namespace tempra
