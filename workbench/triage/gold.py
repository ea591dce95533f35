"""Gold evidence of a question as *hops*, and which retrieved items hold which hop.

A hop is one piece of knowledge the answer needs. What counts as a hop depends on the
dataset's gold and on the kind of knowledge a run retrieved:

- passages (text methods, or a run that retrieved nothing):
  - MuSiQue: each step of ``question_decomposition`` that names its supporting
    paragraph is a hop (its passage id and title, and its sub-question);
  - HotpotQA, 2Wiki, FEVER, the demo world: each title in ``gold_titles`` is a hop
    (HotpotQA's supporting-fact titles; the demo world's gold passages), with the passage
    id from ``meta.gold_passage_ids`` where the importer recorded it;
- triples (a run that retrieved KG triples or paths):
  - a question with ``gold_path`` (the demo world, 2Wiki evidences): each gold triple is
    a hop;
  - WebQSP / CWQ (answer entities only): one hop, "an answer entity is reached".

A retrieved passage holds a passage hop when its id is the hop's passage id or its title
equals the hop's title (case and spacing ignored; chunks of one article share its title).
A KG item from a KG built out of the dataset's passages (``kg build``) holds a passage hop
when a triple it carries was extracted from the hop's passage (``meta.sources``); ``how``
is then ``"source"``. So a KG method on HotpotQA is judged by the gold passages its triples
came from.
A retrieved triple holds a triple hop when it links the same two entities, in either
direction (KGs store inverse relations as their own edges); ``how`` records ``"triple"``
when the relation is the same too, ``"entities"`` otherwise. A triple holds the
answer-entity hop when its head or tail is an answer entity. A KG item counts through
every triple it carries (``meta.triple``, ``meta.triples``, ``meta.head/relation/tail``).
Retrieved items a method marked as not kept (``meta.kept == False``, CogGRAG's pruned
candidates) hold nothing.
"""
from __future__ import annotations

import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

PASSAGES, TRIPLES, ENTITIES = "passages", "triples", "entities"


def norm(s: Any) -> str:
    return " ".join(unicodedata.normalize("NFKC", str(s or "")).casefold().split())


@dataclass
class Hop:
    index: int                         # 0-based, in the dataset's order
    label: str                         # title, "head relation tail" or "answer entity"
    kind: str                          # passages | triples | entities
    passage_ids: list[str] = field(default_factory=list)
    title: str = ""
    triple: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    subq: str = ""                     # the decomposition step's sub-question, if any

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GoldEvidence:
    kind: str
    hops: list[Hop]
    source: str                        # which gold field the hops come from

    def labels(self) -> list[str]:
        return [h.label for h in self.hops]


def as_dict(question: Any) -> dict[str, Any]:
    if question is None:
        return {}
    if isinstance(question, dict):
        return question
    return question.to_dict()


def passage_hops(q: dict[str, Any]) -> tuple[list[Hop], str]:
    steps = [d for d in q.get("decomposition") or [] if isinstance(d, dict)
             and (d.get("passage_id") or d.get("title"))]
    if steps:
        return [Hop(i, str(d.get("title") or d.get("passage_id")), PASSAGES,
                    [str(d["passage_id"])] if d.get("passage_id") else [],
                    str(d.get("title") or ""), subq=str(d.get("question") or ""))
                for i, d in enumerate(steps)], "decomposition"
    titles = [str(t) for t in q.get("gold_titles") or [] if str(t).strip()]
    ids = list((q.get("meta") or {}).get("gold_passage_ids") or [])
    if len(ids) != len(titles):
        ids = []
    return [Hop(i, t, PASSAGES, [str(ids[i])] if ids else [], t)
            for i, t in enumerate(titles)], "gold_titles"


def triple_hops(q: dict[str, Any]) -> tuple[list[Hop], str]:
    path = q.get("gold_path") or []
    trips = [[str(x) for x in t] for t in path if isinstance(t, (list, tuple)) and len(t) == 3]
    if trips:
        return [Hop(i, " ".join(t), TRIPLES, triple=t, entities=[t[0], t[2]])
                for i, t in enumerate(trips)], "gold_path"
    ents = [str(e) for e in (q.get("answer_entities") or []) if str(e).strip()]
    if ents:
        return [Hop(0, "answer entity: " + " | ".join(ents), ENTITIES, entities=ents)], \
            "answer_entities"
    return [], ""


def gold_evidence(question: Any, retrieved: str | None) -> GoldEvidence | None:
    """The hops for a run that retrieved ``retrieved`` (passages | triples | None = nothing);
    None when the question carries no gold evidence of a usable kind."""
    q = as_dict(question)
    p, psrc = passage_hops(q)
    t, tsrc = triple_hops(q)
    order = [(t, tsrc), (p, psrc)] if retrieved == TRIPLES else [(p, psrc), (t, tsrc)]
    for hops, src in order:
        if hops:
            return GoldEvidence(hops[0].kind, hops, src)
    return None


# ---------------------------------------------------------------- retrieved items

def hit_triples(hit: dict[str, Any]) -> list[tuple[str, str, str]]:
    m = hit.get("meta") or {}
    out: list[tuple[str, str, str]] = []
    tr = m.get("triple")
    if isinstance(tr, (list, tuple)) and len(tr) == 3:
        out.append(tuple(map(str, tr)))
    for tr in m.get("triples") or []:
        if isinstance(tr, (list, tuple)) and len(tr) == 3:
            out.append(tuple(map(str, tr)))
    if all(k in m for k in ("head", "relation", "tail")):
        out.append((str(m["head"]), str(m["relation"]), str(m["tail"])))
    return out


def is_kg_hit(hit: dict[str, Any], retriever: str = "") -> bool:
    return bool(hit_triples(hit)) or (hit.get("retriever") or retriever) == "kg"


def kept(hit: dict[str, Any]) -> bool:
    return (hit.get("meta") or {}).get("kept", True) is not False


def hop_matches(hop: Hop, hit: dict[str, Any]) -> str | None:
    """How ``hit`` holds ``hop`` ("id", "title", "source", "triple", "entities", "entity")
    or None."""
    if hop.kind == PASSAGES:
        if hop.passage_ids and str(hit.get("id", "")) in hop.passage_ids:
            return "id"
        if hop.title and norm(hit.get("title")) == norm(hop.title):
            return "title"
        src = [str(x) for x in (hit.get("meta") or {}).get("sources") or []]
        if any(x in hop.passage_ids or norm(x) == norm(hop.title) for x in src):
            return "source"
        return None
    trips = [tuple(norm(x) for x in t) for t in hit_triples(hit)]
    if hop.kind == TRIPLES:
        h, r, t = (norm(x) for x in hop.triple)
        for th, tr_, tt in trips:
            if (th, tt) == (h, t) and tr_ == r:
                return "triple"
        for th, _, tt in trips:
            if (th, tt) in ((h, t), (t, h)):
                return "entities"
        return None
    ents = {norm(e) for e in hop.entities}
    if any(th in ents or tt in ents for th, _, tt in trips):
        return "entity"
    return None


@dataclass
class HopHit:
    hop: int
    how: str
    hit_id: str
    rank: int | None
    retrieval: int                     # index of the retrieval event on its node

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def match_evidence(evidence: Iterable[dict[str, Any]], hops: Sequence[Hop]) -> list[HopHit]:
    """Every (hop, retrieved item) pair where the item holds the hop, first one per hop
    and retrieval event."""
    out: list[HopHit] = []
    for ri, ev in enumerate(evidence):
        seen: set[int] = set()
        for hit in ev.get("hits") or []:
            if not kept(hit):
                continue
            for hop in hops:
                if hop.index in seen:
                    continue
                how = hop_matches(hop, hit)
                if how:
                    seen.add(hop.index)
                    out.append(HopHit(hop.index, how, str(hit.get("id", "")), hit.get("rank"), ri))
    return out
