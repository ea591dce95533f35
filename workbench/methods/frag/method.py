"""FRAG: flexible modular KG-RAG with hop-range routing (spec: shared/methods/frag.md).

Pipeline (no LLM call until the single answering call):

1. topic entities (the dataset's, else the KG linker), 2. hop-range estimate from the
question text (``frag_router``, fitted on a named question split; override with
``route``), 3. the route's parameters, 4-8. retrieval (``retrieval``: k-hop
neighbourhood, PPR top-n, top-m relations, BFS or Dijkstra paths, CVT filter, dedupe, every
path reranked by ``rank``, top-u kept), 9. one LLM call with the top paths
(``prompts``) that asks for the answer entity only; its first line is the answer,
already a span (a KG entity name), so no answer-span extraction call follows.
10. (gold known) per-stage answer coverage and Hits@1. FRAG-F
(``feedback``) adds one path-extraction call and adapts a copy of the router.

:class:`Frag` turns the pieces into the event order of spec frag.md §6.2; ``trace`` renders
the retrieval stages.

Batched (``batch_size`` > 1, ``batched.together``): with FRAG-F on, the answer call and the
feedback call, which read the same paths. Path and relation scoring is the ranker's
(embedding, cross-encoder, BM25 or TF-IDF, each one vectorised call), not the LLM's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from ... import trace as T
from ...config import Preset, PresetConfig, knob
from ...llm.base import GenParams
from . import router as frag_router
from . import declarations as D
from ..base import Method, RunContext
from ..batched import batch_knob, together
from ..answers import hit_at_1
from ..graph import require_kg
from ..fitted import FitRecord
from .feedback import feedback_events
from .kg import has_entity, kg_min_hops, namer
from .rank import Ranker
from .retrieval import retrieve
from .trace import lost_at, retrieval_events
from . import prompts as P


@dataclass
class FragConfig(PresetConfig):
    DOCS = "docs/methods/frag.md"        # the method page: knob table and evidence
    route: str = knob("auto", "Route: auto = the hop classifier decides; simple / complex force "
                      "one pipeline (the paper's ablations); oracle = the gold hop count",
                      choices=["auto", "simple", "complex", "oracle"], group="routing",
                      ablation=True, paper="auto", evidence="#the-router")
    estimator: str = knob("tfidf_lr", "Hop-range estimator: tfidf_lr (TF-IDF + logistic "
                          "regression, trained on the `router` questions) or heuristic (no "
                          "training)", choices=["tfidf_lr", "heuristic"], group="routing",
                          paper="fine-tuned DeBERTaV3 (weights not published)",
                          evidence="#the-router")
    router: str = knob(frag_router.DEFAULT_TRAIN, "Router: a question set DATASET:SPLIT it is "
                       "trained on (at first use), or the name of a saved router (`frag "
                       "train-router`, `frag feedback`)", group="routing",
                       paper="a classifier trained on separate Freebase / WikiMovies questions",
                       evidence="#the-router")
    route_threshold: float = knob(0.5, "p_complex at or above which a question is COMPLEX "
                                  "(the paper's argmax)", min=0.0, max=1.0, group="routing",
                                  paper=0.5)
    simple_radius: int = knob(2, "Neighbourhood radius k for the simple route", min=1, max=6,
                              group="preprocess", paper=2)
    complex_radius: int = knob(4, "Neighbourhood radius k for the complex route", min=1, max=6,
                               group="preprocess", paper=4)
    ppr_top_n: int = knob(2000, "GRM: nodes kept by Personalized PageRank (the demo-pruning "
                          "preset's 60 makes pruning visible)", min=1, max=1_000_000,
                          group="preprocess", paper=2000)
    ppr_alpha: float = knob(0.8, "GRM: PPR link-following probability (restart 0.2)", min=0.0,
                            max=0.99, group="preprocess", paper=0.8)
    ppr_max_iter: int = knob(1000, "GRM: PPR power-iteration limit", min=10, max=100000,
                             group="preprocess", paper=1000)
    relation_top_m: int = knob(64, "ERM: relation types kept", min=1, max=10000,
                               group="preprocess", paper=64)
    erm_strict: bool = knob(False, "ERM: keep only edges whose relation is in the top m (off = "
                            "the released code's induced subgraph)", group="preprocess",
                            ablation=True, paper=False)
    direction: str = knob("both", "Traverse edges both ways (inverse edges added, spec A3; the "
                          "demo KG does not store every inverse) or out-edges only",
                          choices=["both", "out"], group="preprocess", ablation=True,
                          paper="out (the released code)")
    bfs_depth: int = knob(2, "Simple route: maximum BFS path length in hops", min=1, max=4,
                          group="retrieval", paper=2)
    dijkstra_radius: int = knob(4, "Complex route: per-seed shortest-path radius", min=1, max=6,
                                group="retrieval", paper=4)
    dijkstra_weights: str = knob("unit", "Edge weights: unit (paper) or semantic = 1 - normalised "
                                 "S(r) (an extension, not in the paper)",
                                 choices=["unit", "semantic"], group="retrieval", ablation=True,
                                 paper="unit", status="experimental")
    path_cap: int = knob(20000, "Safety cap on raw candidate paths (truncation is reported; "
                         "spec A8)", min=10, max=1_000_000, group="retrieval", paper="no cap")
    drop_cvt_ended: bool = knob(True, "Drop paths that end at an unnamed (CVT) node",
                                group="retrieval", paper=True)
    ranker: str = knob("embedding", "ERM/PRM scorer: embedding (MiniLM bi-encoder, the code's "
                       "variant), cross_encoder (local folder below), bm25 or tfidf (no weights)",
                       choices=["embedding", "cross_encoder", "bm25", "tfidf"], group="ranking",
                       paper="cross_encoder (bge-reranker-v2-m3)")
    cross_encoder_path: str = knob("", "Local sentence-transformers CrossEncoder folder (e.g. "
                                   "bge-reranker-v2-m3); never downloaded", group="ranking")
    rerank_cap: int = knob(0, "Rerank at most this many paths, picked by a cheap pre-score "
                           "(0 = all, as the paper; spec §7.2 suggests a cap in front of a "
                           "slow cross-encoder)", min=0, max=1_000_000, group="ranking",
                           paper=0)
    prerank: str = knob("relation", "Pre-score for rerank_cap: relation = mean ERM score S(r) "
                        "of the path's relations, or bm25 on the path text",
                        choices=["relation", "bm25"], group="ranking")
    path_top_u: int = knob(32, "PRM: paths kept for the prompt (16 fits 2-4k contexts)", min=1,
                           max=1000, group="ranking", paper=32)
    path_text: str = knob("raw", "Relation text in paths: raw ids (faithful) or humanised",
                          choices=["raw", "humanised"], group="ranking", paper="raw")
    use_dataset_entities: bool = knob(True, "Use a benchmark question's own topic entities "
                                      "instead of the linker", group="entities", paper=True)
    max_seeds: int = knob(2, "Linker: at most this many topic entities", min=1, max=10,
                          group="entities")
    link_min_score: float = knob(0.5, "Linker: minimum match score", min=0.0, max=1.0,
                                 group="entities")
    prompt_mode: str = knob("chat", "Answer prompt: chat (persona as system message) or raw "
                            "completion", choices=["chat", "raw"], group="reasoning",
                            paper="raw completion for local models (released code), the chat "
                                  "API for GPT models")
    max_tokens: int = knob(256, "Answer: maximum new tokens", min=8, max=2048, group="reasoning",
                           paper=256)
    temperature: float = knob(0.0, "Answer temperature", min=0.0, max=2.0, group="reasoning",
                              paper=0.01)
    stop_at_newline: bool = knob(True, "Stop the answer at the first newline (the released "
                                 "code; the answer is the first line either way)",
                                 group="reasoning", paper=True)
    feedback: bool = knob(False, "FRAG-F in one run: one extra call picks the correct path, and a "
                          "copy of the router is refitted on its hop count (shown, not kept)",
                          group="reasoning", ablation=True, paper=False, status="paper",
                          evidence="#the-router")
    max_graph_nodes: int = knob(150, "KG nodes drawn in the trace (chosen by PPR; counts are "
                                "shown for the rest)", min=10, max=5000, group="display")
    batch_size: int = batch_knob()

    PRESETS = {
        "small-model": Preset(
            "small-model",
            "Fewer, pre-scored paths for small contexts and CPU: 16 paths in the prompt (the "
            "spec's setting for 2-4k contexts) and only the 256 paths with the best mean "
            "relation score reranked. Costs recall: on the demo questions the answer entity was "
            "among the candidates but cut before reranking on 5 simple-route and 9 "
            "complex-route questions.",
            {"path_top_u": 16, "rerank_cap": 256, "prerank": "relation"}),
        "demo-pruning": Preset(
            "demo-pruning",
            "The spec's demo preset (A5): n = 60 PPR nodes, m = 8 relations, u = 16 paths, so "
            "the pruning stages visibly cut something on the small demo KG.",
            {"ppr_top_n": 60, "relation_top_m": 8, "path_top_u": 16}),
    }


class Frag(Method):
    name = "frag"
    title = "FRAG (flexible modular KG-RAG)"
    kind = "kg"
    view = "graph"
    Config = FragConfig
    prompt_version = P.VERSION
    description = ("Routes the question to a short- or long-path retrieval pipeline from its "
                   "text alone, prunes the KG neighbourhood by PPR and relation relevance, "
                   "ranks paths, and answers with one LLM call.")
    # p_complex >= route_threshold routes to COMPLEX; paths keep the top-u by score
    thresholds = D.THRESHOLDS
    node_kinds = D.NODE_KINDS
    failure_tags = D.FAILURE_TAGS
    whatif_nodes = D.WHATIF_NODES

    # -- routing --
    @staticmethod
    def _router(cfg: FragConfig) -> frag_router.TfidfLRRouter | None:
        if cfg.estimator != "tfidf_lr":
            return None
        return frag_router.load_router(cfg.router, auto_train=True)

    @classmethod
    def fitted_state(cls, cfg: FragConfig) -> list[FitRecord]:
        """The router, when it decides the route (a forced or oracle route uses none)."""
        r = cls._router(cfg) if cfg.route == "auto" else None
        return [r.record] if r is not None and r.record is not None else []

    def estimate(self, ctx: RunContext, question: str
                 ) -> tuple[frag_router.HopEstimate, frag_router.TfidfLRRouter | None]:
        cfg: FragConfig = ctx.config
        r = self._router(cfg)
        if r is None:
            est = frag_router.HeuristicRouter().estimate(question, cfg.route_threshold)
            if cfg.estimator == "tfidf_lr":
                est.model_info["fallback"] = (f"no router {cfg.router!r} could be loaded or "
                                              f"trained; heuristic used")
            return est, None
        return r.estimate(question, cfg.route_threshold), r

    def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
        cfg: FragConfig = ctx.config
        kg, caveats = require_kg(ctx, "FRAG", "q")
        name = namer(kg)
        gold = ctx.gold
        gold_eids = [e for e in (gold.answer_entities if gold else []) if e]

        yield ctx.set_phase("link")
        yield T.node_added("q", "question", question, layer=0, state="created")
        yield T.custom("question_received", "q", question=question,
                       gold_answers=gold.gold_answers if gold else None,
                       gold_hops=gold.hops if gold else None)
        yield from caveats

        # 1. topic entities
        if cfg.use_dataset_entities and gold and gold.topic_entities:
            seeds = [e for e in gold.topic_entities if has_entity(kg, e)]
            how = "dataset"
            candidates = [{"id": e, "name": name(e), "score": 1.0, "how": "dataset"}
                          for e in gold.topic_entities]
        else:
            how = "linker"
            links = kg.link_entities(question, k=max(5, cfg.max_seeds), embedder=ctx.embedder)
            candidates = [{"id": e, "name": name(e), "score": round(float(s), 4), "how": h}
                          for e, s, h in links]
            seeds = [c["id"] for c in candidates
                     if c["score"] >= cfg.link_min_score][: cfg.max_seeds]
        yield T.custom("entities_linked", "q", candidates=candidates, seeds=seeds, source=how)

        # gold shortest-path hops (the paper's routing label), only when answers are known
        min_hops = kg_min_hops(kg, seeds, gold_eids) if gold_eids else None

        # 2. hop range
        yield ctx.set_phase("route")
        est, router = self.estimate(ctx, question)
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
        if router is not None and router.record is not None:
            yield router.record.event("router", gold, ctx.dataset,
                                      decides_route=source == "classifier")
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
        shown = ctx.whatif.evidence(    # a what-if drops or adds paths
            "st:rerank", [(f"p:{p.rank}", p.text) for p in res.selected], lambda x: x[0],
            lambda h: (h.id, h.text))
        # the events show the paths the run reasons over (a what-if's drops and additions)
        cover = yield from retrieval_events(kg, question, res, cfg, gold_eids, shown)

        # 4. reasoning: one call
        yield ctx.set_phase("reason")
        texts = [t for _, t in shown]
        msgs, shown = P.build(question, texts, cfg.prompt_mode)
        yield T.node_added("reason", "reason", "Answer from the top paths", parents=["st:rerank"],
                           layer=8, state="created", n_paths=len(texts),
                           ungrounded=not texts, prompt_mode=cfg.prompt_mode)
        yield T.custom("prompt_built", "reason", prompt=shown, n_paths=len(texts),
                       prompt_tokens=_count_tokens(ctx, shown), ungrounded=not texts)
        parts = [self._answer(ctx, msgs)]
        # 5. FRAG-F feedback (optional, one extra call, a copy of the router adapted)
        if cfg.feedback:
            parts.append(self._feedback(ctx, question, texts, est, router))
        ans = (yield from together(ctx, parts, cfg.batch_size))[0]

        # 6. answer + evaluation
        hit = hit_at_1(ans, gold.gold_answers) if gold and gold.gold_answers else None
        yield T.node_added("answer", "answer", ans or "(empty answer)", parents=["reason"],
                           layer=9, state="answered" if ans else "unknown", hit=hit,
                           ungrounded=not texts)
        yield T.answer(ans, node_id="answer", route=route, p_complex=est.p_complex,
                       llm_calls_retrieval=0, n_paths=len(texts), ungrounded=not texts, hit=hit)
        if gold is not None:
            h = min_hops if min_hops is not None else gold.hops
            yield T.custom("evaluated", "answer", hit=hit, coverage=cover,
                           gold_hops=gold.hops, gold_min_hops=min_hops, route=route,
                           misrouted=(None if not h else
                                      (route == "simple") != (h <= frag_router.DELTA)),
                           lost_at=lost_at(cover))

    def _answer(self, ctx: RunContext, msgs: Any) -> Iterator[T.Event]:
        cfg: FragConfig = ctx.config
        comp = yield from ctx.generate(
            "answer", msgs, GenParams(max_tokens=cfg.max_tokens, temperature=cfg.temperature,
                                      seed=ctx.seed, chat=cfg.prompt_mode == "chat",
                                      stop=["\n"] if cfg.stop_at_newline else []),
            node_id="reason", prompt_version=self.prompt_version)
        ans = P.first_line(comp.text)
        yield T.custom("llm_answered", "reason", output=comp.text, answer_line=ans,
                       completion_tokens=comp.completion_tokens, llm_calls_retrieval=0,
                       llm_calls_answer=1)
        yield T.node_updated("reason", "answered", answer_line=ans)
        return ans

    def _feedback(self, ctx: RunContext, question: str, texts: list[str], est: Any,
                  router: Any) -> Iterator[T.Event]:
        yield ctx.set_phase("feedback")
        yield from feedback_events(ctx, question, texts, est, router, self.prompt_version)


def _model_summary(info: dict[str, Any]) -> dict[str, Any]:
    keep = ("kind", "name", "trained_at", "n_train", "sources", "labels", "report", "cutoff",
            "fallback", "base", "n_feedback")
    return {k: info[k] for k in keep if k in info}


def _count_tokens(ctx: RunContext, text: str) -> int | None:
    try:
        return int(ctx.llm.count_tokens(text))
    except Exception:
        return None
