#!/usr/bin/env bash
# bench/build_llama_native.sh: builds llama.cpp's llama-bench natively for this CPU (CPU backend
# only, GGML_NATIVE: -march=native) from the source the oracle bundles (tools/oracle/install.sh),
# outside the repo, for bench/run_qwen3.sh's `native` part: issue 15 compares tempra against the
# faster of this build and the oracle's prebuilt libraries. Once per machine: the build is kept
# in LLAMA_NATIVE_DIR (default /tmp/llama-native) under the CPU's model name and flags, and
# rebuilt when the CPU differs (machines of this project's kind change from day to day).
# ~20 minutes on 2 cores; run nothing else heavy meanwhile. Prints llama-bench's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="${TEMPRA_ORACLE_DIR:-$root/.oracle}/llama-src"
out="${LLAMA_NATIVE_DIR:-/tmp/llama-native}"
if [ ! -f "$src/CMakeLists.txt" ]; then
  echo "build_llama_native.sh: $src missing (run tools/oracle/install.sh first)" >&2
  exit 1
fi
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $(grep -m1 '^flags' /proc/cpuinfo | md5sum | cut -c1-12)"
bench="$out/bin/llama-bench"
if [ -x "$bench" ] && [ "$(cat "$out/built-for" 2>/dev/null)" = "$cpu" ]; then
  echo "$bench"
  exit 0
fi
rm -rf "$out"
echo "# building llama-bench natively for: $cpu (into $out)" >&2
cmake -S "$src" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >&2
cmake --build "$out" --target llama-bench -j "$(nproc)" >&2
echo "$cpu" > "$out/built-for"
echo "$bench"
