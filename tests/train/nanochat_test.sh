#!/usr/bin/env bash
# tests/train/nanochat_test.sh CASE TEMPRA DIR: nanochat's pipeline in miniature (scripts/nanochat.sh
# with PRESET=mini: a few hundred KB of Python's tutorial and the Brown corpus, a 512-token vocab,
# a 2-layer model), the ctest cases named nanochat_*:
#   pipeline  runs the whole script from nothing into DIR and checks every artifact is there: the
#             tokenizer, the F32 and Q8_0 models, the loss curves (a PNG), the report;
#   merges    the vocab's merges equal tools/bpe_reference.py's on the same training shards;
#   loss      pretraining brought the mean loss of the last 10 steps below 5.4 nats (a uniform guess
#             over 512 tokens is 6.24) and the validation bits per byte fell from the first
#             measurement to the last;
#   resume    `tempra train` stopped at step 12 (--stop-at) and resumed writes the same model, byte
#             for byte, as a straight run of 30 steps (evaluating every 5 steps between), and its
#             --log holds every step once;
#   chat      the exported model answers through `tempra chat`, and the train command refuses bad
#             input by name (a missing data file, --seq larger than the data).
# (The llama.cpp parity of the exported model and of its tokenizer is nanochat_oracle_test.)
set -euo pipefail
case_name="$1"
tempra="$(realpath "$2")"
dir="$3"
root="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "FAIL: $*" >&2; exit 1; }

case "$case_name" in
  pipeline)
    rm -rf "$dir"
    PRESET=mini SKIP_INSTALL=1 TEMPRA="$tempra" THREADS=2 bash "$root/scripts/nanochat.sh" "$dir"
    for f in data/train_000.txt data/val_000.txt tokenizer.gguf init.gguf base.gguf chat.gguf chat-q8_0.gguf \
      base.csv chat.csv loss.png samples.txt report.md; do
      [ -s "$dir/$f" ] || fail "the pipeline left no $f"
    done
    head -c 8 "$dir/loss.png" | od -An -c | grep -q "P   N   G" || fail "loss.png is not a PNG"
    grep -q "| gzip -9 |" "$dir/report.md" || fail "the report has no bits-per-byte table"
    ;;
  merges)
    /usr/bin/python3 "$root/tools/bpe_reference.py" --check "$dir/tokenizer.gguf" 512 2 "$dir"/data/train_*.txt
    ;;
  loss)
    awk -F, 'NR > 1 { loss[NR] = $2; if ($5 != "") { if (first == "") first = $5; last = $5 } }
      END {
        n = 0; sum = 0
        for (i = NR - 9; i <= NR; i++) { sum += loss[i]; n++ }
        mean = sum / n
        printf "mean loss of the last 10 steps %.4f; validation bits per byte %s -> %s\n", mean, first, last
        if (!(mean < 5.4)) { print "FAIL: the loss did not fall below 5.4"; exit 1 }
        if (!(last < first)) { print "FAIL: the validation bits per byte did not fall"; exit 1 }
      }' "$dir/base.csv"
    ;;
  resume)
    work="$dir/resume"
    rm -rf "$work" && mkdir -p "$work"
    common=(-m "$dir/init.gguf" --data "$dir/data/train_000.txt" --val "$dir/data/val_000.txt" --eval-every 5
      --eval-windows 8 --steps 30 --batch 4 --seq 32 --warmup 5 --seed 7 -t 2)
    "$tempra" train "${common[@]}" -o "$work/straight.gguf" 2>/dev/null >/dev/null
    "$tempra" train "${common[@]}" -o "$work/resumed.gguf" --stop-at 12 --checkpoint "$work/at12.ckpt" 2> "$work/err.txt" \
      >/dev/null
    grep -q "stopped at step 12" "$work/err.txt" || fail "no stop line: $(cat "$work/err.txt")"
    [ ! -e "$work/resumed.gguf" ] || fail "a stopped run wrote its model"
    "$tempra" train "${common[@]}" -o "$work/resumed.gguf" --resume "$work/at12.ckpt" 2> "$work/err.txt" >/dev/null
    grep -q "resumed from .*at12.ckpt at step 12" "$work/err.txt" || fail "no resume line: $(cat "$work/err.txt")"
    cmp "$work/straight.gguf" "$work/resumed.gguf" || fail "the resumed run's model differs from the straight run's"
    # The resumed run's log continues the first one's: steps 1 ... 30 once each.
    "$tempra" train "${common[@]}" -o "$work/logged.gguf" --stop-at 12 --checkpoint "$work/log12.ckpt" \
      --log "$work/log.csv" 2>/dev/null >/dev/null
    "$tempra" train "${common[@]}" -o "$work/logged.gguf" --resume "$work/log12.ckpt" --log "$work/log.csv" \
      2>/dev/null >/dev/null
    [ "$(cut -d, -f1 "$work/log.csv" | tail -n +2 | tr '\n' ' ')" = "$(seq -s ' ' 1 30) " ] ||
      fail "the resumed log's steps: $(cut -d, -f1 "$work/log.csv" | tr '\n' ' ')"
    ;;
  chat)
    answer="$(printf 'What is 2 + 2?\n' | "$tempra" chat -m "$dir/chat-q8_0.gguf" --temp 0 -n 8 -t 2 2>/dev/null)"
    [ -n "$answer" ] || fail "the Q8_0 chat model said nothing"
    set +e
    err="$("$tempra" train -m "$dir/init.gguf" --data "$dir/no-such.txt" -o "$dir/never.gguf" 2>&1)"
    rc=$?
    [ $rc -eq 1 ] && grep -q "no-such.txt" <<< "$err" || fail "a missing data file: exit $rc, '$err'"
    printf 'tiny' > "$dir/tiny.txt"
    err="$("$tempra" train -m "$dir/init.gguf" --data "$dir/tiny.txt" --seq 64 -o "$dir/never.gguf" 2>&1)"
    rc=$?
    [ $rc -eq 1 ] && grep -q "fewer than one window of 65" <<< "$err" || fail "too little data: exit $rc, '$err'"
    err="$("$tempra" train -m "$dir/init.gguf" --data "$dir/tiny.txt" --steps 0 -o "$dir/never.gguf" 2>&1)"
    rc=$?
    [ $rc -eq 2 ] && grep -q -- "--steps must be at least 1" <<< "$err" || fail "--steps 0: exit $rc, '$err'"
    set -e
    [ ! -e "$dir/never.gguf" ] || fail "a failed run wrote a model"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "nanochat $case_name: ok"
