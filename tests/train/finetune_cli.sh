#!/usr/bin/env bash
# tests/train/finetune_cli.sh TEMPRA: `tempra finetune`, `tempra merge` and `--lora` end to end on
# a small synthesized Qwen3 (byte-level vocab): a run writes an adapter; a run stopped at step 3
# and resumed writes the same bytes; merge writes a Q8_0 model that generates; generate takes
# --lora; bad data exits 1 naming the line; a corrupt adapter exits 1 and writes nothing; Ctrl-C
# (SIGINT) saves a checkpoint and exits 130, and --resume continues from it; evolution strategies
# (--method es) on adapters and on every weight, resumed bit for bit, and their bad options; the
# three ways of keeping activations (default, --lean-checkpoints, --no-checkpoint-activations)
# train the same bytes.
# shellcheck source=colors_fixture.sh
source "$(dirname "$0")/colors_fixture.sh"

colors_fixture F16
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

# How activations are kept changes no bit: replayed frozen products (the default), a block's input
# alone, or everything.
for keep in --lean-checkpoints --no-checkpoint-activations; do
  "$tempra" finetune "${common[@]}" --steps 6 --eval-split 0.2 -o "kept$keep.gguf" $keep >/dev/null 2>&1 \
    || fail "a run with $keep"
  cmp straight.gguf "kept$keep.gguf" || fail "the adapter trained with $keep differs from the default's"
done

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
# Evolution strategies: progress lines with the population's rewards; a run resumed from its
# checkpoint at 2 writes the bytes of a straight run of 4; --full writes a whole model that
# generates; bad options exit 2 naming the option.
es=(-m m.gguf --data colors.jsonl --method es --population 4 --sigma 0.02 --lr 0.02 --batch 2 --seed 3 -t 1)
"$tempra" finetune "${es[@]}" --steps 4 --reward exact --eval-split 0.2 -o es.gguf > out.txt 2> err.txt \
  || fail "ES exited $?: $(cat err.txt)"
grep -q "evolution strategies (population 4, sigma 0.02, reward exact)" err.txt || fail "no ES header: $(cat err.txt)"
grep -Eq "step 4/4  reward mean [0-9.]+ best [0-9.]+  eval reward [0-9.]+" err.txt || fail "no ES progress: $(cat err.txt)"
grep -q "es.gguf: LoRA adapter after 4 steps, eval reward" out.txt || fail "no ES summary: $(cat out.txt)"
"$tempra" finetune "${es[@]}" --steps 4 -o es_straight.gguf >/dev/null 2>&1 || fail "ES straight run"
"$tempra" finetune "${es[@]}" --steps 2 -o es_half.gguf --checkpoint es_half.ckpt >/dev/null 2>&1 || fail "ES half run"
"$tempra" finetune "${es[@]}" --steps 4 -o es_resumed.gguf --resume es_half.ckpt >/dev/null 2>&1 || fail "ES resume"
cmp es_straight.gguf es_resumed.gguf || fail "the resumed ES run's adapter differs from the straight run's"
"$tempra" finetune "${es[@]}" --steps 2 --full --reward 'regex:[a-z]' --max-new-tokens 3 -o es_full.gguf \
  > out.txt 2> err.txt || fail "full-weight ES exited $?: $(cat err.txt)"
grep -q "es_full.gguf: the model trained after 2 steps" out.txt || fail "no full-weight summary: $(cat out.txt)"
"$tempra" generate -m es_full.gguf -p "Color of sky?" -n 4 --temp 0 >/dev/null 2>&1 || fail "generate on the ES model"
for bad in "--full|--full trains every weight" "--method es --population 3|even" "--method es --reward f1|'f1' is not a reward" \
  "--method es --reward regex:(|not a valid regular expression" "--method sgd|--method must be adamw or es"; do
  set +e
  # shellcheck disable=SC2086
  "$tempra" finetune -m m.gguf --data colors.jsonl -o never.gguf --steps 1 ${bad%|*} 2> err.txt >/dev/null
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "'${bad%|*}' exited $rc: $(cat err.txt)"
  grep -q -- "${bad#*|}" err.txt || fail "'${bad%|*}' did not say '${bad#*|}': $(cat err.txt)"
done
[ ! -e never.gguf ] || fail "a bad option wrote an adapter"
echo "finetune CLI: all checks passed"
