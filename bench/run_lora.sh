#!/usr/bin/env bash
# bench/run_lora.sh: one LoRA fine-tuning step on Qwen3-0.6B's shape, tempra against PyTorch 1.13
# (bench/lora_bench.cpp, bench/lora_bench_torch.py), for docs/BENCHMARK.md.
#
# Usage: [BUILD=build/release] [MODELS=/tmp/tempra_lora_bench] [THREADS=2] [ROUNDS=3] [STEPS=2]
#        [TYPES="Q8_0 F16"] [CHECKPOINT="1 0"] bench/run_lora.sh
# CHECKPOINT: tempra with activation checkpointing per block (1, `tempra finetune`'s default)
# and without (0, `--no-checkpoint-activations`); each mode is its own run against PyTorch.
# Each base is synthesized once with `tempra synth --preset 0.6b --type TYPE` (random weights,
# real tokenizer) into MODELS and reused. For each type: alternating rounds of tempra and of
# PyTorch (its f32 base), medians, then each side's peak RSS. Prints `uptime` first: the machine
# may be shared, and load moves timings. PyTorch's matmuls are Debian's OpenBLAS: it runs with the
# kernel that fits this CPU (bench/openblas_core.sh) on THREADS threads of its own, its fastest
# setting measured here (a 256 x 1024 x 3072 product: 38 GFLOP/s on the SSE3 kernel OpenBLAS picks
# by itself on recent Xeons, 179-186 with SkylakeX; records before 2026-12-06 ran the SSE3 kernel).
set -euo pipefail

BUILD=${BUILD:-build/release}
MODELS=${MODELS:-/tmp/tempra_lora_bench}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-2}
TYPES=${TYPES:-"Q8_0 F16"}
CHECKPOINT=${CHECKPOINT:-"1 0"}
mkdir -p "$MODELS"
source "$(dirname "$0")/openblas_core.sh"
export OPENBLAS_NUM_THREADS=$THREADS
lscpu | grep -m1 'Model name'
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(OpenBLAS picks)} OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS"
/usr/bin/python3 -c 'import torch; print("torch", torch.__version__)'
for type in $TYPES; do
  model="$MODELS/qwen3-0.6b-$type.gguf"
  [ -f "$model" ] || "$BUILD/bin/tempra" synth --preset 0.6b --type "$type" "$model"
  for checkpoint in $CHECKPOINT; do
    uptime
    echo "$type, activation checkpointing $checkpoint"
    "$BUILD/bench/lora_bench" --model "$model" --threads "$THREADS" --rounds "$ROUNDS" --steps "$STEPS" --warmup 1 \
      --checkpoint-activations "$checkpoint"
  done
done
