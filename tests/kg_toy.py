"""A tiny fictional Freebase-shaped KG for the KG-method tests (names no LLM can know).

Chain: Glass Harbor -directed_by-> Ilse Varga -place_of_birth-> Port Amsel
-containedby-> Norvania -capital-> Tessaly; a CVT performance node; schema and noise
relations; a hub (Norvania contains ten towns).
"""
from __future__ import annotations

from workbench.datasets.base import Entity, Question, Triple

ENTITIES = [
    ("m.film1", "Glass Harbor"), ("m.film2", "Salt Meridian"), ("m.p1", "Ilse Varga"),
    ("m.p2", "Oren Blake"), ("m.c1", "Port Amsel"), ("m.c2", "Tessaly"),
    ("m.k1", "Norvania"), ("m.g1", "Drama"), ("m.ch1", "Captain Rell"),
    ("m.x1", "Director"), ("m.cvt1", ""),
] + [(f"m.t{i}", f"Town {chr(65 + i)}") for i in range(10)]

TRIPLES = [
    ("m.film1", "film.film.directed_by", "m.p1"),
    ("m.film2", "film.film.directed_by", "m.p1"),
    ("m.p1", "people.person.place_of_birth", "m.c1"),
    ("m.c1", "location.location.containedby", "m.k1"),
    ("m.k1", "location.country.capital", "m.c2"),
    ("m.c2", "location.location.containedby", "m.k1"),
    ("m.film1", "film.film.starring", "m.cvt1"),
    ("m.cvt1", "film.performance.actor", "m.p2"),
    ("m.cvt1", "film.performance.character", "m.ch1"),
    ("m.p2", "people.person.nationality", "m.k1"),
    ("m.film1", "film.film.genre", "m.g1"),
    ("m.film2", "film.film.genre", "m.g1"),
    ("m.film1", "type.object.type", "film.film"),
    ("m.p1", "common.topic.notable_for", "m.x1"),
] + [("m.k1", "location.location.contains", f"m.t{i}") for i in range(10)]

QUESTIONS = [
    Question(id="t1", question="Who directed Glass Harbor?", answers=["Ilse Varga"], hops=1,
             topic_entities=["m.film1"], answer_entities=["m.p1"],
             gold_path=[["m.film1", "film.film.directed_by", "m.p1"]]),
    Question(id="t2", question="Where was the director of Glass Harbor born?",
             answers=["Port Amsel"], hops=2, topic_entities=["m.film1"],
             answer_entities=["m.c1"]),
    Question(id="t3", question="In which country is the birthplace of the director of Glass "
             "Harbor?", answers=["Norvania"], hops=3, topic_entities=["m.film1"],
             answer_entities=["m.k1"]),
    Question(id="t4", question="What is the capital of the country that contains the "
             "birthplace of the director of Glass Harbor?", answers=["Tessaly"], hops=4,
             topic_entities=["m.film1"], answer_entities=["m.c2"]),
]


def toy_kg():
    from workbench.knowledge.kg import KnowledgeGraph
    ents = [Entity(id=i, name=n or i, type="cvt" if not n else "") for i, n in ENTITIES]
    return KnowledgeGraph.from_triples([Triple(h, r, t) for h, r, t in TRIPLES], ents)


def built_toy_kg():
    """The toy KG as ``kg build`` would give it from one passage per entity, titled by the
    entity's name (HotpotQA's passage ids are titles): every triple names its head's passage."""
    from workbench.knowledge.kg import KnowledgeGraph
    names = {i: n or "cvt passage" for i, n in ENTITIES}
    return KnowledgeGraph.from_triples([Triple(h, r, t, source=names[h]) for h, r, t in TRIPLES],
                                       [Entity(id=i, name=n or i) for i, n in ENTITIES])


def question(qid: str) -> Question:
    return next(q for q in QUESTIONS if q.id == qid)


SPLITS = {"t1": "train", "t3": "train", "t2": "test", "t4": "test"}


def import_toy_dataset(folder, name: str = "toy"):
    """The toy KG and questions as an imported dataset (t1, t3 train; t2, t4 test)."""
    import json
    from pathlib import Path

    from workbench.datasets import import_dataset
    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "entities.jsonl", "w") as f:
        for i, n in ENTITIES:
            f.write(json.dumps({"id": i, "name": n or i, "type": "cvt" if not n else ""}) + "\n")
    with open(d / "triples.jsonl", "w") as f:
        for h, r, t in TRIPLES:
            f.write(json.dumps({"head": h, "relation": r, "tail": t}) + "\n")
    with open(d / "questions.jsonl", "w") as f:
        for q in QUESTIONS:
            f.write(json.dumps({**q.to_dict(), "split": SPLITS[q.id]}) + "\n")
    return import_dataset("jsonl", d, name)
