#!/usr/bin/env bash
# scripts/install-deps.sh: installs the Debian 12 packages tempra builds and tests with.
# Idempotent: does nothing when every package is already installed. Uses sudo when not root.
# Also installs the llama.cpp oracle (tools/oracle/install.sh) into .oracle/.
set -euo pipefail

packages=(
  build-essential cmake ninja-build g++
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev
  libopenblas-dev
  clang libclang-rt-14-dev
  git nodejs npm
  python3-numpy  # tools/qwen3_reference.py, run by tests/llm/qwen3_test with /usr/bin/python3
)

missing=()
for p in "${packages[@]}"; do
  # node and npm may come from elsewhere than Debian (nodesource, nvm): a working one will do.
  if [ "$p" = nodejs ] && command -v node >/dev/null; then continue; fi
  if [ "$p" = npm ] && command -v npm >/dev/null; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The llama.cpp oracle the parity tests link (npm; not a Debian package).
"$(dirname "$0")/../tools/oracle/install.sh"
