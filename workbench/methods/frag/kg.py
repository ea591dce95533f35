"""FRAG's view of a knowledge graph, through the KnowledgeGraph API only: entity names,
CVT (unnamed mediator) nodes, schema/noise relations, and the shortest-path hop count that
labels a question SIMPLE or COMPLEX (spec frag.md §2.1, §3.4)."""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

NOISE_EXACT = {"type.object.type", "type.object.name"}
NOISE_PREFIX = ("type.type.", "common.", "freebase.")
# entity types of compound-value (mediator) nodes: Freebase CVTs and the demo world's records
MEDIATOR_TYPES = {"cvt", "mediator", "compound", "award_honor", "award_nomination",
                  "film_performance"}


def is_noise_relation(rel: str) -> bool:
    """Schema/noise relations that ERM never ranks (spec §2.1, from the released code)."""
    low = rel.lower()
    return rel in NOISE_EXACT or rel.startswith(NOISE_PREFIX) or "sameas" in low


def humanise(rel: str) -> str:
    """``people.person.place_of_birth`` -> ``people person place of birth`` (spec A6)."""
    return re.sub(r"[._]+", " ", rel).strip()


def namer(kg: Any) -> Callable[[str], str]:
    cache: dict[str, str] = {}

    def name(eid: str) -> str:
        if eid not in cache:
            try:
                cache[eid] = kg.name(eid) or eid
            except Exception:
                cache[eid] = eid
        return cache[eid]
    return name


def has_entity(kg: Any, eid: str) -> bool:
    try:
        return kg.entity(eid) is not None
    except (KeyError, LookupError):
        return False


def is_cvt(kg: Any, eid: str) -> bool:
    """An unnamed mediator node: no name (or its name is its id) or typed as CVT."""
    try:
        ent = kg.entity(eid)
    except (KeyError, LookupError):
        return False
    if ent is None:
        return False
    if isinstance(ent, dict):
        if ent.get("is_cvt"):
            return True
        nm, tp = ent.get("name"), ent.get("type", "")
    else:
        if getattr(ent, "is_cvt", False):
            return True
        nm, tp = getattr(ent, "name", ""), getattr(ent, "type", "")
    if str(tp).lower() in MEDIATOR_TYPES:
        return True
    # unnamed: no name, or a Freebase-style mid standing in for one (literals keep their value)
    return (not nm) or (nm == eid and re.match(r"^[mg]\.[0-9a-z_]+$", eid) is not None)


def kg_min_hops(kg: Any, sources: Sequence[str], targets: Sequence[str]) -> int | None:
    """Shortest-path hop count from any source to any target (edges either way), the
    paper's label for routing (spec §3.4); None if unreachable or unknown."""
    best = None
    tset = [t for t in targets if has_entity(kg, t)]
    for s in sources:
        if not tset or not has_entity(kg, s):
            continue
        for t, path in kg.shortest_paths(s, tset).items():
            if best is None or len(path) < best:
                best = len(path)
    return best


def triple_sources(kg: Any, triples: Sequence[tuple[str, str, str]]) -> dict[str, list[str]]:
    """``{"sources": [...]}``: the passages a built KG extracted the triples from (what
    triage matches a text dataset's gold passages against); empty for a KG without them."""
    source = getattr(kg, "source", None)
    got = [s for s in (source(*t) for t in triples) if s] if source else []
    return {"sources": list(dict.fromkeys(got))} if got else {}
