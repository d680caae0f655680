#!/usr/bin/env bash
# scripts/fuzz.sh [seconds]: fuzzes the file readers, the server's request handling and the
# grammar compilers with libFuzzer, N seconds in all (default 60): 2/6 on the GGUF reader, 1/6
# each on the safetensors reader, the server's routes (tests/serve/serve_fuzz.cpp), grammar
# text (GBNF, JSON Schema, regex: tests/llm/grammar_fuzz.cpp) and NAM profiles
# (tests/audio/nam_fuzz.cpp).
#
# Builds the fuzz targets in the `asan` preset's tree, build/asan (clang, AddressSanitizer +
# UndefinedBehaviorSanitizer, every library instrumented for libFuzzer's coverage: the sanitizer
# test run and the fuzzers share one build; needs the Debian packages clang and
# libclang-rt-14-dev, which scripts/install-deps.sh installs), seeds each run with committed
# files (tests/io/corpus for GGUF, tests/goldens for safetensors, tests/serve/fuzz_corpus for the
# server, tests/llm/fuzz_corpus for grammars, tests/audio/fuzz_corpus for NAM profiles), and
# fails on any crash, sanitizer report, leak or timeout. New inputs go to build/asan/corpus-*,
# never to the committed files; a crashing input is saved as build/asan/crash-*.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
build=build/asan
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

cmake --preset asan >/dev/null
cmake --build --preset asan --target gguf_fuzz safetensors_fuzz serve_fuzz grammar_fuzz nam_fuzz -j "$jobs"

# fuzz NAME SECONDS SEED_DIR
fuzz() {
  mkdir -p "$build/corpus-$1"
  echo "== fuzzing $1 for ${2}s =="
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/bin/$1_fuzz" "$build/corpus-$1" "$3" \
    -max_total_time="$2" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$build/" -print_final_stats=1
}

fuzz gguf $((seconds * 2 / 6)) tests/io/corpus
fuzz safetensors $((seconds / 6)) tests/goldens
fuzz serve $((seconds / 6)) tests/serve/fuzz_corpus
fuzz grammar $((seconds / 6)) tests/llm/fuzz_corpus
fuzz nam $((seconds - seconds * 2 / 6 - 3 * (seconds / 6))) tests/audio/fuzz_corpus
