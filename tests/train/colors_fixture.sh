# tests/train/colors_fixture.sh: sourced by the fine-tuning CLI tests (finetune_cli.sh,
# finetune_mpi.sh) with TEMPRA as $1: strict mode, a scratch folder removed at exit as the
# working directory, fail(), and colors_fixture TYPE, which writes m.gguf (a small synthesized
# Qwen3 with a byte-level vocab, weights of TYPE) and colors.jsonl (six question/answer chats).
set -euo pipefail
tempra="$1"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

colors_fixture() {
  "$tempra" synth --type "$1" --tokenizer none --vocab 600 --embd 64 --ff 128 --heads 2 --heads-kv 1 --head-dim 32 \
    --ctx 512 m.gguf >/dev/null
  local qa
  for qa in "sky|blue" "grass|green" "snow|white" "coal|black" "sun|yellow" "rose|red"; do
    printf '{"messages": [{"role": "user", "content": "Color of %s?"}, {"role": "assistant", "content": "%s."}]}\n' \
      "${qa%|*}" "${qa#*|}"
  done > colors.jsonl
}
