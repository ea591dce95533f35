#!/usr/bin/env bash
# The whole test suite, in two passes:
#   1. the tests without a real model or a browser, on two worker processes (pytest-xdist):
#      they are single-threaded Python, so two cores run them in half the time;
#   2. the real-model and browser tests one at a time: llama.cpp already uses every core,
#      and two of them side by side would fight over the cores and over their timeouts.
# Arguments go to both passes (e.g. -k what, -x); WORKBENCH_TEST_WORKERS sets pass 1's workers.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python

"$PY" -m pytest -q -n "${WORKBENCH_TEST_WORKERS:-2}" -m "not real_model and not browser" "$@"
light=$?
"$PY" -m pytest -q -m "real_model or browser" "$@"
heavy=$?
# pytest's 5 says "no test selected", which one pass may well say under -k
for rc in "$light" "$heavy"; do
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then exit "$rc"; fi
done
if [ "$light" = 5 ] && [ "$heavy" = 5 ]; then exit 5; fi
exit 0
