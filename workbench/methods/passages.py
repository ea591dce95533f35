"""Passages in prompts (clipping, numbered sources, context records) and retriever helpers."""
from __future__ import annotations

from typing import Any, Sequence

from .. import trace as T
from ..knowledge.types import Hit
from . import context_select as CS


def clip(text: str, max_chars: int) -> str:
    """Cut text at a word boundary near max_chars (0 = no limit)."""
    text = " ".join((text or "").split())
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    sp = cut.rfind(" ")
    return (cut[:sp] if sp > max_chars // 2 else cut) + " ..."


def passage_line(h: Hit | dict[str, Any], max_chars: int = 400, context: str = "head",
                 query: str = "") -> str:
    title = h["title"] if isinstance(h, dict) else h.title
    text = h["text"] if isinstance(h, dict) else h.text
    body = clip(text, max_chars) if context == "head" else \
        CS.select(text, query, max_chars, context, title or "").text
    return f"{title}: {body}" if title else body


def format_passages(hits: Sequence[Hit], max_chars: int = 400, label: str = "Source",
                    numbered: bool = True, *, context: str = "head",
                    queries: str | Sequence[str] = "",
                    cuts: Sequence[CS.Cut] | None = None) -> str:
    """``Source 1: Title: text`` lines (the numbering is what readers cite). Each body is
    cut to ``max_chars`` as ``context`` says (``context_select``: head, relevance to
    ``queries``, whole), or given as ``cuts`` already made; the title is always kept."""
    if not hits:
        return "(no passages)"
    if cuts is None:
        cuts = CS.select_many([_field(h, "text") for h in hits], queries, max_chars, context,
                              [_field(h, "title") for h in hits])
    lines = []
    for i, (h, cut) in enumerate(zip(hits, cuts), 1):
        head = f"{label} {i}: " if numbered else "- "
        title = _field(h, "title")
        lines.append(head + (f"{title}: {cut.text}" if title else cut.text))
    return "\n".join(lines)


def _field(h: Hit | dict[str, Any], name: str) -> str:
    return (h[name] if isinstance(h, dict) else getattr(h, name)) or ""


def context_record(hits: Sequence[Hit], cuts: Sequence[CS.Cut]) -> dict[str, Any]:
    """What a run stores on the node that read the passages: the mode, the budget, the
    characters cut, and each cut passage's sentences marked kept or cut (the inspector
    greys the cut ones)."""
    mode = cuts[0].mode if cuts else "whole"
    budget = cuts[0].budget if cuts else 0
    return {"mode": mode, "budget": budget,
            "kept_chars": sum(c.kept_chars for c in cuts),
            "cut_chars": sum(c.cut_chars for c in cuts),
            "passages": [{"id": _field(h, "id"), "title": _field(h, "title"), **c.record()}
                         for h, c in zip(hits, cuts) if c.cut_chars]}


def context_event(node_id: str, hits: Sequence[Hit], cuts: Sequence[CS.Cut]) -> T.Event:
    """The budget and what was cut, on the node that read the passages (the inspector greys
    the cut)."""
    rec = context_record(hits, cuts)
    return T.node_updated(node_id, None, context=rec, context_mode=rec["mode"],
                          context_budget=rec["budget"], context_cut_chars=rec["cut_chars"])


def fit_passages(count_tokens: Any, hits: Sequence[Hit], per_doc_chars: int,
                 budget_tokens: int, *, context: str = "head", queries: str = "",
                 **fmt: Any) -> tuple[str, list[Hit], dict[str, Any]]:
    """Format passages within a token budget: truncate each passage first (as ``context``
    says), then drop the lowest-ranked ones (the PAR-RAG spec's order). Returns text, the
    hits kept, and a note with what was cut (:func:`context_record`)."""
    def render(kept: list[Hit]) -> tuple[str, list[CS.Cut]]:
        cuts = CS.select_many([h.text for h in kept], queries, per_doc_chars, context,
                              [h.title for h in kept])
        return format_passages(kept, per_doc_chars, cuts=cuts, **fmt), cuts
    kept = list(hits)
    text, cuts = render(kept)
    while kept and count_tokens(text) > budget_tokens:
        kept = kept[:-1]
        text, cuts = render(kept)
    note = {"k_requested": len(hits), "k_effective": len(kept),
            "per_doc_chars": per_doc_chars, "budget_tokens": budget_tokens,
            **context_record(kept, cuts)}
    return text, kept, note


def hit_brief(h: Hit) -> dict[str, Any]:
    return {"id": h.id, "title": h.title, "score": round(float(h.score), 4), "rank": h.rank,
            "retriever": h.retriever}


def retriever_name(ctx: Any, name: str) -> str:
    """Resolve a retriever knob: "default" means the user's Settings choice."""
    if name in ("", "default"):
        name = ctx.extra.get("default_retriever") or "hybrid"
    if name not in ctx.retrievers and ctx.retrievers:
        # e.g. a test context with only one retriever: fall back, but never silently
        # when the user asked for something the dataset cannot provide.
        if len(ctx.retrievers) == 1:
            return next(iter(ctx.retrievers))
    return name


def rrf_merge(lists: Sequence[Sequence[Hit]], k: int, c: int = 60) -> list[Hit]:
    """Reciprocal-rank fusion of several hit lists, deduplicated by passage id."""
    score: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for hits in lists:
        for h in hits:
            score[h.id] = score.get(h.id, 0.0) + 1.0 / (c + h.rank)
            first.setdefault(h.id, h)
    order = sorted(score, key=lambda i: (-score[i], i))[:k]
    out = []
    for r, i in enumerate(order, 1):
        h = first[i]
        out.append(Hit(h.id, h.title, h.text, f"rrf({h.retriever})", round(score[i], 6), r,
                       dict(h.meta)))
    return out
