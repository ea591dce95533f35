"""`runs diff RUN_A RUN_B`: where two stored runs of one question part ways."""
from __future__ import annotations

import argparse
import json
from typing import Any

from ..analysis.diff import DEFAULT_THRESHOLD, diff_runs


def cmd_diff(st: Any, args: argparse.Namespace) -> int:
    if not args.run_b:
        raise ValueError("runs diff needs two run ids: `python -m workbench runs diff RUN_A "
                         "RUN_B` (see `python -m workbench runs list`)")
    runs = st.require_run(args.run_id), st.require_run(args.run_b)
    a, b = st.trace(args.run_id), st.trace(args.run_b)
    for tr, run in zip((a, b), runs):
        # a run killed midway has no run_finished event; the store knows how it ended
        tr.status = run.get("status") or tr.status
    thr = DEFAULT_THRESHOLD if args.threshold is None else args.threshold
    d = diff_runs(a, b, threshold=thr)
    for line in d.lines(a, b):
        print(line)
    if args.json:
        print(json.dumps(d.to_dict(), default=str))
    return 0
