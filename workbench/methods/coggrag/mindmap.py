"""CogGRAG stage 1: the mind map, grown top-down (spec coggrag.md §3.2).

The root question (level 0, Continue) is split by the LLM into sub-questions, each marked
End or Continue; Continue nodes are split again, level by level, until no node of the
newest level is Continue, or the depth (T_max), children (N_max) or node (max_nodes) caps
force an End (recorded as ``forced_end``). A parse failure (after one retry), an empty,
degenerate (one child paraphrasing its parent) or repeated split ends the node too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ... import trace as T
from ..graph import tap
from . import prompts as P


@dataclass
class MMNode:
    id: str
    question: str
    level: int
    state: str                       # "end" | "continue" (the LLM's, or forced)
    parent: str | None
    sibling_index: int
    children: list[str] = field(default_factory=list)
    forced_end: bool = False
    forced_reason: str = ""
    local_keys: dict[str, Any] | None = None
    answer: str | None = None
    final: str | None = None
    is_unknown: bool = False


def parse_state(s: Any) -> str:
    w = re.sub(r"[^a-z]", "", str(s).lower())
    return "continue" if w.startswith("cont") else "end"


def norm_q(s: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", s.lower()).split())


def validate_decomposition(obj: Any) -> list[tuple[str, str]]:
    if isinstance(obj, dict):
        obj = next((v for v in obj.values() if isinstance(v, list)), None)
    if not isinstance(obj, list):
        raise ValueError("expected a list of sub-questions")
    out = []
    for it in obj:
        if isinstance(it, dict):
            q = it.get("Sub-question") or it.get("sub_question") or it.get("question") or ""
            out.append((str(q), parse_state(it.get("State", "End."))))
        elif isinstance(it, str):
            out.append((it, "end"))
    return out


def bfs_order(nodes: dict[str, MMNode]) -> list[str]:
    out, q = [], ["0"]
    while q:
        i = q.pop(0)
        out.append(i)
        q.extend(nodes[i].children)
    return out


def descendants(nodes: dict[str, MMNode], nid: str) -> list[str]:
    out, q = [], list(nodes[nid].children)
    while q:
        i = q.pop(0)
        out.append(i)
        q.extend(nodes[i].children)
    return out


def force_end(m: MMNode, reason: str) -> Iterator[T.Event]:
    m.state, m.forced_end, m.forced_reason = "end", True, reason
    yield T.custom("node_forced_end", m.id, reason=reason)
    yield T.node_updated(m.id, "capped", mm_state="end", forced_end=True,
                         forced_reason=reason)


def _children(items: list[tuple[str, str]], parent: MMNode, n_max: int) -> list[tuple[str, str]]:
    """Robustness guards (D8): empty and duplicate sub-questions, and the parent repeated
    among several children, are dropped; at most ``n_max`` are kept."""
    seen, kids = set(), []
    for q, st in items:
        k = norm_q(q)
        if not k or k in seen or k == norm_q(parent.question) and len(items) > 1:
            continue
        seen.add(k)
        kids.append((q.strip(), st))
    return kids[:n_max]


def grow(ctx: Any, nodes: dict[str, MMNode], root: MMNode, params: Callable[[str], Any],
         same: Callable[[str, str], bool], prompt_version: str) -> Iterator[T.Event]:
    """Decompose breadth-first from ``root`` into ``nodes``; ``params(node id)`` gives the
    exploration decoding, ``same(a, b)`` says whether a lone child paraphrases its parent."""
    cfg = ctx.config
    frontier = [root]
    prev_split: list[str] | None = None
    while any(m.state == "continue" for m in frontier):
        nxt: list[MMNode] = []
        for m in frontier:
            if m.state != "continue":
                continue
            if m.level >= cfg.max_level:
                yield from force_end(m, f"depth cap T_max={cfg.max_level}")
                continue
            if len(nodes) >= cfg.max_nodes:
                yield from force_end(m, f"node budget max_nodes={cfg.max_nodes}")
                continue
            yield T.custom("decompose_started", m.id, level=m.level)
            yield T.node_updated(m.id, "proposed", decomposing=True)
            calls: list[T.Event] = []
            items = yield from tap(ctx.generate_json(
                "decompose", P.decompose_messages(m.question),
                P.schema_decompose(cfg.max_children), params(m.id), node_id=m.id,
                prompt_version=prompt_version, validate=validate_decomposition), calls)
            raw = calls[-1].data["output"] if calls else ""
            if items is None:
                yield T.custom("decompose_finished", m.id, children=[], raw=raw,
                               error="parse failure after one retry")
                yield from force_end(m, "decomposition parse failure")
                continue
            kids = _children(items, m, cfg.max_children)
            error = None
            if not kids:
                error = "empty split"
            elif len(kids) == 1 and same(kids[0][0], m.question):
                error = "degenerate split (one child paraphrasing its parent)"
            elif prev_split is not None and [norm_q(q) for q, _ in kids] == prev_split:
                error = "repeated split (same list as the previous call)"
            if error is not None:
                yield T.custom("decompose_finished", m.id, children=[], raw=raw, error=error)
                yield from force_end(m, error)
                continue
            kids = kids[: cfg.max_nodes - len(nodes)]
            prev_split = [norm_q(q) for q, _ in kids]
            made = []
            for j, (q, st) in enumerate(kids, 1):
                q = ctx.whatif.step(f"{m.id}.{j}", q)
                c = MMNode(f"{m.id}.{j}", q, m.level + 1, st, m.id, j)
                nodes[c.id] = c
                m.children.append(c.id)
                made.append([c.id, q, "End" if st == "end" else "Continue"])
            yield T.custom("decompose_finished", m.id, children=made, raw=raw, error=None)
            yield T.node_updated(m.id, "proposed", decomposing=False, n_children=len(made))
            for c in (nodes[i] for i in m.children):
                yield T.node_added(c.id, "subquestion", c.question, parents=[m.id],
                                   layer=c.level, state="proposed", level=c.level,
                                   mm_state=c.state, sibling_index=c.sibling_index,
                                   forced_end=False,
                                   refers_to=[int(x) for x in re.findall(r"#\s*(\d+)",
                                                                         c.question)])
                if c.state == "continue":
                    nxt.append(c)
        frontier = nxt
