"""Evidence attribution: which of a node's evidence items, and which nodes of the answer's
path, the answer depends on.

For each evidence item of the node (a passage id, a KG triple or path id; for KG nodes only
the items the method kept), one what-if drops that item alone (analysis/whatif.py), and one
more drops them all. Each re-runs behind CallReplay of the run's own calls, so it costs only
the calls downstream of the node. Per item: whether the final answer changes and whether
its correctness (against the stored gold) changes. The variants are not stored unless asked
(``write=True``): they are measurements of the run, not runs of their own.

A node with more items than ``loo_max`` gets random ablations instead (each item kept with
probability 1/2, ``samples`` of them) and a linear surrogate fitted to the teacher-forced
log-probability of the original answer (ContextCite's estimator, least squares here): an
item's weight is how much keeping it raises that log-probability. The result says which
estimator was used. :func:`attribute_path` drops all evidence of each node on the answer's
path, one node at a time: which nodes the answer depends on.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import random

import numpy as np

from ..methods.intervene import Intervention
from .whatif import Build, WhatIfError, answer_call, check, node_hits, whatif

LOO = "leave-one-out"
SURROGATE = "linear surrogate"


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
    # surrogate estimator only: the fitted change in that log-probability from keeping the
    # item (answer_changed / correctness_changed then say what dropping it alone would need
    # a run of its own to tell, and are False)
    weight: float | None = None


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
    estimator: str = LOO                  # LOO, or SURROGATE over `samples` random ablations
    samples: int = 0
    fit_r2: float | None = None           # the surrogate's fit to its samples
    together: int = 1                     # variants run at once, their calls batched

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def json_line(self) -> str:
        return json.dumps(self.to_dict(), default=str)

    def summary(self) -> str:
        def ok(c: bool | None) -> str:
            return "-" if c is None else ("correct" if c else "wrong")
        how = (f"{LOO} over the {len(self.items)}" if self.estimator == LOO else
               f"{SURROGATE} over {self.samples} random ablations of the {len(self.items)}")
        lines = [f"{how} evidence item(s) of node "
                 f"{self.node} of run {self.run_id} ({self.method}); answer {self.answer!r} "
                 f"({ok(self.correct)})"
                 + (f"; fit R² {self.fit_r2:.2f}" if self.fit_r2 is not None else ""),
                 f"{'evidence':40s} {'answer changes':>14s} {'correctness':>12s} "
                 f"{'Δ log P':>8s}  answer"]
        if self.estimator == SURROGATE:
            lines[1] = f"{'evidence':40s} {'weight (Δ log P kept)':>22s}"
            for e in self.items:
                lines.append(f"{e.evidence_id[:40]:40s} {e.weight:>+22.3f}")
        for e in ([] if self.estimator == SURROGATE else self.items) + (
                [self.drop_all] if self.drop_all else []):
            name = "(all dropped)" if e.evidence_id == "*" else e.evidence_id
            lines.append(f"{name[:40]:40s} {'yes' if e.answer_changed else 'no':>14s} "
                         f"{('changes' if e.correctness_changed else ok(e.correct)):>12s} "
                         f"{'' if e.delta_logprob is None else f'{e.delta_logprob:+.2f}':>8s}  "
                         f"{(e.answer or '')[:60]!r}")
        lines.append(f"calls: {self.fresh_calls} fresh, {self.replayed_calls} replayed over "
                     f"{self.samples or len(self.items) + (1 if self.drop_all else 0)} variants"
                     + (f", {self.together} at a time" if self.together > 1 else ""))
        return "\n".join(lines)


def evidence_items(node: Any) -> list[tuple[str, str]]:
    """(id, title) of the evidence a node kept, in retrieval order."""
    return [(i, h["title"]) for i, h in node_hits(node, kept_only=True).items()]


def precheck(store: Any, run_id: str, node: str | None, *, model: Any = None) -> Any:
    """The run's trace, or the WhatIfError an attribution of ``node``'s evidence (None: of
    the answer's path) would end in; needs no model (``model``: the loaded one's info, to
    check against the run's)."""
    _, _, tr = check(store, run_id, None if node is None else Intervention(node), model=model)
    if node is None:
        if not answer_path(tr):
            raise WhatIfError(f"run {run_id} kept no evidence on any node: nothing to "
                              f"attribute the answer to", "no_evidence")
    elif not evidence_items(tr.nodes[node]):
        with_ev = [n.id for n in tr.nodes.values() if evidence_items(n)]
        raise WhatIfError(f"node {node} ({tr.nodes[node].kind}) kept no evidence to attribute "
                          f"the answer to; nodes with evidence: {', '.join(with_ev) or 'none'}",
                          "no_evidence")
    return tr


def attribute(store: Any, run_id: str, node: str, *, llm: Any, build: Build | None = None,
              write: bool = False, limit: int | None = None, loo_max: int = 12,
              samples: int | None = None, seed: int = 0, together: int = 1) -> Attribution:
    """Leave-one-out over ``node``'s evidence (at most ``limit`` items), then all dropped;
    above ``loo_max`` items, a linear surrogate over ``samples`` random ablations (default
    twice the items), when the backend can score the original answer. ``together`` > 1
    runs that many variants at once (see :func:`_effects`)."""
    tr = precheck(store, run_id, node, model=llm.info)
    items = evidence_items(tr.nodes[node])
    items = items[:limit] if limit else items
    ans = tr.answer or {}
    out = Attribution(run_id, node, tr.method, ans.get("text"), None, stored=write)
    base = answer_call(tr)
    if base is not None:
        out.scored_output = base["output"]
        out.answer_logprob = _logprob(llm, base["prompt"], base["output"])

    def variants(drops: list[tuple[list[str], str, str]]) -> list[ItemEffect]:
        return _effects(store, run_id, [(Intervention(node, drop=d), k, t) for d, k, t in drops],
                        llm=llm, build=build, write=write, base=base, into=out,
                        together=together)

    if len(items) > loo_max and out.answer_logprob is not None:
        _surrogate(out, items, variants, samples or 2 * len(items), seed)
        return out
    drops = [([pid], pid, title) for pid, title in items]
    if len(items) > 1:
        drops.append(([pid for pid, _ in items], "*", ""))
    effects = variants(drops)
    out.items = effects[:len(items)]
    out.drop_all = effects[len(items)] if len(items) > 1 else None
    return out


def _surrogate(out: Attribution, items: list[tuple[str, str]], variants: Any, n: int,
               seed: int) -> None:
    """Random ablations (each item kept with probability 1/2) and a least-squares fit of the
    original answer's Δ log-probability on which items were kept."""
    rng = random.Random(seed)
    ids = [pid for pid, _ in items]
    draws = [[rng.random() < 0.5 for _ in ids] for _ in range(n)]
    # nothing dropped: the original run, Δ = 0 by definition
    masks, ys = [k for k in draws if all(k)], [0.0 for k in draws if all(k)]
    ablated = [k for k in draws if not all(k)]
    effects = variants([([pid for pid, kept in zip(ids, k) if not kept], f"~{i}", "")
                        for i, k in enumerate(ablated)])
    for keep, eff in zip(ablated, effects):
        if eff.delta_logprob is None:
            continue
        masks.append(keep)
        ys.append(eff.delta_logprob)
    x = np.column_stack([np.ones(len(masks)), np.asarray(masks, dtype=float)])
    y = np.asarray(ys, dtype=float)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    pred = x @ coef
    ss = float(((y - y.mean()) ** 2).sum())
    out.estimator, out.samples = SURROGATE, len(ys)
    out.fit_r2 = round(1.0 - float(((y - pred) ** 2).sum()) / ss, 4) if ss > 0 else None
    out.items = [ItemEffect(pid, title, None, False, None, False, 0, 0, "",
                            None, round(float(w), 4))
                 for (pid, title), w in zip(items, coef[1:])]


@dataclass
class NodeEffect:
    node: str
    kind: str
    text: str
    items: int                  # evidence items the node kept
    effect: ItemEffect          # the variant that drops all of them


@dataclass
class PathAttribution:
    run_id: str
    method: str
    answer: str | None
    correct: bool | None
    nodes: list[NodeEffect] = field(default_factory=list)
    fresh_calls: int = 0
    replayed_calls: int = 0
    answer_logprob: float | None = None
    together: int = 1                     # variants run at once, their calls batched

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def json_line(self) -> str:
        return json.dumps(self.to_dict(), default=str)

    def depends_on(self) -> list[str]:
        """Nodes without whose evidence the answer changes (the overlay's nodes)."""
        return [n.node for n in self.nodes if n.effect.answer_changed]

    def summary(self) -> str:
        lines = [f"answer path of run {self.run_id} ({self.method}): all evidence of one node "
                 f"dropped at a time; answer {self.answer!r}",
                 f"{'node':8s} {'kind':10s} {'items':>5s} {'answer changes':>14s} "
                 f"{'correctness':>12s} {'Δ log P':>8s}  answer without its evidence"]
        for n in self.nodes:
            e = n.effect
            lines.append(f"{n.node[:8]:8s} {n.kind[:10]:10s} {n.items:>5d} "
                         f"{'yes' if e.answer_changed else 'no':>14s} "
                         f"{'changes' if e.correctness_changed else '-':>12s} "
                         f"{'' if e.delta_logprob is None else f'{e.delta_logprob:+.2f}':>8s}  "
                         f"{(e.answer or '')[:50]!r}")
        lines.append(f"the answer depends on: {', '.join(self.depends_on()) or 'none of them'}; "
                     f"calls: {self.fresh_calls} fresh, {self.replayed_calls} replayed"
                     + (f"; {self.together} variants at a time" if self.together > 1 else ""))
        return "\n".join(lines)


def answer_path(tr: Any) -> list[str]:
    """The nodes with evidence on the answer's path (``Trace.answer_path``: what failure
    triage searches for the breaking node), in the order the run made them; every node
    with evidence when the answer names no node or its path kept none."""
    with_ev = [n for n in tr.nodes if evidence_items(tr.nodes[n])]
    on_path = set(tr.answer_path())
    return [n for n in with_ev if n in on_path] or with_ev


def attribute_path(store: Any, run_id: str, *, llm: Any, build: Build | None = None,
                   write: bool = False, together: int = 1) -> PathAttribution:
    """One what-if per node on the answer's path: all of its evidence dropped."""
    tr = precheck(store, run_id, None, model=llm.info)
    nodes = answer_path(tr)
    ans = tr.answer or {}
    out = PathAttribution(run_id, tr.method, ans.get("text"), None)
    base = answer_call(tr)
    if base is not None:
        out.answer_logprob = _logprob(llm, base["prompt"], base["output"])
    ids = {nid: [pid for pid, _ in evidence_items(tr.nodes[nid])] for nid in nodes}
    effects = _effects(store, run_id, [(Intervention(nid, drop=ids[nid]), "*", "")
                                       for nid in nodes],
                       llm=llm, build=build, write=write, base=base, into=out,
                       together=together)
    for nid, eff in zip(nodes, effects):
        n = tr.nodes[nid]
        out.nodes.append(NodeEffect(nid, n.kind, n.text or "", len(ids[nid]), eff))
    return out


def _effects(store: Any, run_id: str, variants: list[tuple[Intervention, str, str]], *,
             llm: Any, build: Build | None, write: bool, base: dict[str, Any] | None,
             into: Attribution | PathAttribution, together: int = 1) -> list[ItemEffect]:
    """Each variant's what-if and what it did to the answer, in the order given; their calls
    and the original's correctness go to ``into``.

    ``together`` > 1 runs that many variants at once, on threads whose fresh calls the model
    decodes as one batch (:class:`~workbench.llm.items_together.ItemsTogether`, as an eval's
    ``--items-together`` does): the calls that depend on the intervention are the same, only
    which sequences shared a decoding step differs, so a near-tie token may come out
    otherwise than in a variant run alone (as it may between any two decodes)."""
    def one(model: Any, iv: Intervention, key: str, title: str) -> tuple[ItemEffect, Any]:
        res = whatif(store, run_id, iv, llm=model, build=build, write=write)
        delta = None
        if into.answer_logprob is not None and res.answer_call is not None:
            lp = _logprob(model, res.answer_call["prompt"], base["output"])
            delta = None if lp is None else round(lp - into.answer_logprob, 4)
        return ItemEffect(key, title, res.answer, res.answer_changed, res.correct,
                          res.correct != res.parent_correct, res.fresh_calls,
                          res.replayed_calls, res.run_id, delta), res.parent_correct

    k = min(together, len(variants))
    if k > 1:
        from concurrent.futures import ThreadPoolExecutor

        from ..llm.items_together import ItemsTogether
        model = ItemsTogether(llm, k)
        with ThreadPoolExecutor(k, thread_name_prefix="attribute") as pool:
            done = list(pool.map(lambda v: one(model, *v), variants))
        into.together = k
    else:
        done = [one(llm, *v) for v in variants]
    for eff, parent_correct in done:
        into.correct = parent_correct
        into.fresh_calls += eff.fresh_calls
        into.replayed_calls += eff.replayed_calls
    return [eff for eff, _ in done]


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
