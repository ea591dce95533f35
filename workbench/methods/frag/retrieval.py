"""FRAG's flexible-retrieval module (spec frag.md §3.5): preprocessing (k-hop
neighbourhood G_k, PPR top-n nodes -> G~, top-m relation types -> Ĝ), retrieval (BFS
all paths up to 2 hops for SIMPLE, one unit-weight shortest path per reachable node for
COMPLEX) and postprocessing (CVT-ended paths dropped, duplicates merged, paths reranked,
top u kept). Every stage is a pure function of its inputs and the config; no LLM call.
"""
from __future__ import annotations

import heapq
import time
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .kg import has_entity, humanise, is_cvt, is_noise_relation, namer
from .rank import Ranker, rerank


@dataclass
class KGPath:
    start: str
    hops: list[tuple[str, str, str]]           # (relation, entity, "out"|"in")
    pipeline: str                              # "bfs" | "dijkstra"
    discovery_index: int = 0
    text: str = ""
    score: float | None = None
    rank: int | None = None
    alternatives: int = 1                      # equal-length shortest paths (Dijkstra only)

    @property
    def end(self) -> str:
        return self.hops[-1][1] if self.hops else self.start

    @property
    def entities(self) -> list[str]:
        return [self.start] + [e for _, e, _ in self.hops]

    @property
    def relations(self) -> list[str]:
        return [r for r, _, _ in self.hops]

    def triples(self) -> list[tuple[str, str, str]]:
        out, v = [], self.start
        for r, w, d in self.hops:
            out.append((v, r, w) if d == "out" else (w, r, v))
            v = w
        return out


def render_path(p: KGPath, name: Callable[[str], str], humanised: bool = False) -> str:
    """``A -> r -> B`` (spec §2.4); an inverse step reads ``A <- r <- B``."""
    parts = [name(p.start)]
    for r, w, d in p.hops:
        rt = humanise(r) if humanised else r
        parts.append(f"-> {rt} ->" if d == "out" else f"<- {rt} <-")
        parts.append(name(w))
    return " ".join(parts)


def adjacency(G: Any, v: str, direction: str) -> list[tuple[str, str, str]]:
    """``[(relation, neighbour, "out"|"in")]`` in insertion order (deterministic)."""
    out = []
    if v not in G:
        return out
    for _, w, d in G.out_edges(v, data=True):
        out.append((d.get("relation", ""), w, "out"))
    if direction == "both":
        for u, _, d in G.in_edges(v, data=True):
            out.append((d.get("relation", ""), u, "in"))
    return out


def bfs_layers(G: Any, seeds: Sequence[str], k: int, direction: str
               ) -> "OrderedDict[str, tuple[int, str | None, str | None, str | None]]":
    """SubgraphExtract's layers: node -> (hop, parent, relation, dir), in discovery order."""
    seen: OrderedDict[str, tuple[int, str | None, str | None, str | None]] = OrderedDict()
    frontier = []
    for s in seeds:
        if s in G and s not in seen:
            seen[s] = (0, None, None, None)
            frontier.append(s)
    for layer in range(1, k + 1):
        nxt = []
        for v in frontier:
            for r, w, d in adjacency(G, v, direction):
                if w not in seen:
                    seen[w] = (layer, v, r, d)
                    nxt.append(w)
        frontier = nxt
        if not frontier:
            break
    return seen


def personalized_pagerank(kg: Any, G: Any, seeds: Sequence[str], alpha: float, max_iter: int,
                          direction: str) -> dict[str, float]:
    """PPR on G_k (the paper's text; its code ran on the whole KG) with uniform seed weights;
    dangling mass returns to the seeds (spec A4). Nodes with no score get 0."""
    seeds = [s for s in seeds if s in G]
    if not seeds or G.number_of_nodes() == 0:
        return {}
    R = kg.ppr(seeds, graph=G, alpha=alpha, max_iter=max_iter, directed=direction == "out")
    return {v: float(R.get(v, 0.0)) for v in G.nodes}


def top_n_nodes(scores: dict[str, float], n: int) -> list[str]:
    """The n best by score, stable tie-break by node id (spec GRM)."""
    return [v for v, _ in sorted(scores.items(), key=lambda kv: (-kv[1], str(kv[0])))[:n]]


def bfs_paths(G: Any, seeds: Sequence[str], depth: int, direction: str, cap: int
              ) -> tuple[list[KGPath], bool]:
    """Every simple path of 1..depth hops from each seed, one per relation, BFS order."""
    out: list[KGPath] = []
    truncated = False
    for s in seeds:
        if s not in G:
            continue
        q = deque([(s, [s], [])])
        while q:
            v, nodes, hops = q.popleft()
            if len(hops) >= depth:
                continue
            for r, w, d in adjacency(G, v, direction):
                if w in nodes:
                    continue
                h2 = hops + [(r, w, d)]
                if len(out) >= cap:
                    truncated = True
                    break
                out.append(KGPath(s, h2, "bfs", len(out)))
                q.append((w, nodes + [w], h2))
            if truncated:
                break
        if truncated:
            break
    return out, truncated


def dijkstra_paths(G: Any, seeds: Sequence[str], radius: int, direction: str,
                   weight: Callable[[str], float] | None = None) -> list[KGPath]:
    """One shortest path per reachable node within ``radius`` hops of each seed.

    Unit weights by default (the paper's Algorithm 3). Ties go to the first path found in
    adjacency insertion order; ``alternatives`` counts the equal-cost shortest paths.
    """
    out: list[KGPath] = []
    for s in seeds:
        if s not in G:
            continue
        inside = bfs_layers(G, [s], radius, direction)        # per-seed radius-r neighbourhood
        dist = {s: 0.0}
        hopc = {s: 0}
        pred: dict[str, tuple[str, str, str]] = {}
        count = {s: 1}
        order: list[str] = []
        heap = [(0.0, 0, s)]
        tick = 1
        done = set()
        while heap:
            du, _, u = heapq.heappop(heap)
            if u in done:
                continue
            done.add(u)
            if u != s:
                order.append(u)
            for r, v, d in adjacency(G, u, direction):
                if v not in inside:
                    continue
                w = 1.0 if weight is None else max(weight(r), 1e-6)
                nd = du + w
                if hopc[u] + 1 > radius:
                    continue
                if v not in dist or nd < dist[v] - 1e-12:
                    dist[v] = nd
                    hopc[v] = hopc[u] + 1
                    pred[v] = (u, r, d)
                    count[v] = count[u]
                    heapq.heappush(heap, (nd, tick, v))
                    tick += 1
                elif abs(nd - dist[v]) <= 1e-12 and v not in done:
                    count[v] = count.get(v, 0) + count[u]
        for t in order:
            hops: list[tuple[str, str, str]] = []
            v = t
            while v != s:
                u, r, d = pred[v]
                hops.append((r, v, d))
                v = u
            hops.reverse()
            out.append(KGPath(s, hops, "dijkstra", len(out), alternatives=count.get(t, 1)))
    return out


@dataclass
class Stage:
    name: str
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class FragRetrieval:
    route: str
    params: dict[str, Any]
    seeds: list[str]
    layers: "OrderedDict[str, tuple]"
    gk_nodes: list[str]
    gk_edges: int
    ppr: dict[str, float]
    ppr_rank: dict[str, int]
    gtilde_nodes: list[str]
    gtilde_edges: int
    relations: list[dict[str, Any]]            # every relation in G~: name, score, rank, kept...
    ghat_nodes: list[str]
    ghat_edges: int
    ghat_edges_strict: int
    paths_raw: list[KGPath]
    raw_truncated: bool
    n_after_cvt: int
    paths_unique: list[KGPath]
    prerank_cut: int
    paths_ranked: list[KGPath]
    selected: list[KGPath]
    stages: list[Stage]
    ranker: str


def retrieve(kg: Any, question: str, seeds: Sequence[str], route: str, cfg: Any,
             ranker: Ranker) -> FragRetrieval:
    """Preprocessing, retrieval and postprocessing for one route (``cfg``: a FragConfig);
    no LLM call."""
    stages: list[Stage] = []
    k = cfg.simple_radius if route == "simple" else cfg.complex_radius
    params = {"k": k, "n": cfg.ppr_top_n, "m": cfg.relation_top_m, "u": cfg.path_top_u,
              "retrieval": "bfs" if route == "simple" else "dijkstra",
              "depth_or_radius": cfg.bfs_depth if route == "simple" else cfg.dijkstra_radius,
              "alpha": cfg.ppr_alpha, "direction": cfg.direction,
              "weights": "unit" if route == "simple" else cfg.dijkstra_weights}
    name = namer(kg)

    # 1. G_k
    t0 = time.perf_counter()
    seeds = [s for s in seeds if has_entity(kg, s)]
    hood = kg.neighborhood(list(seeds), k) if seeds else None
    if hood is None:
        import networkx as nx
        hood = nx.MultiDiGraph()
    layers = bfs_layers(hood, seeds, k, cfg.direction)
    Gk = hood.subgraph(list(layers)).copy()
    stages.append(Stage("neighbourhood", time.perf_counter() - t0,
                        {"nodes": Gk.number_of_nodes(), "edges": Gk.number_of_edges()}))

    # 2. GRM: PPR top-n
    t0 = time.perf_counter()
    R = personalized_pagerank(kg, Gk, seeds, cfg.ppr_alpha, cfg.ppr_max_iter, cfg.direction)
    ranked_nodes = top_n_nodes(R, len(R))
    ppr_rank = {v: i + 1 for i, v in enumerate(ranked_nodes)}
    kept = set(ranked_nodes[: cfg.ppr_top_n]) | set(seeds)
    Gt = Gk.subgraph([v for v in layers if v in kept]).copy()
    stages.append(Stage("ppr", time.perf_counter() - t0,
                        {"nodes": Gt.number_of_nodes(), "edges": Gt.number_of_edges()}))

    # 3. ERM: top-m relation types
    t0 = time.perf_counter()
    rel_count = Counter(d.get("relation", "") for _, _, d in Gt.edges(data=True))
    rels = sorted(rel_count)
    scorable = [r for r in rels if not is_noise_relation(r)]
    s_r = ranker.score(question, [humanise(r) for r in scorable]) if scorable else []
    order = sorted(range(len(scorable)), key=lambda i: (-s_r[i], i))
    keep_rel = {scorable[i] for i in order[: cfg.relation_top_m]}
    rank_of = {scorable[i]: j + 1 for j, i in enumerate(order)}
    score_of = {scorable[i]: float(s_r[i]) for i in range(len(scorable))}
    relations = [{"relation": r, "text": humanise(r), "score": score_of.get(r),
                  "rank": rank_of.get(r), "kept": r in keep_rel, "edges": rel_count[r],
                  "noise": is_noise_relation(r)} for r in rels]
    relations.sort(key=lambda x: (x["rank"] is None, x["rank"] or 0, x["relation"]))
    vhat = set(s for s in seeds if s in Gt)
    for u, w, d in Gt.edges(data=True):
        if d.get("relation", "") in keep_rel:
            vhat.add(u)
            vhat.add(w)
    Ghat = Gt.subgraph([v for v in layers if v in vhat]).copy()
    strict_edges = [(u, w, key) for u, w, key, d in Ghat.edges(keys=True, data=True)
                    if d.get("relation", "") in keep_rel]
    n_induced = Ghat.number_of_edges()
    if cfg.erm_strict:
        drop = [(u, w, key) for u, w, key, d in Ghat.edges(keys=True, data=True)
                if d.get("relation", "") not in keep_rel]
        Ghat.remove_edges_from(drop)
    stages.append(Stage("relations", time.perf_counter() - t0,
                        {"relations": len(rels), "kept": len(keep_rel),
                         "nodes": Ghat.number_of_nodes(), "edges": Ghat.number_of_edges()}))

    # 4. retrieval
    t0 = time.perf_counter()
    if route == "simple":
        raw, truncated = bfs_paths(Ghat, seeds, cfg.bfs_depth, cfg.direction, cfg.path_cap)
    else:
        wfn = None
        if cfg.dijkstra_weights == "semantic" and score_of:
            lo, hi = min(score_of.values()), max(score_of.values())
            span = (hi - lo) or 1.0
            wfn = (lambda r: 1.0 - (score_of[r] - lo) / span + 1e-3 if r in score_of else 1.0)
        raw = dijkstra_paths(Ghat, seeds, cfg.dijkstra_radius, cfg.direction, wfn)
        truncated = len(raw) > cfg.path_cap
        raw = raw[: cfg.path_cap]
    for p in raw:
        p.text = render_path(p, name, cfg.path_text == "humanised")
    after_cvt = [p for p in raw if not (cfg.drop_cvt_ended and is_cvt(kg, p.end))]
    seen: set[str] = set()
    unique: list[KGPath] = []
    for p in after_cvt:
        if p.text not in seen:
            seen.add(p.text)
            unique.append(p)
    stages.append(Stage("paths", time.perf_counter() - t0,
                        {"raw": len(raw), "after_cvt": len(after_cvt), "unique": len(unique),
                         "truncated": truncated}))

    # 5. PRM: rerank (every path unless a cap is set), keep the top u
    t0 = time.perf_counter()
    ranked, prerank_cut = rerank(question, unique, ranker, cap=cfg.rerank_cap,
                                 prerank=cfg.prerank, relation_scores=score_of)
    selected = ranked[: cfg.path_top_u]
    stages.append(Stage("rerank", time.perf_counter() - t0,
                        {"scored": len(ranked), "selected": len(selected),
                         "prerank_cut": prerank_cut}))
    return FragRetrieval(
        route=route, params=params, seeds=list(seeds), layers=layers,
        gk_nodes=list(Gk.nodes), gk_edges=Gk.number_of_edges(), ppr=R, ppr_rank=ppr_rank,
        gtilde_nodes=list(Gt.nodes), gtilde_edges=Gt.number_of_edges(), relations=relations,
        ghat_nodes=list(Ghat.nodes), ghat_edges=n_induced, ghat_edges_strict=len(strict_edges),
        paths_raw=raw, raw_truncated=truncated, n_after_cvt=len(after_cvt),
        paths_unique=unique, prerank_cut=prerank_cut, paths_ranked=ranked, selected=selected,
        stages=stages, ranker=ranker.name)
