#!/usr/bin/env bash
# bench/run_amp.sh: tempra's NAM models against NAM's own core, native and WebAssembly, on the
# same profiles (bench/amp_bench.cpp writes them), one thread, for docs/BENCHMARK.md.
#
# Usage: [BUILD=build/release] [NAM_CORE_DIR=path/to/NeuralAmpModelerCore] [NAM_MARCH=native]
#        [AUDIO_SECONDS=10] [BLOCK=64] [REPS=5] bench/run_amp.sh
# (BUILD=build/avx2 NAM_MARCH=haswell compares the AVX2 arms on an AVX-512 machine: a development
# figure; the record keeps real AVX2 hardware when a machine has it.)
# - tempra: bench/amp_bench (configure with -DTEMPRA_BUILD_BENCH=ON), median real-time factor.
# - NAM native: NAM_CORE_DIR is a NeuralAmpModelerCore checkout (its source is public; it is
#   never part of this repository): bench/nam_core_driver.cpp is compiled against it once with
#   g++ -O3 -march=$NAM_MARCH (native unless set), Debian's Eigen (libeigen3-dev) and
#   nlohmann-json, into $BUILD/namcore. Skipped with a note when NAM_CORE_DIR is unset.
# - NAM WebAssembly: @opendaw/nam-wasm from the oracle (tools/oracle/install.sh) under node.
# Each column is a median of REPS passes over AUDIO_SECONDS of audio in BLOCK-sample calls; the ratio
# is tempra's RTF over NAM native's. Prints `uptime` first: the machine may be shared.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build/release}
SECONDS_OF_AUDIO=${AUDIO_SECONDS:-10}
BLOCK=${BLOCK:-64}
REPS=${REPS:-5}
PROFILES="$BUILD/bench-amp-profiles"
BENCH="$BUILD/bench/amp_bench"
WASM=".oracle/node_modules/@opendaw/nam-wasm/dist"
[ -x "$BENCH" ] || { echo "run_amp.sh: $BENCH not found (configure with -DTEMPRA_BUILD_BENCH=ON, build amp_bench)" >&2; exit 1; }

driver=""
if [ -n "${NAM_CORE_DIR:-}" ]; then
  march=${NAM_MARCH:-native}
  driver="$BUILD/namcore/nam_core_driver-$march"
  if [ ! -x "$driver" ] || [ bench/nam_core_driver.cpp -nt "$driver" ]; then
    scripts/apt-install-missing.sh libeigen3-dev nlohmann-json3-dev
    mkdir -p "$BUILD/namcore"
    echo "building NAM's core from $NAM_CORE_DIR (g++ -O3 -march=$march)..." >&2
    g++ -std=c++20 -O3 -march="$march" -DNDEBUG -I"$NAM_CORE_DIR" -I"$NAM_CORE_DIR/NAM" -I/usr/include/eigen3 \
      -I/usr/include/nlohmann bench/nam_core_driver.cpp "$NAM_CORE_DIR"/NAM/*.cpp "$NAM_CORE_DIR"/NAM/wavenet/*.cpp \
      -o "$driver"
  fi
else
  echo "note: NAM_CORE_DIR is not set; NAM's native core is not measured" >&2
fi

uptime
lscpu | grep -m1 "Model name"
tempra_table=$("$BENCH" --profiles "$PROFILES" --seconds "$SECONDS_OF_AUDIO" --block "$BLOCK" --reps "$REPS")
printf "%-18s %10s %10s %10s %10s %12s\n" profile tempra nam_native nam_wasm "core %" "tempra/nam"
echo "$tempra_table" | tail -n +2 | while read -r name rtf _; do
  native="-" wasm="-" ratio="-"
  if [ -n "$driver" ]; then
    native=$("$driver" "$PROFILES/$name.nam" "$SECONDS_OF_AUDIO" "$BLOCK" "$REPS")
    ratio=$(awk -v a="$rtf" -v b="$native" 'BEGIN { printf "%.2f", a / b }')
  fi
  if [ -f "$WASM/nam.wasm" ]; then
    wasm=$(node bench/amp_wasm_bench.mjs "$WASM" "$PROFILES/$name.nam" "$SECONDS_OF_AUDIO" "$BLOCK" "$REPS")
  fi
  core=$(awk -v a="$rtf" 'BEGIN { printf "%.2f", 100 / a }')
  printf "%-18s %10s %10s %10s %10s %12s\n" "$name" "$rtf" "$native" "$wasm" "$core" "$ratio"
done
