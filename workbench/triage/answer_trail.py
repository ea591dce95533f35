"""Answer trail: in a wrong run, which stages still held a gold answer?

The failure classes follow the gold *evidence*; this follows the gold *answer string*
through the run's stages, in the order the method first used them: its retrievals (the
hits' text) and each kind of LLM call (the call's output, named by its purpose, a retry
counted with its call). A stage "holds" the answer when any of its texts contains a gold
answer (normalised, whole tokens: the contains-gold check). Rolled up over the wrong runs
of a series, the share of runs per stage is a funnel: where it drops, the method had the
answer and lost it (CRP-RAG on HotpotQA: retrieved, then left out of the knowledge
summaries).

A run has no trail when the answer string cannot be followed: a yes/no gold answer, or a
gold answer that occurs in the question (a comparison naming both options), since every
stage that restates the question would then "hold" it.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..eval import metrics as M
from ..eval.queries import eval_where, series

RETRIEVAL = "retrieval"
_UNTRACEABLE = {"yes", "no"}

_DIAG = M.LEGACY_PROFILE     # a diagnostic: typographic text still holds the gold


@dataclass
class Trail:
    stages: list[str]          # in order of first use
    held: list[str]            # the stages whose texts contained a gold answer
    reason: str = ""           # why there is no trail ("" when there is one)


def untraceable(golds: Sequence[str], question: str) -> str:
    """Why the gold answer cannot be followed through a run, or ""."""
    norm = [M.normalize_answer(g, _DIAG) for g in golds if g]
    if not norm:
        return "no gold answer"
    if any(g in _UNTRACEABLE for g in norm):
        return "a yes/no answer"
    if M.contains_match(question, golds, _DIAG):
        return "the gold answer is in the question"
    return ""


def stage_of(event_type: str, purpose: str | None) -> str:
    return RETRIEVAL if event_type == "retrieved" else (purpose or "llm").split(":")[0]


def trail(steps: Iterable[tuple[str, str]], golds: Sequence[str], question: str) -> Trail:
    """``steps``: (stage, text) in event order."""
    why = untraceable(golds, question)
    stages: list[str] = []
    held: set[str] = set()
    for stage, text in steps:
        if stage not in stages:
            stages.append(stage)
        if not why and stage not in held and text and M.contains_match(text, golds, _DIAG):
            held.add(stage)
    return Trail(stages, [s for s in stages if s in held], why)


def _steps(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for r in rows:
        if r["type"] == "retrieved":
            hits = r["hit_texts"]
            texts = json.loads(hits) if isinstance(hits, str) else hits or []
            out.append((RETRIEVAL, " \n ".join(str(t) for t in texts if t)))
        else:
            out.append((stage_of(r["type"], r["purpose"]), r["output"] or ""))
    return out


def funnel(store: Any, eval_ids: str | Sequence[str]) -> list[dict[str, Any]]:
    """Per series: its wrong runs with a trail, and per stage (in the usual order of first
    use) how many of them held a gold answer there; also the runs without a trail."""
    where, args = eval_where(eval_ids)
    items = series(store.query(
        f"SELECT run_id, method, variant, correct FROM eval_items WHERE {where} "
        "AND status IN ('finished', 'refused') AND NOT coalesce(correct, false)", args))
    if not items:
        return []
    by_run = {it["run_id"]: it for it in items}
    marks = ", ".join("?" for _ in by_run)
    starts = {r["run_id"]: r for r in store.query(
        f"SELECT run_id, json_extract_string(data, '$.question') AS question, "
        f"json_extract(data, '$.gold.answers') AS answers FROM events "
        f"WHERE type = 'run_started' AND run_id IN ({marks})", list(by_run))}
    events: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in store.query(
            f"SELECT run_id, type, json_extract_string(data, '$.purpose') AS purpose, "
            f"json_extract_string(data, '$.output') AS output, "
            f"json_extract(data, '$.hits[*].text') AS hit_texts FROM events "
            f"WHERE type IN ('retrieved', 'llm_call') AND run_id IN ({marks}) "
            f"ORDER BY run_id, seq", list(by_run)):
        events[r["run_id"]].append(r)
    per: dict[str, dict[str, Any]] = {}
    for rid, it in by_run.items():
        s = per.setdefault(it["series"], {"series": it["series"], "n": 0, "held": {},
                                          "position": defaultdict(list), "untraced": {}})
        start = starts.get(rid) or {}
        answers = start.get("answers")
        golds = json.loads(answers) if isinstance(answers, str) else answers or []
        t = trail(_steps(events.get(rid, [])), [str(g) for g in golds],
                  start.get("question") or "")
        if t.reason:
            s["untraced"][t.reason] = s["untraced"].get(t.reason, 0) + 1
            continue
        s["n"] += 1
        for i, stage in enumerate(t.stages):
            s["position"][stage].append(i / max(len(t.stages) - 1, 1))
            s["held"].setdefault(stage, 0)
        for stage in t.held:
            s["held"][stage] += 1
    out = []
    for s in per.values():
        order = sorted(s["held"], key=lambda k: sum(s["position"][k]) / len(s["position"][k]))
        out.append({"series": s["series"], "n": s["n"],
                    "stages": [{"stage": k, "held": s["held"][k],
                                "share": s["held"][k] / s["n"] if s["n"] else None}
                               for k in order],
                    "untraced": s["untraced"]})
    return sorted(out, key=lambda r: r["series"])


def lines(rows: list[dict[str, Any]]) -> list[str]:
    """The funnel as text (``eval show``)."""
    if not rows:
        return []
    out = ["answer trail: wrong runs whose stage still held a gold answer (stages in order "
           "of first use)"]
    for r in rows:
        trail_txt = " > ".join(f"{s['stage']} {s['held']}" for s in r["stages"]) or "-"
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(r["untraced"].items()))
        out.append(f"  {r['series']}: {r['n']} runs: {trail_txt}"
                   + (f" (no trail: {skipped})" if skipped else ""))
    return out
