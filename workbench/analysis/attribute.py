"""Evidence attribution by leave-one-out: which of a node's evidence items the answer
depends on.

For each evidence item of the node (a passage id, a KG triple or path id; for KG nodes only
the items the method kept), one what-if drops that item alone (analysis/whatif.py), and one
more drops them all. Each re-runs behind CallReplay of the run's own calls, so it costs only
the calls downstream of the node. Per item: whether the final answer changes and whether
its correctness (against the stored gold) changes. The variants are not stored unless asked
(``write=True``): they are measurements of the run, not runs of their own.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..methods.intervene import Intervention
from .whatif import Build, WhatIfError, answer_call, check, node_hits, whatif


@dataclass
class ItemEffect:
    evidence_id: str            # "*" for the variant that drops every item
    title: str
    answer: str | None
    answer_changed: bool
    correct: bool | None
    correctness_changed: bool
    fresh_calls: int
    replayed_calls: int
    run_id: str                 # the variant's run (stored only with write=True)
    # log P(original answer call's output | the variant's answer prompt) minus the same in
    # the original run, both teacher-forced: how much less (negative) the model would say the
    # original answer without this evidence, even when its greedy answer does not change
    delta_logprob: float | None = None


@dataclass
class Attribution:
    run_id: str
    node: str
    method: str
    answer: str | None
    correct: bool | None
    items: list[ItemEffect] = field(default_factory=list)
    drop_all: ItemEffect | None = None
    fresh_calls: int = 0        # over every variant
    replayed_calls: int = 0
    stored: bool = False
    answer_logprob: float | None = None   # the original answer's, teacher-forced in its call
    scored_output: str | None = None      # the text that was scored (that call's output)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def json_line(self) -> str:
        return json.dumps(self.to_dict(), default=str)

    def summary(self) -> str:
        def ok(c: bool | None) -> str:
            return "-" if c is None else ("correct" if c else "wrong")
        lines = [f"leave-one-out over the {len(self.items)} evidence item(s) of node "
                 f"{self.node} of run {self.run_id} ({self.method}); answer {self.answer!r} "
                 f"({ok(self.correct)})",
                 f"{'evidence':40s} {'answer changes':>14s} {'correctness':>12s} "
                 f"{'Δ log P':>8s}  answer"]
        for e in self.items + ([self.drop_all] if self.drop_all else []):
            name = "(all dropped)" if e.evidence_id == "*" else e.evidence_id
            lines.append(f"{name[:40]:40s} {'yes' if e.answer_changed else 'no':>14s} "
                         f"{('changes' if e.correctness_changed else ok(e.correct)):>12s} "
                         f"{'' if e.delta_logprob is None else f'{e.delta_logprob:+.2f}':>8s}  "
                         f"{(e.answer or '')[:60]!r}")
        lines.append(f"calls: {self.fresh_calls} fresh, {self.replayed_calls} replayed over "
                     f"{len(self.items) + (1 if self.drop_all else 0)} variants")
        return "\n".join(lines)


def evidence_items(node: Any) -> list[tuple[str, str]]:
    """(id, title) of the evidence a node kept, in retrieval order."""
    return [(i, h["title"]) for i, h in node_hits(node, kept_only=True).items()]


def attribute(store: Any, run_id: str, node: str, *, llm: Any, build: Build | None = None,
              write: bool = False, limit: int | None = None) -> Attribution:
    """Leave-one-out over ``node``'s evidence (at most ``limit`` items), then all dropped."""
    run, _, tr = check(store, run_id, Intervention(node), model=llm.info)
    items = evidence_items(tr.nodes[node])
    if not items:
        with_ev = [n.id for n in tr.nodes.values() if evidence_items(n)]
        raise WhatIfError(f"node {node} ({tr.nodes[node].kind}) kept no evidence to attribute "
                          f"the answer to; nodes with evidence: {', '.join(with_ev) or 'none'}")
    items = items[:limit] if limit else items
    ans = tr.answer or {}
    out = Attribution(run_id, node, tr.method, ans.get("text"), None, stored=write)
    variants = [([pid], pid, title) for pid, title in items]
    if len(items) > 1:
        variants.append(([pid for pid, _ in items], "*", ""))
    base = answer_call(tr)
    if base is not None:
        out.scored_output = base["output"]
        out.answer_logprob = _logprob(llm, base["prompt"], base["output"])
    for drop, key, title in variants:
        res = whatif(store, run_id, Intervention(node, drop=drop), llm=llm, build=build,
                     write=write)
        out.correct = res.parent_correct
        delta = None
        if out.answer_logprob is not None and res.answer_call is not None:
            lp = _logprob(llm, res.answer_call["prompt"], base["output"])
            delta = None if lp is None else round(lp - out.answer_logprob, 4)
        eff = ItemEffect(key, title, res.answer, res.answer_changed, res.correct,
                         res.correct != res.parent_correct, res.fresh_calls,
                         res.replayed_calls, res.run_id, delta)
        out.fresh_calls += res.fresh_calls
        out.replayed_calls += res.replayed_calls
        if key == "*":
            out.drop_all = eff
        else:
            out.items.append(eff)
    return out


def _logprob(llm: Any, prompt: str, continuation: str) -> float | None:
    """Teacher-forced log-probability of ``continuation`` after the rendered ``prompt``
    (the backend's scoring API, no generation); None where the backend cannot score."""
    if not continuation:
        return None
    try:
        scored = llm.score(prompt, continuation)
    except (NotImplementedError, AttributeError):
        return None
    return round(float(sum(t.logprob for t in scored.tokens)), 4)
