#!/usr/bin/env bash
# scripts/setup.sh: the README's first command. Installs dependencies, builds the host-tuned
# release configuration, and runs the demo (apps/spirals: trains a named-axis MLP on two spirals
# with five optimizers, checks a bit-exact resume from a checkpoint, classifies held-out points).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset release
cmake --build --preset release
build/release/bin/spirals
