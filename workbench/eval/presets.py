"""One-click configurations of the knowledge-centric CRAG study (crag-benchmark.md §5.1),
at small scale: each fixes a base configuration and sweeps one knob, so the result view
can plot accuracy / hallucination / missing / score against it.

A knob is served by the method when its Config has a field of that name (the reference
method, standard RAG, has ``top_k`` and ``retriever``), otherwise by the evaluation-level wrappers in
:mod:`workbench.eval.knobs` (chunk size, noise chunks, "I don't know" prompting).
:func:`support` says which, and the page shows it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from .. import config as cfgmod
from . import knobs as K


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    paper: str                       # the study's table / figure it mirrors
    knob: str                        # the swept knob
    values: tuple
    base: dict[str, Any] = field(default_factory=dict)
    methods: tuple[str, ...] = ()    # () = the reference method(s) (``reference = True``)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PRESETS: dict[str, Preset] = {p.name: p for p in [
    Preset("crag-chunks", "Number of chunks in the prompt", "§2.4 number of chunks (k ∈ {1,3,5,10})",
           "top_k", (1, 3, 5, 10),
           note="Paper base k = 3. More chunks: more accuracy and more hallucination."),
    Preset("crag-chunk-size", "Chunk size", "F6 (chunk size)", "chunk_size", (25, 50, 100, 200),
           base={"top_k": 3, "passage_chars": 4000, "chunk_overlap": 0},
           note="Sizes in whitespace words (the study used 100-1000 tiktoken tokens over web "
                "pages; the sample passages are paragraph-length, so the range is scaled down). "
                "passage_chars is raised so the prompt is not clipped below the chunk size."),
    Preset("crag-retriever", "Retriever", "F2 / T6 (sparse vs dense vs hybrid)", "retriever",
           ("bm25", "dense", "hybrid"), base={"top_k": 3},
           note="Dense is all-MiniLM-L6-v2 (offline), not BGE; hybrid is RRF fusion."),
    Preset("crag-noise", "Noise chunks inserted", "F5 (noise chunks, k ∈ {0,1,2,3,5,8})",
           "noise_k", (0, 1, 2, 3, 5, 8),
           base={"top_k": 3, "noise_position": "append", "noise_pool": "unretrieved",
                 "noise_seed": 0},
           note="Noise passages are drawn from the whole corpus, excluding the retrieved ones, "
                "seeded by (noise_seed, question id, query). Add noise_seed to the grid for "
                "several noise draws."),
    Preset("crag-noise-position", "Noise position", "§5.6 noise_position", "noise_position",
           ("prepend", "append", "random"),
           base={"top_k": 3, "noise_k": 2, "noise_pool": "unretrieved", "noise_seed": 0}),
    Preset("crag-idk", "\"I don't know\" prompting", "§3.2 missing vs hallucinated",
           "idk_prompt", (False, True), base={"top_k": 3},
           note="Adds an instruction to answer exactly \"I don't know\" when the references "
                "are insufficient; should move hallucinations to missing."),
]}


def get(name: str) -> Preset:
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r}; available: {', '.join(PRESETS)}")
    return PRESETS[name]


def support(knob: str, method_cls: type) -> str:
    """``"method"`` if the method's Config has the knob, ``"eval"`` if the evaluation
    wrappers provide it, ``"none"`` otherwise (e.g. retrieval knobs on a KG method)."""
    fields = {k.name for k in cfgmod.knobs(method_cls.Config)}
    if knob in fields:
        return "method"
    if knob in K.EVAL_KNOBS:
        if knob in ("idk_prompt",) or getattr(method_cls, "kind", "text") == "text":
            return "eval"
    return "none"


def preset_methods(p: Preset, method_classes: dict[str, type]) -> tuple[str, ...]:
    """The methods a preset runs on: its own, else the methods that declare themselves the
    plain retrieve-then-answer reference (``reference = True``)."""
    return p.methods or tuple(n for n, cls in method_classes.items()
                              if getattr(cls, "reference", False))


def to_sweep(preset: Preset | str, method_classes: dict[str, type],
             methods: Sequence[str] | None = None) -> dict[str, Any]:
    """The preset as a sweep (the same shape as a sweep file). Base knobs that none of the
    chosen methods can take are dropped (e.g. ``passage_chars`` for a method without it)."""
    p = get(preset) if isinstance(preset, str) else preset
    ms = list(methods or preset_methods(p, method_classes))
    missing = [m for m in ms if m not in method_classes]
    if missing:
        raise KeyError(f"preset {p.name!r} needs method(s) {missing}, which are not available "
                       f"(have: {', '.join(sorted(method_classes))})")
    base = {k: v for k, v in p.base.items()
            if any(support(k, method_classes[m]) != "none" for m in ms)}
    return {"methods": ms, "set": base, "grid": {p.knob: list(p.values)}, "preset": p.name,
            "label": p.title}


def describe(preset: Preset | str, method_classes: dict[str, type],
             methods: Sequence[str] | None = None) -> dict[str, Any]:
    p = get(preset) if isinstance(preset, str) else preset
    ms = [m for m in (methods or preset_methods(p, method_classes)) if m in method_classes]
    return {**p.to_dict(), "methods": preset_methods(p, method_classes), "support": {m: {k: support(k, method_classes[m])
                                           for k in [p.knob, *p.base]} for m in ms}}


# What the method engineer could add to the reference method (standard RAG) so these become method knobs
# (kept here so the note travels with the code):
METHOD_KNOB_WISHLIST = {
    "chunk_size": "re-chunk the corpus per config (now: eval wrapper re-indexes per process)",
    "noise_k / noise_position": "insert noise passages in the method, marked on the retrieval node",
    "idk_prompt": "a prompt variant that allows 'I don't know' (now: the eval wraps the LLM and "
                  "appends an instruction to free-text calls)",
}
