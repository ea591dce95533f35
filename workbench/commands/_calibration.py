"""`eval calibration EVAL_ID`: which confidence signals of an eval's nodes and answers
predict correctness (AUROC, ECE, Brier, risk-coverage, recalibration on train)."""
from __future__ import annotations

import json
from typing import Any

from ..analysis import calibration as C
from ..analysis.calibration_data import eval_records, series_name


def _f(v: Any, fmt: str = ".3f") -> str:
    return "–" if v is None else format(v, fmt)


def report(store: Any, eval_id: str) -> dict[str, Any]:
    nodes, items = eval_records(store, eval_id)
    cells = C.node_report(nodes)
    answers = C.answer_report(items)
    return {"eval_id": eval_id, "n_nodes": len(nodes), "n_runs": len(items),
            "min_n": C.MIN_N, "min_class": C.MIN_CLASS,
            "answers": answers, "nodes": [c.to_dict() for c in cells]}


def lines(rep: dict[str, Any]) -> list[str]:
    out = [f"eval {rep['eval_id']}: {rep['n_runs']} runs, {rep['n_nodes']} nodes "
           f"(a number needs {rep['min_n']} labelled items and {rep['min_class']} of each "
           f"class; fewer show their counts)"]
    out.append("final answer: confidence against correctness")
    for a in rep["answers"]:
        name = series_name(a["method"], a["variant"])
        if a["too_few"]:
            out.append(f"  {name:28s} n={a['n']} ({a['n_correct']} correct): too few")
            continue
        cov = a.get("at_coverage") or {}
        recal = a.get("recal")
        rc = (f"  held-out ECE {_f(recal['before']['ece'])} -> platt "
              f"{_f(recal['platt']['ece'])}, isotonic {_f(recal['isotonic']['ece'])}"
              if recal else "")
        out.append(f"  {name:28s} n={a['n']} AUROC {_f(a['auroc'])} ECE {_f(a['ece'])} "
                   f"Brier {_f(a['brier'])}  accuracy {_f(cov.get('accuracy'))} at "
                   f"{_f(cov.get('coverage'), '.0%')} coverage (confidence >= "
                   f"{_f(cov.get('threshold'))}){rc}")
    out.append("node signals (every node kind), ranked by AUROC per label:")
    cells = sorted((c for c in rep["nodes"] if c["kind"] == "*"),
                   key=lambda c: (c["method"], c["label"], c["rank"] or 10**6, c["signal"]))
    for c in cells:
        head = f"  {c['method']:20s} {C.LABELS.get(c['label'], c['label']):32s} {c['signal']:16s}"
        if c["too_few"]:
            out.append(f"{head} n={c['n']} ({c['n_pos']} positive): too few labelled nodes")
            continue
        ci = f" [{_f(c['auroc_lo'])}, {_f(c['auroc_hi'])}]" if c["auroc_lo"] is not None else ""
        out.append(f"{head} n={c['n']} ({c['n_pos']} positive) #{c['rank']} AUROC "
                   f"{_f(c['auroc'])}{ci} ECE {_f(c['ece'])} Brier {_f(c['brier'])}")
    return out


def cmd_calibration(store: Any, eval_id: str | None, as_json: bool) -> int:
    if not eval_id:
        raise LookupError("no eval stored yet; run one with `python -m workbench eval`")
    rep = report(store, eval_id)
    for line in lines(rep):
        print(line)
    if as_json:
        print(json.dumps(rep, default=str))
    return 0
