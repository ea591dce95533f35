"""What-if analysis over stored scores: move a threshold, see which nodes pass and which
paths survive, with no LLM call.

A method declares its threshold decisions in ``Method.thresholds`` as
``{score_name: (config_knob, direction)}``; the runner copies that into the run's
``run_started`` event, so stored runs carry it (``trace.meta["thresholds"]``).
Directions:

* ``"lower"``  — lower is good: an item passes iff ``value < threshold``
  (CRP-RAG's perplexity threshold τ_ppl);
* ``"higher"`` — higher is good: passes iff ``value >= threshold``
  (PAR-RAG's C_t, CogGRAG's ε);
* ``"top"``    — keep the ``k`` best-scoring items (FRAG's top-k / top-u). A knob
  named like ``top_k``/``top_u`` is read as ``"top"`` whatever direction is given.

Where the score lives decides what is re-thresholded, searched in this order:
node scores (``node_scored`` events) → path info (``path`` events) → retrieved hits
(``retrieved`` events: a hit's ``score`` or ``meta[score]``). Everything here is a pure
function of a :class:`~workbench.trace.Trace`; the UI only calls :func:`apply`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

SELECTED_PATH_STATES = {"selected", "valid", "kept", "answered", "used", "chosen", "survived",
                        "top"}
PRUNED_PATH_STATES = {"pruned", "cut", "invalid", "dropped", "unused", "blocked", "refused"}
_TOPK_KNOB = re.compile(r"(^|_)top(_|$)|^top_?[a-z]$|^k$", re.I)


@dataclass
class ThresholdSpec:
    score: str
    knob: str
    direction: str                 # "lower" | "higher" | "top"
    target: str                    # "node" | "path" | "evidence" | "none"
    value: float | None            # threshold / k used by the stored run
    values: list[float] = field(default_factory=list)   # every stored score value
    lo: float = 0.0
    hi: float = 1.0
    inferred: bool = False         # not declared by the method; found in the stored run

    @property
    def is_topk(self) -> bool:
        return self.direction == "top"

    def describe(self) -> str:
        if self.is_topk:
            return f"keep the top-{self.knob} items by {self.score}"
        rel = "<" if self.direction == "lower" else "≥"
        return f"{self.score} {rel} {self.knob} passes"


@dataclass
class WhatIf:
    spec: ThresholdSpec
    threshold: float
    node_pass: dict[str, bool]                 # scored nodes (or nodes with evidence)
    stored_pass: dict[str, bool | None]        # verdict under the stored threshold
    changed: list[str]                         # nodes whose verdict differs from stored
    paths: dict[str, str]                      # path id -> "selected" | "pruned"
    blocking: dict[str, list[str]]             # path id -> nodes that block it
    path_nodes: dict[str, list[str]]
    kept_hits: dict[str, int] = field(default_factory=dict)   # evidence target: node -> kept
    total_hits: dict[str, int] = field(default_factory=dict)

    @property
    def surviving(self) -> list[str]:
        return [p for p, s in self.paths.items() if s == "selected"]

    @property
    def n_pass(self) -> int:
        return sum(1 for v in self.node_pass.values() if v)

    @property
    def n_fail(self) -> int:
        return sum(1 for v in self.node_pass.values() if not v)

    def summary(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "nodes_pass": self.n_pass,
                "nodes_fail": self.n_fail, "changed": len(self.changed),
                "paths_total": len(self.paths), "paths_surviving": len(self.surviving)}


# -- reading scores --

def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


_GENERIC_SCORES = ("score", "similarity", "sim", "retrieval_score")


def _hit_score(hit: dict[str, Any], score: str, generic: bool) -> float | None:
    if score in hit:
        return _num(hit[score])
    meta = hit.get("meta") or {}
    if score in meta:
        return _num(meta[score])
    if generic and score in _GENERIC_SCORES:
        return _num(hit.get("score"))
    return None


def node_scores(trace: Any, score: str) -> dict[str, float]:
    return {n.id: v for n in trace.nodes.values()
            if (v := _num(n.scores.get(score))) is not None}


def path_scores(trace: Any, score: str) -> dict[str, float]:
    out = {}
    for pid, p in trace.paths.items():
        info = p.get("info") or {}
        v = _num(info.get(score, (info.get("scores") or {}).get(score)))
        if v is not None:
            out[pid] = v
    return out


def hit_scores(trace: Any, score: str) -> dict[str, list[float]]:
    """Per node, the scores named ``score`` of its retrieved hits. A hit's generic "score"
    stands in for a similarity only in runs where no hit names the score itself (runs
    stored before their method did): otherwise another retriever's hits in the same run
    (CogGRAG's entity descriptions beside its triples) would be re-thresholded too."""
    hits = [(n.id, h) for n in trace.nodes.values() for ev in n.evidence
            for h in ev.get("hits", [])]
    generic = not any(_hit_score(h, score, False) is not None for _, h in hits)
    out: dict[str, list[float]] = {}
    for nid, h in hits:
        if (v := _hit_score(h, score, generic)) is not None:
            out.setdefault(nid, []).append(v)
    return out


def declared(trace: Any, method_cls: Any = None) -> dict[str, tuple[str, str]]:
    """score -> (knob, direction), from the stored run or the method class."""
    out: dict[str, tuple[str, str]] = {}
    for s, v in ((trace.meta or {}).get("thresholds") or {}).items():
        if isinstance(v, (list, tuple)) and len(v) == 2:
            out[s] = (str(v[0]), str(v[1]))
    if method_cls is not None:
        for s, v in (getattr(method_cls, "thresholds", None) or {}).items():
            out.setdefault(s, (str(v[0]), str(v[1])))
    return out


def _direction(knob: str, direction: str) -> str:
    d = direction.lower()
    if d in ("top", "topk", "top_k", "rank") or _TOPK_KNOB.search(knob):
        return "top"
    return "lower" if d in ("lower", "lt", "min", "less") else "higher"


def threshold_specs(trace: Any, method_cls: Any = None) -> list[ThresholdSpec]:
    """One spec per declared threshold, with where its stored values live."""
    specs = []
    for score, (knob, direction) in declared(trace, method_cls).items():
        d = _direction(knob, direction)
        ns, ps, hs = node_scores(trace, score), path_scores(trace, score), hit_scores(trace, score)
        # Retrieved items carrying the score are the finest grain (CogGRAG's ε prunes
        # candidate triples; the node only holds a summary of them), so they come first.
        if hs and d != "top":
            target, values = "evidence", [v for vs in hs.values() for v in vs]
        elif ns:
            target, values = "node", list(ns.values())
        elif ps:
            target, values = "path", list(ps.values())
        elif hs:
            target, values = "evidence", [v for vs in hs.values() for v in vs]
        else:
            target, values = "none", []
        used = _num((trace.config or {}).get(knob))
        if used is None:
            used = next((_num(n.thresholds.get(score)) for n in trace.nodes.values()
                         if score in n.thresholds), None)
        if d == "top":
            n_items = len(values) if target != "evidence" else max(
                (len(v) for v in hs.values()), default=0)
            lo, hi = 0.0, float(max(n_items, int(used or 0), 1))
        elif values:
            lo, hi = min(values + ([used] if used is not None else [])), \
                max(values + ([used] if used is not None else []))
            pad = (hi - lo) * 0.1 or max(abs(hi) * 0.1, 0.1)
            lo, hi = lo - pad, hi + pad
            if min(values) >= 0 and lo < 0:
                lo = 0.0
        else:
            lo, hi = (0.0, float(used) * 2 if used else 1.0)
        specs.append(ThresholdSpec(score, knob, d, target, used, sorted(values), lo, hi))
    if not any(sp.target == "path" for sp in specs):
        inferred = _inferred_path_topk(trace)
        if inferred is not None:
            specs.append(inferred)
    return specs


def _inferred_path_topk(trace: Any) -> ThresholdSpec | None:
    """Ranked paths with a score, and an integer top-k knob in the config (FRAG's top-u):
    offer "keep the top k paths" even when the method did not declare it."""
    for score in ("score", "T", "path_score"):
        ps = path_scores(trace, score)
        if len(ps) < 2:
            continue
        knobs = [k for k, v in (trace.config or {}).items()
                 if isinstance(v, int) and not isinstance(v, bool) and _TOPK_KNOB.search(k)
                 and "path" in k.lower()] or \
                [k for k, v in (trace.config or {}).items()
                 if isinstance(v, int) and not isinstance(v, bool) and _TOPK_KNOB.search(k)]
        if not knobs:
            return None
        knob = knobs[0]
        used = float(trace.config[knob])
        return ThresholdSpec(score, knob, "top", "path", used, sorted(ps.values()), 0.0,
                             float(max(len(ps), int(used), 1)), inferred=True)
    return None


# -- paths --

def enumerate_paths(trace: Any, limit: int = 2000) -> dict[str, list[str]]:
    """The run's own paths if it stored any, else every root→sink path (capped)."""
    if trace.paths:
        return {pid: list(p.get("nodes", [])) for pid, p in trace.paths.items()}
    children = {nid: [c for c in n.children if c in trace.nodes] for nid, n in trace.nodes.items()}
    out: dict[str, list[str]] = {}
    for root in [n.id for n in trace.nodes.values() if not n.parents]:
        stack: list[tuple[str, list[str]]] = [(root, [root])]
        while stack and len(out) < limit:
            nid, path = stack.pop()
            kids = [c for c in children.get(nid, []) if c not in path]
            if not kids:
                if len(path) > 1:
                    out[f"p{len(out) + 1}"] = path
                continue
            for c in reversed(kids):
                stack.append((c, path + [c]))
    return out


def stored_path_states(trace: Any) -> dict[str, str]:
    out = {}
    for pid, p in trace.paths.items():
        s = str(p.get("state", "")).lower()
        out[pid] = ("selected" if s in SELECTED_PATH_STATES else
                    "pruned" if s in PRUNED_PATH_STATES else s or "unknown")
    return out


# -- the what-if itself --

def passes(value: float, threshold: float, direction: str) -> bool:
    return value < threshold if direction == "lower" else value >= threshold


def _topk(scores: dict[str, float], k: int) -> set[str]:
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return {key for key, _ in ranked[: max(0, int(k))]}


def apply(trace: Any, spec: ThresholdSpec, threshold: float) -> WhatIf:
    """Verdicts and surviving paths if the threshold (or k) were ``threshold``."""
    d, score = spec.direction, spec.score
    node_pass: dict[str, bool] = {}
    stored: dict[str, bool | None] = {}
    kept_hits: dict[str, int] = {}
    total_hits: dict[str, int] = {}
    path_nodes = enumerate_paths(trace)
    paths: dict[str, str] = {}
    blocking: dict[str, list[str]] = {}

    if spec.target == "node":
        ns = node_scores(trace, score)
        if d == "top":
            keep, keep0 = _topk(ns, threshold), _topk(ns, spec.value or 0)
            node_pass = {n: n in keep for n in ns}
            stored = {n: (n in keep0) if spec.value is not None else None for n in ns}
        else:
            node_pass = {n: passes(v, threshold, d) for n, v in ns.items()}
            for n, v in ns.items():
                t0 = _num(trace.nodes[n].thresholds.get(score))
                t0 = spec.value if t0 is None else t0
                stored[n] = passes(v, t0, d) if t0 is not None else None
        for pid, nodes in path_nodes.items():
            blk = [n for n in nodes if node_pass.get(n) is False]
            paths[pid] = "pruned" if blk else "selected"
            if blk:
                blocking[pid] = blk
    elif spec.target == "path":
        ps = path_scores(trace, score)
        if d == "top":
            keep = _topk(ps, threshold)
            ok = {p: p in keep for p in ps}
        else:
            ok = {p: passes(v, threshold, d) for p, v in ps.items()}
        stored_states = stored_path_states(trace)
        for pid in path_nodes:
            paths[pid] = "selected" if ok.get(pid, stored_states.get(pid) == "selected") else "pruned"
        on_kept = {n for pid, nodes in path_nodes.items() if paths[pid] == "selected" for n in nodes}
        on_any = {n for nodes in path_nodes.values() for n in nodes}
        node_pass = {n: n in on_kept for n in on_any}
    elif spec.target == "evidence":
        hs = hit_scores(trace, score)
        for n, vals in hs.items():
            total_hits[n] = len(vals)
            if d == "top":
                kept_hits[n] = min(len(vals), int(threshold))
                k0 = min(len(vals), int(spec.value)) if spec.value is not None else None
            else:
                kept_hits[n] = sum(1 for v in vals if passes(v, threshold, d))
                k0 = (sum(1 for v in vals if passes(v, spec.value, d))
                      if spec.value is not None else None)
            node_pass[n] = kept_hits[n] > 0
            stored[n] = (k0 > 0) if k0 is not None else None
        for pid, nodes in path_nodes.items():
            blk = [n for n in nodes if node_pass.get(n) is False]
            paths[pid] = "pruned" if blk else "selected"
            if blk:
                blocking[pid] = blk
    changed = [n for n, v in node_pass.items() if stored.get(n) is not None and stored[n] != v]
    return WhatIf(spec, float(threshold), node_pass, stored, changed, paths, blocking,
                  path_nodes, kept_hits, total_hits)


def sweep(trace: Any, spec: ThresholdSpec, thresholds: Iterable[float]) -> list[dict[str, Any]]:
    """Summary rows for a range of thresholds (for a small response plot)."""
    return [apply(trace, spec, t).summary() for t in thresholds]
