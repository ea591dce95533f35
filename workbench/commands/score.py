"""score: every answer metric of one prediction against its gold answer(s)."""
from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import number


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score", help="score one prediction against gold answer(s) under each metric profile",
        description="Print EM, F1, contains, ROUGE-L, thresholded ROUGE-L and Hits@1 of PRED "
                    "against the GOLD answers (max over golds) under the metric profiles "
                    "official, lenient and crp-paper, and the CRAG label without a judge.")
    p.add_argument("prediction", metavar="PRED", help="the predicted answer")
    p.add_argument("golds", metavar="GOLD", nargs="+", help="gold answer(s); aliases count alike")
    p.add_argument("--profile", help="only this profile (official, lenient, crp-paper)")
    p.add_argument("--tau-f1", type=number(float, 0, 1), default=None,
                   help="ROUGE-L cut-off of the thresholded F1 (default 0.5)")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=cmd_score)


def score_pair(pred: str, golds: list[str], profile: str | None = None,
               tau_f1: float | None = None) -> dict[str, Any]:
    from ..eval import metrics as M
    tau = M.DEFAULT_TAU_F1 if tau_f1 is None else tau_f1
    names = [M.check_profile(profile)] if profile is not None else list(M.METRIC_PROFILES)
    profiles = {}
    for name in names:
        m = M.answer_metrics(pred, golds, name, tau_f1=tau)
        m.pop("profile")
        profiles[name] = m
    crag = {}
    for cp in ("ragx", "crag_official"):
        p = M.trim_prediction(pred) if cp == "crag_official" else pred
        v = M.crag_label(p, golds, mode="normalised", profile=cp)
        crag[cp] = {"label": v.label, "decided_by": v.decided_by}
    return {"prediction": pred, "golds": golds, "tau_f1": tau, "profiles": profiles,
            "crag": crag}


_COLS = ("em", "f1", "contains", "rouge_l", "rouge_f1", "hits1")


def cmd_score(args: argparse.Namespace) -> int:
    out = score_pair(args.prediction, list(args.golds), args.profile, args.tau_f1)
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
        return 0
    print(f"prediction: {out['prediction']!r}")
    print("gold: " + " | ".join(repr(g) for g in out["golds"]))
    print(f"{'profile':10s} " + " ".join(f"{c:>8s}" for c in _COLS))
    for name, m in out["profiles"].items():
        print(f"{name:10s} " + " ".join(f"{m[c]:8.3f}" for c in _COLS))
    print(f"(crp-paper: em = contains, f1 = rouge_l >= {out['tau_f1']}; official: HotpotQA/"
          f"MuSiQue normalisation and yes/no rule; lenient: also NFKC and typographic punctuation)")
    print("CRAG without a judge (normalised match): "
          + ", ".join(f"{cp} {v['label']} ({v['decided_by']})" for cp, v in out["crag"].items()))
    return 0
