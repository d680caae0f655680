// tempra/audio/lanes.h: the two widths the audio models compute in (internal to src/tempra/audio).
//
// The models are written once against a lane type L: L::V, L::kLanes, load/store/set1/fma/add/
// mul, tanh, and row activations over a whole number of lanes. ScalarLanes is one float wide, the
// readable specification (AmpOptions::backend = scalar); NativeLanes is the native backend's
// vector of the arm this build targets (backend/native/simd.h: 16 lanes on AVX-512, 8 on AVX2, 4
// on NEON), defined where the build has that arm (TEMPRA_AUDIO_NATIVE). The LSTM's cell update
// runs in NativeCellLanes: 8 lanes on AVX-512 (half a vector), NativeLanes elsewhere.
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
  // NAM's fast tanh, or the C library's tanh.
  static V tanh(V x, bool fast) { return fast ? fast_tanh(x) : std::tanh(x); }
  static void activate(Activation activation, float* x, int n) { apply_activation(activation, x, n); }
  static void sigmoid(float* x, int n, bool fast) {
    for (int i = 0; i < n; ++i) x[i] = fast ? fast_sigmoid(x[i]) : audio::sigmoid(x[i]);
  }
};

#if TEMPRA_AUDIO_NATIVE
// activation.h's fast_tanh, operation for operation, in any lane type O with abs, add, mul, fma,
// div and set1.
template <class O>
typename O::V fast_tanh_of(typename O::V x) {
  const auto ax = O::abs(x), x2 = O::mul(x, x);
  const auto numerator = O::mul(x, O::fma(O::fma(O::set1(0.821226666969744f), ax, O::set1(0.893229853513558f)), x2,
                                          O::fma(O::set1(2.45550750702956f), ax, O::set1(2.45550750702956f))));
  const auto denominator = O::fma(O::add(O::set1(2.44506634652299f), x2),
                                  O::fma(O::mul(O::set1(0.814642734961073f), ax), ax, ax), O::set1(2.44506634652299f));
  return O::div(numerator, denominator);
}

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
  static V div(V a, V b) { return native::simd::div(a, b); }
  static V abs(V a) { return native::simd::abs(a); }
  // NAM's fast tanh, or the native backend's tanh (within ~1e-6 relative of the C library's).
  static V tanh(V x, bool fast) { return fast ? fast_tanh(x) : native::tanh(x); }

  static V fast_tanh(V x) { return fast_tanh_of<NativeLanes>(x); }

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

// The LSTM's cell update runs eight units at a time (lstm.h). On AVX-512 that is half a vector,
// computed in the 8-lane registers (a full vector's masked loads and stores would stall the
// store-to-load forwarding that the next step's gate products read h through); on AVX2 and NEON
// it is the arm's own vectors.
#if TEMPRA_SIMD_AVX512
#ifndef __FMA__
#error "the AVX-512 arm's 8-lane cell vectors use FMA (every AVX-512 -march has it)"
#endif
struct NativeCellLanes {
  using V = __m256;
  static constexpr int kLanes = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  // NAM's fast tanh, or the native backend's tanh on the vector this half zero-extends to.
  static V tanh(V x, bool fast) {
    return fast ? fast_tanh_of<NativeCellLanes>(x) : _mm512_castps512_ps256(native::tanh(_mm512_zextps256_ps512(x)));
  }
};
#else
using NativeCellLanes = NativeLanes;
#endif
#endif

}  // namespace tempra::audio
