"""CogGRAG stage 2: one-shot structured retrieval (spec coggrag.md §3.3).

Local keys (entities, (entity, relation) tuples, (entity, relation, entity) triples) per
mind-map question and a global key subgraph; extracted entity strings linked to the KG
(exact / alias / fuzzy / embedding) and expanded to their 1-hop neighbours (both
directions, diverse relations first under a per-entity cap; ``expand_hops`` 2 adds a
second hop from the triples kept on the first); a candidate triple x is kept iff
max_y cos(e(x), e(y)) > epsilon over the key triples y (Eq. 3), with an optional K_max
safety cap. The released code's entity descriptions (``describe``) are an option. The
stage's events (a retrieval node for the triples, one for the descriptions) are built here.
"""
from __future__ import annotations

import re
from typing import Any, Iterator, Sequence

import numpy as np

from ... import trace as T
from ..frag.kg import is_noise_relation, triple_sources


def humanise_rel(rel: str, style: str) -> str:
    if style == "raw":
        return rel
    if style == "last":
        rel = rel.rsplit(".", 1)[-1] if "." in rel and " " not in rel else rel
    return " ".join(re.sub(r"[._]+", " ", rel).split())


def verbalise(h: str, r: str, t: str, style: str) -> str:
    return f"({h}, {r}, {t})" if style == "paren" else f"{h} {r} {t}"


def validate_local(obj: Any) -> dict[str, Any]:
    ents = [str(e).strip() for e in obj.get("entities", []) if str(e).strip()]
    tup = [[str(a).strip() for a in t] for t in obj.get("tuples", [])
           if isinstance(t, list) and len(t) == 2]
    tri = [[str(a).strip() for a in t] for t in obj.get("triples", [])
           if isinstance(t, list) and len(t) == 3]
    # a small model repeats an item until its list is full: each copy would be matched again
    return {"entities": list(dict.fromkeys(ents)), "tuples": _once(tup), "triples": _once(tri)}


def _once(rows: list[list[str]]) -> list[list[str]]:
    return [list(r) for r in dict.fromkeys(map(tuple, rows))]


def validate_global(obj: Any) -> list[list[str]]:
    return [list(map(str, t)) for t in obj["subgraph"] if isinstance(t, list) and len(t) == 3]


def diverse(nbrs: list[tuple[str, str, str]], cap: int) -> list[tuple[str, str, str]]:
    """At most ``cap`` edges, round-robin over relation types (hubs keep variety)."""
    if len(nbrs) <= cap:
        return nbrs
    by: dict[tuple[str, str], list] = {}
    for x in nbrs:
        by.setdefault((x[0], x[2]), []).append(x)
    out, i = [], 0
    lists = list(by.values())
    while len(out) < cap:
        progressed = False
        for lst in lists:
            if i < len(lst):
                out.append(lst[i])
                progressed = True
                if len(out) >= cap:
                    break
        if not progressed:
            break
        i += 1
    return out


class TripleEmbedder:
    """The run's sentence embedder (MiniLM), or the spec's TF-IDF fallback fitted on the
    texts of this retrieval when no weights are installed (it scores lower: epsilon ~0.3)."""

    def __init__(self, emb: Any):
        self.emb = emb
        self.fit_texts: list[str] = ["x"]

    @property
    def name(self) -> str:
        return getattr(self.emb, "name", None) or "tfidf-char (fallback; use ε≈0.3)"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.emb is not None:
            try:
                v = self.emb.encode(list(texts), show_progress=False)
            except TypeError:          # an embedder without the keyword (tests' fakes)
                v = self.emb.encode(list(texts))
            return np.asarray(v, dtype=np.float32)
        from sklearn.feature_extraction.text import TfidfVectorizer
        vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 4)).fit(self.fit_texts)
        X = vec.transform(list(texts)).toarray().astype(np.float32)
        n = np.linalg.norm(X, axis=1, keepdims=True)
        n[n == 0] = 1
        return X / n


def key_rows(local: dict[str, dict[str, Any]], subgraph: list[list[str]],
             use_tuples: bool) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The pruning keys y (local triples, global subgraph triples, tuples only with
    ``use_tuples``) and the entity strings to link, each with the node that owns it."""
    rows: list[dict[str, Any]] = []
    ents: dict[str, str] = {}
    for nid, lk in local.items():
        owner = lk.get("owner", nid)
        for e in lk.get("entities", []):
            ents.setdefault(e, owner)
        for tp in lk.get("tuples", []):
            ents.setdefault(tp[0], owner)
            if use_tuples:
                rows.append({"key": tp, "kind": "tuple", "owner": owner})
        for tr in lk.get("triples", []):
            ents.setdefault(tr[0], owner)
            ents.setdefault(tr[2], owner)
            rows.append({"key": tr, "kind": "triple", "owner": owner})
    for tr in subgraph:
        rows.append({"key": tr, "kind": "subgraph", "owner": "GLOBAL"})
        ents.setdefault(tr[0], "GLOBAL")
        ents.setdefault(tr[2], "GLOBAL")
    return rows, ents


def _expand(kg: Any, cfg: Any, seeds: Sequence[tuple[str, str]], hop: int,
            cands: dict[tuple[str, str, str], dict[str, Any]]) -> None:
    """Add every edge of each (KG node, entity string it came from) seed, both ways,
    capped per node with diverse relations first (R5). A candidate keeps the passage its
    triple was extracted from (built KGs), so triage can tell which gold passage it holds."""
    for eid, s in seeds:
        nb = kg.neighbors(eid)
        if cfg.skip_schema_relations:
            nb = [x for x in nb if not is_noise_relation(x[0])]
        for rel, other, d in diverse(nb, cfg.max_edges_per_entity):
            h, t = (eid, other) if d == "out" else (other, eid)
            if (h, rel, t) not in cands:
                r = humanise_rel(rel, cfg.relation_text)
                cands[(h, rel, t)] = {
                    "h": h, "r": rel, "t": t, "seed": eid, "seed_string": s, "direction": d,
                    "hop": hop, "text": verbalise(kg.name(h), r, kg.name(t), cfg.triple_text),
                    "text_prompt": f"({kg.name(h)}, {r}, {kg.name(t)})",
                    **triple_sources(kg, [(h, rel, t)])}


def _score(cand_list: list[dict[str, Any]], rows: list[dict[str, Any]], key_texts: list[str],
           emb: TripleEmbedder, epsilon: float) -> None:
    """score(x) = max_y cos(e(x), e(y)) over the keys (R6-R8), and whether it is over ε."""
    emb.fit_texts = [c["text"] for c in cand_list] + key_texts or ["x"]
    if cand_list and rows:
        S = emb.encode([c["text"] for c in cand_list]) @ emb.encode(key_texts).T
        best = S.argmax(axis=1)
        for i, c in enumerate(cand_list):
            j = int(best[i])
            c.update(score=float(S[i, j]), best_key=rows[j]["key"],
                     best_key_kind=rows[j]["kind"], owner=rows[j]["owner"])
    else:
        for c in cand_list:
            c.update(score=0.0, best_key=None, best_key_kind=None, owner=None)
    for c in cand_list:
        c["over_eps"] = c["score"] > epsilon


def retrieve(kg: Any, cfg: Any, local: dict[str, dict[str, Any]], subgraph: list[list[str]],
             emb: TripleEmbedder) -> tuple[list[dict[str, Any]], dict[str, list], list]:
    """Link, expand, score. Returns (scored candidates best first, links, key rows).

    With ``cfg.expand_hops`` 2 (not in the paper) the far ends of the first hop's triples
    over ε are expanded once more and scored against the same keys: the bridge entity of a
    2-hop question is reached from the KG, not only if the model named it."""
    rows, ent_strings = key_rows(local, subgraph, cfg.use_tuples_as_keys)
    # link (R4): exact / alias / fuzzy / embedding through the KG's linker
    links: dict[str, list[tuple[str, float, str]]] = {}
    for s in ent_strings:
        if not s.strip():
            continue
        got = kg.link_entities(s, k=max(5, cfg.link_top), embedder=emb.emb)
        links[s] = [(i, float(sc), h) for i, sc, h in got
                    if sc >= cfg.link_min_score][: cfg.link_top]
    key_texts = []
    for k in rows:
        kk = [str(x) for x in k["key"]]
        if len(kk) == 3:
            k["text"] = verbalise(kk[0], kk[1], kk[2], cfg.triple_text)
        else:
            k["text"] = f"({kk[0]}, {kk[1]})" if cfg.triple_text == "paren" \
                else f"{kk[0]} {kk[1]}"
        key_texts.append(k["text"])
    cands: dict[tuple[str, str, str], dict[str, Any]] = {}
    seeds = list(dict.fromkeys((eid, s) for s, ids in links.items() for eid, _, _ in ids))
    _expand(kg, cfg, seeds, 1, cands)
    _score(list(cands.values()), rows, key_texts, emb, cfg.epsilon)
    if getattr(cfg, "expand_hops", 1) >= 2:
        seen = {eid for eid, _ in seeds}
        far = {}
        for c in sorted(cands.values(), key=lambda c: -c["score"]):
            other = c["t"] if c["seed"] == c["h"] else c["h"]
            if c["over_eps"] and other not in seen:
                far.setdefault(other, c["seed_string"])
        _expand(kg, cfg, list(far.items()), 2, cands)
        _score(list(cands.values()), rows, key_texts, emb, cfg.epsilon)
    cand_list = sorted(cands.values(), key=lambda c: -c["score"])
    n_kept = 0
    for c in cand_list:
        c["kept"] = c["over_eps"] and (cfg.k_max == 0 or n_kept < cfg.k_max)
        n_kept += c["kept"]
    return cand_list, links, rows


def triple_id(c: dict[str, Any]) -> str:
    """A candidate's evidence id (its hit's id): head|relation|tail."""
    return f"{c['h']}|{c['r']}|{c['t']}"


def added_triple(h: Any, owner: str) -> dict[str, Any]:
    """A passage a what-if adds (methods/intervene.py) as a kept candidate of ``owner``."""
    return {"h": h.id, "r": "added", "t": "", "text_prompt": h.text, "score": 1.0,
            "kept": True, "over_eps": True, "owner": owner, "best_key": "",
            "best_key_kind": "added", "seed": "", "seed_string": "", "direction": "",
            "hop": 0, "added": True}


def as_intervened(scored: list[dict[str, Any]], kept: list[dict[str, Any]]
                  ) -> list[dict[str, Any]]:
    """The candidates as a what-if left them (``kept``: after its drops and additions): a
    dropped one stays listed, no longer kept, marked ``whatif: dropped``; an added one
    follows the rest, marked ``whatif: added``. The retrieval events then show the evidence
    the re-run reasoned over, not the original's."""
    now = {id(c) for c in kept}
    out = [c if not c["kept"] or id(c) in now else {**c, "kept": False, "whatif": "dropped"}
           for c in scored]
    seen = {id(c) for c in scored}
    return out + [{**c, "whatif": "added"} for c in kept if id(c) not in seen]


def hit(c: dict[str, Any], rank: int) -> dict[str, Any]:
    """A scored candidate as a retrieved hit (what-if re-prunes on meta["similarity"])."""
    return {"id": triple_id(c), "title": c["r"], "text": c["text_prompt"],
            "retriever": "kg", "score": round(c["score"], 5), "rank": rank,
            "meta": {"kept": c["kept"], "similarity": round(c["score"], 5),
                     "best_key": c["best_key"],
                     "best_key_kind": c["best_key_kind"], "owner": c["owner"],
                     "seed": c["seed"], "seed_string": c["seed_string"],
                     "direction": c["direction"], "hop": c["hop"],
                     "triple": [c["h"], c["r"], c["t"]],
                     **({"sources": c["sources"]} if c.get("sources") else {}),
                     **({"whatif": c["whatif"]} if c.get("whatif") else {})}}


def describe(kg: Any, links: dict[str, list], questions: Sequence[str], emb: TripleEmbedder,
             min_sim: float) -> list[dict[str, Any]]:
    """The released code's entity descriptions (spec §7.2 item 3; not in the paper): the
    lead sentence of each linked entity's own article (``kg.descriptions``), best first,
    kept iff its cosine similarity to some mind-map question is above ``min_sim``."""
    lookup = getattr(kg, "descriptions", None)
    out: list[dict[str, Any]] = []
    if lookup is None or not questions:
        return out
    seen: set[str] = set()
    for eid in dict.fromkeys(i for ids in links.values() for i, _, _ in ids):
        got = lookup.lookup(kg.name(eid))
        if got and got[0] not in seen:
            seen.add(got[0])
            out.append({"entity": eid, "name": kg.name(eid), "pid": got[0], "text": got[1]})
    if out:
        emb.fit_texts = [d["text"] for d in out] + list(questions)
        S = emb.encode([d["text"] for d in out]) @ emb.encode(list(questions)).T
        for d, row in zip(out, S):
            d["score"] = float(row.max())
            d["kept"] = d["score"] > min_sim
    return sorted(out, key=lambda d: -d["score"])


def description_hit(d: dict[str, Any], rank: int) -> dict[str, Any]:
    """A description as a retrieved passage hit (triage matches it by passage id). Its
    score has a name of its own and no top-level "score": the what-if slider on ε reads
    "similarity" (or a hit's "score") and must not re-prune descriptions."""
    return {"id": d["pid"], "title": d["name"], "text": d["text"], "retriever": "kg-descriptions",
            "rank": rank,
            "meta": {"kept": d["kept"], "description_similarity": round(d["score"], 5),
                     "entity": d["entity"], "sources": [d["pid"]]}}


def retrieval_events(ctx: Any, question: str, questions: list[tuple[str, str]],
                     scored: list[dict[str, Any]], links: dict[str, list],
                     key_rows: list[dict[str, Any]], subgraph: list[list[str]],
                     emb_name: str) -> Iterator[T.Event]:
    """The retrieval node, its candidates as retrieved hits, and each mind-map node's own
    share of them (``questions``: (node id, question) in BFS order)."""
    cfg = ctx.config
    kg = ctx.kg
    kept = [c for c in scored if c["kept"]]
    for s, ids in links.items():
        yield T.custom("entity_linked", "0", string=s, kg_node_ids=[i for i, _, _ in ids],
                       matches=[{"id": i, "name": kg.name(i), "score": sc, "how": h}
                                for i, sc, h in ids])
    seeds_n: dict[str, int] = {}
    for c in scored:
        seeds_n[c["seed"]] = seeds_n.get(c["seed"], 0) + 1
    for sd, n in seeds_n.items():
        yield T.custom("candidates_expanded", "0", seed=sd, seed_name=kg.name(sd),
                       n_triples=n)
    # a what-if's drops and additions (as_intervened) are not the threshold's doing
    base = [c for c in scored if not c.get("whatif")]
    truncated = sum(1 for c in base if c["over_eps"]) - sum(1 for c in base if c["kept"])
    yield T.node_added("kg", "retrieval", f"{len(kept)} of {len(scored)} KG triples "
                       f"kept (ε={cfg.epsilon})", parents=["0"], layer=0,
                       state="retrieved" if kept else "insufficient",
                       n_candidates=len(scored), n_kept=len(kept), epsilon=cfg.epsilon,
                       k_max=cfg.k_max, truncated=truncated, embedder=emb_name,
                       unlinked=[s for s, ids in links.items() if not ids],
                       keys=key_rows, global_subgraph=subgraph,
                       starvation=not kept and bool(scored),
                       max_similarity=round(scored[0]["score"], 4) if scored else None,
                       min_kept_similarity=round(min(c["score"] for c in kept), 4) if kept
                       else None)
    yield T.Event(T.RETRIEVED, {
        "query": question, "retriever": "kg", "k": len(kept),
        "hits": [hit(c, r) for r, c in enumerate(scored, 1)][:2000],
        "epsilon": cfg.epsilon}, node_id="kg")
    # every candidate, kept or not, is attributed to the node owning its best key, so
    # the what-if slider on ε re-prunes per node (hits carry meta["similarity"])
    for nid, q in questions:
        own = [c for c in scored if c["owner"] == nid]
        if own:
            yield T.Event(T.RETRIEVED, {"query": q, "retriever": "kg",
                                        "k": sum(c["kept"] for c in own), "attributed": True,
                                        "epsilon": cfg.epsilon,
                                        "hits": [hit(c, r) for r, c in enumerate(own, 1)]},
                          node_id=nid)
    yield T.custom("pruning_done", "kg", n_candidates=len(scored), n_kept=len(kept),
                   eps=cfg.epsilon, K_max=cfg.k_max, truncated=truncated,
                   embedder=emb_name, scores=[round(c["score"], 4) for c in scored][:2000])


def description_events(question: str, descs: list[dict[str, Any]],
                       min_sim: float) -> Iterator[T.Event]:
    """A retrieval node of its own, so the descriptions can be inspected apart from the
    triples; their hits carry ``description_similarity``, which has its own what-if."""
    n_kept = sum(d["kept"] for d in descs)
    yield T.node_added("descriptions", "retrieval", f"{n_kept} of {len(descs)} entity "
                       f"descriptions kept (similarity > {min_sim})", parents=["0"],
                       layer=0, state="retrieved" if n_kept else "insufficient",
                       n_candidates=len(descs), n_kept=n_kept, min_similarity=min_sim)
    yield T.Event(T.RETRIEVED, {
        "query": question, "retriever": "kg-descriptions", "k": n_kept,
        "hits": [description_hit(d, r) for r, d in enumerate(descs, 1)]},
        node_id="descriptions")
