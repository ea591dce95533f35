"""FRAG-F: the LLM picks the path that answers the question; that path's hop count relabels
the question (SIMPLE iff <= 2 hops) and the router is adapted (spec frag.md §3.4).

The paper presents the label as a by-product of answering; the released code makes a
separate path-extraction call, which is what happens here, counted as an LLM call.

No hidden state: a saved router is never rewritten.

* In one run (``feedback=True``) the run's own sample adapts an in-memory copy; the trace
  shows p_complex before and after, and the answer is not affected.
* :func:`build_feedback_router` is the paper's batch procedure: over a named question set,
  in a seeded random order, collect feedback until floor(ratio x N) questions (25 % in the
  paper) gave a valid label, adapt a copy of the router on them and save it as a new named
  router, whose record says which questions it saw (supervision ``llm-feedback``: no gold
  labels, but the texts of the questions themselves; the paper's FRAG-F is transductive).
"""
from __future__ import annotations

import math
import random
from typing import Any, Callable, Iterator, Sequence

from ... import trace as T
from ...llm.base import GenParams
from .. import fitted
from . import router as frag_router
from . import prompts as P

DEFAULT_RATIO = 0.25


def label_of(line: str) -> tuple[int, str | None]:
    """``(hops, "simple"|"complex")`` of the path line the model copied; None when the line
    is NO or malformed (then the question gives no feedback)."""
    hops = P.path_hops(line)
    if hops not in (1, 2, 3, 4):
        return hops, None
    return hops, "complex" if hops > frag_router.DELTA else "simple"


def _params(prompt_mode: str) -> GenParams:
    return GenParams(max_tokens=96, temperature=0.0, stop=["\n"], chat=prompt_mode == "chat")


def feedback_events(ctx: Any, question: str, path_texts: Sequence[str],
                    est: frag_router.HopEstimate, router: frag_router.TfidfLRRouter | None,
                    prompt_version: str) -> Iterator[T.Event]:
    """One run's FRAG-F: the extraction call, the label, and a copy of the router adapted
    on this one sample (shown, not kept, not used for the answer)."""
    mode = ctx.config.prompt_mode
    msgs, _ = P.build(question, path_texts, mode, P.FEEDBACK_TASK)
    yield T.node_added("feedback", "feedback", "FRAG-F: which path is correct?",
                       parents=["reason"], layer=9, state="created",
                       note="The paper counts this as free; the released code makes this "
                            "separate call, counted here.")
    comp = yield from ctx.generate("feedback_path", msgs, _params(mode), node_id="feedback",
                                   prompt_version=prompt_version)
    line = P.first_line(comp.text)
    hops, y_fb = label_of(line)
    yield T.custom("feedback_path_extracted", "feedback", line=line, hops=hops)
    if y_fb is None:
        yield T.node_updated("feedback", "insufficient", line=line, hops=hops,
                             reason="no valid path line (NO or malformed): skipped")
        return
    yield T.custom("feedback_label", "feedback", hops=hops, y_fb=y_fb, predicted=est.label)
    if router is None:
        yield T.node_updated("feedback", "done", line=line, hops=hops, y_fb=y_fb,
                             note="no trained router to adapt (heuristic estimator)")
        return
    sample = frag_router.LabelledQuestion(question, hops, "feedback")
    after = frag_router.adapted_copy(router, [sample]).estimate(question,
                                                                  ctx.config.route_threshold)
    yield T.custom("classifier_adapted", "feedback", before=est.p_complex,
                   after=after.p_complex, label_before=est.label, label_after=after.label,
                   n_feedback=1, kept=False,
                   note="a copy adapted on this run's sample; the saved router is unchanged")
    yield T.node_updated("feedback", "done", line=line, hops=hops, y_fb=y_fb,
                         p_before=est.p_complex, p_after=after.p_complex)


def build_feedback_router(llm: Any, dataset: str, split: str, *, base: str = "",
                          ratio: float = DEFAULT_RATIO, seed: int = 0, name: str | None = None,
                          overrides: dict[str, Any] | None = None,
                          echo: Callable[[str], None] | None = None
                          ) -> tuple[frag_router.TfidfLRRouter, dict[str, Any]]:
    """The paper's batch FRAG-F over ``dataset:split``; returns the saved adapted router and a
    report. ``base`` names the router to adapt (default: the FRAG default's)."""
    from ...workspace import build_context
    from .rank import Ranker
    from .retrieval import retrieve
    over = {**(overrides or {}), "route": "auto", "estimator": "tfidf_lr"}
    if base:
        over["router"] = base
    _, ctx = build_context("frag", llm=llm, dataset=dataset, overrides=over)
    cfg = ctx.config
    router = frag_router.load_router(cfg.router)
    if router is None:
        raise LookupError(f"no router {cfg.router!r} to adapt; train one with "
                          f"`python -m workbench frag train-router`")
    from ...datasets import load_dataset
    questions = load_dataset(dataset).split(split)
    order = list(questions)
    random.Random(seed).shuffle(order)
    target = math.floor(ratio * len(questions))
    ranker = Ranker(cfg.ranker, ctx.embedder, cfg.cross_encoder_path)
    samples: list[frag_router.LabelledQuestion] = []
    seen: list[Any] = []
    rows: list[dict[str, Any]] = []
    for q in order:
        if len(samples) >= target:
            break
        seen.append(q)
        est = router.estimate(q.question, cfg.route_threshold)
        seeds = [e for e in q.topic_entities] if cfg.use_dataset_entities and q.topic_entities \
            else [e for e, s, _ in ctx.kg.link_entities(q.question, k=5, embedder=ctx.embedder)
                  if s >= cfg.link_min_score][: cfg.max_seeds]
        res = retrieve(ctx.kg, q.question, seeds, est.label, cfg, ranker)
        msgs, _ = P.build(q.question, [p.text for p in res.selected], cfg.prompt_mode,
                          P.FEEDBACK_TASK)
        line = P.first_line(llm.generate(msgs, _params(cfg.prompt_mode)).text)
        hops, y_fb = label_of(line)
        rows.append({"id": q.id, "route": est.label, "line": line, "hops": hops, "y_fb": y_fb})
        if echo:
            echo(f"{q.id} routed {est.label:7s} -> {y_fb or 'no feedback'} {line[:70]!r}")
        if y_fb is not None:
            samples.append(frag_router.LabelledQuestion(q.question, hops, "feedback"))
    name = frag_router.artefact_name(name or
                                    f"{router.model.get('name', 'router')}-fb-{dataset}-{split}")
    rec = fitted.record("frag_router", name, dataset, split, seen, supervision="llm-feedback",
                        data=[[s.text, s.hops] for s in samples], base=router.model.get("name"),
                        ratio=ratio, seed=seed, model=getattr(llm.info, "name", ""))
    adapted = frag_router.adapted_copy(router, samples, name=name, record=rec, seed=seed)
    path = frag_router.save(adapted.model)
    relabelled = sum(router.estimate(q.question, cfg.route_threshold).label !=
                     adapted.estimate(q.question, cfg.route_threshold).label for q in questions)
    report = {"name": name, "path": str(path), "base": router.model.get("name"),
              "questions": len(questions), "target": target, "consulted": len(seen),
              "feedback": len(samples), "rerouted": relabelled, "rows": rows}
    return adapted, report
