#!/usr/bin/env bash
# bench/run_families.sh: every architecture tempra runs against llama.cpp, on synthesized models
# of realistic small shapes (issue 17's table), for docs/BENCHMARK.md.
#
# Usage: [BUILD=build/release] [MODELS=/tmp/tempra_family_bench] [THREADS=2] [REPS=3]
#        [PROMPT=512] [GEN=128] [ENTRIES="..."] bench/run_families.sh
# - Each entry is ARCH:PRESET:TYPE[:LAYERS[:LLAMA_CPU_VARIANT]]: the model `tempra synth --arch
#   ARCH --preset PRESET --type TYPE [--layers LAYERS]` writes (random weights, synthetic vocab;
#   quantized types through tempra's quantizer, byte-identical to llama.cpp's), synthesized
#   once into MODELS and reused; then one paired run of `qwen3_bench speed` (tempra, then
#   llama.cpp, per repetition; medians of REPS): a PROMPT-token prefill, then GEN decode steps.
# - LLAMA_CPU_VARIANT (the entry's fifth field, else the environment's) makes llama.cpp load that
#   CPU variant of the oracle's libraries: on AMX machines its default (sapphirerapids) aborts
#   while reserving DeepSeek-V2's F16 graph, so that entry runs zen4 (AVX-512 VNNI/BF16, no AMX).
# Prints `uptime` before each model: the machine may be shared, and load moves timings.
set -euo pipefail

BUILD=${BUILD:-build/release}
MODELS=${MODELS:-/tmp/tempra_family_bench}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
PROMPT=${PROMPT:-512}
GEN=${GEN:-128}
ENTRIES=${ENTRIES:-"llama:1b:Q8_0 gemma3:1b:Q8_0 qwen3moe:a3b-8l:F16:2 qwen3moe:a3b-8l:Q8_0:2 qwen3moe:a3b-8l:Q4_K_M:2
qwen35:0.8b:F16 qwen35:0.8b:Q8_0 qwen35:0.8b:Q4_K_M deepseek2:lite-4l:F16::zen4"}
BENCH="$BUILD/bench/qwen3_bench"
TEMPRA="$BUILD/bin/tempra"
for tool in "$BENCH" "$TEMPRA"; do
  if [ ! -x "$tool" ]; then
    echo "run_families.sh: $tool not found (configure with -DTEMPRA_BUILD_BENCH=ON and build)" >&2
    exit 1
  fi
done
mkdir -p "$MODELS"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
for entry in $ENTRIES; do
  IFS=: read -r arch preset type layers variant <<< "$entry"
  if [ -z "$arch" ] || [ -z "$preset" ] || [ -z "$type" ]; then
    echo "run_families.sh: entries are ARCH:PRESET:TYPE[:LAYERS[:VARIANT]], got '$entry'" >&2
    exit 2
  fi
  path="$MODELS/$arch-$preset${layers:+-${layers}l}-$type.gguf"
  if [ ! -f "$path" ]; then
    echo "# synthesizing $path" >&2
    "$TEMPRA" synth --arch "$arch" --preset "$preset" --type "$type" ${layers:+--layers "$layers"} "$path" >&2
  fi
  variant=${variant:-${LLAMA_CPU_VARIANT:-}}
  echo "## $arch $preset $type${layers:+ ($layers layers)} ($(du -h "$path" | cut -f1)), threads $THREADS," \
       "llama.cpp CPU variant: ${variant:-the best for this CPU}; load before: $(uptime | sed 's/.*load/load/')"
  LLAMA_CPU_VARIANT="$variant" "$BENCH" speed "$path" --threads "$THREADS" --prompt "$PROMPT" --gen "$GEN" \
    --reps "$REPS"
done
