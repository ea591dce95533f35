"""`eval thresholds EVAL_ID`: the gate value train questions choose, and what it gives on
dev/test against the default, paired."""
from __future__ import annotations

import json
from typing import Any

from ..analysis.thresholds import advise, eval_rows, gate_knobs


def cmd_thresholds(store: Any, eval_id: str | None, metric: str | None, as_json: bool) -> int:
    if not eval_id:
        raise LookupError("no eval stored yet; run one with `python -m workbench eval`")
    rows = eval_rows(store, eval_id, metric or "correct")
    advice = advise(rows, gate_knobs({r["method"] for r in rows}))
    if not advice:
        print(f"eval {eval_id} ran no gate knob (tau_ppl, ct, epsilon, route_threshold, top_k, "
              f"...) at two values; sweep one, e.g. `eval --grid crp_rag.tau_ppl=5,10,20 "
              f"--split all`")
    for a in advice:
        print(f"{a['method']} · {a['knob']} (default {a['default']}):")
        for r in a["values"]:
            cells = "  ".join(f"{sp} {r[sp]:.3f} (n={r[f'n_{sp}']})" if r[sp] is not None
                              else f"{sp} – (n=0)" for sp in ("train", "dev", "test"))
            mark = " <- best on train" if r["variant"] == a.get("best") else ""
            print(f"  {a['knob']} = {r['value']!s:8s} {cells}{mark}")
        print(f"  {a['note']}")
    if as_json:
        print(json.dumps({"eval_id": eval_id, "metric": metric or "correct", "advice": advice},
                         default=str))
    return 0
