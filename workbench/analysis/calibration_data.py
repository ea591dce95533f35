"""Node and answer records of a stored eval for :mod:`workbench.analysis.calibration`:
each run folded and triaged against the gold it recorded, with the eval's verdict."""
from __future__ import annotations

from typing import Any

from ..triage import triage
from ..triage.store import _fold as fold_runs
from .calibration import node_records


def series_name(method: str, variant: str | None) -> str:
    return f"{method} · {variant}" if variant else method


def eval_records(store: Any, eval_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(node records, answer items) of every finished run of the eval."""
    from ..eval.runner import get_eval
    get_eval(store, eval_id)                   # LookupError naming the id when there is none
    rows = store.query("""SELECT run_id, method, variant, question_id, correct, confidence
                          FROM eval_items WHERE eval_id = ? AND run_id IS NOT NULL
                          ORDER BY method, variant, question_id""", [eval_id])
    # one read of every run's events (a connection per run costs more than the folding)
    traces = fold_runs(store, [r["run_id"] for r in rows])
    from ..methods import all_methods
    checks = {name: cls.check_kinds for name, cls in all_methods().items()}
    nodes: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    for r in rows:
        tr = traces.get(r["run_id"])
        if tr is None:
            continue
        gold = (tr.meta or {}).get("gold") or {}
        split = str(gold.get("split") or "")
        name = series_name(r["method"], r["variant"])
        tri = triage(tr, correct=r["correct"])
        nodes += node_records(tr, tri, method=name, run_id=r["run_id"],
                              question_id=r["question_id"] or "", split=split,
                              check_kinds=checks.get(r["method"], ()))
        items.append({"method": r["method"], "variant": r["variant"] or "",
                      "confidence": r["confidence"], "correct": r["correct"], "split": split,
                      "run_id": r["run_id"]})
    return nodes, items
