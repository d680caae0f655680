#!/usr/bin/env bash
# bench/run_moe_stream.sh: tempra's expert streaming (--moe-stream) against llama.cpp running the
# same file from mmap, both under the same memory limit (a cgroup), for docs/BENCHMARK.md.
#
# Usage (as root: it makes a memory cgroup and drops the page cache before each run):
#   [BUILD=build/release] [MODEL=/tmp/tempra_moe_stream/a3b-4l-F16.gguf] [THREADS=2] [REPS=3]
#   [PROMPT=16] [GEN=32] [BUDGETS="25 50 100"] [MARGIN_MB=768] bench/run_moe_stream.sh
# The model (synthesized once if missing: Qwen3-30B-A3B's layer shape, 128 experts of width 768,
# 8 used, hidden 2048, cut to 4 layers, F16: 4.5 GiB of experts) is run with each engine in its
# own process (qwen3_bench rss): a PROMPT-token prefill, then GEN decode steps. For each budget
# B% of the experts' bytes, both run under a limit of B% of the experts + the rest of the model +
# MARGIN_MB (activations, KV cache, the runtime): tempra with --moe-cache-mb of B% of the
# experts and a usage histogram (written by one untimed tempra run of the same prompt and steps
# first, as a user's earlier runs would have), llama.cpp mapping the whole file (its page cache
# is charged to the same limit, so what does not fit is evicted and read again; it reads the
# whole file at load, MAP_POPULATE). Each run starts with a cold page cache. Prints each run's
# load time, decode tok/s and peak RSS, and the medians of decode and of load + prefill +
# decode; cgroup v1 (memory.limit_in_bytes) or v2 (memory.max).
set -euo pipefail

BUILD=${BUILD:-build/release}
MODEL=${MODEL:-/tmp/tempra_moe_stream/a3b-4l-F16.gguf}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
PROMPT=${PROMPT:-16}
GEN=${GEN:-32}
BUDGETS=${BUDGETS:-"25 50 100"}
MARGIN_MB=${MARGIN_MB:-768}
BENCH="$BUILD/bench/qwen3_bench"
TEMPRA="$BUILD/bin/tempra"
for f in "$BENCH" "$TEMPRA"; do
  [ -x "$f" ] || { echo "run_moe_stream.sh: $f not found (configure with -DTEMPRA_BUILD_BENCH=ON)" >&2; exit 1; }
done
if [ ! -f "$MODEL" ]; then
  mkdir -p "$(dirname "$MODEL")"
  "$TEMPRA" synth --arch qwen3moe --preset a3b-8l --layers 4 --type F16 "$MODEL" >&2
fi

# The experts' bytes and the rest's, from `tempra info --json`.
read -r EXPERTS REST < <("$TEMPRA" info --json "$MODEL" |
  python3 -c 'import json, sys; e = json.load(sys.stdin)["experts"]; print(e["bytes"], e["rest_bytes"])')
MIB=$((1 << 20))

if [ -d /sys/fs/cgroup/memory ] && [ -f /sys/fs/cgroup/memory/cgroup.procs ]; then
  CG=/sys/fs/cgroup/memory/tempra-moe-stream-$$; LIMIT_FILE=memory.limit_in_bytes
else
  CG=/sys/fs/cgroup/tempra-moe-stream-$$; LIMIT_FILE=memory.max
fi
mkdir "$CG"

run() {  # run LIMIT_BYTES ENGINE [ARGS...]: one process in the cgroup at that limit, cold cache
  local limit=$1 engine=$2; shift 2
  echo "$limit" > "$CG/$LIMIT_FILE"
  sync; echo 3 > /proc/sys/vm/drop_caches
  ( echo $BASHPID > "$CG/cgroup.procs"
    exec "$BENCH" rss "$engine" "$MODEL" --threads "$THREADS" --prompt "$PROMPT" --gen "$GEN" "$@" ) 2>&1 |
    grep -E "peak RSS|expert cache" || echo "(the run failed: killed at the limit?)"
}

USAGE="$(dirname "$MODEL")/usage-$$.json"
RUN_USAGE="$(dirname "$MODEL")/usage-$$-run.json"  # a copy per timed run: each starts from the same histogram
trap 'rmdir "$CG" 2>/dev/null || true; rm -f "$USAGE" "$RUN_USAGE"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "model $MODEL: experts $((EXPERTS / MIB)) MiB, the rest $((REST / MIB)) MiB; $(lscpu | sed -n 's/^Model name: *//p')"
echo "warm-up (usage histogram): $(run $((EXPERTS + REST + MARGIN_MB * MIB)) tempra --moe-cache-mb $((EXPERTS / MIB)) --moe-usage "$USAGE" | tr '\n' ' ')"
for pct in $BUDGETS; do
  budget_mb=$((EXPERTS * pct / 100 / MIB))
  limit=$((EXPERTS * pct / 100 + REST + MARGIN_MB * MIB))
  echo "== budget ${pct}% (${budget_mb} MiB of experts), memory limit $((limit / MIB)) MiB; $(uptime)"
  tempra_tg=(); llama_tg=(); tempra_all=(); llama_all=()
  for r in $(seq "$REPS"); do
    cp "$USAGE" "$RUN_USAGE"
    t=$(run "$limit" tempra --moe-cache-mb "$budget_mb" --moe-usage "$RUN_USAGE")
    l=$(run "$limit" llama)
    echo "rep $r: $t" | tr '\n' ' '; echo; echo "rep $r: $l"
    tempra_tg+=("$(sed -n 's/.* tg \([0-9.]*\) tok\/s.*/\1/p' <<< "$t")")
    llama_tg+=("$(sed -n 's/.* tg \([0-9.]*\) tok\/s.*/\1/p' <<< "$l")")
    # load + prefill + decode, in seconds
    total() { sed -n 's/.* load \([0-9.]*\) s pp \([0-9.]*\) tg \([0-9.]*\) tok\/s.*/\1 \2 \3/p' |
      awk -v p="$PROMPT" -v g="$GEN" '{ printf "%.2f\n", $1 + p / $2 + g / $3 }'; }
    tempra_all+=("$(total <<< "$t")"); llama_all+=("$(total <<< "$l")")
  done
  tm=$(printf '%s\n' "${tempra_tg[@]}" | grep . | median || true)
  lm=$(printf '%s\n' "${llama_tg[@]}" | grep . | median || true)
  ta=$(printf '%s\n' "${tempra_all[@]}" | grep . | median || true)
  la=$(printf '%s\n' "${llama_all[@]}" | grep . | median || true)
  echo "budget ${pct}%: decode tempra ${tm:-failed} tok/s, llama.cpp ${lm:-failed} tok/s" \
    "ratio $(awk -v a="${tm:-0}" -v b="${lm:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }');" \
    "load + prefill + decode tempra ${ta:-failed} s, llama.cpp ${la:-failed} s"
done
