"""Graph helpers: the question node, keeping a call's events, a folded trace's well-formedness, the KG a method needs."""
from __future__ import annotations

from typing import Any

from .. import trace as T
from .batched import relay


def question_node(ctx: Any, question: str, kind: str = "question",
                  **attrs: Any) -> tuple[str, T.Event]:
    nid = ctx.node_id("q")
    return nid, T.node_added(nid, kind, question, layer=0, state="created", is_source=True,
                             **attrs)


def tap(gen: Any, calls: list[T.Event]) -> Any:
    """``yield from gen`` while keeping its ``llm_call`` events (for raw outputs / call ids)."""
    def keep(ev: Any) -> None:
        if isinstance(ev, T.Event) and ev.type == T.LLM_CALL:
            calls.append(ev)
    return (yield from relay(gen, seen=keep))


def trace_problems(tr: T.Trace) -> list[str]:
    """Well-formedness of a method's folded trace (tests, eval): one root question node, an
    answer or refusal node named by the answer event, every edge between known nodes, the
    graph connected, every LLM call linked to a node of the trace, a run_finished summary."""
    probs: list[str] = []
    roots = tr.roots()
    if len(roots) != 1:
        probs.append(f"expected one root, got {roots}")
    elif tr.nodes[roots[0]].kind not in ("question",):
        probs.append(f"root {roots[0]} is a {tr.nodes[roots[0]].kind}, not a question")
    if tr.answer is None:
        probs.append("no answer event")
    else:
        aid = tr.answer.get("node_id")
        if aid not in tr.nodes:
            probs.append(f"answer event names node {aid!r}, which is not in the trace")
        elif tr.nodes[aid].kind not in ("answer", "refusal"):
            probs.append(f"answer node {aid} is a {tr.nodes[aid].kind}")
    for e in tr.edges:
        if e["src"] not in tr.nodes or e["dst"] not in tr.nodes:
            probs.append(f"edge {e['src']}->{e['dst']} ({e['kind']}) names an unknown node")
    lost = tr.unreachable()
    if lost:
        probs.append(f"graph not connected: {sorted(lost)} unreachable")
    for cid, c in tr.llm_calls.items():
        if c.get("node_id") not in tr.nodes:
            probs.append(f"llm call {cid} ({c.get('purpose')}) is linked to unknown node "
                         f"{c.get('node_id')!r}")
    if not tr.summary.get("by_phase") and tr.llm_calls:
        probs.append("run_finished has no per-phase counts")
    return probs


def require_kg(ctx: Any, method: str, node_id: str) -> tuple[Any, list[T.Event]]:
    """``ctx.kg`` and the caveat events it calls for; a clear error when there is none."""
    from ..knowledge.built_kgs import partial_note
    if ctx.kg is None:
        raise LookupError(f"{method} needs a knowledge graph (ctx.kg is empty); build one "
                          "with `python -m workbench kg build DATASET`.")
    note = partial_note(ctx.kg)
    return ctx.kg, [T.custom("kg_partial", node_id, note=note)] if note else []
