#!/usr/bin/env bash
# scripts/apt-install-missing.sh PACKAGE...: installs the Debian packages that are not installed
# yet (apt-get, sudo when not root); does nothing when all are. nodejs and npm count as present
# when a working `node` / `npm` is on PATH (nodesource, nvm).
set -euo pipefail

missing=()
for p in "$@"; do
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
