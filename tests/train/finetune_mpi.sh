#!/usr/bin/env bash
# tests/train/finetune_mpi.sh TEMPRA: `mpirun -np N tempra finetune` (Open MPI) against one process
# with the same global batch, on a small synthesized Qwen3: the adapter and checkpoint files are
# byte-identical for gradient training with dropout (2 and 3 ranks: a batch of 4 split 2+2 and
# 1+1+2), for evolution strategies on adapters and on every weight (2 ranks), and a run stopped
# by SIGTERM under mpirun saves a checkpoint that resumes to the same bytes; an error on one
# rank ends them all.
# shellcheck source=colors_fixture.sh
source "$(dirname "$0")/colors_fixture.sh"
# As root (CI containers) Open MPI wants both variables; oversubscribe: ranks may outnumber cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Under ASan, LeakSanitizer is off in the ranks (errors still abort): Open MPI 4.1 leaves its own
# allocations behind at exit, many in plugins it has already unloaded, so no suppression can name
# them. The same code runs leak-checked in one process (finetune_cli.sh, and the ranks as threads
# of tests/train/finetune_test.cpp). The one-process runs here are the reference, not the subject.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpi() { local n="$1"; shift; mpirun --oversubscribe -np "$n" "$tempra" "$@"; }

colors_fixture F32

# Gradients, with dropout: one process, then 2 and 3 ranks (one thread each, as the one process).
grad=(finetune -m m.gguf --data colors.jsonl --targets all --lora-r 4 --lr 1e-2 --batch 4 --lora-dropout 0.1
  --seed 5 -t 1)
"$tempra" "${grad[@]}" --steps 4 -o one.gguf > /dev/null 2>&1 || fail "one process exited $?"
for n in 2 3; do
  mpi "$n" "${grad[@]}" --steps 4 -o "ranks$n.gguf" > out.txt 2> err.txt || fail "mpirun -np $n exited $?: $(cat err.txt)"
  cmp one.gguf "ranks$n.gguf" || fail "$n ranks wrote another adapter than one process"
  cmp one.gguf.ckpt "ranks$n.gguf.ckpt" || fail "$n ranks wrote another checkpoint than one process"
  grep -q "$n processes" err.txt || fail "the run did not say it spans $n processes: $(cat err.txt)"
  [ "$(grep -c '^step ' err.txt)" -eq 4 ] || fail "expected 4 progress lines (rank 0 only): $(cat err.txt)"
done

# Evolution strategies: the ranks exchange fitness scalars only, and end where one process does.
es=(finetune -m m.gguf --data colors.jsonl --method es --population 6 --sigma 0.02 --lr 0.02 --batch 3 --seed 2 -t 1
  --steps 3)
"$tempra" "${es[@]}" -o es1.gguf > /dev/null 2>&1 || fail "ES in one process exited $?"
mpi 2 "${es[@]}" -o es2.gguf > /dev/null 2> err.txt || fail "ES over 2 ranks exited $?: $(cat err.txt)"
cmp es1.gguf es2.gguf || fail "ES over 2 ranks wrote another adapter than one process"
"$tempra" "${es[@]}" --full -o full1.gguf > /dev/null 2>&1 || fail "full-weight ES exited $?"
mpi 2 "${es[@]}" --full -o full2.gguf > /dev/null 2> err.txt || fail "full-weight ES over 2 ranks exited $?: $(cat err.txt)"
cmp full1.gguf full2.gguf || fail "full-weight ES over 2 ranks wrote another model than one process"
! cmp -s m.gguf full1.gguf || fail "full-weight ES left the model unchanged"

# SIGTERM to mpirun reaches every rank; they agree on the step to stop after, rank 0 saves the
# checkpoint, and a resumed 2-rank run ends where a straight one-process run of as many steps does.
mpirun --oversubscribe -np 2 "$tempra" "${grad[@]}" --steps 100000 -o never.gguf --checkpoint stop.ckpt \
  > /dev/null 2> err.txt &
pid=$!
for _ in $(seq 1 200); do grep -q '^step 2/' err.txt 2>/dev/null && break; sleep 0.1; done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" -ne 0 ] || fail "an interrupted mpirun exited 0"
[ -f stop.ckpt ] || fail "no checkpoint after SIGTERM: $(cat err.txt)"
[ ! -f never.gguf ] || fail "an interrupted run wrote its adapter"
at=$(grep -o 'interrupted at step [0-9]*' err.txt | grep -o '[0-9]*$') || fail "no 'interrupted at step': $(cat err.txt)"
mpi 2 "${grad[@]}" --steps $((at + 2)) -o resumed.gguf --resume stop.ckpt > /dev/null 2> err.txt \
  || fail "the resumed 2-rank run exited $?: $(cat err.txt)"
"$tempra" "${grad[@]}" --steps $((at + 2)) -o straight.gguf > /dev/null 2>&1 || fail "the straight run exited $?"
cmp resumed.gguf straight.gguf || fail "stopped at $at and resumed over 2 ranks: another adapter than a straight run"

# An error on rank 0 alone (its checkpoint's folder is missing) ends every rank, not a hang.
rc=0
timeout 120 mpirun --oversubscribe -np 2 "$tempra" "${grad[@]}" --steps 3 --checkpoint-every 1 \
  --checkpoint missing/dir/c.ckpt -o never.gguf > /dev/null 2> err.txt || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "a failed rank 0 exited $rc (124: the other rank hung): $(cat err.txt)"
grep -q "error on rank 0 of 2" err.txt || fail "the failing rank is not named: $(cat err.txt)"

echo "finetune over MPI: all checks passed"
