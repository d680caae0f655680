#!/usr/bin/env bash
# bench/run_decoding.sh: issue 14's figures (docs/BENCHMARK.md, "Decoding"): grammar masks against
# llama.cpp's grammar sampler, constrained against free decoding, and speculative decoding on a
# copy-heavy task and on open-ended text.
#
# Usage: [BUILD=build/release] [MODELS=/tmp/tempra_decoding_bench] [THREADS=2] [REPS=3]
#        bench/run_decoding.sh [masks] [constrained] [speculative]     (all when none is named)
# BUILD must have been configured with -DTEMPRA_BUILD_BENCH=ON (for bench/grammar_bench).
# Models (synthesized once into MODELS, Qwen3's real tokenizer, 0.6B shape, Q8_0):
# - random-0.6b-Q8_0.gguf: random weights (`tempra synth --preset 0.6b --type Q8_0`);
# - copy-0.6b-Q8_0.gguf: the same shape scripted to copy a list of 208 words, each one Qwen3
#   token and none repeated (`--script`: after each word the next one is the most likely token;
#   constructed, not trained), so "Again: time" continues the list the prompt holds.
# Each figure is the median of REPS runs, the variants alternating; `uptime` is printed first.
set -euo pipefail

BUILD=${BUILD:-build/release}
MODELS=${MODELS:-/tmp/tempra_decoding_bench}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
WHAT=${*:-masks constrained speculative}
TEMPRA="$BUILD/bin/tempra"
mkdir -p "$MODELS"

WORDS="time year people way day man thing woman life child world school state family student group country
problem hand part place case week company system program question work government number night point home water
room mother area money story fact month lot right study book eye job word business issue side kind head house
service friend father power hour game line end member law car city community name president team minute idea kid
body information back parent face others level office door health person art war history party result change
morning reason research girl guy moment air teacher force education foot boy age policy process music market sense
nation plan college interest death experience effect use class control care field development role effort rate
heart drug show leader light voice wife police mind price report decision son view relationship town road arm
difference value building action model season society tax director position player record paper space ground
form event official matter center couple site project activity star table need court oil situation cost industry
figure street image phone data picture practice piece land product doctor wall patient worker news test movie
north love support technology step baby computer type attention film tree source organization hair window
evidence population"
PASSAGE=" $(echo $WORDS)"

random_model="$MODELS/random-0.6b-Q8_0.gguf"
copy_model="$MODELS/copy-0.6b-Q8_0.gguf"
[ -f "$random_model" ] || "$TEMPRA" synth --preset 0.6b --type Q8_0 "$random_model" >&2
[ -f "$copy_model" ] || "$TEMPRA" synth --preset 0.6b --type Q8_0 --script "$PASSAGE" "$copy_model" >&2

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# eval tokens per second, and the speculative line, of one `tempra generate` run
eval_rate() { grep -E '^ +eval time' | sed -E 's/.*, +([0-9.]+) tokens per second.*/\1/'; }

if [[ " $WHAT " == *" masks "* ]]; then
  echo "## masks ($(date -u +%F), $(lscpu | sed -n 's/^Model name: *//p'), $(uptime))"
  "$BUILD/bench/grammar_bench" "$random_model" 5
fi

if [[ " $WHAT " == *" constrained "* ]]; then
  echo "## constrained vs free decode, $THREADS threads, 128 tokens, --no-spec ($(uptime))"
  schema='{"type": "string", "minLength": 2000}'  # cannot end before 128 tokens
  prompt="Write a paragraph about lighthouses."
  free=() constrained=()
  for r in $(seq "$REPS"); do
    free+=("$("$TEMPRA" generate -m "$random_model" -p "$prompt" -n 128 -s $r -t "$THREADS" --no-spec 2>&1 >/dev/null | eval_rate)")
    constrained+=("$("$TEMPRA" generate -m "$random_model" -p "$prompt" -n 128 -s $r -t "$THREADS" --no-spec -j "$schema" 2>&1 >/dev/null | eval_rate)")
  done
  f=$(printf '%s\n' "${free[@]}" | median); c=$(printf '%s\n' "${constrained[@]}" | median)
  echo "free ${free[*]} -> $f tok/s; constrained ${constrained[*]} -> $c tok/s; ratio $(echo "$c / $f" | bc -l | cut -c1-5)"
fi

speculative() {  # speculative LABEL MODEL PROMPT ARGS...: median eval tok/s with and without, acceptance
  local label=$1 model=$2 prompt=$3
  shift 3
  local on=() off=() line=""
  for r in $(seq "$REPS"); do
    off+=("$("$TEMPRA" generate -m "$model" -p "$prompt" -t "$THREADS" "$@" --no-spec 2>&1 >/dev/null | eval_rate)")
    out=$("$TEMPRA" generate -m "$model" -p "$prompt" -t "$THREADS" "$@" --spec 2>&1 >/dev/null)
    on+=("$(echo "$out" | eval_rate)")
    line=$(echo "$out" | grep speculative || echo "no verify pass")
  done
  local a b
  a=$(printf '%s\n' "${off[@]}" | median); b=$(printf '%s\n' "${on[@]}" | median)
  echo "$label: without ${off[*]} -> $a tok/s; with ${on[*]} -> $b tok/s; speedup $(echo "$b / $a" | bc -l | cut -c1-5); last run: $(echo $line)"
}

if [[ " $WHAT " == *" speculative "* ]]; then
  echo "## speculative decoding, $THREADS threads ($(uptime))"
  speculative "copy (quote a 208-word list), greedy, 200 tokens" "$copy_model" \
    "Copy this list exactly:$PASSAGE
Again: time" -n 200 --temp 0
  speculative "copy, sampled (temp 0.8), 200 tokens" "$copy_model" "Copy this list exactly:$PASSAGE
Again: time" -n 200 --temp 0.8 -s 1
  speculative "open-ended, random weights, sampled (temp 0.8), 128 tokens" "$random_model" \
    "Write a short story about a lighthouse keeper who finds a message in a bottle." -n 128 --temp 0.8 -s 1
  speculative "open-ended, random weights, greedy, 128 tokens" "$random_model" \
    "Write a short story about a lighthouse keeper who finds a message in a bottle." -n 128 --temp 0
fi
