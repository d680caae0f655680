// tempra/audio/activation.h: NAM's activation functions over a row of floats.
//
// The formulas are NeuralAmpModelerCore's (activations.h there): Tanh is the C library's tanhf,
// Fasttanh NAM's rational approximation (max error ~2e-4 against tanh, kept because profiles
// trained or auditioned with it name it), LeakyReLU's slope is 0.01.
#pragma once

#include <cmath>

#include "tempra/audio/nam_file.h"

namespace tempra::audio {

inline float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

// NAM's Fasttanh, x (a + a|x| + (b + c|x|) x^2) / (d + (d + x^2) |x + e x |x||), written with
// fused multiply-adds and |x + e x |x|| as |x| + e |x| |x| (equal: 1 + e |x| > 0): the same
// rational function, within an ulp or two of NAM's evaluation (which a C++ compiler contracts
// its own way anyway), and a dependency chain of 4 operations to the division instead of 6. An
// LSTM's step waits on two of these per sample.
inline float fast_tanh(float x) {
  const float ax = std::fabs(x), x2 = x * x;
  const float numerator = x * std::fma(std::fma(0.821226666969744f, ax, 0.893229853513558f), x2,
                                       std::fma(2.45550750702956f, ax, 2.45550750702956f));
  const float denominator =
      std::fma(2.44506634652299f + x2, std::fma(0.814642734961073f * ax, ax, ax), 2.44506634652299f);
  return numerator / denominator;
}

// NAM's companion of fast_tanh, which its LSTM gates use when fast tanh is on.
inline float fast_sigmoid(float x) {
  return 0.5f * (fast_tanh(x * 0.5f) + 1.0f);
}

// x[i] = activation(x[i]) for i < n.
inline void apply_activation(Activation activation, float* x, int n) {
  switch (activation) {
    case Activation::tanh:
      for (int i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      return;
    case Activation::fast_tanh:
      for (int i = 0; i < n; ++i) x[i] = fast_tanh(x[i]);
      return;
    case Activation::hard_tanh:
      for (int i = 0; i < n; ++i) x[i] = x[i] < -1.0f ? -1.0f : (x[i] > 1.0f ? 1.0f : x[i]);
      return;
    case Activation::relu:
      for (int i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
    case Activation::leaky_relu:
      for (int i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.01f * x[i];
      return;
    case Activation::sigmoid:
      for (int i = 0; i < n; ++i) x[i] = sigmoid(x[i]);
      return;
    case Activation::silu:
      for (int i = 0; i < n; ++i) x[i] = x[i] * sigmoid(x[i]);
      return;
    case Activation::hardswish:
      for (int i = 0; i < n; ++i) {
        const float t = x[i] + 3.0f;
        x[i] = x[i] * (t < 0.0f ? 0.0f : (t > 6.0f ? 6.0f : t)) * (1.0f / 6.0f);
      }
      return;
  }
}

}  // namespace tempra::audio
