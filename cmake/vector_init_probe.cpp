// cmake/vector_init_probe.cpp: does the compiler build a vector from an initializer list right?
//
// g++ 12.2 (Debian 12's) at -O2 with any AVX-512 -march (skylake-avx512 and later, so
// -march=native on such CPUs) stores std::vector<double>{1, 1, 0, 0} as {1, 1, 1, 1}: its SLP
// vectorizer builds the four values with one broadcast of 1.0 and loses the zeros. Found when
// a test's {1, 1, 0, 0} reached train::centered_ranks as four ones. CMakeLists.txt compiles and
// runs this probe with the build's flags and, if it fails, turns the SLP vectorizer off
// (-fno-tree-slp-vectorize; loops still vectorize). tests/backend/toolchain_test.cpp holds the
// same construction. Exit status 0 means correct.
#include <span>
#include <vector>

__attribute__((noinline)) int check(std::span<const double> s) {
  return s.size() == 4 && s[0] == 1 && s[1] == 1 && s[2] == 0 && s[3] == 0 ? 0 : 1;
}

int main() {
  std::vector<double> v{1, 1, 0, 0};
  return check(v);
}
