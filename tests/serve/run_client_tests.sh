#!/usr/bin/env bash
# tests/serve/run_client_tests.sh TEMPRA WORKDIR WHAT [ARGS...]: starts `tempra serve` on a free
# port with a scripted model and runs one client suite against it, then stops the server with
# SIGTERM and requires a clean exit (it drains first). WHAT: openai | anthropic | web | load.
#
# The model is synthesized once per WORKDIR (tempra synth --script): a prompt ending in
# "Answer:" continues " Hello from tempra."; a chat prompt with thinking (ending "assistant\n")
# continues "<think>Let me think</think>\n\n" and then, as one without thinking (ending in
# "\n\n") does, a Qwen3 tool call: get_weather {"n": 42}. The clients come from tests/serve/clients/node_modules
# (scripts/install-deps.sh installs them from package-lock.json).
set -euo pipefail
tempra="$1" work="$2" what="$3"
shift 3
here="$(cd "$(dirname "$0")" && pwd)"
clients="$here/clients"
[ -d "$clients/node_modules/openai" ] || { echo "missing $clients/node_modules: run scripts/install-deps.sh" >&2; exit 1; }
mkdir -p "$work"
scripts=($'\n<think>Let me think</think>\n\n<tool_call>{"name":"get_weather","arguments":{"n":42}}</tool_call>'
         'Answer: Hello from tempra.')
# Named after its scripts, so a changed script never meets a model synthesized for the old one.
model="$work/scripted-$(printf '%s\0' "${scripts[@]}" | sha256sum | cut -c1-12).gguf"
if [ ! -f "$model" ]; then
  "$tempra" synth --preset tiny --layers 1 --ctx 4096 --script "${scripts[0]}" --script "${scripts[1]}" \
    "$model" >/dev/null
fi

log="$work/server-$what.log"
"$tempra" serve -m "$model" --port 0 -np 4 -c 2048 --queue 256 -t 2 2>"$log" &
server=$!
trap 'kill -9 $server 2>/dev/null || true' EXIT
for _ in $(seq 600); do
  grep -q '^ready:' "$log" && break
  kill -0 $server 2>/dev/null || { echo "tempra serve exited:"; cat "$log"; exit 1; }
  sleep 0.1
done
grep -q '^ready:' "$log" || { echo "tempra serve did not become ready:"; cat "$log"; exit 1; }
port=$(sed -n 's|^listening on http://[^:]*:\([0-9]*\).*|\1|p' "$log" | head -1)
export TEMPRA_BASE="http://127.0.0.1:$port" TEMPRA_MODEL="$(basename "$model")" TEMPRA_PID=$server

status=0
case "$what" in
  openai) node --test "$clients/openai.test.mjs" || status=$? ;;
  anthropic) node --test "$clients/anthropic.test.mjs" || status=$? ;;
  web) TEMPRA_SCREENSHOT="$work/web-page.png" node --test "$clients/web_page.test.mjs" || status=$? ;;
  load) node "$clients/load.mjs" "$@" || status=$? ;;
  *) echo "unknown suite '$what'" >&2; status=2 ;;
esac

kill -TERM $server
if ! wait $server; then
  echo "tempra serve did not exit cleanly after SIGTERM:"; tail -20 "$log"; status=1
fi
trap - EXIT
if [ $status -ne 0 ]; then echo "--- server log (last 30 lines)"; tail -30 "$log"; fi
exit $status
