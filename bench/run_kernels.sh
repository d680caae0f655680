#!/usr/bin/env bash
# bench/run_kernels.sh: runs bench/kernels_bench and prints native's speedup over scalar per kernel.
#
# Usage: [BUILD=build/bench] bench/run_kernels.sh [out.json] [kernels_bench flags, e.g. --benchmark_filter=softmax]
# Three repetitions per benchmark; the table shows median wall-clock times per call and the
# speedup scalar time / native time (above 1: native is faster), same shape and thread count.
set -euo pipefail

BUILD=${BUILD:-build/bench}
OUT_JSON=${1:-/tmp/kernels.json}
[ $# -gt 0 ] && shift
BINARY="$BUILD/bench/kernels_bench"
if [ ! -x "$BINARY" ]; then
  echo "run_kernels.sh: $BINARY not found (configure with -DTEMPRA_BUILD_BENCH=ON)" >&2
  exit 1
fi

"$BINARY" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out="$OUT_JSON" --benchmark_out_format=json "$@"

python3 - "$OUT_JSON" <<'PY'
import json, sys

TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}

def parse(run_name):
    """'softmax/native/rows:256/n:4096/threads:2/real_time' -> kernel, backend, shape, threads."""
    kernel, backend, *rest = run_name.split("/")
    args = [p for p in rest if ":" in p and not p.startswith(("min_time", "repeats", "iterations"))]
    threads = next(p.split(":", 1)[1] for p in args if p.startswith("threads:"))
    shape = " ".join(p.replace(":", "=") for p in args if not p.startswith("threads:"))
    return kernel, backend, shape, threads

def show(us):
    return f"{us / 1e3:.2f} ms" if us >= 1e3 else f"{us:.1f} us"

medians = {}  # (kernel, shape, threads, backend) -> microseconds per call
rows = []     # (kernel, shape, threads), first appearance
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type") != "aggregate" or b.get("aggregate_name") != "median":
        continue
    kernel, backend, shape, threads = parse(b["run_name"])
    medians[(kernel, shape, threads, backend)] = b["real_time"] * TO_US[b["time_unit"]]
    if (kernel, shape, threads) not in rows:
        rows.append((kernel, shape, threads))

print("\nmedians of 3 repetitions, wall-clock time per call\n")
print("| kernel | shape | threads | scalar | native | speedup |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
for kernel, shape, threads in rows:
    scalar = medians.get((kernel, shape, threads, "scalar"))
    native = medians.get((kernel, shape, threads, "native"))
    speedup = f"{scalar / native:.1f}x" if scalar and native else "-"
    print(f"| {kernel} | {shape} | {threads} | {show(scalar) if scalar else '-'} | "
          f"{show(native) if native else '-'} | {speedup} |")
PY
