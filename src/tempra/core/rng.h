// tempra/core/rng.h: a counter-based random number generator.
//
// Contract: every value is a pure function of (seed, index): bits(seed, i) is splitmix64's
// finalizer applied to a seed-derived stream key plus i times the golden-ratio increment
// (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014). So a fill is the
// same whatever the thread count or chunking, any element can be regenerated in O(1) without
// the others, and a dropout mask or projection never needs storing: the (seed, offset) pair is
// the whole state. Checkpoints save exactly that pair (RngState).
#pragma once

#include <cmath>
#include <cstdint>

namespace tempra {

inline constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct CounterRng {
  static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

  // 64 random bits for element `index` of stream `seed`.
  static constexpr uint64_t bits(uint64_t seed, uint64_t index) {
    return splitmix64_mix(splitmix64_mix(seed) + (index + 1) * kGolden);
  }
  // Uniform in [0, 1) with 24 random bits: every value is an exact f32.
  static float uniform(uint64_t seed, uint64_t index) {
    return static_cast<float>(bits(seed, index) >> 40) * 0x1.0p-24f;
  }
  // Standard normal by Box-Muller on the two 32-bit halves of one draw, in double: the C
  // library's log, cos and sqrt over exact products, so a reference that calls the same libm
  // (tools/es_reference.py) reproduces it bit for bit.
  static double normal_f64(uint64_t seed, uint64_t index) {
    const uint64_t b = bits(seed, index);
    const double u1 = (static_cast<double>(b >> 32) + 1.0) * 0x1.0p-32;  // (0, 1]: log is finite
    const double u2 = static_cast<double>(b & 0xffffffffull) * 0x1.0p-32;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  static float normal(uint64_t seed, uint64_t index) { return static_cast<float>(normal_f64(seed, index)); }
};

// A stream position: (seed, offset). Each draw of n values takes indices [offset, offset + n).
struct RngState {
  uint64_t seed = 0;
  uint64_t offset = 0;

  // Reserves n consecutive indices and returns the first.
  uint64_t advance(uint64_t n) {
    const uint64_t first = offset;
    offset += n;
    return first;
  }
  friend bool operator==(const RngState&, const RngState&) = default;
};

}  // namespace tempra
