"""Integrity checks for the embedded demo world in data/demo/.

Stdlib only: the world must stay loadable and self-consistent without any of
the optional dependencies.
"""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict, deque
from pathlib import Path

import pytest

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "demo"

MEDIATOR_TYPES = {"award_honor", "award_nomination", "film_performance"}
QUESTION_TYPES = {"single", "bridge", "comparison", "unanswerable"}
INVERSE_PAIRS = [
    ("film.film.directed_by", "film.director.films_directed"),
    ("film.film.produced_by_studio", "organization.studio.films_produced"),
    ("film.film.music_by", "film.composer.films_scored"),
    ("people.person.place_of_birth", "location.location.people_born_here"),
    ("award.award_honor.honored_for", "award.award_winning_work.awards_won"),
]


def _load(name):
    path = DATA_DIR / name
    assert path.exists(), f"missing {path}"
    rows = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:  # pragma: no cover - reported by assert
                raise AssertionError(f"{name}:{i} is not valid JSON: {exc}") from exc
    return rows


@pytest.fixture(scope="module")
def world():
    passages = _load("passages.jsonl")
    entities = _load("entities.jsonl")
    triples = _load("triples.jsonl")
    questions = _load("questions.jsonl")
    ents = {e["id"]: e for e in entities}
    triple_set = {(t["head"], t["relation"], t["tail"]) for t in triples}
    by_title = {p["title"]: p for p in passages}
    adj = defaultdict(list)
    for h, r, t in triple_set:
        adj[h].append((r, t))
    return dict(passages=passages, entities=entities, triples=triples, questions=questions, ents=ents,
                triple_set=triple_set, by_title=by_title, adj=adj)


def _names(ent):
    return [ent["name"], *ent.get("aliases", [])]


# ---------------------------------------------------------------------------
# schema and ids
# ---------------------------------------------------------------------------

def test_ids_unique(world):
    for key in ("passages", "entities", "questions"):
        ids = [r["id"] for r in world[key]]
        dup = [i for i, c in Counter(ids).items() if c > 1]
        assert not dup, f"duplicate {key} ids: {dup[:5]}"
    titles = [p["title"] for p in world["passages"]]
    dup = [t for t, c in Counter(titles).items() if c > 1]
    assert not dup, f"duplicate passage titles: {dup[:5]}"
    assert len(world["triple_set"]) == len(world["triples"]), "duplicate triples"


def test_passage_schema(world):
    for p in world["passages"]:
        assert set(p) >= {"id", "title", "text"}
        assert re.fullmatch(r"p\d{4}", p["id"]), p["id"]
        assert p["title"].strip() and p["text"].strip()
        # a title plus at least two sentences of prose
        assert len(re.findall(r"[.!?](?:\s|$)", p["text"])) >= 2, p["title"]


def test_entity_schema(world):
    for e in world["entities"]:
        assert e["id"].startswith("m."), e["id"]
        assert isinstance(e["name"], str) and e["name"]
        assert isinstance(e["aliases"], list)
        assert isinstance(e["type"], str) and e["type"]
    years = [e for e in world["entities"] if e["type"] == "year"]
    assert years and all(re.fullmatch(r"m\.year_\d{4}", e["id"]) and e["name"] == e["id"][-4:] for e in years)


def test_triples_reference_entities(world):
    ents = world["ents"]
    for h, r, t in world["triple_set"]:
        assert h in ents, f"unknown head {h} ({r})"
        assert t in ents, f"unknown tail {t} ({r})"
        assert re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", r), r


# ---------------------------------------------------------------------------
# structure of the knowledge graph
# ---------------------------------------------------------------------------

def test_counts(world):
    assert len(world["passages"]) >= 300
    assert len(world["triples"]) >= 1000
    qs = world["questions"]
    assert len(qs) >= 40
    types = Counter(q["type"] for q in qs)
    assert types["unanswerable"] >= 5
    assert types["comparison"] >= 5
    assert types["single"] >= 1 and types["bridge"] >= 1
    hops = {q["hops"] for q in qs if q["answerable"]}
    assert {1, 2, 3, 4} <= hops


def test_mediators_and_inverse_edges(world):
    ents, ts = world["ents"], world["triple_set"]
    mediators = [e for e in world["entities"] if e["type"] in MEDIATOR_TYPES]
    assert len(mediators) >= 20
    for mtype in ("award_honor", "film_performance"):
        assert any(e["type"] == mtype for e in mediators), mtype
    # award records carry award, year and honoured work
    for e in mediators:
        if e["type"] == "award_honor":
            rels = {r for r, _ in world["adj"][e["id"]]}
            assert {"award.award_honor.award", "award.award_honor.year", "award.award_honor.honored_for"} <= rels, e["id"]
    for fwd, inv in INVERSE_PAIRS:
        forward = [(h, t) for h, r, t in ts if r == fwd]
        assert forward, f"no {fwd} edges"
        for h, t in forward:
            assert (t, inv, h) in ts, f"missing inverse {inv} for {h} {fwd} {t}"
    assert all(ents[t]["type"] == "year" for h, r, t in ts if r == "film.film.release_year")


def _walk(world, start, relations):
    """Follow a relation sequence from start; return the set of end nodes."""
    frontier = {start}
    for rel in relations:
        frontier = {t for n in frontier for r, t in world["adj"][n] if r == rel}
    return frontier


def test_multi_hop_paths_exist(world):
    film = "m.inception"
    assert film in world["ents"]
    one = _walk(world, film, ["film.film.directed_by"])
    two = _walk(world, film, ["film.film.directed_by", "people.person.place_of_birth"])
    three = _walk(world, film, ["film.film.directed_by", "people.person.place_of_birth", "location.city.country"])
    studio3 = _walk(world, film, ["film.film.produced_by_studio", "organization.headquarters_city", "location.city.country"])
    assert one and two and three and studio3
    # award record -> film -> composer -> birthplace -> country (4 hops)
    found4 = False
    for e in world["entities"]:
        if e["type"] == "award_honor":
            if _walk(world, e["id"], ["award.award_honor.honored_for", "film.film.music_by",
                                      "people.person.place_of_birth", "location.city.country"]):
                found4 = True
                break
    assert found4
    # the graph is well connected: a BFS from a film reaches nodes 1-4 hops away
    dist = {film: 0}
    dq = deque([film])
    while dq:
        n = dq.popleft()
        if dist[n] >= 4:
            continue
        for _, t in world["adj"][n]:
            if t not in dist:
                dist[t] = dist[n] + 1
                dq.append(t)
    assert {1, 2, 3, 4} <= set(dist.values())


# ---------------------------------------------------------------------------
# questions
# ---------------------------------------------------------------------------

def test_question_schema(world):
    required = {"id", "question", "answers", "aliases", "hops", "type", "answerable", "topic_entities",
                "decomposition", "gold_titles", "gold_path", "answer_entities"}
    for q in world["questions"]:
        assert required <= set(q), f"{q.get('id')} missing {required - set(q)}"
        assert q["type"] in QUESTION_TYPES
        assert q["question"].strip().endswith("?")
        for d in q["decomposition"]:
            assert set(d) == {"question", "answer"}
        for t in q["topic_entities"]:
            assert t in world["ents"], f"{q['id']}: unknown topic {t}"
        if q["type"] == "unanswerable":
            assert q["answerable"] is False and q["answers"] == [] and q["answer_entities"] == []
        else:
            assert q["answerable"] is True and q["answers"], q["id"]
            assert 1 <= q["hops"] <= 4, q["id"]
            assert q["topic_entities"] and q["answer_entities"] and q["gold_path"] and q["gold_titles"]
        if q["type"] == "single":
            assert q["hops"] == 1 and len(q["gold_path"]) == 1, q["id"]


def test_gold_titles_and_triples_exist(world):
    for q in world["questions"]:
        for title in q["gold_titles"]:
            assert title in world["by_title"], f"{q['id']}: unknown gold title {title!r}"
        for tr in q["gold_path"]:
            assert len(tr) == 3
            assert tuple(tr) in world["triple_set"], f"{q['id']}: gold triple not in KG: {tr}"


def test_gold_paths_are_chains(world):
    ents = world["ents"]
    for q in world["questions"]:
        if not q["answerable"]:
            continue
        path = q["gold_path"]
        if q["type"] == "comparison":
            heads = {h for h, _, _ in path}
            nodes = heads | {t for _, _, t in path}
            assert len(q["topic_entities"]) >= 2, q["id"]
            for topic in q["topic_entities"]:
                assert topic in nodes, f"{q['id']}: topic {topic} not in path"
            assert set(q["answer_entities"]) <= nodes, q["id"]
        else:
            assert path[0][0] in q["topic_entities"], f"{q['id']}: path does not start at a topic entity"
            for (h1, r1, t1), (h2, r2, t2) in zip(path, path[1:]):
                assert t1 == h2, f"{q['id']}: broken chain {t1} -> {h2}"
            assert path[-1][2] in q["answer_entities"], f"{q['id']}: path does not end at an answer entity"
            assert len(path) == q["hops"], q["id"]
        wanted = {a.lower() for a in q["answers"]}
        for ae in q["answer_entities"]:
            assert ae in ents
            assert wanted & {n.lower() for n in _names(ents[ae])}, f"{q['id']}: answer entity {ae} does not name the answer"


def test_answers_appear_in_gold_passages(world):
    for q in world["questions"]:
        if not q["answerable"]:
            continue
        texts = [world["by_title"][t]["text"].lower() for t in q["gold_titles"]]
        cands = [c.lower() for c in q["answers"] + q["aliases"]]
        assert any(c in txt for c in cands for txt in texts), f"{q['id']}: answer not in gold passages"


def test_unanswerable_have_no_gold_support(world):
    for q in world["questions"]:
        if q["type"] == "unanswerable":
            assert q["gold_path"] == []


def test_hop_distribution(world):
    hops = Counter(q["hops"] for q in world["questions"] if q["answerable"])
    assert hops[1] >= 8 and hops[2] >= 8 and hops[3] >= 8 and hops[4] >= 5, hops


def test_home_demo_picks_cover_every_shape(world):
    picks = [q for q in world["questions"] if (q.get("meta") or {}).get("demo")]
    assert 4 <= len(picks) <= 8       # Home shows up to eight one-click starts
    assert {q["type"] for q in picks} == QUESTION_TYPES
    assert {q["hops"] for q in picks} >= {1, 2, 3, 4}
