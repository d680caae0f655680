// tests/backend/toolchain_test.cpp: the compiler builds int8 dot products correctly.
//
// The loop of cmake/int8_dot_probe.cpp, compiled here with the project's flags: g++ 12 with
// -march=native miscompiles it through VNNI auto-vectorization unless CMakeLists.txt applies its
// workaround. Every quantized dot product has this shape, so this guards them all.
#include <gtest/gtest.h>

#define main int8_dot_probe_main
#include "../../cmake/int8_dot_probe.cpp"
#undef main

TEST(Toolchain, mixed_sign_int8_dot_product_is_vectorized_correctly) { EXPECT_EQ(int8_dot_probe_main(), 0); }
