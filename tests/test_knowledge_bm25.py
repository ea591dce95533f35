"""BM25: the workbench engine against rank-bm25, the reference implementation."""
from __future__ import annotations

import math

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from workbench.datasets.base import Passage
from workbench.knowledge.bm25 import BM25Index, BM25Params, BM25Retriever
from workbench.knowledge.text import tokenize
from workbench.knowledge.types import Hit

DOCS = [
    "Inception is a 2010 science fiction film written and directed by Christopher Nolan.",
    "Christopher Nolan was born in London; he directed Inception and Interstellar.",
    "Interstellar is a 2014 film about astronauts travelling through a wormhole.",
    "London is the capital of the United Kingdom and a centre of film production.",
    "The Dark Knight is a superhero film; Nolan directed it in 2008.",
    "Emma Thomas produced Inception. Thomas and Nolan are married.",
    "A wormhole is a speculative structure linking disparate points in spacetime.",
    "film film film film film",           # a term frequent enough to get a negative idf
    "",
]
QUERIES = ["who directed inception", "film about a wormhole", "capital of the united kingdom",
           "film", "nolan nolan london", "zebra unknown words", "Thomas married"]


def corpus():
    return [tokenize(d) for d in DOCS]


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("k1,b", [(1.5, 0.75), (1.2, 0.5), (2.0, 1.0)])
def test_okapi_scores_equal_rank_bm25(k1, b):
    toks = corpus()
    ref = BM25Okapi(toks, k1=k1, b=b)
    idx = BM25Index.build(toks, BM25Params(k1=k1, b=b))
    for q in QUERIES:
        qt = tokenize(q)
        # rank-bm25 divides 0 by 0 for an empty document when b=1 (NaN); we score it 0
        np.testing.assert_allclose(idx.scores(qt), np.nan_to_num(ref.get_scores(qt)),
                                   rtol=1e-5, atol=1e-5)


def test_negative_idf_floor_matches_rank_bm25():
    # "film" occurs in more than half the documents -> rank-bm25 floors its idf at eps*mean
    toks = [["film", "a"], ["film", "b"], ["film", "c"], ["d"]]
    ref = BM25Okapi(toks)
    idx = BM25Index.build(toks)
    assert ref.idf["film"] == pytest.approx(0.25 * ref.average_idf)
    np.testing.assert_allclose(idx.scores(["film", "d"]), ref.get_scores(["film", "d"]),
                               rtol=1e-6)


class _LuceneRef(BM25Okapi):
    """rank-bm25's scoring with Lucene's idf: the reference for variant='lucene'."""

    def _calc_idf(self, nd):
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


def test_lucene_variant_against_reference():
    toks = corpus()
    ref = _LuceneRef(toks)
    idx = BM25Index.build(toks, BM25Params(variant="lucene"))
    for q in QUERIES:
        qt = tokenize(q)
        np.testing.assert_allclose(idx.scores(qt), ref.get_scores(qt), rtol=1e-5, atol=1e-6)


def test_rankings_match_reference_on_random_corpus():
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(300)]
    toks = [[vocab[j] for j in rng.zipf(1.4, rng.integers(5, 60)) % 300] for _ in range(400)]
    ref = BM25Okapi(toks)
    idx = BM25Index.build(toks)
    for _ in range(20):
        qt = [vocab[j] for j in rng.integers(0, 300, 4)]
        s_ref = ref.get_scores(qt)
        got, sc = idx.top_k(qt, 10)
        np.testing.assert_allclose(sc, s_ref[got], rtol=1e-5)
        assert np.all(np.diff(sc) <= 1e-9)
        # the same documents as the reference's best 10 (ties aside)
        kth = np.sort(s_ref)[::-1][min(9, len(got) - 1)]
        assert all(s_ref[i] >= kth - 1e-6 for i in got)


def test_retriever_hits_and_edge_cases():
    ps = [Passage(id=f"p{i}", title=f"T{i}", text=t) for i, t in enumerate(DOCS)]
    r = BM25Retriever(ps)
    hits = r.search("Who directed Inception?", 3)
    assert [h.rank for h in hits] == [1, 2, 3]
    assert all(isinstance(h, Hit) and h.retriever == "bm25" for h in hits)
    assert hits[0].id in ("p0", "p1") and hits[0].title.startswith("T") and hits[0].text
    assert hits[0].score >= hits[1].score >= hits[2].score > 0
    assert r.search("", 5) == []
    assert r.search("qwertyuiop", 5) == []                 # no positive score -> no hit
    assert len(r.search("film", 100)) <= len(ps)


def test_save_load_roundtrip(tmp_path):
    toks = corpus()
    idx = BM25Index.build(toks, BM25Params(k1=1.2, variant="lucene"))
    idx.save(tmp_path / "i.npz")
    back = BM25Index.load(tmp_path / "i.npz")
    assert back.params.k1 == 1.2 and back.params.variant == "lucene"
    for q in QUERIES:
        np.testing.assert_array_equal(back.scores(tokenize(q)), idx.scores(tokenize(q)))


def test_unknown_variant():
    with pytest.raises(ValueError, match="variant"):
        BM25Index.build(corpus(), BM25Params(variant="bm42"))
