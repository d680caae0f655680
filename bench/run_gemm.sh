#!/usr/bin/env bash
# bench/run_gemm.sh: runs bench/gemm_bench and prints tempra against OpenBLAS, GFLOP/s per shape.
#
# Usage: [BUILD=build/bench] bench/run_gemm.sh [out.json] [gemm_bench flags, e.g. --benchmark_filter=sweep]
# Three repetitions per benchmark; the table shows medians and the ratio tempra / OpenBLAS
# (above 1: tempra is faster). OpenBLAS runs with the kernel that fits this CPU
# (bench/openblas_core.sh says which and why).
# The half-weight rows (weights_f16, weights_bf16) have no OpenBLAS
# counterpart; they are set beside OpenBLAS's f32 sgemm on the same weights shape, marked (f32).
set -euo pipefail

BUILD=${BUILD:-build/bench}
OUT_JSON=${1:-/tmp/gemm.json}
[ $# -gt 0 ] && shift
source "$(dirname "$0")/openblas_core.sh"
BINARY="$BUILD/bench/gemm_bench"
if [ ! -x "$BINARY" ]; then
  echo "run_gemm.sh: $BINARY not found (configure with -DTEMPRA_BUILD_BENCH=ON; needs libopenblas-dev)" >&2
  exit 1
fi

"$BINARY" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out="$OUT_JSON" --benchmark_out_format=json "$@"

python3 - "$OUT_JSON" <<'PY'
import json, os, sys


def parse(run_name):
    """'square/tempra/m:64/n:64/k:64/threads:2/min_time:0.300/real_time' -> group, library, args."""
    group, library, *rest = run_name.split("/")
    args = dict(p.split(":", 1) for p in rest if ":" in p and not p.startswith(("min_time", "repeats", "iterations")))
    return group, library, args

medians = {}  # (group, library, m, n, k, threads) -> GFLOP/s
order = []    # (group, m, n, k, threads), first appearance
report = json.load(open(sys.argv[1]))
for b in report["benchmarks"]:
    if b.get("run_type") != "aggregate" or b.get("aggregate_name") != "median":
        continue
    group, library, a = parse(b["run_name"])
    shape = (a["m"], a["n"], a["k"], a["threads"])
    medians[(group, library) + shape] = b["GFLOP/s"]
    if (group,) + shape not in order:
        order.append((group,) + shape)

core = report["context"].get("openblas_core", "?")
print(f"\nOPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')} (OpenBLAS core: {core}); medians of 3 repetitions\n")
print("| shape | threads | tempra GFLOP/s | OpenBLAS GFLOP/s | tempra / OpenBLAS |")
print("| --- | ---: | ---: | ---: | ---: |")
# The thread counts of one shape on adjacent rows; groups and shapes in the order they ran.
first_seen = {}
for key in order:
    first_seen.setdefault(key[:4], len(first_seen))
order.sort(key=lambda key: (first_seen[key[:4]], int(key[4])))
for group, m, n, k, threads in order:
    tempra = medians.get((group, "tempra", m, n, k, threads))
    if tempra is None:
        continue
    openblas, mark = medians.get((group, "openblas", m, n, k, threads)), ""
    if openblas is None and group in ("weights_f16", "weights_bf16"):
        openblas, mark = medians.get(("weights", "openblas", m, n, k, threads)), " (f32)"
    ob = f"{openblas:.1f}{mark}" if openblas else "-"
    ratio = f"{tempra / openblas:.2f}" if openblas else "-"
    print(f"| {group} {m}x{n}x{k} | {threads} | {tempra:.1f} | {ob} | {ratio} |")
PY
