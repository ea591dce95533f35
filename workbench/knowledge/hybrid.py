"""Hybrid retrieval: reciprocal-rank fusion, weighted score fusion, optional reranking.

Knobs (exposed on :class:`HybridRetriever` and ``Dataset.retriever("hybrid", ...)``):

- ``fusion``: ``"rrf"`` (default) or ``"weighted"``;
- ``rrf_k``: the RRF constant in ``sum_i w_i / (rrf_k + rank_i)``; small values trust the
  top of each list more (default 60, the usual value);
- ``weights``: one weight per component retriever (default equal);
- ``depth``: how many candidates each component contributes before fusion.

Weighted fusion min-max normalises each component's raw scores over its own candidate
list, so BM25's unbounded scores and cosine similarities are comparable; a passage a
component did not return counts 0 for it.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

from .types import Hit, Retriever

# Defaults chosen on HotpotQA-100 (benchmarks/retrieval.py prints the sweep).
DEFAULT_FUSION = "rrf"
DEFAULT_RRF_K = 60.0
DEFAULT_DEPTH = 100


def rrf_fuse(rankings: Sequence[Sequence[str]], *, k: float = 60.0,
             weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion of id lists (best first) -> [(id, fused score)] best first."""
    w = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(w) != len(rankings):
        raise ValueError("one weight per ranking")
    score: dict[str, float] = {}
    first: dict[str, tuple[int, int]] = {}
    for li, (ranking, wi) in enumerate(zip(rankings, w)):
        for r, pid in enumerate(ranking, 1):
            score[pid] = score.get(pid, 0.0) + wi / (k + r)
            first.setdefault(pid, (r, li))
    return sorted(score.items(), key=lambda kv: (-kv[1], first[kv[0]]))


def minmax(scores: Sequence[float]) -> list[float]:
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    if hi - lo <= 1e-12:
        return [1.0 for _ in scores]
    return [(s - lo) / (hi - lo) for s in scores]


def weighted_fuse(scored: Sequence[Sequence[tuple[str, float]]], *,
                  weights: Sequence[float] | None = None,
                  normalize: Callable[[Sequence[float]], list[float]] = minmax
                  ) -> list[tuple[str, float]]:
    """Weighted sum of per-list normalised scores -> [(id, fused score)] best first."""
    w = list(weights) if weights is not None else [1.0] * len(scored)
    if len(w) != len(scored):
        raise ValueError("one weight per list")
    score: dict[str, float] = {}
    first: dict[str, tuple[int, int]] = {}
    for li, (lst, wi) in enumerate(zip(scored, w)):
        norm = normalize([s for _, s in lst])
        for r, ((pid, _), ns) in enumerate(zip(lst, norm), 1):
            score[pid] = score.get(pid, 0.0) + wi * ns
            first.setdefault(pid, (r, li))
    return sorted(score.items(), key=lambda kv: (-kv[1], first[kv[0]]))


class HybridRetriever:
    def __init__(self, retrievers: Sequence[Retriever], *, fusion: str = DEFAULT_FUSION,
                 rrf_k: float = DEFAULT_RRF_K, weights: Sequence[float] | None = None,
                 depth: int = DEFAULT_DEPTH):
        if fusion not in ("rrf", "weighted"):
            raise ValueError(f"fusion must be 'rrf' or 'weighted', not {fusion!r}")
        if not retrievers:
            raise ValueError("a hybrid retriever needs at least one component")
        self.retrievers = list(retrievers)
        self.fusion = fusion
        self.rrf_k = float(rrf_k)
        self.weights = list(weights) if weights is not None else [1.0] * len(self.retrievers)
        if len(self.weights) != len(self.retrievers):
            raise ValueError("one weight per component retriever")
        self.depth = int(depth)
        self.name = f"hybrid-{fusion}"

    def search(self, query: str, k: int = 5) -> list[Hit]:
        depth = max(self.depth, k)
        lists = [r.search(query, depth) for r in self.retrievers]
        by_id: dict[str, Hit] = {}
        comp: dict[str, dict[str, dict[str, float]]] = {}
        for r, hits in zip(self.retrievers, lists):
            for h in hits:
                by_id.setdefault(h.id, h)
                comp.setdefault(h.id, {})[r.name] = {"rank": h.rank, "score": h.score}
        if self.fusion == "rrf":
            fused = rrf_fuse([[h.id for h in hits] for hits in lists], k=self.rrf_k,
                             weights=self.weights)
        else:
            fused = weighted_fuse([[(h.id, h.score) for h in hits] for hits in lists],
                                  weights=self.weights)
        out = []
        for rank, (pid, s) in enumerate(fused[:k], 1):
            h = by_id[pid]
            out.append(Hit(h.id, h.title, h.text, self.name, float(s), rank,
                           meta={"components": comp[pid]}))
        return out


class Reranker:
    """Re-scores a base retriever's top candidates with a cross-encoder.

    ``model`` is a local cross-encoder folder (sentence-transformers ``CrossEncoder``),
    or any callable ``score(query, texts) -> list[float]`` (tests use one).
    """

    def __init__(self, base: Retriever, model: str | os.PathLike | Callable, *,
                 candidates: int = 20, batch_size: int = 16):
        self.base = base
        self.candidates = int(candidates)
        self.name = "rerank"
        if callable(model) and not isinstance(model, (str, os.PathLike)):
            self._score = model
        else:
            self._score = _cross_encoder(model, batch_size)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        cands = self.base.search(query, max(self.candidates, k))
        if not cands:
            return []
        scores = list(self._score(query, [f"{h.title}. {h.text}" if h.title else h.text
                                          for h in cands]))
        order = sorted(range(len(cands)), key=lambda i: (-float(scores[i]), i))
        out = []
        for rank, i in enumerate(order[:k], 1):
            h = cands[i]
            out.append(Hit(h.id, h.title, h.text, self.name, float(scores[i]), rank,
                           meta={"base": {"retriever": h.retriever, "rank": h.rank,
                                          "score": h.score}}))
        return out


_CROSS: dict[str, Callable] = {}


def _cross_encoder(model: str | os.PathLike, batch_size: int) -> Callable:
    from pathlib import Path
    p = Path(model).expanduser()
    if not p.is_dir() or not (p / "config.json").is_file():
        raise FileNotFoundError(f"{model!s} is not a local cross-encoder model folder "
                                f"(needs config.json); models are never downloaded at run time")
    key = str(p.resolve())
    if key not in _CROSS:
        from sentence_transformers import CrossEncoder
        ce = CrossEncoder(key, device="cpu")

        def score(query: str, texts: list[str]) -> list[float]:
            return [float(x) for x in ce.predict([(query, t) for t in texts],
                                                 batch_size=batch_size,
                                                 show_progress_bar=False)]
        _CROSS[key] = score
    return _CROSS[key]
