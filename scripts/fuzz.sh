#!/usr/bin/env bash
# scripts/fuzz.sh [seconds]: fuzzes the GGUF reader with libFuzzer for N seconds (default 60).
#
# Builds build/fuzz with clang, AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer
# (needs the Debian packages clang and libclang-rt-14-dev; scripts/install-deps.sh installs
# them), seeds the run with the committed corpus tests/io/corpus, and fails on any crash,
# sanitizer report, leak or timeout. New inputs go to build/fuzz/corpus, never to the committed
# corpus; a crashing input is saved as build/fuzz/crash-*.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
build=build/fuzz
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTEMPRA_FUZZ=ON -DTEMPRA_SANITIZE=ON -DTEMPRA_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target gguf_fuzz -j "$jobs"

mkdir -p "$build/corpus"
echo "== fuzzing the GGUF reader for ${seconds}s =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$build/bin/gguf_fuzz" "$build/corpus" tests/io/corpus \
  -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$build/" -print_final_stats=1
