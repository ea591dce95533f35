"""FRAG's scorers and path ranking (spec frag.md §3.5.1 ERM, §3.5.4 PRM).

Every scorer is ``score(query, texts) -> list[float]``: a MiniLM bi-encoder (the released
code's variant), a local cross-encoder folder (the paper's bge-reranker, never downloaded),
BM25 or TF-IDF (no weights). The paper reranks every candidate path; a pre-score that
sends only the best ``cap`` paths to the ranker is an option for slow rankers (spec §7.2),
off by default.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Sequence

def _tok(s: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", s.lower())


def bm25_scores(query: str, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    docs = [_tok(t) for t in texts]
    n = len(docs)
    if not n:
        return []
    avg = sum(len(d) for d in docs) / n or 1.0
    df = Counter(w for d in docs for w in set(d))
    q = _tok(query)
    out = []
    for d in docs:
        tf = Counter(d)
        s = 0.0
        for w in q:
            if w in tf:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(d) / avg))
        out.append(s)
    return out


def tfidf_scores(query: str, texts: Sequence[str]) -> list[float]:
    if not texts:
        return []
    from sklearn.feature_extraction.text import TfidfVectorizer
    vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 4), lowercase=True)
    X = vec.fit_transform(list(texts) + [query])
    sims = (X[:-1] @ X[-1].T).toarray().ravel()
    return [float(x) for x in sims]


class Ranker:
    def __init__(self, kind: str, embedder: Any = None, cross_encoder_path: str = ""):
        self.kind = kind
        self.embedder = embedder
        self._ce = None
        if kind == "cross_encoder":
            if not cross_encoder_path:
                raise LookupError("ranker=cross_encoder needs cross_encoder_path: a local "
                                  "sentence-transformers CrossEncoder folder (nothing is "
                                  "downloaded). Or use ranker=embedding.")
            from sentence_transformers import CrossEncoder
            self._ce = CrossEncoder(cross_encoder_path, device="cpu")
        if kind == "embedding" and embedder is None:
            from ...knowledge.dense import get_embedder
            self.embedder = get_embedder()

    @property
    def name(self) -> str:
        if self.kind == "embedding":
            return f"embedding:{getattr(self.embedder, 'name', 'minilm')}"
        return self.kind

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        if self.kind == "embedding":
            # memoised even for thousands of paths: FRAG-Simple / FRAG-Complex and reruns
            # score the same path texts again
            try:
                V = self.embedder.encode(list(texts), memo=True)
                q = self.embedder.encode(query, memo=True)
            except TypeError:            # an embedder without the keyword (tests' fakes)
                V, q = self.embedder.encode(list(texts)), self.embedder.encode(query)
            return [float(x) for x in (V @ q)]
        if self.kind == "cross_encoder":
            return [float(x) for x in self._ce.predict([(query, t) for t in texts],
                                                       batch_size=128)]
        if self.kind == "bm25":
            return bm25_scores(query, texts)
        return tfidf_scores(query, texts)


def prescore(question: str, paths: Sequence[Any], how: str,
             relation_scores: dict[str, float]) -> list[float]:
    """A cheap score per path for the optional cap: the mean ERM score S(r) of its relations
    (no extra encoding), or BM25 on its text."""
    if how == "relation" and relation_scores:
        lo = min(relation_scores.values())
        return [sum(relation_scores.get(r, lo) for r in p.relations) / len(p.relations)
                for p in paths]
    return bm25_scores(question, [p.text for p in paths])


def rerank(question: str, paths: Sequence[Any], ranker: Ranker, *, cap: int = 0,
           prerank: str = "relation", relation_scores: dict[str, float] | None = None
           ) -> tuple[list[Any], int]:
    """PRM: score paths against the question, best first (stable: ties keep discovery
    order), rank set on each. ``cap`` > 0 scores only the best ``cap`` by the pre-score.
    Returns the ranked paths and how many the cap kept from the ranker."""
    pool = list(paths)
    cut = 0
    if cap and len(pool) > cap:
        pre = prescore(question, pool, prerank, relation_scores or {})
        keep = sorted(range(len(pool)), key=lambda i: (-pre[i], i))[:cap]
        cut = len(pool) - len(keep)
        pool = [pool[i] for i in sorted(keep)]
    for p, s in zip(pool, ranker.score(question, [p.text for p in pool])):
        p.score = float(s)
    ranked = sorted(pool, key=lambda p: -(p.score or 0.0))
    for i, p in enumerate(ranked):
        p.rank = i + 1
    return ranked, cut
