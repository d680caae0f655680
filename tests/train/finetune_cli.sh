#!/usr/bin/env bash
# tests/train/finetune_cli.sh TEMPRA: `tempra finetune`, `tempra merge` and `--lora` end to end on
# a small synthesized Qwen3 (byte-level vocab): a run writes an adapter; a run stopped at step 3
# and resumed writes the same bytes; merge writes a Q8_0 model that generates; generate takes
# --lora; bad data exits 1 naming the line; a corrupt adapter exits 1 and writes nothing; Ctrl-C
# (SIGINT) saves a checkpoint and exits 130, and --resume continues from it.
set -euo pipefail
tempra="$1"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$tempra" synth --type F16 --tokenizer none --vocab 600 --embd 64 --ff 128 --heads 2 --heads-kv 1 --head-dim 32 \
  --ctx 512 m.gguf >/dev/null
for qa in "sky|blue" "grass|green" "snow|white" "coal|black" "sun|yellow" "rose|red"; do
  printf '{"messages": [{"role": "user", "content": "Color of %s?"}, {"role": "assistant", "content": "%s."}]}\n' \
    "${qa%|*}" "${qa#*|}"
done > colors.jsonl
common=(-m m.gguf --data colors.jsonl --targets all --lora-r 4 --lr 1e-2 --batch 2 --lora-dropout 0.1 --seed 5 -t 1)

# A straight run of 6 steps, with an eval split: progress lines, then the adapter.
"$tempra" finetune "${common[@]}" --steps 6 --eval-split 0.2 --eval-every 3 -o straight.gguf > out.txt 2> err.txt \
  || fail "finetune exited $?: $(cat err.txt)"
grep -q "straight.gguf: LoRA adapter after 6 steps, eval loss" out.txt || fail "no summary: $(cat out.txt)"
grep -Eq "step 3/6  loss [0-9.]+  eval [0-9.]+  [0-9]+ tok/s  ETA " err.txt || fail "no progress line: $(cat err.txt)"

# 3 steps, then a resumed run to 6: the same adapter, byte for byte.
"$tempra" finetune "${common[@]}" --steps 3 --eval-split 0.2 -o first.gguf --checkpoint half.ckpt 2>/dev/null >/dev/null
"$tempra" finetune "${common[@]}" --steps 6 --eval-split 0.2 -o resumed.gguf --resume half.ckpt 2> err.txt >/dev/null
grep -q "resumed from half.ckpt at step 3" err.txt || fail "no resume line: $(cat err.txt)"
cmp straight.gguf resumed.gguf || fail "the resumed run's adapter differs from the straight run's"

# merge to Q8_0, then generate from it; and generate with the adapter folded in at load.
"$tempra" merge -m m.gguf --lora straight.gguf -o merged.gguf --type Q8_0 | grep -q "14 merged with the adapter" \
  || fail "merge did not report 14 merged weights"
"$tempra" generate -m merged.gguf -p "Color of sky?" -n 4 --temp 0 >/dev/null 2>&1 || fail "generate on the merged model"
"$tempra" generate -m m.gguf --lora straight.gguf -p "Color of sky?" -n 4 --temp 0 >/dev/null 2>&1 \
  || fail "generate --lora"

# Bad data: exit 1 naming the file and line.
{ head -n 2 colors.jsonl; echo '{"messages": [{"role": "user"}]}'; } > bad.jsonl
set +e
"$tempra" finetune -m m.gguf --data bad.jsonl -o never.gguf --steps 1 2> err.txt >/dev/null
rc=$?
set -e
[ "$rc" = 1 ] || fail "bad data exited $rc"
grep -q 'bad.jsonl:3: message 0 has no string "content"' err.txt || fail "bad data message: $(cat err.txt)"
[ ! -e never.gguf ] || fail "an adapter was written from bad data"

# A corrupt adapter: merge exits 1 and writes nothing; generate --lora exits 1.
head -c 300 straight.gguf > corrupt.gguf
set +e
"$tempra" merge -m m.gguf --lora corrupt.gguf -o never.gguf 2> err.txt; rc=$?
set -e
[ "$rc" = 1 ] || fail "merge of a corrupt adapter exited $rc"
grep -q "corrupt.gguf" err.txt || fail "the corrupt adapter is not named: $(cat err.txt)"
[ ! -e never.gguf ] || fail "merge wrote a file from a corrupt adapter"
set +e
"$tempra" generate -m m.gguf --lora corrupt.gguf -p x -n 1 >/dev/null 2>&1; rc=$?
set -e
[ "$rc" = 1 ] || fail "generate --lora with a corrupt adapter exited $rc"

# Ctrl-C: the step in flight finishes, the checkpoint is saved, exit 130; --resume continues.
"$tempra" finetune "${common[@]}" --steps 1000000 -o never.gguf --checkpoint stop.ckpt 2> err.txt >/dev/null &
pid=$!
for _ in $(seq 1 300); do grep -q "^step 2/" err.txt 2>/dev/null && break; sleep 0.1; done
kill -INT "$pid"
set +e
wait "$pid"; rc=$?
set -e
[ "$rc" = 130 ] || fail "SIGINT exited $rc: $(cat err.txt)"
grep -q "interrupted at step [0-9]*: checkpoint stop.ckpt" err.txt || fail "no interrupt message: $(cat err.txt)"
[ -s stop.ckpt ] || fail "no checkpoint after SIGINT"
[ ! -e never.gguf ] || fail "an interrupted run wrote the adapter"
at=$(sed -n 's/.*interrupted at step \([0-9]*\).*/\1/p' err.txt)
"$tempra" finetune "${common[@]}" --steps $((at + 1)) -o after.gguf --resume stop.ckpt >/dev/null 2> err.txt \
  || fail "resume after SIGINT: $(cat err.txt)"
grep -q "resumed from stop.ckpt at step $at" err.txt || fail "resume after SIGINT: $(cat err.txt)"
echo "finetune CLI: all checks passed"
