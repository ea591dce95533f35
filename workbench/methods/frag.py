"""FRAG: flexible modular KG-RAG with hop-range routing (spec: shared/methods/frag.md).

Pipeline (no LLM call until the single answering call):

1. topic entities (the dataset's, else the KG linker), 2. hop-range estimate from the
question text (``frag_router``; override with ``route``), 3. the route's parameters,
4. k-hop neighbourhood G_k (BFS layers), 5. PPR top-n nodes -> G~, 6. top-m relation
types by similarity to the question -> Ĝ, 7. BFS all simple paths up to 2 hops (simple)
or one unit-weight Dijkstra shortest path per reachable node within 4 hops (complex),
8. CVT-ended paths dropped, duplicates merged, paths reranked, top-u kept, 9. one LLM
call with the top paths, 10. (gold known) per-stage answer coverage and Hits@1.

Every stage is a pure function of its inputs and the config (``retrieve``), so the UI
can re-run from any stage; :class:`Frag` turns its result into the spec's event order
(§6.2) as custom events plus trace nodes for the question, router, stages, KG entities,
selected paths, the reasoning call and the answer.
"""
from __future__ import annotations

import heapq
import math
import re
import string
import time
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from .. import trace as T
from ..config import knob
from ..llm.base import GenParams
from .base import Method, RunContext
from . import frag_router

# --- spec constants ---
NOISE_EXACT = {"type.object.type", "type.object.name"}
NOISE_PREFIX = ("type.type.", "common.", "freebase.")
# entity types of compound-value (mediator) nodes: Freebase CVTs and the demo world's records
MEDIATOR_TYPES = {"cvt", "mediator", "compound", "award_honor", "award_nomination",
                  "film_performance"}
MAX_PATH_EVENTS = 200          # path_found events emitted one by one; the rest are summarised
MAX_SCORED_LISTED = 500        # rows of the path table carried in paths_scored


def is_noise_relation(rel: str) -> bool:
    """Schema/noise relations that ERM never ranks (spec §2.1, from the released code)."""
    low = rel.lower()
    return rel in NOISE_EXACT or rel.startswith(NOISE_PREFIX) or "sameas" in low


def humanise(rel: str) -> str:
    """``people.person.place_of_birth`` -> ``people person place of birth`` (spec A6)."""
    return re.sub(r"[._]+", " ", rel).strip()


@dataclass
class FragConfig:
    route: str = knob("auto", "Route: auto = the hop classifier decides; simple / complex force "
                      "one pipeline (the paper's FRAG-Simple / FRAG-Complex ablations); oracle = "
                      "the gold hop count when known", choices=["auto", "simple", "complex",
                                                               "oracle"],
                      group="routing", ablation=True)
    estimator: str = knob("tfidf_lr", "Hop-range estimator: tfidf_lr (TF-IDF + logistic "
                          "regression, trained on demo-KG questions) or heuristic (no training)",
                          choices=["tfidf_lr", "heuristic"], group="routing")
    route_threshold: float = knob(0.5, "p_complex at or above which a question is COMPLEX "
                                  "(the paper's argmax)", min=0.0, max=1.0, group="routing")
    simple_radius: int = knob(2, "Neighbourhood radius k for the simple route", min=1, max=6,
                              group="preprocess")
    complex_radius: int = knob(4, "Neighbourhood radius k for the complex route", min=1, max=6,
                               group="preprocess")
    ppr_top_n: int = knob(2000, "GRM: nodes kept by Personalized PageRank (paper 2000; demo "
                          "preset 60 makes pruning visible)", min=1, max=1_000_000,
                          group="preprocess")
    ppr_alpha: float = knob(0.8, "GRM: PPR link-following probability (restart 0.2)", min=0.0,
                            max=0.99, group="preprocess")
    ppr_max_iter: int = knob(1000, "GRM: PPR power-iteration limit", min=10, max=100000,
                             group="preprocess")
    relation_top_m: int = knob(64, "ERM: relation types kept (paper 64; demo preset 8)", min=1,
                               max=10000, group="preprocess")
    erm_strict: bool = knob(False, "ERM: keep only edges whose relation is in the top m (off = "
                            "the released code's induced subgraph)", group="preprocess",
                            ablation=True)
    direction: str = knob("both", "Traverse edges both ways (inverse edges added, spec A3) or "
                          "out-edges only as in the paper's code", choices=["both", "out"],
                          group="preprocess", ablation=True)
    bfs_depth: int = knob(2, "Simple route: maximum BFS path length in hops", min=1, max=4,
                          group="retrieval")
    dijkstra_radius: int = knob(4, "Complex route: per-seed shortest-path radius", min=1, max=6,
                                group="retrieval")
    dijkstra_weights: str = knob("unit", "Edge weights: unit (paper) or semantic = 1 - "
                                 "normalised S(r) (an extension, not in the paper)",
                                 choices=["unit", "semantic"], group="retrieval", ablation=True)
    path_cap: int = knob(20000, "Safety cap on raw candidate paths (not in the paper; "
                         "truncation is reported)", min=10, max=1_000_000, group="retrieval")
    drop_cvt_ended: bool = knob(True, "Drop paths that end at an unnamed (CVT) node",
                                group="retrieval")
    ranker: str = knob("embedding", "ERM/PRM scorer: embedding (MiniLM bi-encoder, the code's "
                       "variant), cross_encoder (local folder below), bm25 or tfidf (no weights)",
                       choices=["embedding", "cross_encoder", "bm25", "tfidf"], group="ranking")
    cross_encoder_path: str = knob("", "Local sentence-transformers CrossEncoder folder (e.g. "
                                   "bge-reranker-v2-m3); never downloaded", group="ranking")
    rerank_cap: int = knob(256, "At most this many paths go to the (slow) ranker; a cheap "
                           "pre-score picks them (spec §7.2 puts BM25 in front of the "
                           "cross-encoder)", min=10, max=1_000_000, group="ranking")
    prerank: str = knob("relation", "Pre-score for the rerank cap: relation = mean ERM score "
                        "S(r) of the path's relations (no extra encoding), or bm25 on the "
                        "path text", choices=["relation", "bm25"], group="ranking")
    path_top_u: int = knob(32, "PRM: paths kept for the prompt (paper 32; 16 fits 2-4k "
                           "contexts)", min=1, max=1000, group="ranking")
    path_text: str = knob("raw", "Relation text in paths: raw ids (faithful) or humanised",
                          choices=["raw", "humanised"], group="ranking")
    use_dataset_entities: bool = knob(True, "Use a benchmark question's own topic entities "
                                      "instead of the linker", group="entities")
    max_seeds: int = knob(2, "Linker: at most this many topic entities", min=1, max=10,
                          group="entities")
    link_min_score: float = knob(0.5, "Linker: minimum match score", min=0.0, max=1.0,
                                 group="entities")
    prompt_mode: str = knob("chat", "Answer prompt: chat (persona as system message) or raw "
                            "completion (faithful to the code)", choices=["chat", "raw"],
                            group="reasoning")
    max_tokens: int = knob(256, "Answer: maximum new tokens", min=8, max=2048, group="reasoning")
    temperature: float = knob(0.0, "Answer temperature (paper 0.01)", min=0.0, max=2.0,
                              group="reasoning")
    stop_at_newline: bool = knob(True, "Stop the answer at the first newline (the released "
                                 "code; the answer is the first line either way)",
                                 group="reasoning")
    feedback: bool = knob(False, "FRAG-F: one extra LLM call picks the correct path; its hop "
                          "count relabels the question and refits the router",
                          group="reasoning", ablation=True)
    max_graph_nodes: int = knob(150, "KG nodes drawn in the trace (chosen by PPR; counts are "
                                "shown for the rest)", min=10, max=5000, group="display")


# --- paths ---

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


# --- rankers: score(query, texts) -> list[float] ---

def _tok(s: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", s.lower())


def bm25_scores(query: str, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    docs = [_tok(t) for t in texts]
    n = len(docs)
    if not n:
        return []
    avg = sum(len(d) for d in docs) / n or 1.0
    df = Counter(w for d in docs for w in set(d))
    q = _tok(query)
    out = []
    for d in docs:
        tf = Counter(d)
        s = 0.0
        for w in q:
            if w in tf:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(d) / avg))
        out.append(s)
    return out


def tfidf_scores(query: str, texts: Sequence[str]) -> list[float]:
    if not texts:
        return []
    from sklearn.feature_extraction.text import TfidfVectorizer
    vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 4), lowercase=True)
    X = vec.fit_transform(list(texts) + [query])
    sims = (X[:-1] @ X[-1].T).toarray().ravel()
    return [float(x) for x in sims]


class Ranker:
    def __init__(self, kind: str, embedder: Any = None, cross_encoder_path: str = ""):
        self.kind = kind
        self.embedder = embedder
        self._ce = None
        if kind == "cross_encoder":
            if not cross_encoder_path:
                raise LookupError("ranker=cross_encoder needs cross_encoder_path: a local "
                                  "sentence-transformers CrossEncoder folder (nothing is "
                                  "downloaded). Or use ranker=embedding.")
            from sentence_transformers import CrossEncoder
            self._ce = CrossEncoder(cross_encoder_path, device="cpu")
        if kind == "embedding" and embedder is None:
            from ..knowledge.dense import get_embedder
            self.embedder = get_embedder()

    @property
    def name(self) -> str:
        if self.kind == "embedding":
            return f"embedding:{getattr(self.embedder, 'name', 'minilm')}"
        return self.kind

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        if self.kind == "embedding":
            from ..knowledge.rank import rank_by_similarity
            out = [0.0] * len(texts)
            for i, s in rank_by_similarity(query, list(texts), self.embedder):
                out[i] = float(s)
            return out
        if self.kind == "cross_encoder":
            return [float(x) for x in self._ce.predict([(query, t) for t in texts],
                                                       batch_size=128)]
        if self.kind == "bm25":
            return bm25_scores(query, texts)
        return tfidf_scores(query, texts)


# --- the retrieval result (pure) ---

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


def retrieve(kg: Any, question: str, seeds: Sequence[str], route: str, cfg: FragConfig,
             ranker: Ranker) -> FragRetrieval:
    """Preprocessing, retrieval and postprocessing for one route; no LLM call."""
    stages: list[Stage] = []
    k = cfg.simple_radius if route == "simple" else cfg.complex_radius
    params = {"k": k, "n": cfg.ppr_top_n, "m": cfg.relation_top_m, "u": cfg.path_top_u,
              "retrieval": "bfs" if route == "simple" else "dijkstra",
              "depth_or_radius": cfg.bfs_depth if route == "simple" else cfg.dijkstra_radius,
              "alpha": cfg.ppr_alpha, "direction": cfg.direction,
              "weights": "unit" if route == "simple" else cfg.dijkstra_weights}
    name = _namer(kg)

    # 1. G_k
    t0 = time.perf_counter()
    seeds = [s for s in seeds if _has_entity(kg, s)]
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
    after_cvt = [p for p in raw if not (cfg.drop_cvt_ended and _is_cvt(kg, p.end))]
    seen: set[str] = set()
    unique: list[KGPath] = []
    for p in after_cvt:
        if p.text not in seen:
            seen.add(p.text)
            unique.append(p)
    stages.append(Stage("paths", time.perf_counter() - t0,
                        {"raw": len(raw), "after_cvt": len(after_cvt), "unique": len(unique),
                         "truncated": truncated}))

    # 5. PRM
    t0 = time.perf_counter()
    pool = unique
    prerank_cut = 0
    if len(pool) > cfg.rerank_cap:
        if cfg.prerank == "relation" and score_of:
            lo = min(score_of.values())
            pre = [sum(score_of.get(r, lo) for r in p.relations) / len(p.relations)
                   for p in pool]
        else:
            pre = bm25_scores(question, [p.text for p in pool])
        idx = sorted(range(len(pool)), key=lambda i: (-pre[i], i))[: cfg.rerank_cap]
        prerank_cut = len(pool) - len(idx)
        pool = [pool[i] for i in sorted(idx)]
    scores = ranker.score(question, [p.text for p in pool])
    for p, s in zip(pool, scores):
        p.score = float(s)
    ranked = sorted(pool, key=lambda p: -(p.score or 0.0))      # stable: ties keep discovery order
    for i, p in enumerate(ranked):
        p.rank = i + 1
    selected = ranked[: cfg.path_top_u]
    stages.append(Stage("rerank", time.perf_counter() - t0,
                        {"scored": len(pool), "selected": len(selected),
                         "prerank_cut": prerank_cut}))
    return FragRetrieval(
        route=route, params=params, seeds=list(seeds), layers=layers,
        gk_nodes=list(Gk.nodes), gk_edges=Gk.number_of_edges(), ppr=R, ppr_rank=ppr_rank,
        gtilde_nodes=list(Gt.nodes), gtilde_edges=Gt.number_of_edges(), relations=relations,
        ghat_nodes=list(Ghat.nodes), ghat_edges=n_induced, ghat_edges_strict=len(strict_edges),
        paths_raw=raw, raw_truncated=truncated, n_after_cvt=len(after_cvt),
        paths_unique=unique, prerank_cut=prerank_cut, paths_ranked=ranked, selected=selected,
        stages=stages, ranker=ranker.name)


# --- KG helpers (through the KnowledgeGraph API only) ---

def _namer(kg: Any) -> Callable[[str], str]:
    cache: dict[str, str] = {}

    def name(eid: str) -> str:
        if eid not in cache:
            try:
                cache[eid] = kg.name(eid) or eid
            except Exception:
                cache[eid] = eid
        return cache[eid]
    return name


def _has_entity(kg: Any, eid: str) -> bool:
    try:
        return kg.entity(eid) is not None
    except (KeyError, LookupError):
        return False


def _is_cvt(kg: Any, eid: str) -> bool:
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
    tset = [t for t in targets if _has_entity(kg, t)]
    for s in sources:
        if not tset or not _has_entity(kg, s):
            continue
        for t, path in kg.shortest_paths(s, tset).items():
            if best is None or len(path) < best:
                best = len(path)
    return best


# --- evaluation helpers (the paper's lenient Hits@1, spec §5.2) ---

def normalize_answer(s: str) -> str:
    s = str(s).lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def hit_at_1(prediction: str, golds: Sequence[str]) -> bool:
    p = normalize_answer(prediction)
    return any(normalize_answer(g) and normalize_answer(g) in p for g in golds)


def first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return re.sub(r"^(answer|a)\s*[:\-]\s*", "", line, flags=re.I).strip()
    return ""


# --- prompts (paraphrased from the spec's description, not quoted) ---

PERSONA = ("You reason carefully about how entities are linked by relations. Study the "
           "reasoning paths you are given and answer the question clearly and accurately.")
INSTRUCTION = "Answer the question using the reasoning paths. Reply with the answer entity only."
FEEDBACK_TASK = ("From the reasoning paths, copy the one path that answers the question, "
                 "exactly as written. If no path fits, reply NO.")


def build_prompt(question: str, paths: Sequence[KGPath], mode: str,
                 task: str = INSTRUCTION) -> tuple[list[dict[str, str]] | str, str]:
    block = "\n".join(p.text for p in paths)
    body = f"{task}\n\nReasoning paths:\n{block}\n\nQuestion:\n{question}\n\nAnswer:"
    if mode == "raw":
        text = f"{PERSONA}\n{body}"
        return text, text
    return [{"role": "system", "content": PERSONA}, {"role": "user", "content": body}], body


class Frag(Method):
    name = "frag"
    title = "FRAG (flexible modular KG-RAG)"
    kind = "kg"
    view = "graph"
    Config = FragConfig
    prompt_version = "frag-1"
    description = ("Routes the question to a short- or long-path retrieval pipeline from its "
                   "text alone, prunes the KG neighbourhood by PPR and relation relevance, "
                   "ranks paths, and answers with one LLM call.")
    # p_complex >= route_threshold routes to COMPLEX; paths keep the top-u by score
    thresholds = {"p_complex": ("route_threshold", "higher"), "score": ("path_top_u", "top")}

    # -- routing --
    def estimate(self, ctx: RunContext, question: str) -> frag_router.HopEstimate:
        cfg: FragConfig = ctx.config
        if cfg.estimator == "heuristic":
            return frag_router.HeuristicRouter().estimate(question, cfg.route_threshold)
        r = frag_router.load_router(auto_train=True)
        if r is None:
            est = frag_router.HeuristicRouter().estimate(question, cfg.route_threshold)
            est.model_info["fallback"] = "no trained router (no labelled questions); heuristic used"
            return est
        return r.estimate(question, cfg.route_threshold)

    def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
        cfg: FragConfig = ctx.config
        kg = ctx.kg
        if kg is None:
            raise LookupError("FRAG needs a knowledge graph (ctx.kg is empty); build one with "
                              "`python -m workbench kg build DATASET`.")
        name = _namer(kg)
        gold = ctx.gold
        gold_eids = [e for e in (gold.answer_entities if gold else []) if e]

        yield ctx.set_phase("link")
        yield T.node_added("q", "question", question, layer=0, state="created")
        yield T.custom("question_received", "q", question=question,
                       gold_answers=gold.gold_answers if gold else None,
                       gold_hops=gold.hops if gold else None)

        # 1. topic entities
        candidates: list[dict[str, Any]] = []
        if cfg.use_dataset_entities and gold and gold.topic_entities:
            seeds = [e for e in gold.topic_entities if _has_entity(kg, e)]
            how = "dataset"
            candidates = [{"id": e, "name": name(e), "score": 1.0, "how": "dataset"}
                          for e in gold.topic_entities]
        else:
            how = "linker"
            links = kg.link_entities(question, k=max(5, cfg.max_seeds), embedder=ctx.embedder)
            candidates = [{"id": e, "name": name(e), "score": round(float(s), 4), "how": h}
                          for e, s, h in links]
            seeds = [c["id"] for c in candidates if c["score"] >= cfg.link_min_score][: cfg.max_seeds]
        yield T.custom("entities_linked", "q", candidates=candidates, seeds=seeds, source=how)

        # gold shortest-path hops (the paper's routing label), only when answers are known
        min_hops = kg_min_hops(kg, seeds, gold_eids) if gold_eids else None

        # 2. hop range
        yield ctx.set_phase("route")
        est = self.estimate(ctx, question)
        route, source = est.label, est.source
        override_note = ""
        if cfg.route in ("simple", "complex"):
            route, source = cfg.route, "manual"
        elif cfg.route == "oracle":
            h = min_hops if min_hops is not None else (gold.hops if gold else None)
            if h:
                route, source = ("complex" if h > frag_router.DELTA else "simple"), "oracle"
            else:
                override_note = "oracle routing needs a gold hop count; the classifier decided"
        yield T.node_added("router", "router", f"{route.upper()} (p_complex={est.p_complex:.2f})",
                           parents=["q"], layer=1, state="selected", label=route,
                           predicted=est.label, p_complex=est.p_complex,
                           threshold=cfg.route_threshold, estimator=est.estimator,
                           source=source, overridden=source in ("manual", "oracle"),
                           features=est.features, model=_model_summary(est.model_info),
                           note=override_note, delta=frag_router.DELTA)
        yield T.node_scored("router", {"p_complex": est.p_complex},
                            {"p_complex": cfg.route_threshold})
        yield T.custom("hop_range_estimated", "router", p_complex=est.p_complex, label=est.label,
                       estimator=est.estimator, threshold=cfg.route_threshold,
                       features=est.features)

        # 3. retrieval (pure; no LLM)
        yield ctx.set_phase("retrieve")
        ranker = Ranker(cfg.ranker, ctx.embedder, cfg.cross_encoder_path)
        res = retrieve(kg, question, seeds, route, cfg, ranker)
        yield T.custom("route_selected", "router", route=route, source=source, params=res.params)

        cover = _coverage(res, gold_eids) if gold_eids else None
        rendered = _rendered_nodes(res, gold_eids, cfg.max_graph_nodes)
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
                                   eid=v, hop=hop, topic=hop == 0, cvt=_is_cvt(kg, v),
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
        for u, w, rel in _edges_among(kg, res, rendered):
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
                       paths=[_path_row(p, res, gold_eids) for p in
                              res.paths_ranked[:MAX_SCORED_LISTED]],
                       n=len(res.paths_ranked))
        hits = []
        for p in res.selected:
            pid = f"p:{p.rank}"
            row = _path_row(p, res, gold_eids)
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
                                  "triples": p.triples(), "start": p.start, "end": p.end}})
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

        # 4. reasoning: one call
        yield ctx.set_phase("reason")
        msgs, shown = build_prompt(question, res.selected, cfg.prompt_mode)
        n_prompt_tokens = _count_tokens(ctx, shown)
        yield T.node_added("reason", "reason", "Answer from the top paths", parents=["st:rerank"],
                           layer=8, state="created", n_paths=len(res.selected),
                           ungrounded=not res.selected, prompt_mode=cfg.prompt_mode)
        yield T.custom("prompt_built", "reason", prompt=shown, n_paths=len(res.selected),
                       prompt_tokens=n_prompt_tokens, ungrounded=not res.selected)
        comp = yield from ctx.generate(
            "answer", msgs, GenParams(max_tokens=cfg.max_tokens, temperature=cfg.temperature,
                                      seed=ctx.seed, chat=cfg.prompt_mode == "chat",
                                      stop=["\n"] if cfg.stop_at_newline else []),
            node_id="reason", prompt_version=self.prompt_version)
        ans = first_line(comp.text)
        yield T.custom("llm_answered", "reason", output=comp.text, answer_line=ans,
                       completion_tokens=comp.completion_tokens, llm_calls_retrieval=0,
                       llm_calls_answer=1)
        yield T.node_updated("reason", "answered", answer_line=ans)

        # 5. FRAG-F feedback (optional, one extra call)
        if cfg.feedback:
            yield from self._feedback(ctx, question, res, est)

        # 6. answer + evaluation
        hit = hit_at_1(ans, gold.gold_answers) if gold and gold.gold_answers else None
        yield T.node_added("answer", "answer", ans or "(empty answer)", parents=["reason"],
                           layer=9, state="answered" if ans else "unknown", hit=hit,
                           ungrounded=not res.selected)
        yield T.answer(ans, node_id="answer", route=route, p_complex=est.p_complex,
                       llm_calls_retrieval=0, n_paths=len(res.selected),
                       ungrounded=not res.selected, hit=hit)
        if gold is not None:
            h = min_hops if min_hops is not None else gold.hops
            yield T.custom("evaluated", "answer", hit=hit, coverage=cover,
                           gold_hops=gold.hops, gold_min_hops=min_hops, route=route,
                           misrouted=(None if not h else
                                      (route == "simple") != (h <= frag_router.DELTA)),
                           lost_at=_lost_at(cover))

    def _feedback(self, ctx: RunContext, question: str, res: FragRetrieval,
                  est: frag_router.HopEstimate) -> Iterator[T.Event]:
        yield ctx.set_phase("feedback")
        msgs, _ = build_prompt(question, res.selected, ctx.config.prompt_mode, FEEDBACK_TASK)
        yield T.node_added("feedback", "feedback", "FRAG-F: which path is correct?",
                           parents=["reason"], layer=9, state="created",
                           note="The paper counts this as free; the released code makes this "
                                "separate call, counted here.")
        comp = yield from ctx.generate("feedback_path", msgs,
                                       GenParams(max_tokens=96, temperature=0.0, stop=["\n"]),
                                       node_id="feedback", prompt_version=self.prompt_version)
        line = first_line(comp.text)
        arrows = len(re.findall(r"->|<-", line))
        hops = arrows // 2
        yield T.custom("feedback_path_extracted", "feedback", line=line, hops=hops)
        if hops not in (1, 2, 3, 4):
            yield T.node_updated("feedback", "insufficient", line=line, hops=hops,
                                 reason="no valid path line (NO or malformed): skipped")
            return
        y_fb = "complex" if hops > frag_router.DELTA else "simple"
        yield T.custom("feedback_label", "feedback", hops=hops, y_fb=y_fb, predicted=est.label)
        frag_router.add_feedback(question, hops)
        r = frag_router.adapt_router()
        after = r.estimate(question, ctx.config.route_threshold)
        yield T.custom("classifier_adapted", "feedback", before=est.p_complex,
                       after=after.p_complex, label_before=est.label, label_after=after.label,
                       n_feedback=len(frag_router.load_feedback()))
        yield T.node_updated("feedback", "done", line=line, hops=hops, y_fb=y_fb,
                             p_before=est.p_complex, p_after=after.p_complex)


# --- display helpers ---

def _model_summary(info: dict[str, Any]) -> dict[str, Any]:
    keep = ("kind", "trained_at", "n_train", "sources", "labels", "report", "cutoff", "fallback")
    return {k: info[k] for k in keep if k in info}


def _cov(cover: dict[str, bool] | None, key: str) -> bool | None:
    return None if cover is None else cover[key]


def _coverage(res: FragRetrieval, gold: Sequence[str]) -> dict[str, bool]:
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


def _lost_at(cover: dict[str, bool] | None) -> str | None:
    if cover is None:
        return None
    for k in ("neighbourhood", "ppr", "relations", "paths", "selected"):
        if not cover[k]:
            return k
    return None


def _path_row(p: KGPath, res: FragRetrieval, gold: Sequence[str]) -> dict[str, Any]:
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


def _rendered_nodes(res: FragRetrieval, gold: Sequence[str], cap: int) -> set[str]:
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


def _edges_among(kg: Any, res: FragRetrieval, rendered: set[str]) -> Iterator[tuple[str, str, str]]:
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


def _count_tokens(ctx: RunContext, text: str) -> int | None:
    try:
        return int(ctx.llm.count_tokens(text))
    except Exception:
        return None
