#!/usr/bin/env bash
# scripts/setup.sh: the README's first command. Installs dependencies, builds the host-tuned
# release configuration, and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset release
cmake --build --preset release
build/release/bin/mlp_demo
