// tempra/audio/lanes.h: the two widths the audio models compute in (internal to src/tempra/audio).
//
// The models are written once against a lane type L: L::V, L::kLanes, load/store/set1/fma/add/
// mul, partial loads and stores, tanh, and row activations over a whole number of lanes. ScalarLanes is one float wide,
// the readable specification (AmpOptions::backend = scalar); NativeLanes is the native backend's vector of the arm this
// build targets (backend/native/simd.h: 16 lanes on AVX-512, 8 on AVX2, 4 on NEON), defined where the build has that
// arm (TEMPRA_AUDIO_NATIVE).
#pragma once

#include <cmath>

#include "tempra/audio/activation.h"
#include "tempra/backend/native/activations.h"
#include "tempra/backend/native/simd.h"

#if defined(TEMPRA_NATIVE_BACKEND) && defined(TEMPRA_SIMD_ARM)
#define TEMPRA_AUDIO_NATIVE 1
#else
#define TEMPRA_AUDIO_NATIVE 0
#endif

namespace tempra::audio {

// The scalar backend: one lane, the plain loops every other width must agree with.
struct ScalarLanes {
  using V = float;
  static constexpr int kLanes = 1;
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V set1(float x) { return x; }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }
  static V add(V a, V b) { return a + b; }
  static V mul(V a, V b) { return a * b; }
  // The first n lanes (1 <= n <= kLanes); one lane is always whole.
  static V load_partial(const float* p, int) { return *p; }
  static void store_partial(float* p, V v, int) { *p = v; }
  // NAM's fast tanh, or the C library's tanh.
  static V tanh(V x, bool fast) { return fast ? fast_tanh(x) : std::tanh(x); }
  static void activate(Activation activation, float* x, int n) { apply_activation(activation, x, n); }
  static void sigmoid(float* x, int n, bool fast) {
    for (int i = 0; i < n; ++i) x[i] = fast ? fast_sigmoid(x[i]) : audio::sigmoid(x[i]);
  }
};

#if TEMPRA_AUDIO_NATIVE
// The native backend: the arm's vectors (backend/native/simd.h).
struct NativeLanes {
  using V = native::simd::V;
  static constexpr int kLanes = native::simd::kLanes;
  static V load(const float* p) { return native::simd::load(p); }
  static void store(float* p, V v) { native::simd::store(p, v); }
  static V set1(float x) { return native::simd::set1(x); }
  static V fma(V a, V b, V c) { return native::simd::fma(a, b, c); }
  static V add(V a, V b) { return native::simd::add(a, b); }
  static V mul(V a, V b) { return native::simd::mul(a, b); }
  static V load_partial(const float* p, int n) { return native::simd::load_partial(p, n); }
  static void store_partial(float* p, V v, int n) { native::simd::store_partial(p, v, n); }
  // NAM's fast tanh, or the native backend's tanh (within ~1e-6 relative of the C library's).
  static V tanh(V x, bool fast) { return fast ? fast_tanh(x) : native::tanh(x); }

  // activation.h's fast_tanh, operation for operation (no contraction into FMAs).
  static V fast_tanh(V x) {
    using namespace native::simd;
    const V ax = abs(x), x2 = mul(x, x);
    const V numerator = mul(x, add(add(set1(2.45550750702956f), mul(set1(2.45550750702956f), ax)),
                                   mul(add(set1(0.893229853513558f), mul(set1(0.821226666969744f), ax)), x2)));
    const V denominator = add(set1(2.44506634652299f), mul(add(set1(2.44506634652299f), x2),
                                                           abs(add(x, mul(mul(set1(0.814642734961073f), x), ax)))));
    return div(numerator, denominator);
  }

  // n is a whole number of lanes. tanh and sigmoid are the native backend's (within ~1e-6
  // relative of the C library's); the rarely used ones fall back to the scalar loops.
  static void activate(Activation activation, float* x, int n) {
    using namespace native::simd;
    switch (activation) {
      case Activation::tanh:
        for (int i = 0; i < n; i += kLanes) store(x + i, native::tanh(load(x + i)));
        return;
      case Activation::fast_tanh:
        for (int i = 0; i < n; i += kLanes) store(x + i, fast_tanh(load(x + i)));
        return;
      case Activation::sigmoid:
        for (int i = 0; i < n; i += kLanes) store(x + i, native::sigmoid(load(x + i)));
        return;
      case Activation::relu:  // max_raw returns its second operand for NaN: relu(NaN) = 0 as in NAM
        for (int i = 0; i < n; i += kLanes) store(x + i, max_raw(load(x + i), zero()));
        return;
      default:
        apply_activation(activation, x, n);
    }
  }
  // NAM's sigmoid, or its fast sigmoid 0.5 (fast_tanh(x / 2) + 1) with fast tanh on (the LSTM).
  static void sigmoid(float* x, int n, bool fast) {
    using namespace native::simd;
    for (int i = 0; i < n; i += kLanes) {
      const V v = load(x + i);
      store(x + i, fast ? mul(set1(0.5f), add(fast_tanh(mul(v, set1(0.5f))), set1(1.0f))) : native::sigmoid(v));
    }
  }
};
#endif

}  // namespace tempra::audio
