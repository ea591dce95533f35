"""Assemble what a run needs (model, dataset knowledge, config) — shared by CLI, UI and eval."""
from __future__ import annotations

import dataclasses
import time
from typing import Any

from . import config as cfgmod
from . import settings as settings_mod
from .llm.base import LLMBackend
from .methods import get_method
from .methods.base import Method, RunContext


class KnowledgeMissingError(LookupError):
    pass


def build_context(method: Method | str, *, llm: LLMBackend, dataset: Any = None,
                  overrides: dict[str, Any] | None = None, seed: int | None = None,
                  question_id: str | None = None, settings: Any = None) -> tuple[Method, RunContext]:
    """The one way a run context is built (Ask, Compare, the CLI, evals, what-ifs): the
    method (a name or an instance), its config from ``overrides``, the dataset's knowledge
    (a registered dataset's name, default the Settings one, or a dataset object: a plug-in,
    a test's), retrievers built on first search, the embedder loaded on first use, the gold
    question when ``question_id`` names one, and the Settings' default retriever and k and
    their loop stop (set on every generation of the run)."""
    from .datasets import load_dataset
    s = settings or settings_mod.load()
    m = get_method(method) if isinstance(method, str) else method
    cfg = cfgmod.build(m.Config, overrides)
    ds = load_dataset(dataset or s.dataset) if dataset is None or isinstance(dataset, str) \
        else dataset
    name = getattr(ds, "name", "dataset")
    retrievers: dict[str, Any] = {}
    kg = None
    if m.kind == "text":
        if not getattr(ds, "passages", None):
            raise KnowledgeMissingError(
                f"Dataset {name!r} has no passages, so the text method {m.name!r} has nothing "
                f"to retrieve. Pick a dataset with a corpus, or a KG method.")
        for kind in ("bm25", "dense", "hybrid"):
            retrievers[kind] = LazyRetriever(ds, kind)
    if m.kind == "kg":
        kg = ds.kg() if hasattr(ds, "kg") else None
        if kg is None:
            raise KnowledgeMissingError(
                f"Dataset {name!r} has no knowledge graph. Build one from its passages with "
                f"`python -m workbench kg build {name}`, or pick a dataset with a KG.")
    gold = ds.question(question_id) if question_id else None
    ctx = RunContext(llm=llm, config=cfg, seed=s.seed if seed is None else seed,
                     retrievers=retrievers, kg=kg, embedder=_LazyEmbedder(), gold=gold,
                     dataset=name, extra={"default_retriever": s.retriever, "k": s.k,
                                          "loop_stop": s.loop_stop})
    return m, ctx


class LazyRetriever:
    """Builds a dataset's retriever on first search (dense indexes take a while)."""

    def __init__(self, ds: Any, kind: str):
        self.ds, self.kind, self.name = ds, kind, kind
        self._r = None

    def search(self, query: str, k: int = 5):
        if self._r is None:
            self._r = self.ds.retriever(self.kind)
        return self._r.search(query, k)


class _LazyEmbedder:
    """Loads the sentence embedder (~15 s cold) only when a method first uses it."""

    def __getattr__(self, name: str):
        from .knowledge.dense import get_embedder
        return getattr(get_embedder(), name)


def warm_context(ctx: RunContext, query: str) -> dict[str, Any]:
    """Load what a run of ``ctx`` builds on first use: the retrievers its knobs name (a dense
    index is read from disk or built, with the sentence embedder) and a KG's entity-name
    indexes (with the embedder). A method that reads neither, like vanilla, loads nothing.

    An eval calls this before its first timed item, so that item's wall time measures the
    method, not the loading (on HotpotQA-100 standard RAG's first item took 41 s, the others
    about 6 s). Returns seconds per step and, per failed step, its error: a run that needs the
    part reports the failure itself.
    """
    from .methods.passages import retriever_name
    out: dict[str, Any] = {"seconds": {}, "errors": {}}

    def step(name: str, fn: Any) -> None:
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as e:     # noqa: BLE001 - the run meets the same error and records it
            out["errors"][name] = f"{type(e).__name__}: {e}"
        out["seconds"][name] = round(time.perf_counter() - t0, 3)

    cfg = ctx.config
    knobs = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)} \
        if dataclasses.is_dataclass(cfg) else {}
    kinds = {retriever_name(ctx, v) for name, v in knobs.items()
             if name.endswith("retriever") and isinstance(v, str)}
    for kind in sorted(k for k in kinds if k in ctx.retrievers):
        step(f"{kind} index", lambda r=ctx.retrievers[kind]: r.search(query, 1))
    if ctx.kg is not None and hasattr(ctx.kg, "link_entities"):
        step("KG entity index", lambda: ctx.kg.link_entities(query, embedder=ctx.embedder))
        if knobs.get("entity_descriptions") and getattr(ctx.kg, "descriptions", None) is not None:
            step("entity descriptions", lambda: ctx.kg.descriptions.lookup(query))
    return out
