// cmake/int8_dot_probe.cpp: does the compiler vectorize a mixed-sign int8 dot product correctly?
//
// g++ 12 with -march=native on CPUs that have AVX512-VNNI / AVX-VNNI turns this loop (unsigned
// nibble codes times signed bytes, as every quantized dot product has) into wrong code: it
// returns 12640 instead of 352. CMakeLists.txt compiles and runs this probe with the build's
// flags and, if it fails, disables the VNNI extensions for the auto-vectorizer. The same loop
// is a regression test (tests/backend/toolchain_test.cpp). Exit status 0 means correct.
#include <cstdint>

struct Q4 { uint16_t d; uint8_t qs[16]; };
struct Q8 { uint16_t d; int8_t qs[32]; };

static inline int nibble(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4; }

__attribute__((noinline)) int int8_dot(const Q4* x, const Q8* y) {
  int s = 0;
  for (int j = 0; j < 32; ++j) s += (nibble(x->qs, j) - 8) * y->qs[j];
  return s;
}

int main() {
  Q4 x{};
  Q8 y{};
  for (int j = 0; j < 16; ++j) x.qs[j] = static_cast<uint8_t>((j % 16) | (((j * 3) % 16) << 4));
  for (int j = 0; j < 32; ++j) y.qs[j] = static_cast<int8_t>(j - 10);
  return int8_dot(&x, &y) == 352 ? 0 : 1;
}
