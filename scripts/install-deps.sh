#!/usr/bin/env bash
# scripts/install-deps.sh: installs the Debian 12 packages tempra builds and tests with.
# Idempotent: does nothing when every package is already installed. Uses sudo when not root.
set -euo pipefail

packages=(
  build-essential cmake ninja-build g++
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "installing: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
