#!/usr/bin/env bash
# bench/run_qwen3.sh: tempra's Qwen3 engine against llama.cpp on 0.6B-shaped synthetic models
# (bench/qwen3_bench.cpp), for docs/BENCHMARK.md.
#
# Usage: [BUILD=build/bench] [MODELS=/tmp/tempra_qwen3_bench] [THREADS="2"] [REPS=3]
#        [TYPES="F16 BF16 Q8_0 Q4_0 Q4_K_M Q6_K"] [CELLS="512:128"] [RSS_PROMPTS="512 4096"] [RSS_TYPES=Q8_0]
#        [PROMPTS="32,128,512,2048"] [GEN=128] [DEPTHS="0,4096"]
#        bench/run_qwen3.sh [speed] [rss] [load] [tokenize] [native]   (speed rss tokenize when none is named)
# - speed: for each type, thread count and cell PROMPT:GEN, one paired run (tempra, then
#   llama.cpp, per repetition; medians of REPS) of a PROMPT-token prefill (forward passes of 512
#   tokens in both) and GEN decode steps after it, i.e. at a depth of PROMPT: "4096:128" gives
#   pp4096 and tg128 at depth 4096.
# - rss: peak RSS of each of RSS_TYPES (Q8_0 unless set), each engine in its own process, a
#   prefill of each of RSS_PROMPTS then 128 decode steps (so contexts of PROMPT + 128); llama.cpp's
#   includes the weights it repacks at load (on x86: Q4_0, Q4_K, IQ4_NL with AVX2, Q2_K with AVX-512).
# - load: each engine's load time for the Q8_0 model from a cold page cache (the kernel's caches
#   dropped first; needs root, else the part says so and stops) and then from a warm one, each
#   in its own process (rss's run at a 512-token prompt, whose line also gives that run's pp).
# - tokenize: 1 MiB of English text (Debian's /usr/share/common-licenses, concatenated and
#   repeated) through both tokenizers, the Q8_0 model's (real Qwen3) vocab.
# - native: `tempra bench` against llama-bench built natively for this CPU
#   (bench/build_llama_native.sh, built on first use, ~20 minutes), the same flags for both: for
#   each cell PROMPT:GEN, ppPROMPT and tgGEN at a depth of PROMPT, REPS repetitions (t/s as mean
#   +- sd, llama-bench's table). The other llama.cpp of the issue's "faster of the two".
#   With PROMPTS set, CELLS is ignored: each engine runs `-p PROMPTS -n 0`, then
#   `-p 0 -n GEN -d DEPTHS` (decode from each depth of the comma list), in one call each.
# Models are synthesized once with `tempra synth --preset 0.6b --type TYPE` (random weights,
# real tokenizer) into MODELS and reused; each is 0.4 to 1.5 GB.
# LLAMA_CPU_VARIANT=haswell (any libggml-cpu-*.so name of the oracle) makes llama.cpp run that
# CPU variant rather than the best for this CPU: with BUILD=build/avx2 it compares the AVX2 arms
# on an AVX-512 machine (a development figure; the record keeps real AVX2 hardware apart).
# Prints `uptime` before each figure: the machine may be shared, and load moves timings.
set -euo pipefail

BUILD=${BUILD:-build/bench}
MODELS=${MODELS:-/tmp/tempra_qwen3_bench}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
TYPES=${TYPES:-"F16 BF16 Q8_0 Q4_0 Q4_K_M Q6_K"}
CELLS=${CELLS:-"512:128"}
RSS_PROMPTS=${RSS_PROMPTS:-"512 4096"}
RSS_TYPES=${RSS_TYPES:-Q8_0}
WHAT=${*:-speed rss tokenize}
root="$(cd "$(dirname "$0")/.." && pwd)"
BENCH="$BUILD/bench/qwen3_bench"
TEMPRA="$BUILD/bin/tempra"
if [ ! -x "$BENCH" ]; then
  echo "run_qwen3.sh: $BENCH not found (configure with -DTEMPRA_BUILD_BENCH=ON and build qwen3_bench)" >&2
  exit 1
fi
mkdir -p "$MODELS"

model() {  # model TYPE: the path of the 0.6B model of that type, synthesized if missing
  local path="$MODELS/qwen3-0.6b-$1.gguf"
  if [ ! -f "$path" ]; then
    if [ ! -x "$TEMPRA" ]; then
      echo "run_qwen3.sh: $path is missing and $TEMPRA (to synthesize it) is not built" >&2
      exit 1
    fi
    echo "# synthesizing $path" >&2
    "$TEMPRA" synth --preset 0.6b --type "$1" "$path" >&2
  fi
  echo "$path"
}

native_rows() {  # native_rows ENGINE PATTERN ARGS...: the engine's table rows matching PATTERN
  local engine=$1 pattern=$2 out
  shift 2
  # shellcheck disable=SC2086  # "tempra bench": a command and its subcommand
  if ! out=$($engine "$@" 2>&1); then
    echo "run_qwen3.sh: '$engine $*' failed:" >&2
    echo "$out" | tail -5 >&2
    exit 1
  fi
  echo "$out" | grep -E "$pattern"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-);" \
     "llama.cpp CPU variant: ${LLAMA_CPU_VARIANT:-the best for this CPU}"
for w in $WHAT; do
  case $w in
    speed)
      for t in $TYPES; do
        path=$(model "$t")
        for threads in $THREADS; do
          for cell in $CELLS; do
            if [[ ! $cell =~ ^[0-9]+:[0-9]+$ ]]; then
              echo "run_qwen3.sh: CELLS entries are PROMPT:GEN, got '$cell'" >&2
              exit 2
            fi
            echo "## $t ($(du -h "$path" | cut -f1)), threads $threads, prompt ${cell%:*}, gen ${cell#*:};" \
                 "load before: $(uptime | sed 's/.*load/load/')"
            "$BENCH" speed "$path" --threads "$threads" --prompt "${cell%:*}" --gen "${cell#*:}" --reps "$REPS"
          done
        done
      done
      ;;
    rss)
      for t in $RSS_TYPES; do
        path=$(model "$t")
        for prompt in $RSS_PROMPTS; do
          echo "## peak RSS, $t, prefill $prompt + decode 128, threads ${THREADS%% *}; load: $(uptime | sed 's/.*load/load/')"
          "$BENCH" rss tempra "$path" --threads "${THREADS%% *}" --prompt "$prompt"
          "$BENCH" rss llama "$path" --threads "${THREADS%% *}" --prompt "$prompt"
        done
      done
      ;;
    load)
      path=$(model Q8_0)
      if [ ! -w /proc/sys/vm/drop_caches ]; then
        echo "run_qwen3.sh: load needs root (it writes /proc/sys/vm/drop_caches for the cold runs)" >&2
        exit 1
      fi
      for engine in tempra llama; do
        for cache in cold warm; do
          if [ "$cache" = cold ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
          echo "## load, Q8_0, $engine, $cache page cache; load: $(uptime | sed 's/.*load/load/')"
          "$BENCH" rss "$engine" "$path" --threads "${THREADS%% *}" --prompt 512
        done
      done
      ;;
    tokenize)
      path=$(model Q8_0)
      text="$MODELS/common-licenses-1MiB.txt"
      if [ ! -f "$text" ]; then
        files=$(find /usr/share/common-licenses -maxdepth 1 -type f | sort)
        # Into a file, then cut: `cat ... | head -c` kills cat with SIGPIPE, which pipefail makes
        # the script's exit status (141).
        # shellcheck disable=SC2086
        for _ in 1 2 3 4 5 6; do cat $files; done > "$text.part"
        if [ "$(wc -c < "$text.part")" -lt 1048576 ]; then
          echo "run_qwen3.sh: /usr/share/common-licenses holds less than 1 MiB in six copies" >&2
          exit 1
        fi
        truncate -s 1048576 "$text.part" && mv "$text.part" "$text"
      fi
      echo "## tokenizer, $(wc -c < "$text") bytes; load: $(uptime | sed 's/.*load/load/')"
      "$BENCH" tokenize "$path" "$text" --reps 5
      ;;
    native)
      llama_bench=$("$root/bench/build_llama_native.sh")
      for t in $TYPES; do
        path=$(model "$t")
        for threads in $THREADS; do
          # Runs of PROMPTS:GEN:DEPTHS, each list comma-separated: one from PROMPTS, else one per cell.
          runs=""
          if [ -n "${PROMPTS:-}" ]; then
            runs="$PROMPTS:${GEN:-128}:${DEPTHS:-0}"
          else
            for cell in $CELLS; do runs="$runs ${cell%:*}:${cell#*:}:${cell%:*}"; done
          fi
          for run in $runs; do
            IFS=: read -r prompts gen depths <<< "$run"
            echo "## native: $t, threads $threads, pp$prompts, tg$gen @ d$depths; load: $(uptime | sed 's/.*load/load/')"
            for engine in "$TEMPRA bench" "$llama_bench"; do
              native_rows "$engine" '^\| (model|.*pp)' -m "$path" -t "$threads" -r "$REPS" -p "$prompts" -n 0
              native_rows "$engine" '^\| .*tg' -m "$path" -t "$threads" -r "$REPS" -p 0 -n "$gen" -d "$depths"
            done
          done
        done
      done
      ;;
    *)
      echo "run_qwen3.sh: unknown part '$w' (speed, rss, load, tokenize, native)" >&2
      exit 2
      ;;
  esac
done
