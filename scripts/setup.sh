#!/usr/bin/env bash
# Set up fireval on a fresh Debian machine: system packages, a virtualenv in .venv, the package.
#   bash scripts/setup.sh          # what `fireval` needs at run time
#   bash scripts/setup.sh --dev    # plus test tools, Chromium (browser tests) and PostgreSQL
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
[ "${1:-}" = "--dev" ] && dev=1

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

pkgs=(python3 python3-venv python3-pip wordnet-base wordnet-sense-index)
[ "$dev" = 1 ] && pkgs+=(chromium postgresql)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
if [ "$dev" = 1 ]; then
  # torch first, pinned: 2.13.0 is the CPU wheel pip finds on this machine's disk (find-links);
  # an unpinned torch (or the test extra's range, with no torch installed) pulls a multi-GB CUDA build
  .venv/bin/python -m pip install -q "torch==2.13.0"
  .venv/bin/python -m pip install -q -e ".[test]"
  # rbo: an independent RBO implementation for a cross-check test; its metadata pins numpy<2,
  # which it does not need, so it is installed without dependencies
  .venv/bin/python -m pip install -q --no-deps "rbo==0.1.3"
else
  .venv/bin/python -m pip install -q -e .
fi
echo "setup: done (.venv/bin/fireval)"
