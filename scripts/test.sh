#!/usr/bin/env bash
# scripts/test.sh: the README's second command, and what CI runs. Installs dependencies if
# missing, then builds and runs the whole suite twice: the host-tuned release build (g++), and a
# clang debug build under AddressSanitizer + UndefinedBehaviorSanitizer (the `asan` preset, which
# also builds the libFuzzer targets; its test preset leaves out the `heavy` label); then runs the
# native backend's parity suite on the SIMD arms this host does not pick itself (AVX2, and NEON
# under qemu: scripts/test-native-arms.sh), and fuzzes the GGUF, safetensors and NAM readers,
# the server and the grammar compilers for a minute in the asan tree (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc 2>/dev/null || echo 2)
scripts/install-deps.sh

echo "== release =="
cmake --preset release
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"

echo "== asan + ubsan =="
cmake --preset asan
cmake --build --preset asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan -j "$jobs"

echo "== native arms =="
scripts/test-native-arms.sh

echo "== fuzz =="
scripts/fuzz.sh 60
