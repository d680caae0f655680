#!/usr/bin/env bash
# bench/run_nanochat.sh: one pretraining step of nanochat's full-preset model (scripts/nanochat.sh:
# 6 layers, hidden 384, 6/2 heads of 64, FFN 1024, 4096 tokens, tied; 16 windows of 256 tokens),
# `tempra train` against PyTorch 1.13 (bench/nanochat_torch.py: the same model, optimizers and
# batch shape), for docs/BENCHMARK.md.
#
# Usage: [BUILD=build/release] [THREADS=2] [ROUNDS=3] [STEPS=8] bench/run_nanochat.sh
# The model is synthesized with a synthetic 4096-token vocab (throughput does not depend on which
# tokens it sees) and trained on Debian's license texts. Rounds alternate the two engines; each
# reports the median time of its STEPS steps after one warmup step (tempra's from its --log CSV).
# PyTorch's matmuls are Debian's OpenBLAS, on the kernel that fits this CPU (bench/openblas_core.sh)
# with THREADS threads; both engines use THREADS threads.
set -euo pipefail

BUILD=${BUILD:-build/release}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-8}
work=${WORK:-/tmp/tempra_nanochat_bench}
mkdir -p "$work"
source "$(dirname "$0")/openblas_core.sh"
export OPENBLAS_NUM_THREADS=$THREADS
shape=(--layers 6 --embd 384 --ff 1024 --heads 6 --heads-kv 2 --head-dim 64)
lscpu | grep -m1 'Model name'
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(OpenBLAS picks)} threads $THREADS"
[ -f "$work/init.gguf" ] || "$BUILD/bin/tempra" synth --tokenizer none --vocab 4096 "${shape[@]}" --ctx 1024 --type F32 \
  --seed 1 "$work/init.gguf" >/dev/null
cat /usr/share/common-licenses/* > "$work/text.txt"
for round in $(seq "$ROUNDS"); do
  uptime
  "$BUILD/bin/tempra" train -m "$work/init.gguf" --data "$work/text.txt" -o "$work/out.gguf" --steps $((STEPS + 1)) \
    --batch 16 --seq 256 --warmup 2 --log "$work/log.csv" --log-every 1000 -t "$THREADS" 2>/dev/null >/dev/null
  /usr/bin/python3 - "$work/log.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
times = [float(b["seconds"]) - float(a["seconds"]) for a, b in zip(rows, rows[1:])]
s = statistics.median(times)
print(f"tempra: median step {s:.3f} s over {len(times)} steps, {16 * 256 / s:.0f} tokens/s")
PY
  /usr/bin/python3 "$(dirname "$0")/nanochat_torch.py" --layers 6 --embd 384 --ff 1024 --heads 6 --heads-kv 2 \
    --head-dim 64 --vocab 4096 --batch 16 --seq 256 --threads "$THREADS" --steps "$STEPS"
done
