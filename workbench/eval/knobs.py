"""Evaluation-level knobs: study variables applied around a method, not inside it.

The knowledge-centric CRAG study (crag-benchmark.md §2.4-2.5, §5.6) varies the number
of chunks, the chunk size, the retriever, injected noise chunks and "I don't know"
prompting. When a method's Config has a knob of the same name, the method's knob is
used; otherwise these wrappers supply it without touching the method. They are typed knobs
like a method's (:class:`EvalKnobs`, documented in docs/evaluation.md#study-knobs):

- ``top_k``: every retrieval asks for this many passages, whatever the method asked;
- ``retriever``: every retrieval is served by this kind (``bm25`` | ``dense`` | ``hybrid``);
- ``chunk_size`` / ``chunk_overlap``: passages are re-split into chunks of at most this
  many whitespace words (tokenizer: whitespace, recorded) and indexed afresh;
- ``noise_k`` / ``noise_position`` / ``noise_pool`` / ``noise_seed``: after each retrieval,
  ``noise_k`` passages drawn from the corpus are inserted into the hit list, marked
  ``meta.noise = True`` and ``retriever = "noise"``. The RNG is keyed on
  ``(noise_seed, question id, query)`` so runs that differ only in another knob see the
  same noise (crag-benchmark.md §5.6);
- ``idk_prompt``: the final user message of every free-text generation gets the
  instruction to answer exactly "I don't know" when the information is insufficient.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Sequence

from ..config import KnobSpec, coerce, knob
from ..config import knobs as _knobs
from ..knowledge.types import Hit
from ..llm import batching
from ..llm.base import GenRequest

IDK_INSTRUCTION = ("If the information above is not enough to answer the question, reply "
                   "exactly \"I don't know\" and nothing else.")
IDK_PROMPT_VERSION = "idk-1"


_STUDY = "#study-knobs"


@dataclass
class EvalKnobs:
    """The evaluation-level knobs, declared as a method's are (``eval --set NAME=VALUE``)."""
    DOCS: ClassVar[str] = "docs/evaluation.md"

    top_k: int = knob(0, "Passages per retrieval (0 = as the method asks)", min=0, group="eval",
                      evidence=_STUDY)
    retriever: str = knob("", "Serve every retrieval with this retriever ('' = as the method "
                          "asks)", choices=["", "bm25", "dense", "hybrid"], group="eval",
                          evidence=_STUDY)
    chunk_size: int = knob(0, "Re-split passages into chunks of at most N words (0 = as stored)",
                           min=0, group="eval", evidence=_STUDY)
    chunk_overlap: int = knob(0, "Words shared by consecutive chunks", min=0, group="eval",
                              evidence=_STUDY)
    noise_k: int = knob(0, "Random corpus passages inserted after each retrieval", min=0,
                        group="eval", evidence=_STUDY)
    noise_position: str = knob("append", "Where noise goes in the hit list",
                               choices=["append", "prepend", "random"], group="eval",
                               evidence=_STUDY)
    noise_pool: str = knob("unretrieved", "Draw noise from the corpus excluding the retrieved "
                           "passages ('unretrieved') or from all of it ('all')",
                           choices=["unretrieved", "all"], group="eval", evidence=_STUDY)
    noise_seed: int = knob(0, "Seed of the noise RNG (keyed with question id and query)", min=0,
                           group="eval", evidence=_STUDY)
    idk_prompt: bool = knob(False, "Tell the model to answer \"I don't know\" when unsure",
                            group="eval", evidence=_STUDY)


EVAL_KNOBS: dict[str, KnobSpec] = {k.name: k for k in _knobs(EvalKnobs)}


def coerce_eval_knob(name: str, value: Any) -> Any:
    k = EVAL_KNOBS[name]
    if isinstance(value, str) and value.strip().lower() in ("none", "null") and k.type != "str":
        value = k.default
    return coerce(k, value)


def active(knobs: dict[str, Any]) -> dict[str, Any]:
    """Only the knobs that differ from their defaults (what the hash and label use)."""
    return {k: v for k, v in sorted(knobs.items()) if k in EVAL_KNOBS and v != EVAL_KNOBS[k].default}


# --------------------------------------------------------------------------
# retriever wrappers
# --------------------------------------------------------------------------

class KnobRetriever:
    """Applies top_k, the retriever substitution and noise to one retrieval call."""

    def __init__(self, inner: Any, *, name: str, corpus: Sequence[Any] = (), top_k: int = 0,
                 noise_k: int = 0, noise_position: str = "append", noise_pool: str = "unretrieved",
                 noise_seed: int = 0, question_id: str = ""):
        self.inner, self.name = inner, name
        self.corpus, self.top_k = corpus, int(top_k or 0)
        self.noise_k, self.noise_position = int(noise_k or 0), noise_position
        self.noise_pool, self.noise_seed, self.question_id = noise_pool, int(noise_seed), question_id

    def _rng(self, query: str) -> random.Random:
        key = f"{self.noise_seed}|{self.question_id}|{query}".encode()
        return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))

    def search(self, query: str, k: int = 5) -> list[Hit]:
        hits = list(self.inner.search(query, self.top_k or k))
        if self.noise_k <= 0 or not self.corpus:
            return hits
        rng = self._rng(query)
        taken = {h.id for h in hits} if self.noise_pool == "unretrieved" else set()
        noise: list[Hit] = []
        n = len(self.corpus)
        tries = 0
        seen: set[int] = set()
        while len(noise) < self.noise_k and tries < 20 * (self.noise_k + 1) and len(seen) < n:
            i = rng.randrange(n)
            tries += 1
            if i in seen:
                continue
            seen.add(i)
            p = self.corpus[i]
            if p.id in taken:
                continue
            noise.append(Hit(p.id, p.title, p.text, "noise", 0.0, 0, {"noise": True}))
        if self.noise_position == "prepend":
            out = noise + hits
        elif self.noise_position == "random":
            out = list(hits)
            for h in noise:
                out.insert(rng.randrange(len(out) + 1), h)
        else:
            out = hits + noise
        return [replace(h, rank=r) for r, h in enumerate(out, 1)]


def chunk_passages(passages: Sequence[Any], size: int, overlap: int = 0) -> list[Any]:
    """Re-split passages into word windows; chunk ids are ``<passage id>#c<i>``."""
    from ..datasets.base import Passage
    from ..knowledge.text import chunk_text
    out = []
    for p in passages:
        parts = chunk_text(p.text, max_words=size, overlap_words=overlap, min_words=1) or [p.text]
        for i, c in enumerate(parts):
            out.append(Passage(f"{p.id}#c{i}", p.title, c,
                               {**(p.meta or {}), "parent": p.id, "chunk": i,
                                "chunk_tokenizer": "whitespace"}))
    return out


_CHUNK_CACHE: dict[tuple, dict[str, Any]] = {}


def chunked_retrievers(dataset_name: str, passages: Sequence[Any], size: int, overlap: int,
                       kinds: Sequence[str]) -> dict[str, Any]:
    """Retrievers over a re-chunked corpus, built once per process and setting."""
    key = (dataset_name, len(passages), size, overlap)
    cache = _CHUNK_CACHE.setdefault(key, {"chunks": chunk_passages(passages, size, overlap)})
    chunks = cache["chunks"]
    out = {}
    for kind in kinds:
        if kind not in cache:
            from ..knowledge.bm25 import BM25Retriever
            if kind == "bm25":
                cache[kind] = BM25Retriever(chunks)
            elif kind == "dense":
                from ..knowledge.dense import DenseRetriever
                cache[kind] = DenseRetriever(chunks, show_progress=False)
            elif kind == "hybrid":
                from ..knowledge.hybrid import HybridRetriever
                comps = [chunked_retrievers(dataset_name, passages, size, overlap, [c])[c]
                         for c in ("bm25", "dense")]
                cache[kind] = HybridRetriever(comps)
            else:
                raise ValueError(f"unknown retriever kind {kind!r}")
        out[kind] = cache[kind]
    return out


class _ChunkLazy:
    def __init__(self, ds_name: str, passages: Sequence[Any], size: int, overlap: int, kind: str):
        self.args = (ds_name, passages, size, overlap)
        self.kind = self.name = kind
        self._r = None

    def search(self, query: str, k: int = 5) -> list[Hit]:
        if self._r is None:
            self._r = chunked_retrievers(*self.args, [self.kind])[self.kind]
        return self._r.search(query, k)


def apply_to_context(ctx: Any, knobs: dict[str, Any], *, passages: Sequence[Any] = (),
                     question_id: str = "") -> Any:
    """Return ``ctx`` with its retrievers (and LLM, for idk_prompt) wrapped per ``knobs``."""
    knobs = active(knobs)
    if not knobs:
        return ctx
    retrievers = dict(ctx.retrievers)
    if knobs.get("chunk_size") and passages:
        retrievers = {name: _ChunkLazy(ctx.dataset, passages, knobs["chunk_size"],
                                       knobs.get("chunk_overlap", 0),
                                       name if name in ("bm25", "dense", "hybrid") else "bm25")
                      for name in retrievers}
    corpus = passages
    if knobs.get("chunk_size") and passages:
        corpus = _CHUNK_CACHE.get((ctx.dataset, len(passages), knobs["chunk_size"],
                                   knobs.get("chunk_overlap", 0)), {}).get("chunks") \
            or chunk_passages(passages, knobs["chunk_size"], knobs.get("chunk_overlap", 0))
    wrapped = {}
    for name, r in retrievers.items():
        inner = r
        if knobs.get("retriever"):
            inner = retrievers.get(knobs["retriever"], r)
        wrapped[name] = KnobRetriever(
            inner, name=name, corpus=corpus, top_k=knobs.get("top_k", 0),
            noise_k=knobs.get("noise_k", 0), noise_position=knobs.get("noise_position", "append"),
            noise_pool=knobs.get("noise_pool", "unretrieved"),
            noise_seed=knobs.get("noise_seed", 0), question_id=question_id)
    llm = ctx.llm
    if knobs.get("idk_prompt"):
        llm = IdkBackend(ctx.llm)
    return replace(ctx, retrievers=wrapped, llm=llm)


# --------------------------------------------------------------------------
# "I don't know" prompting without method support
# --------------------------------------------------------------------------

@dataclass
class IdkBackend:
    """Appends :data:`IDK_INSTRUCTION` to the last user message of free-text calls
    (calls constrained by a JSON schema or grammar are left alone)."""
    inner: Any
    instruction: str = IDK_INSTRUCTION
    info: Any = field(init=False)

    def __post_init__(self) -> None:
        self.info = self.inner.info

    def _instructed(self, messages: Any, params: Any) -> Any:
        if params is None or (params.json_schema is None and params.grammar is None):
            if isinstance(messages, str):
                return messages.rstrip() + "\n" + self.instruction + "\n"
            msgs = [dict(m) for m in messages]
            for m in reversed(msgs):
                if m.get("role") == "user":
                    m["content"] = m.get("content", "").rstrip() + "\n\n" + self.instruction
                    break
            return msgs
        return messages

    def generate(self, messages: Any, params: Any = None) -> Any:
        return self.inner.generate(self._instructed(messages, params), params)

    def generate_many(self, requests: Any, **kw: Any) -> Any:
        return batching.generate_many(self.inner, [GenRequest(self._instructed(
            r.messages, r.params), r.params) for r in requests], **kw)

    def score(self, context: Any, continuation: str) -> Any:
        return self.inner.score(context, continuation)

    def score_many(self, requests: Any, **kw: Any) -> Any:
        return batching.score_many(self.inner, requests, **kw)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)
