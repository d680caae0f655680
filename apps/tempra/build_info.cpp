#include "build_info.h"

#include <sstream>

// The build system passes these; the fallbacks keep the file compilable alone.
#ifndef TEMPRA_VERSION
#define TEMPRA_VERSION "unknown"
#endif
#ifndef TEMPRA_BUILD_FLAGS
#define TEMPRA_BUILD_FLAGS "unknown"
#endif

#define TEMPRA_STRINGIFY_(x) #x
#define TEMPRA_STRINGIFY(x) TEMPRA_STRINGIFY_(x)

namespace tempra::build_info {

std::string version() { return TEMPRA_VERSION; }

std::string build_flags() {
  // Collapse runs of spaces: an empty arch-flags part leaves "Release  backends=all".
  std::istringstream words(TEMPRA_BUILD_FLAGS);
  std::string word, out;
  while (words >> word) out += (out.empty() ? "" : " ") + word;
  return out;
}

std::string compiler() {
#if defined(__clang__)
  return "clang++ " TEMPRA_STRINGIFY(__clang_major__) "." TEMPRA_STRINGIFY(__clang_minor__) "." TEMPRA_STRINGIFY(
      __clang_patchlevel__);
#elif defined(__GNUC__)
  return "g++ " TEMPRA_STRINGIFY(__GNUC__) "." TEMPRA_STRINGIFY(__GNUC_MINOR__) "." TEMPRA_STRINGIFY(
      __GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

std::vector<std::string> isa_features() {
  std::vector<std::string> f;
#if defined(__x86_64__)
  f.push_back("x86-64");
#if defined(__AVX2__)
  f.push_back("avx2");
#endif
#if defined(__FMA__)
  f.push_back("fma");
#endif
#if defined(__F16C__)
  f.push_back("f16c");
#endif
#if defined(__AVX512F__)
  f.push_back("avx512f");
#endif
#if defined(__AVX512BW__)
  f.push_back("avx512bw");
#endif
#if defined(__AVX512VL__)
  f.push_back("avx512vl");
#endif
#if defined(__AVX512VNNI__)
  f.push_back("avx512vnni");
#endif
#if defined(__AVX512BF16__)
  f.push_back("avx512bf16");
#endif
#if defined(__AVX512FP16__)
  f.push_back("avx512fp16");
#endif
#if defined(__AVXVNNI__)
  f.push_back("avxvnni");
#endif
#elif defined(__aarch64__)
  f.push_back("aarch64");
#if defined(__ARM_NEON)
  f.push_back("neon");
#endif
#if defined(__ARM_FEATURE_FMA)
  f.push_back("fma");
#endif
#if defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC)
  f.push_back("fp16");
#endif
#if defined(__ARM_FEATURE_DOTPROD)
  f.push_back("dotprod");
#endif
#if defined(__ARM_FEATURE_MATMUL_INT8)
  f.push_back("i8mm");
#endif
#if defined(__ARM_FEATURE_BF16)
  f.push_back("bf16");
#endif
#if defined(__ARM_FEATURE_SVE)
  f.push_back("sve");
#endif
#else
  f.push_back("unknown-arch");
#endif
  return f;
}

}  // namespace tempra::build_info
