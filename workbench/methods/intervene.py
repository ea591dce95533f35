"""Interventions on one node of a stored run (a what-if): drop some of the node's evidence,
add passages to it, replace its step text, or force its verdict.

A run context carries an :class:`Interventions` object as ``ctx.whatif``. A normal run has
the do-nothing one, whose hooks hand back what they are given. A what-if
(``workbench/analysis/whatif.py``) puts an :class:`Apply` there, and a method consults it at
the few places where a node's evidence, step text or verdict is produced, keyed by node id:

* ``hits(node_id, hits)``: the passages a node retrieved (``RunContext.retrieve`` asks, so
  every passage method takes evidence interventions without a change of its own);
* ``evidence(node_id, items, id_of, make)``: a method's own evidence list (KG triples,
  KG paths), where ``id_of`` gives an item's evidence id and ``make`` builds an item from
  an added passage;
* ``step(node_id, text)``: a node's sub-question or step text, where it is created;
* ``verdict(node_id, kind, value)``: a node's decision, ``kind`` "sufficiency"
  (True: sufficient) or "review" (True: pass), after the method computed ``value``.

Node ids are made in creation order (``RunContext.node_id`` counts, KG methods name nodes
by their place), so the same run with the same calls makes the same ids, and the node an
intervention names is the node of the stored run.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from ..knowledge.types import Hit

# --verdict value -> (the kind of verdict it sets, the value it forces)
VERDICTS: dict[str, tuple[str, bool]] = {
    "sufficient": ("sufficiency", True), "insufficient": ("sufficiency", False),
    "pass": ("review", True), "fail": ("review", False)}
VERDICT_WORDS = {"sufficiency": "sufficient/insufficient", "review": "pass/fail"}

# what an intervention asks, in words (for errors)
PART_WORDS = {"evidence": "an evidence intervention (drop/add)",
              "step": "a step-text intervention", "verdict": "a verdict intervention"}


@dataclass
class Intervention:
    """What to change at ``node``: ``drop`` evidence ids (passage ids, KG triple or path
    ids), ``add`` passage texts, ``add_ids`` dataset passage ids, ``step`` the node's new
    sub-question/step text, ``verdict`` sufficient/insufficient or pass/fail."""
    node: str
    drop: list[str] = field(default_factory=list)
    add: list[str] = field(default_factory=list)
    add_ids: list[str] = field(default_factory=list)
    step: str | None = None
    verdict: str | None = None

    def parts(self) -> list[str]:
        out = []
        if self.drop or self.add or self.add_ids:
            out.append("evidence")
        if self.step is not None:
            out.append("step")
        if self.verdict is not None:
            out.append("verdict")
        return out

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Intervention":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


class Interventions:
    """No intervention: every hook hands back what it is given."""
    active = False

    def hits(self, node_id: str | None, hits: list[Hit]) -> list[Hit]:
        return hits

    def evidence(self, node_id: str, items: list[Any], id_of: Callable[[Any], str],
                 make: Callable[[Hit], Any], owned: Callable[[Any], bool] | None = None
                 ) -> list[Any]:
        return items

    def step(self, node_id: str, text: str) -> str:
        return text

    def verdict(self, node_id: str, kind: str, value: bool) -> bool:
        return value


def added_hits(texts: Sequence[str], passages: Iterable[Any] = ()) -> list[Hit]:
    """Passages to add as hits: texts (ids ``added:1``, ...) and dataset passages (their own
    ids), marked ``meta.added``."""
    out = [Hit(p.id, p.title, p.text, "added", 0.0, 0, {"added": True}) for p in passages]
    out += [Hit(f"added:{i}", "(added)", t, "added", 0.0, 0, {"added": True})
            for i, t in enumerate(texts, 1)]
    return out


class Apply(Interventions):
    """One intervention, applied where the method consults it; records where it applied
    (``applied``), which nodes the method asked about per part (``seen``), and a verdict of
    the wrong kind (``mismatch``)."""
    active = True

    def __init__(self, iv: Intervention, added: Sequence[Hit] = (), first: bool = False):
        self.iv = iv
        self.added = list(added)
        # added items go before the node's own (gold repair: as if the retrieval had ranked
        # them first, so that no top-k cut or merge after it drops them), else after them
        self.first = first
        self.applied: list[dict[str, Any]] = []
        self.seen: dict[str, dict[str, str]] = {"evidence": {}, "step": {}, "verdict": {}}
        self.mismatch: list[str] = []

    def _mine(self, part: str, node_id: str | None, what: str = "") -> bool:
        if node_id is None:
            return False
        self.seen[part].setdefault(node_id, what)
        return node_id == self.iv.node

    def _edit(self, node_id: str, items: list[Any], id_of: Callable[[Any], str],
              make: Callable[[Hit], Any], owned: Callable[[Any], bool] | None) -> list[Any]:
        drop = set(self.iv.drop)
        kept, dropped = [], []
        for it in items:
            if id_of(it) in drop and (owned is None or owned(it)):
                dropped.append(id_of(it))
            else:
                kept.append(it)
        if self.first:
            new = [make(dataclasses.replace(h, rank=i)) for i, h in enumerate(self.added, 1)]
            kept = [dataclasses.replace(it, rank=len(new) + i) if isinstance(it, Hit) else it
                    for i, it in enumerate(kept, 1)]
        else:
            new = [make(dataclasses.replace(h, rank=len(kept) + i))
                   for i, h in enumerate(self.added, 1)]
        self.applied.append({"part": "evidence", "node": node_id, "dropped": dropped,
                             "added": [h.id for h in self.added],
                             **({"added_first": True} if self.first and new else {})})
        return new + kept if self.first else kept + new

    def hits(self, node_id: str | None, hits: list[Hit]) -> list[Hit]:
        if not self._mine("evidence", node_id, "passages") or "evidence" not in self.iv.parts():
            return hits
        return self._edit(node_id, list(hits), lambda h: h.id, lambda h: h, None)

    def evidence(self, node_id: str, items: list[Any], id_of: Callable[[Any], str],
                 make: Callable[[Hit], Any], owned: Callable[[Any], bool] | None = None
                 ) -> list[Any]:
        if not self._mine("evidence", node_id, "KG items") or "evidence" not in self.iv.parts():
            return items
        return self._edit(node_id, list(items), id_of, make, owned)

    def step(self, node_id: str, text: str) -> str:
        if not self._mine("step", node_id) or self.iv.step is None:
            return text
        self.applied.append({"part": "step", "node": node_id, "before": text,
                             "after": self.iv.step})
        return self.iv.step

    def verdict(self, node_id: str, kind: str, value: bool) -> bool:
        if not self._mine("verdict", node_id, kind) or self.iv.verdict is None:
            return value
        want, forced = VERDICTS[self.iv.verdict]
        if want != kind:
            msg = (f"node {node_id} has a {kind} verdict ({VERDICT_WORDS[kind]}), not "
                   f"{self.iv.verdict!r}")
            if msg not in self.mismatch:
                self.mismatch.append(msg)
            return value
        self.applied.append({"part": "verdict", "node": node_id, "kind": kind,
                             "before": value, "after": forced})
        return forced
