#!/usr/bin/env bash
# bench/run_amp_train.sh: `tempra amp train`'s epoch against PyTorch training the same NAM model on
# the same pair with the same recipe (bench/amp_train_torch.py), for docs/BENCHMARK.md.
#
# Usage: [BUILD=build/release] [ARCHS="standard lite feather nano lstm"] [EPOCHS=3] [THREADS=2]
#        [AUDIO_SECONDS=60] bench/run_amp_train.sh
# The pair is scripts/amp/virtual_amp.py's (AUDIO_SECONDS of test signal through the virtual amp,
# 17 samples late); both trainers use 9 s for validation, items of 8192 outputs, batches of 16.
# Per architecture and trainer: the median over EPOCHS epochs of the training time alone (forward,
# backward, Adam; tempra's log gives seconds - validation_seconds). The ratio is PyTorch's time
# over tempra's (above 1: tempra is faster). Debian's PyTorch (python3-torch, /usr/bin/python3)
# runs on THREADS threads, as tempra does. Prints `uptime` first: the machine may be shared.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build/release}
ARCHS=${ARCHS:-standard lite feather nano lstm}
EPOCHS=${EPOCHS:-3}
THREADS=${THREADS:-2}
AUDIO_SECONDS=${AUDIO_SECONDS:-60}
DATA="$BUILD/bench-amp-train"
TEMPRA="$BUILD/bin/tempra"
[ -x "$TEMPRA" ] || { echo "run_amp_train.sh: $TEMPRA not found (build the release preset)" >&2; exit 1; }
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "run_amp_train.sh: needs python3-torch" >&2; exit 1; }

uptime
/usr/bin/python3 scripts/amp/virtual_amp.py "$DATA" --seconds "$AUDIO_SECONDS" >&2

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

printf "%-14s %14s %14s %8s\n" arch "tempra s/epoch" "torch s/epoch" ratio
for arch in $ARCHS; do
  "$TEMPRA" amp train --input "$DATA/di.wav" --target "$DATA/amp.wav" --arch "$arch" --epochs "$EPOCHS" \
    -t "$THREADS" -o "$DATA/$arch.nam" --log "$DATA/$arch.csv" > "$DATA/$arch.log"
  ours=$(awk -F, 'NR > 1 {print $7 - $8}' "$DATA/$arch.csv" | median)
  theirs=$(/usr/bin/python3 bench/amp_train_torch.py "$DATA/di.wav" "$DATA/amp.wav" --latency 17 --arch "$arch" \
             --epochs "$EPOCHS" --threads "$THREADS" | awk '/^epoch/ {print $4}' | median)
  awk -v a="$arch" -v o="$ours" -v t="$theirs" 'BEGIN {printf "%-14s %14.3f %14.3f %8.2f\n", a, o, t, t / o}'
done
