"""Paired differences between methods run on the same questions, as the Evaluate page
reads them: the mean difference to standard RAG with its 95% paired-bootstrap interval."""
from __future__ import annotations

from workbench.eval.metrics import paired_bootstrap
from workbench.trace import retrieval_confound

PAIRED_AGAINST = "standard-rag"     # each method's paired difference is read against it


def baselines(labels: list[str], against: str = PAIRED_AGAINST) -> list[str]:
    """The series of ``against``: the method itself, or each of its variants when an eval ran
    several ("standard-rag [retriever=dense]"), so that a method can be read against the
    baseline that retrieved as it did."""
    return [lb for lb in labels if lb == against or lb.startswith(f"{against} [")]


def paired_differences(figures: dict[str, dict], per_q: dict[str, dict[str, list[float]]],
                       against: str = PAIRED_AGAINST) -> None:
    """Each method's mean difference to every series of ``against`` on the same questions,
    with the 95% paired-bootstrap interval (the Evaluate page's statistic), into ``figures``
    under ``vs_<series>``."""
    bases = baselines(list(per_q), against)
    for i, b in enumerate(bases):
        base = per_q[b]
        print(f"paired difference against {b} (mean [95% CI]):", flush=True)
        for label, vecs in per_q.items():
            if label in bases[: i + 1]:
                continue
            diff = {m: [round(v, 3) for v in paired_bootstrap(vecs[m], base[m])]
                    for m in ("accuracy", "token_f1")}
            figures[label][f"vs_{b}"] = diff
            mine, theirs = figures[label].get("retrieval") or "", figures[b].get("retrieval") or ""
            note = (f"  (retrieved differently: {mine} vs {theirs})"
                    if retrieval_confound(mine, theirs) else
                    f"  (same retriever: {mine})" if mine == theirs and mine not in ("", "none")
                    else "")
            print(f"  {label:14s} accuracy {diff['accuracy'][0]:+.3f} [{diff['accuracy'][1]:+.3f}, "
                  f"{diff['accuracy'][2]:+.3f}]  token F1 {diff['token_f1'][0]:+.3f} "
                  f"[{diff['token_f1'][1]:+.3f}, {diff['token_f1'][2]:+.3f}]" + note, flush=True)
