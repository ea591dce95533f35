"""Plain-text triage tables for ``eval show`` and the failure-triage benchmark."""
from __future__ import annotations

from typing import Any

from .classify import CLASSES
from .store import distribution

SHORT = {"correct": "correct", "retrieval_miss": "miss", "partial_retrieval": "partial",
         "reasoning_error": "reasoning", "answer_format": "format",
         "wrong_refusal": "refusal", "hallucination": "halluc."}

RULES = ("classes: correct (stored verdict) > answer_format (gold in the output) > "
         "wrong_refusal / reasoning_error (every gold hop retrieved) > partial_retrieval (some) "
         "> retrieval_miss (none, refused) / hallucination (none, answered); "
         "`python -m workbench.triage` prints the full rules")


def _pct(v: Any) -> str:
    return "   n/a" if v is None else f"{v:6.2f}"


def lines(summary: dict[str, Any]) -> list[str]:
    out: list[str] = []
    dist = distribution(summary["classes"])
    if not dist and not summary["recall"]:
        out.append("failure triage: no triaged runs (no gold evidence on these questions)")
        return out
    w = max([len(s) for s in dist] + [len(r["series"]) for r in summary["recall"]] + [6])
    w = min(w, 40)
    out.append("failure classes (runs per class)")
    out.append(f"  {'method':{w}s} " + " ".join(f"{SHORT[c]:>9s}" for c in CLASSES))
    for s, counts in dist.items():
        out.append(f"  {s[:w]:{w}s} " + " ".join(f"{counts[c]:9d}" for c in CLASSES))
    if summary["break_kinds"]:
        out.append("most common breaking node kinds (wrong runs)")
        for r in summary["break_kinds"]:
            out.append(f"  {r['series'][:w]:{w}s} {r['kind']:>14s} {r['n']:4d} "
                       f"({r['share']:.0%}) {', '.join(r['classes'])}")
    if summary["recall"]:
        out.append("gold-evidence recall: mean share of hops found / share with every hop found")
        out.append(f"  {'method':{w}s} {'n':>4s} {'q-level':>7s} {'q-all':>6s} {'n_q':>4s} "
                   f"{'node':>6s} {'n-all':>6s}")
        for r in summary["recall"]:
            out.append(f"  {r['series'][:w]:{w}s} {r['n']:4d} {_pct(r['recall_q']):>7s} "
                       f"{_pct(r['all_q'])} {r['n_q']:4d} {_pct(r['recall_node'])} "
                       f"{_pct(r['all_node'])}")
        out.append("  q-level: retrievals made with the question itself (n_q runs made one); "
                   "node: every retrieval of the run")
    for r in summary["untriaged"]:
        out.append(f"  not triaged: {r['method']}: {r['n']} run(s), {r['reason']}")
    a = summary.get("agreement") or {}
    if a.get("n_labels"):
        ca, na = a.get("class_agreement"), a.get("node_agreement")
        out.append(f"people's labels: {a['n_labels']}; class agreement with the suggestion "
                   f"{'n/a' if ca is None else f'{ca:.0%}'} of {a['n_compared']}, breaking node "
                   f"{'n/a' if na is None else f'{na:.0%}'} of {a['n_nodes']}")
    out.append(RULES)
    return out
