"""Paired differences between methods run on the same questions, as the Evaluate page
reads them: the mean difference to standard RAG with its 95% paired-bootstrap interval."""
from __future__ import annotations

from workbench.eval.metrics import paired_bootstrap
from workbench.trace import retrieval_confound

PAIRED_AGAINST = "standard-rag"     # each method's paired difference is read against it


def paired_differences(figures: dict[str, dict], per_q: dict[str, dict[str, list[float]]],
                       against: str = PAIRED_AGAINST) -> None:
    """Each method's mean difference to ``against`` on the same questions, with the 95%
    paired-bootstrap interval (the Evaluate page's statistic), into ``figures``."""
    base = per_q.get(against)
    if base is None:
        return
    print(f"paired difference against {against} (mean [95% CI]):", flush=True)
    for label, vecs in per_q.items():
        if label == against:
            continue
        diff = {m: [round(v, 3) for v in paired_bootstrap(vecs[m], base[m])]
                for m in ("accuracy", "token_f1")}
        figures[label][f"vs_{against}"] = diff
        mine, theirs = figures[label].get("retrieval"), figures[against].get("retrieval")
        print(f"  {label:14s} accuracy {diff['accuracy'][0]:+.3f} [{diff['accuracy'][1]:+.3f}, "
              f"{diff['accuracy'][2]:+.3f}]  token F1 {diff['token_f1'][0]:+.3f} "
              f"[{diff['token_f1'][1]:+.3f}, {diff['token_f1'][2]:+.3f}]"
              + (f"  (retrieved differently: {mine} vs {theirs})"
                 if retrieval_confound(mine or "", theirs or "") else ""),
              flush=True)
