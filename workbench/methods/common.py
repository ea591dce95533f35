"""Helpers shared by the text methods (CRP-RAG, PAR-RAG, baselines).

Answer extraction, passage formatting, refusal/"I don't know" detection,
gold matching, per-node score dicts and a fallback embedder live here so that
every method formats and parses the same way.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable, Sequence

import numpy as np

from .. import trace as T
from ..eval import metrics as _M
from ..knowledge.types import Hit
from ..llm.base import Completion, GenParams
from . import context_select as CS
from .batched import relay

# --- generation parameters ---------------------------------------------------------------

def greedy(max_tokens: int, **kw: Any) -> GenParams:
    """Greedy decoding (temperature 0): every non-sampling call of the text methods."""
    return GenParams(max_tokens=max_tokens, temperature=0.0, **kw)


def sampled(max_tokens: int, temperature: float, top_p: float, seed: int, **kw: Any) -> GenParams:
    return GenParams(max_tokens=max_tokens, temperature=temperature, top_p=top_p, seed=seed, **kw)


def derive_seed(*parts: Any) -> int:
    """A stable 31-bit seed from any parts (run seed, iteration, node, sample)."""
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:4], "big") & 0x7FFFFFFF


# --- passages --------------------------------------------------------------------------

def clip(text: str, max_chars: int) -> str:
    """Cut text at a word boundary near max_chars (0 = no limit)."""
    text = " ".join((text or "").split())
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    sp = cut.rfind(" ")
    return (cut[:sp] if sp > max_chars // 2 else cut) + " ..."


def passage_line(h: Hit | dict[str, Any], max_chars: int = 400, context: str = "head",
                 query: str = "") -> str:
    title = h["title"] if isinstance(h, dict) else h.title
    text = h["text"] if isinstance(h, dict) else h.text
    body = clip(text, max_chars) if context == "head" else \
        CS.select(text, query, max_chars, context, title or "").text
    return f"{title}: {body}" if title else body


def format_passages(hits: Sequence[Hit], max_chars: int = 400, label: str = "Source",
                    numbered: bool = True, *, context: str = "head",
                    queries: str | Sequence[str] = "",
                    cuts: Sequence[CS.Cut] | None = None) -> str:
    """``Source 1: Title: text`` lines (the numbering is what readers cite). Each body is
    cut to ``max_chars`` as ``context`` says (``context_select``: head, relevance to
    ``queries``, whole), or given as ``cuts`` already made; the title is always kept."""
    if not hits:
        return "(no passages)"
    if cuts is None:
        cuts = CS.select_many([_field(h, "text") for h in hits], queries, max_chars, context,
                              [_field(h, "title") for h in hits])
    lines = []
    for i, (h, cut) in enumerate(zip(hits, cuts), 1):
        head = f"{label} {i}: " if numbered else "- "
        title = _field(h, "title")
        lines.append(head + (f"{title}: {cut.text}" if title else cut.text))
    return "\n".join(lines)


def _field(h: Hit | dict[str, Any], name: str) -> str:
    return (h[name] if isinstance(h, dict) else getattr(h, name)) or ""


def context_record(hits: Sequence[Hit], cuts: Sequence[CS.Cut]) -> dict[str, Any]:
    """What a run stores on the node that read the passages: the mode, the budget, the
    characters cut, and each cut passage's sentences marked kept or cut (the inspector
    greys the cut ones)."""
    mode = cuts[0].mode if cuts else "whole"
    budget = cuts[0].budget if cuts else 0
    return {"mode": mode, "budget": budget,
            "kept_chars": sum(c.kept_chars for c in cuts),
            "cut_chars": sum(c.cut_chars for c in cuts),
            "passages": [{"id": _field(h, "id"), "title": _field(h, "title"), **c.record()}
                         for h, c in zip(hits, cuts) if c.cut_chars]}


def context_event(node_id: str, hits: Sequence[Hit], cuts: Sequence[CS.Cut]) -> T.Event:
    """The budget and what was cut, on the node that read the passages (the inspector greys
    the cut)."""
    rec = context_record(hits, cuts)
    return T.node_updated(node_id, None, context=rec, context_mode=rec["mode"],
                          context_budget=rec["budget"], context_cut_chars=rec["cut_chars"])


def fit_passages(count_tokens: Any, hits: Sequence[Hit], per_doc_chars: int,
                 budget_tokens: int, *, context: str = "head", queries: str = "",
                 **fmt: Any) -> tuple[str, list[Hit], dict[str, Any]]:
    """Format passages within a token budget: truncate each passage first (as ``context``
    says), then drop the lowest-ranked ones (the PAR-RAG spec's order). Returns text, the
    hits kept, and a note with what was cut (:func:`context_record`)."""
    def render(kept: list[Hit]) -> tuple[str, list[CS.Cut]]:
        cuts = CS.select_many([h.text for h in kept], queries, per_doc_chars, context,
                              [h.title for h in kept])
        return format_passages(kept, per_doc_chars, cuts=cuts, **fmt), cuts
    kept = list(hits)
    text, cuts = render(kept)
    while kept and count_tokens(text) > budget_tokens:
        kept = kept[:-1]
        text, cuts = render(kept)
    note = {"k_requested": len(hits), "k_effective": len(kept),
            "per_doc_chars": per_doc_chars, "budget_tokens": budget_tokens,
            **context_record(kept, cuts)}
    return text, kept, note


def hit_brief(h: Hit) -> dict[str, Any]:
    return {"id": h.id, "title": h.title, "score": round(float(h.score), 4), "rank": h.rank,
            "retriever": h.retriever}


# --- answers -------------------------------------------------------------------------

_CITE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_LEADINS = ("so the answer is", "the answer is", "final answer:", "answer:")
_UNKNOWN = re.compile(
    r"\bunknown\b|\bunkown\b|\bunknow\b|i (?:do not|don't|dont) know|"
    r"not (?:mentioned|stated|given|provided|specified|"
    r"known|found|available)|(?:does|do|did) not (?:say|mention|contain|provide|specify|state|"
    r"include|give)|no (?:information|mention|relevant|answer)|cannot (?:be )?(?:answer|determine|"
    r"find|say)|can't (?:answer|determine|find|say)|unable to|i'm sorry|i am sorry|\bsorry\b|"
    r"not enough information|insufficient information|refuse", re.I)

REFUSAL_TEXT = "I refuse to answer: no reasoning path has sufficient knowledge."


def is_unknown(text: str) -> bool:
    """True for "UNKNOWN", "I don't know", apologies and "the text does not say" answers."""
    t = (text or "").strip()
    return not t or bool(_UNKNOWN.search(t))


def strip_citations(text: str) -> str:
    return re.sub(r"\s+([.,;:])", r"\1", _CITE.sub("", text or "")).strip()


def parse_citations(text: str, n_sources: int) -> tuple[list[int], list[str]]:
    """``[n]`` and ``[n, m]`` markers -> sorted unique source numbers; warnings for bad ones."""
    nos: list[int] = []
    warnings: list[str] = []
    for m in _CITE.finditer(text or ""):
        for part in m.group(1).split(","):
            k = int(part.strip())
            if 1 <= k <= n_sources:
                if k not in nos:
                    nos.append(k)
            else:
                warnings.append(f"citation [{k}] is out of range 1..{n_sources}")
    return sorted(nos), warnings


def extract_answer(text: str, leadins: Iterable[str] = _LEADINS) -> str:
    """The short answer in a model output: the text after a lead-in ("So the answer is"),
    else the first non-empty line; citation markers and wrapping quotes removed."""
    t = (text or "").strip()
    low = t.lower()
    for lead in leadins:
        i = low.rfind(lead)
        if i >= 0:
            t = t[i + len(lead):].lstrip(" \t:-")
            break
    line = next((ln.strip() for ln in t.splitlines() if ln.strip()), "")
    line = strip_citations(line).strip().strip("\"'`*").strip()
    if line.endswith(".") and not re.search(r"\b[A-Z]\.$", line):
        line = line[:-1].rstrip()
    return line


def first_sentence(text: str) -> str:
    t = " ".join((text or "").split())
    m = re.search(r"(?<=[.!?])\s+(?=[A-Z])", t)
    return t[: m.start()] if m else t


# Answer normalisation and matching live in one place, workbench.eval.metrics (its
# docstring describes the metric profiles); these names are kept for the methods.
normalize_answer = _M.normalize_answer


def hit_at_1(prediction: str, golds: Sequence[str], profile: str = _M.DEFAULT_PROFILE) -> bool:
    """FRAG's lenient Hits@1 (spec frag.md §5.2): a normalised gold answer is a substring of
    the normalised prediction (no word boundaries, unlike :func:`contains_gold`)."""
    return bool(_M.substring_match(prediction, golds, profile))


def contains_gold(prediction: str, golds: Sequence[str], profile: str = _M.DEFAULT_PROFILE) -> bool:
    """The "contains" EM: a normalised gold answer occurs, as whole tokens, in the
    normalised prediction (:func:`workbench.eval.metrics.contains_match`)."""
    return bool(_M.contains_match(prediction, golds, profile))


# --- scores --------------------------------------------------------------------------

def score_dict(comp: Completion) -> dict[str, float]:
    """perplexity / confidence (= 1/PPL) / mean NLL of a completion's own tokens."""
    sc = comp.scores()
    out = {}
    if sc.perplexity is not None:
        out["perplexity"] = round(sc.perplexity, 4)
        out["confidence"] = round(sc.confidence, 4)
        out["mean_nll"] = round(sc.mean_nll, 4)
    return out


# --- embeddings ----------------------------------------------------------------------

class HashEmbedder:
    """Deterministic bag-of-words/char-trigram hashing embedder (L2-normalised).

    Used when no dense model is available (and in tests); its similarity scale differs
    from MiniLM's, so merge thresholds are not comparable across embedders.
    """
    name = "hash-embedder"

    def __init__(self, dim: int = 512):
        self.dim = dim

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        words = re.findall(r"\w+", text.lower())
        feats = words + [w[i:i + 3] for w in words for i in range(max(1, len(w) - 2))]
        for f in feats:
            h = int.from_bytes(hashlib.md5(f.encode()).digest()[:4], "little")
            v[h % self.dim] += 1.0 if (h >> 31) & 1 else -1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def encode(self, texts: str | Sequence[str], **_: Any) -> np.ndarray:
        if isinstance(texts, str):
            return self._vec(texts)
        return np.stack([self._vec(t) for t in texts]) if len(texts) else \
            np.zeros((0, self.dim), np.float32)


def embedder_of(ctx: Any) -> Any:
    """The run's embedder, or the hashing fallback when the dataset/knowledge layer has none."""
    emb = getattr(ctx, "embedder", None)
    if emb is None:
        emb = ctx.extra.get("_fallback_embedder")
        if emb is None:
            emb = ctx.extra["_fallback_embedder"] = HashEmbedder()
    return emb


def embedder_name(emb: Any) -> str:
    return str(getattr(emb, "name", type(emb).__name__))


def cosine_matrix(vecs: np.ndarray) -> np.ndarray:
    v = np.asarray(vecs, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    n = np.linalg.norm(v, axis=1, keepdims=True)
    n[n == 0] = 1.0
    v = v / n
    return v @ v.T


# --- retrievers ----------------------------------------------------------------------

def retriever_name(ctx: Any, name: str) -> str:
    """Resolve a retriever knob: "default" means the user's Settings choice."""
    if name in ("", "default"):
        name = ctx.extra.get("default_retriever") or "hybrid"
    if name not in ctx.retrievers and ctx.retrievers:
        # e.g. a test context with only one retriever: fall back, but never silently
        # when the user asked for something the dataset cannot provide.
        if len(ctx.retrievers) == 1:
            return next(iter(ctx.retrievers))
    return name


def rrf_merge(lists: Sequence[Sequence[Hit]], k: int, c: int = 60) -> list[Hit]:
    """Reciprocal-rank fusion of several hit lists, deduplicated by passage id."""
    score: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for hits in lists:
        for h in hits:
            score[h.id] = score.get(h.id, 0.0) + 1.0 / (c + h.rank)
            first.setdefault(h.id, h)
    order = sorted(score, key=lambda i: (-score[i], i))[:k]
    out = []
    for r, i in enumerate(order, 1):
        h = first[i]
        out.append(Hit(h.id, h.title, h.text, f"rrf({h.retriever})", round(score[i], 6), r,
                       dict(h.meta)))
    return out


# --- graph helpers -------------------------------------------------------------------

def question_node(ctx: Any, question: str, kind: str = "question",
                  **attrs: Any) -> tuple[str, T.Event]:
    nid = ctx.node_id("q")
    return nid, T.node_added(nid, kind, question, layer=0, state="created", is_source=True,
                             **attrs)


def tap(gen: Any, calls: list[T.Event]) -> Any:
    """``yield from gen`` while keeping its ``llm_call`` events (for raw outputs / call ids)."""
    def keep(ev: Any) -> None:
        if isinstance(ev, T.Event) and ev.type == T.LLM_CALL:
            calls.append(ev)
    return (yield from relay(gen, seen=keep))


def trace_problems(tr: T.Trace) -> list[str]:
    """Well-formedness of a method's folded trace (tests, eval): one root question node, an
    answer or refusal node named by the answer event, every edge between known nodes, the
    graph connected, every LLM call linked to a node of the trace, a run_finished summary."""
    probs: list[str] = []
    roots = tr.roots()
    if len(roots) != 1:
        probs.append(f"expected one root, got {roots}")
    elif tr.nodes[roots[0]].kind not in ("question",):
        probs.append(f"root {roots[0]} is a {tr.nodes[roots[0]].kind}, not a question")
    if tr.answer is None:
        probs.append("no answer event")
    else:
        aid = tr.answer.get("node_id")
        if aid not in tr.nodes:
            probs.append(f"answer event names node {aid!r}, which is not in the trace")
        elif tr.nodes[aid].kind not in ("answer", "refusal"):
            probs.append(f"answer node {aid} is a {tr.nodes[aid].kind}")
    for e in tr.edges:
        if e["src"] not in tr.nodes or e["dst"] not in tr.nodes:
            probs.append(f"edge {e['src']}->{e['dst']} ({e['kind']}) names an unknown node")
    lost = tr.unreachable()
    if lost:
        probs.append(f"graph not connected: {sorted(lost)} unreachable")
    for cid, c in tr.llm_calls.items():
        if c.get("node_id") not in tr.nodes:
            probs.append(f"llm call {cid} ({c.get('purpose')}) is linked to unknown node "
                         f"{c.get('node_id')!r}")
    if not tr.summary.get("by_phase") and tr.llm_calls:
        probs.append("run_finished has no per-phase counts")
    return probs


def require_kg(ctx: Any, method: str, node_id: str) -> tuple[Any, list[T.Event]]:
    """``ctx.kg`` and the caveat events it calls for; a clear error when there is none."""
    from ..knowledge.built_kgs import partial_note
    if ctx.kg is None:
        raise LookupError(f"{method} needs a knowledge graph (ctx.kg is empty); build one "
                          "with `python -m workbench kg build DATASET`.")
    note = partial_note(ctx.kg)
    return ctx.kg, [T.custom("kg_partial", node_id, note=note)] if note else []
