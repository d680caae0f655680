#!/usr/bin/env bash
# scripts/test-native-arms.sh: builds and runs the native backend's parity tests on the SIMD arms
# this host does not select by itself (src/tempra/backend/native/simd.h):
#
#   neon  cross-compiled for aarch64 (cmake/aarch64-linux-gnu.cmake) into build/neon and run
#         under qemu-aarch64; the cross build has only the libraries and the parity tests
#   avx2  the `avx2` preset (-march=haswell: AVX2 + FMA, no AVX-512) in build/avx2
#   blas  the host arm with the optional OpenBLAS GEMM provider, in build/blas
#
# Installs the cross toolchain, qemu-user and GoogleTest's sources if missing (sudo when not
# root), and for the avx2 build what scripts/install-deps.sh installs. Exits non-zero if
# anything fails to build or any test fails. JOBS overrides the build parallelism (nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
# The parity test binaries (tests/backend/CMakeLists.txt); the only tests a cross build has.
targets=(backend_native_parity_test)

packages=(cmake ninja-build g++-aarch64-linux-gnu qemu-user googletest)
scripts/apt-install-missing.sh "${packages[@]}"

echo "== neon (aarch64, qemu) =="
cmake -S . -B build/neon -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DTEMPRA_ARCH=-march=armv8-a
cmake --build build/neon -j "$jobs" --target "${targets[@]}"
# ctest starts each test through CMAKE_CROSSCOMPILING_EMULATOR (qemu-aarch64 -L ...).
ctest --test-dir build/neon -j "$jobs" --output-on-failure --no-tests=error

echo "== avx2 =="
# A host build configures the whole suite, which needs the host packages and the llama.cpp
# oracle even though only the parity tests are built here.
scripts/install-deps.sh
cmake --preset avx2
cmake --build build/avx2 -j "$jobs" --target "${targets[@]}"
# The avx2 build configures the whole suite; run just the parity binaries, not all of ctest.
for t in "${targets[@]}"; do
  "build/avx2/tests/backend/$t"
done
echo "== openblas provider (-DTEMPRA_BLAS=openblas) =="
cmake -S . -B build/blas -G Ninja -DCMAKE_BUILD_TYPE=Release -DTEMPRA_BLAS=openblas
cmake --build build/blas -j "$jobs" --target "${targets[@]}"
for t in "${targets[@]}"; do
  "build/blas/tests/backend/$t"
done
echo "native arms: all parity tests passed"
