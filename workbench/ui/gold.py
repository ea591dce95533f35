"""Correctness of an answer against a question's gold answers, for the Ask/Compare/Runs
pages. Uses ``workbench.eval.metrics`` when the evaluation layer provides
``answer_metrics(prediction, golds) -> dict``; otherwise SQuAD-style normalised exact
match and containment (what the specs call EM and contains-match)."""
from __future__ import annotations

import re
import string
from typing import Any, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.I)


def normalise(s: str) -> str:
    s = str(s).lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def golds_of(question: Any) -> list[str]:
    if question is None:
        return []
    if isinstance(question, dict):
        return [g for g in list(question.get("answers") or []) + list(question.get("aliases") or []) if g]
    ga = getattr(question, "gold_answers", None)
    return [g for g in (ga if ga is not None else getattr(question, "answers", [])) if g]


def judge(answer: str | None, golds: Sequence[str], refused: bool = False) -> dict[str, Any] | None:
    """{"em", "contains", "correct"} or None when there is no gold to judge against."""
    golds = [g for g in golds if g]
    if not golds:
        return None
    try:
        from ..eval.metrics import answer_metrics      # type: ignore[import-not-found]
        m = dict(answer_metrics(answer or "", list(golds)))
        m.setdefault("correct", bool(m.get("contains", m.get("em", False))) and not refused)
        return m
    except (ImportError, AttributeError, TypeError):
        pass
    a = normalise(answer or "")
    em = any(a == normalise(g) for g in golds)
    contains = bool(a) and any(normalise(g) and normalise(g) in a for g in golds)
    return {"em": float(em), "contains": float(contains),
            "correct": bool((em or contains) and not refused), "judge": "normalised-contains"}
