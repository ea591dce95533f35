"""Rank texts (relations, paths, sub-questions) by embedding similarity to a query."""
from __future__ import annotations

from typing import Any, Sequence


def rank_by_similarity(query: str, texts: Sequence[str], embedder: Any = None, *,
                       top_k: int | None = None) -> list[tuple[int, float]]:
    """``[(index into texts, cosine similarity)]``, most similar first (ties keep input order).

    ``embedder`` is a :class:`~workbench.knowledge.dense.Embedder` (the shared one from
    ``get_embedder()`` when None). Short texts are memoised by the embedder, so ranking
    the same relation names again costs nothing.
    """
    if not texts:
        return []
    if embedder is None:
        from .dense import get_embedder
        embedder = get_embedder()
    sims = embedder.similarity(query, list(texts))
    order = sorted(range(len(texts)), key=lambda i: (-float(sims[i]), i))
    if top_k is not None:
        order = order[:top_k]
    return [(i, float(sims[i])) for i in order]
