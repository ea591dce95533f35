#!/usr/bin/env bash
# The GPU check: builds llama-cpp-python with CUDA on this machine (AMX off, as set-up does),
# then, with every layer offloaded, runs the app's Ask path, a 10-question eval of every method
# on the demo world, batched_decode.py, grammar_sampling.py, llm_throughput.py and
# prefix_cache.py (is the prompt cache's output exact on this device?). The last line
# printed is one JSON object of figures; each step's output is kept in the log folder.
#
#   scripts/gpu_check.sh [--log-dir DIR] [--steps a,b] [--questions N]
#   scripts/gpu_check.sh --build-only   only the CUDA build (when llama_cpp cannot offload yet)
#   scripts/gpu_check.sh --dry-run      no GPU needed: no build, no offload, the small model and
#                                       tiny sizes; checks the script itself (the tests run it)
#
# Environment: PYTHON (default .venv/bin/python), LLAMA_SRC (a llama-cpp-python sdist to build
# instead of fetching the pinned version: for a machine without the package registries),
# CUDA_ARCH (default: the first GPU's compute capability).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
dry=0 build_only=0 args=()
for a in "$@"; do
  case "$a" in
    --dry-run) dry=1; args+=("$a") ;;
    --build-only) build_only=1 ;;
    *) args+=("$a") ;;
  esac
done

# yes / no (not installed, or a CPU build) / why llama_cpp does not import: a missing
# dependency of llama_cpp is no reason to rebuild it
offload() {
  "$PY" -c 'import sys
try:
    import llama_cpp
except ModuleNotFoundError as e:
    print("no" if e.name == "llama_cpp" else f"llama_cpp does not import: {e}"); sys.exit()
except Exception as e:
    print(f"llama_cpp does not import: {e}"); sys.exit()
print("yes" if llama_cpp.llama_supports_gpu_offload() else "no")' 2>&1 | tail -1
}

build_s=""
if [ "$dry" = 0 ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_check: no NVIDIA GPU here (nvidia-smi not found); run it on a GPU machine, or" \
         "scripts/gpu_check.sh --dry-run to check the script on a CPU" >&2
    exit 2
  fi
  state=$(offload)
  case "$state" in yes|no) ;; *) echo "gpu_check: $state" >&2; exit 1 ;; esac
  if [ "$state" = no ]; then
    arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)}
    pin=$(grep -E '^llama-cpp-python(\[server\])?==' requirements.txt | sed 's/\[server\]//')
    src=${LLAMA_SRC:-$pin}
    # Without the registries pip cannot fetch build dependencies: build in this environment.
    offline=(); [ -n "${LLAMA_SRC:-}" ] && offline=(--no-index --no-build-isolation)
    echo "gpu_check: building $src with CUDA for sm_$arch, AMX off" >&2
    t0=$(date +%s)
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
    CMAKE_ARGS="-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=$arch -DCMAKE_C_FLAGS=-mno-amx-int8 -DCMAKE_CXX_FLAGS=-mno-amx-int8 -DCMAKE_PROJECT_llama.cpp_INCLUDE_BEFORE=$PWD/scripts/llama_cpp_lean.cmake" \
      "$PY" -m pip install -q --no-cache-dir --force-reinstall --no-deps "${offline[@]}" "$src" >&2
    build_s=$(( $(date +%s) - t0 ))
    state=$(offload)
    if [ "$state" != yes ]; then
      echo "gpu_check: after the CUDA build: ${state/#no/llama_supports_gpu_offload() is false}" >&2
      exit 1
    fi
  fi
fi
if [ "$build_only" = 1 ]; then
  echo "gpu_check: llama-cpp-python offloads to the GPU${build_s:+ (built in $build_s s)}"
  exit 0
fi
exec "$PY" scripts/gpu_check.py "${args[@]}" ${build_s:+--build-seconds "$build_s"}
