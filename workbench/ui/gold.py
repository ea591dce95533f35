"""Correctness of an answer against a question's gold answers, for the Ask/Compare/Runs
pages: the metrics of ``workbench.eval.metrics`` (the one place answers are normalised
and matched) under the default ``official`` profile; "correct" is containment."""
from __future__ import annotations

from typing import Any, Sequence

from ..eval import metrics as M


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
    m: dict[str, Any] = M.answer_metrics(answer or "", list(golds))
    m["correct"] = bool(m["contains"] or m["em"]) and not refused
    m["judge"] = f"{m['profile']}-contains"
    return m
