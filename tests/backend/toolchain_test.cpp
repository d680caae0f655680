// tests/backend/toolchain_test.cpp: the compiler builds int8 dot products and initializer-list
// vectors correctly.
//
// The probes of cmake/, compiled here with the project's flags: g++ 12 with -march=native
// miscompiles the int8 loop through VNNI auto-vectorization, and with AVX-512 a vector
// {1, 1, 0, 0} through SLP vectorization, unless CMakeLists.txt applies its workarounds. Every
// quantized dot product has the first shape; any code may have the second.
#include <gtest/gtest.h>

#define main int8_dot_probe_main
#include "../../cmake/int8_dot_probe.cpp"
#undef main
#define main vector_init_probe_main
#include "../../cmake/vector_init_probe.cpp"
#undef main

TEST(Toolchain, mixed_sign_int8_dot_product_is_vectorized_correctly) { EXPECT_EQ(int8_dot_probe_main(), 0); }
TEST(Toolchain, a_vector_from_an_initializer_list_keeps_its_zeros) { EXPECT_EQ(vector_init_probe_main(), 0); }
