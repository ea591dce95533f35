"""Assemble what a run needs (model, dataset knowledge, config) — shared by CLI, UI and eval."""
from __future__ import annotations

from typing import Any

from . import config as cfgmod
from . import settings as settings_mod
from .llm.base import LLMBackend
from .methods import get_method
from .methods.base import Method, RunContext


class KnowledgeMissingError(LookupError):
    pass


def build_context(method: Method | str, *, llm: LLMBackend, dataset: str | None = None,
                  overrides: dict[str, Any] | None = None, seed: int | None = None,
                  question_id: str | None = None, settings: Any = None) -> tuple[Method, RunContext]:
    from .datasets import load_dataset
    s = settings or settings_mod.load()
    m = get_method(method) if isinstance(method, str) else method
    cfg = cfgmod.build(m.Config, overrides)
    ds = load_dataset(dataset or s.dataset)
    retrievers: dict[str, Any] = {}
    kg = None
    if m.kind == "text":
        if not ds.passages:
            raise KnowledgeMissingError(
                f"Dataset {ds.name!r} has no passages, so the text method {m.name!r} has nothing "
                f"to retrieve. Pick a dataset with a corpus, or a KG method.")
        for kind in ("bm25", "dense", "hybrid"):
            retrievers[kind] = _Lazy(ds, kind)
    if m.kind == "kg":
        kg = ds.kg()
        if kg is None:
            raise KnowledgeMissingError(
                f"Dataset {ds.name!r} has no knowledge graph. Build one from its passages with "
                f"`python -m workbench kg build {ds.name}`, or pick a dataset with a KG.")
    embedder = _LazyEmbedder()
    gold = ds.question(question_id) if question_id else None
    ctx = RunContext(llm=llm, config=cfg, seed=s.seed if seed is None else seed,
                     retrievers=retrievers, kg=kg, embedder=embedder, gold=gold, dataset=ds.name,
                     extra={"default_retriever": s.retriever, "k": s.k})
    return m, ctx


class _Lazy:
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
