#!/usr/bin/env bash
# scripts/install-deps.sh: installs the Debian 12 packages tempra builds and tests with.
# Idempotent: does nothing when every package is already installed. Uses sudo when not root.
# Also installs the llama.cpp oracle (tools/oracle/install.sh) into .oracle/.
set -euo pipefail

packages=(
  build-essential cmake ninja-build g++
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev
  libcpp-httplib-dev pkg-config  # tempra serve's HTTP adapter (src/tempra/serve/http_server.cpp)
  chromium                       # the web page's browser test (tests/serve/clients/web_page.test.mjs)
  libopenblas-dev
  libsndfile1-dev                # tempra amp's audio files (src/tempra/audio/wav.cpp)
  libcairo2-dev                  # tempra amp train's PNG (apps/tempra/amp_plot.cpp)
  jackd2 libjack-jackd2-dev      # tempra amp --live (apps/tempra/amp_live.cpp; its test runs jackd -d dummy)
  python3-scipy                  # the virtual amp's filters (scripts/amp/virtual_amp.py)
  clang libclang-rt-14-dev
  git nodejs npm
  python3-numpy  # tools/qwen3_reference.py and tools/es_reference.py, run by tests with /usr/bin/python3
  python3.11-doc debian-reference-en python3-matplotlib  # nanochat's corpus and report (scripts/nanochat.sh)
  python3-regex  # tools/bpe_reference.py (the BPE trainer's reference, run by tests/llm/bpe_trainer_test.cpp)
  libopenmpi-dev openmpi-bin     # data-parallel training (src/tempra/train/comm.cpp; mpirun in tests/train)
)

"$(dirname "$0")/apt-install-missing.sh" "${packages[@]}"

# The llama.cpp oracle the parity tests link (npm; not a Debian package).
"$(dirname "$0")/../tools/oracle/install.sh"

# npm packages the tests drive, pinned by their lock files; reinstalled when a lock file changes:
# the official API clients and puppeteer-core (the server), ajv (JSON Schema generations).
for pkg in tests/serve/clients tests/llm/json_schema; do
  dir="$(dirname "$0")/../$pkg"
  stamp="$dir/node_modules/.installed-$(sha256sum "$dir/package-lock.json" | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    echo "installing the npm packages of $pkg into $dir/node_modules"
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null
    touch "$stamp"
  fi
done
