"""FRAG's retrieval as trace events (spec frag.md §6.2, steps 5-10): the neighbourhood
layer by layer, PPR and relation pruning, path discovery, filtering, scoring and the top-u
selection, as stage nodes, KG entity nodes and selected-path nodes; plus, when gold answer
entities are known, per-stage answer coverage (where was the answer lost?)."""
from __future__ import annotations

from typing import Any, Iterator, Sequence

from ... import trace as T
from .kg import is_cvt, namer, triple_sources
from .retrieval import FragRetrieval, KGPath

MAX_PATH_EVENTS = 200          # path_found events emitted one by one; the rest are summarised
MAX_SCORED_LISTED = 500        # rows of the path table carried in paths_scored


def retrieval_events(kg: Any, question: str, res: FragRetrieval, cfg: Any,
                     gold_eids: Sequence[str],
                     shown: Sequence[tuple[str, str]]) -> Iterator[T.Event]:
    """The events of one retrieval; returns the per-stage coverage (None without gold).
    ``shown``: the (path id, text) pairs the reasoning call gets (a what-if's drops and
    additions applied; otherwise the selected paths)."""
    name = namer(kg)
    route = res.route
    cover = coverage(res, gold_eids) if gold_eids else None
    rendered = rendered_nodes(res, gold_eids, cfg.max_graph_nodes)
    stage_info = {s.name: s for s in res.stages}

    # neighbourhood, layer by layer
    yield T.node_added("st:neighbourhood", "stage", f"{res.params['k']}-hop neighbourhood",
                       parents=["router"], layer=2, state="retrieved", stage="neighbourhood",
                       nodes=len(res.gk_nodes), edges=res.gk_edges,
                       seconds=round(stage_info["neighbourhood"].seconds, 4),
                       answer_covered=_cov(cover, "neighbourhood"))
    by_layer: dict[int, list[str]] = {}
    for v, (h, *_rest) in res.layers.items():
        by_layer.setdefault(h, []).append(v)
    for h in sorted(by_layer):
        new = by_layer[h]
        for v in new:
            if v not in rendered:
                continue
            hop, parent, rel, d = res.layers[v]
            yield T.node_added(f"e:{v}", "entity", name(v),
                               parents=["q"] if hop == 0 else [], layer=1 + hop,
                               state="selected" if hop == 0 else "retrieved",
                               eid=v, hop=hop, topic=hop == 0, cvt=is_cvt(kg, v),
                               gold_answer=v in gold_eids if gold_eids else None)
            if parent is not None:
                # drawn parent -> child (BFS tree); an inverse step is flagged and
                # labelled "<- relation" (spec A3), its stored triple is (child, r, parent)
                yield T.edge_added(f"e:{parent}", f"e:{v}", "kg", relation=rel, bfs=True,
                                   inverse=d == "in",
                                   label=rel if d == "out" else f"<- {rel}")
        yield T.custom("neighbourhood_layer_expanded", "st:neighbourhood", layer=h,
                       new_nodes=[[v, name(v)] for v in new[:MAX_SCORED_LISTED]],
                       n_new=len(new), n_drawn=sum(1 for v in new if v in rendered))
    n_extra = 0
    hood_edges = []
    for u, w, rel in edges_among(kg, res, rendered):
        hood_edges.append((u, w, rel))
    for u, w, rel in hood_edges:
        if n_extra >= 2 * cfg.max_graph_nodes:
            break
        n_extra += 1
        yield T.edge_added(f"e:{u}", f"e:{w}", "kg", relation=rel)

    # PPR
    ppr_kept = set(res.gtilde_nodes)
    yield T.node_added("st:ppr", "stage", f"PPR top-{cfg.ppr_top_n}",
                       parents=["st:neighbourhood"], layer=3, state="retrieved", stage="ppr",
                       nodes=len(res.gtilde_nodes), edges=res.gtilde_edges,
                       seconds=round(stage_info["ppr"].seconds, 4),
                       answer_covered=_cov(cover, "ppr"))
    yield T.custom("ppr_computed", "st:ppr", alpha=cfg.ppr_alpha,
                   scores={v: round(s, 6) for v, s in
                           sorted(res.ppr.items(), key=lambda kv: res.ppr_rank[kv[0]])
                           [:MAX_SCORED_LISTED]})
    pruned = [v for v in res.gk_nodes if v not in ppr_kept]
    for v in res.layers:
        if v in rendered:
            yield T.node_updated(f"e:{v}", "pruned" if v not in ppr_kept else None,
                                 ppr=round(res.ppr.get(v, 0.0), 6),
                                 ppr_rank=res.ppr_rank.get(v),
                                 **({"pruned_by": "ppr"} if v not in ppr_kept else {}))
    yield T.custom("ppr_pruned", "st:ppr", n=cfg.ppr_top_n, kept=len(ppr_kept),
                   pruned=len(pruned), pruned_nodes=pruned[:MAX_SCORED_LISTED])

    # ERM
    kept_rel = [r for r in res.relations if r["kept"]]
    yield T.node_added("st:relations", "stage", f"top-{cfg.relation_top_m} relations",
                       parents=["st:ppr"], layer=4, state="retrieved", stage="relations",
                       relations=len(res.relations), kept=len(kept_rel),
                       nodes=len(res.ghat_nodes), edges=res.ghat_edges,
                       edges_strict=res.ghat_edges_strict, strict=cfg.erm_strict,
                       seconds=round(stage_info["relations"].seconds, 4),
                       answer_covered=_cov(cover, "relations"))
    yield T.custom("relations_scored", "st:relations", ranker=res.ranker,
                   relations=res.relations)
    ghat = set(res.ghat_nodes)
    erm_pruned = [v for v in res.gtilde_nodes if v not in ghat]
    for v in erm_pruned:
        if v in rendered:
            yield T.node_updated(f"e:{v}", "pruned", pruned_by="erm")
    yield T.custom("relations_pruned", "st:relations", m=cfg.relation_top_m,
                   kept=[r["relation"] for r in kept_rel],
                   dropped=[r["relation"] for r in res.relations if not r["kept"]],
                   nodes_pruned=erm_pruned[:MAX_SCORED_LISTED], n_nodes_pruned=len(erm_pruned))

    # paths
    yield T.node_added("st:paths", "stage",
                       f"{'BFS paths' if route == 'simple' else 'shortest paths'}",
                       parents=["st:relations"], layer=5, state="retrieved", stage="paths",
                       pipeline=res.params["retrieval"], raw=len(res.paths_raw),
                       after_cvt=res.n_after_cvt, unique=len(res.paths_unique),
                       truncated=res.raw_truncated,
                       seconds=round(stage_info["paths"].seconds, 4),
                       answer_covered=_cov(cover, "paths"))
    for p in res.paths_raw[:MAX_PATH_EVENTS]:
        yield T.custom("path_found", "st:paths", index=p.discovery_index, text=p.text,
                       hops=len(p.hops), start=p.start, end=p.end,
                       alternatives=p.alternatives)
    if len(res.paths_raw) > MAX_PATH_EVENTS:
        yield T.custom("path_found", "st:paths", summary=True,
                       more=len(res.paths_raw) - MAX_PATH_EVENTS)
    yield T.custom("paths_filtered", "st:paths", raw=len(res.paths_raw),
                   after_cvt=res.n_after_cvt, unique=len(res.paths_unique),
                   truncated=res.raw_truncated, cap=cfg.path_cap)

    # ranking
    yield T.node_added("st:rerank", "stage", f"top-{cfg.path_top_u} paths",
                       parents=["st:paths"], layer=6, state="retrieved", stage="rerank",
                       scored=len(res.paths_ranked), selected=len(res.selected),
                       prerank_cut=res.prerank_cut, ranker=res.ranker,
                       seconds=round(stage_info["rerank"].seconds, 4),
                       answer_covered=_cov(cover, "selected"))
    yield T.custom("paths_scored", "st:rerank", ranker=res.ranker,
                   paths=[path_row(p, res, gold_eids) for p in
                          res.paths_ranked[:MAX_SCORED_LISTED]],
                   n=len(res.paths_ranked))
    hits = []
    for p in res.selected:
        pid = f"p:{p.rank}"
        row = path_row(p, res, gold_eids)
        row.pop("text")
        yield T.node_added(pid, "path", p.text, parents=["st:rerank"], layer=7,
                           state="selected", **row)
        yield T.path_event(pid, [f"e:{v}" for v in p.entities if v in rendered], "selected",
                           text=p.text, rank=p.rank, score=p.score, hops=len(p.hops))
        for v in p.entities:
            if v in rendered and v in ghat:
                yield T.node_updated(f"e:{v}", "selected", on_selected_path=True)
        hits.append({"id": pid, "title": f"{len(p.hops)}-hop path", "text": p.text,
                     "retriever": "kg", "score": p.score, "rank": p.rank,
                     "meta": {"pipeline": p.pipeline, "hops": len(p.hops),
                              "triples": p.triples(), "start": p.start, "end": p.end,
                              **triple_sources(kg, p.triples())}})
    # a what-if's drops stay listed, unkept; its additions follow
    now = dict(shown)
    for h in hits:
        if h["id"] not in now:
            h["meta"] = {**h["meta"], "kept": False, "whatif": "dropped"}
    ids = {h["id"] for h in hits}
    hits += [{"id": i, "title": "(added)", "text": t, "retriever": "added", "score": 0.0,
              "rank": len(hits) + n, "meta": {"whatif": "added"}}
             for n, (i, t) in enumerate([x for x in shown if x[0] not in ids], 1)]
    yield T.Event(T.RETRIEVED, {"query": question, "retriever": "kg", "k": cfg.path_top_u,
                                "hits": hits,
                                "latency_ms": round(sum(s.seconds for s in res.stages)
                                                    * 1000, 3)}, node_id="st:rerank")
    yield T.custom("paths_selected", "st:rerank", u=cfg.path_top_u,
                   selected=[p.text for p in res.selected])
    if cover is not None:
        for st, key in (("st:neighbourhood", "neighbourhood"), ("st:ppr", "ppr"),
                        ("st:relations", "relations"), ("st:paths", "paths"),
                        ("st:rerank", "selected")):
            yield T.node_scored(st, {"answer_coverage": 1.0 if cover[key] else 0.0})
    return cover


# --- display helpers ---

def _cov(cover: dict[str, bool] | None, key: str) -> bool | None:
    return None if cover is None else cover[key]


def coverage(res: FragRetrieval, gold: Sequence[str]) -> dict[str, bool]:
    g = set(gold)

    def any_path(paths: Sequence[KGPath]) -> bool:
        return any(set(p.entities) & g for p in paths)
    return {
        "neighbourhood": bool(g & set(res.gk_nodes)),
        "ppr": bool(g & set(res.gtilde_nodes)),
        "relations": bool(g & set(res.ghat_nodes)),
        "paths": any_path(res.paths_unique),
        "selected": any_path(res.selected),
        "selected_ends_in_answer": any(p.end in g for p in res.selected),
    }


def lost_at(cover: dict[str, bool] | None) -> str | None:
    if cover is None:
        return None
    for k in ("neighbourhood", "ppr", "relations", "paths", "selected"):
        if not cover[k]:
            return k
    return None


def path_row(p: KGPath, res: FragRetrieval, gold: Sequence[str]) -> dict[str, Any]:
    pprs = [res.ppr.get(v, 0.0) for v in p.entities]
    rel_score = {r["relation"]: r["score"] for r in res.relations}
    row = {"rank": p.rank, "score": None if p.score is None else round(p.score, 5),
           "hops": len(p.hops), "text": p.text, "pipeline": p.pipeline,
           "discovery_index": p.discovery_index, "selected": (p.rank or 10**9) <= len(res.selected),
           "prompt_position": p.rank if (p.rank or 10**9) <= len(res.selected) else None,
           "min_ppr": round(min(pprs), 6) if pprs else None,
           "mean_ppr": round(sum(pprs) / len(pprs), 6) if pprs else None,
           "relation_scores": [rel_score.get(r) for r in p.relations],
           "alternatives": p.alternatives, "start": p.start, "end": p.end}
    if gold:
        row["ends_in_answer"] = p.end in set(gold)
        row["mentions_answer"] = bool(set(p.entities) & set(gold))
    return row


def rendered_nodes(res: FragRetrieval, gold: Sequence[str], cap: int) -> set[str]:
    """Seeds, nodes of selected paths, gold answers and the top of the PPR ranking, closed
    under BFS ancestry so every drawn node is connected to a topic entity."""
    base: list[str] = list(res.seeds)
    for p in res.selected:
        base.extend(p.entities)
    base.extend(g for g in gold if g in res.layers)
    ranked = sorted(res.layers, key=lambda v: res.ppr_rank.get(v, 10**9))
    for v in ranked:
        if len(set(base)) >= cap:
            break
        base.append(v)
    out: set[str] = set()
    for v in base:
        while v is not None and v not in out and v in res.layers:
            out.add(v)
            v = res.layers[v][1]
    return out


def edges_among(kg: Any, res: FragRetrieval, rendered: set[str]) -> Iterator[tuple[str, str, str]]:
    """Non-tree KG edges between drawn nodes (the BFS tree edges were drawn with the layers)."""
    tree = set()
    for v, (h, parent, rel, d) in res.layers.items():
        if parent is not None:
            tree.add((parent, v, rel) if d == "out" else (v, parent, rel))
    seen = set()
    for v in res.layers:
        if v not in rendered:
            continue
        for rel, w, d in kg.neighbors(v):
            if w not in rendered or d != "out":
                continue
            key = (v, w, rel)
            if key in tree or key in seen:
                continue
            seen.add(key)
            yield v, w, rel
