"""The short answer span of a method whose reasoning ends in free text.

Papers score answers with EM and token F1 against short gold answers (an entity, a date, a
number, yes/no), while CRP-RAG's path answers and CogGRAG's root answer are sentences. One
greedy, JSON-schema-constrained call (:mod:`.prompts.answer_span`) reads the question and the
method's long answer and returns ``{"answer": "<span>"}``; the grammar caps the span at
``MAX_WORDS`` words. The call gets a node of its own, kind ``answer_extraction``, between the
node(s) whose answer it read and the answer node, so its perplexity and confidence show in the
node inspector and it can be annotated. The long answer stays on the graph and in the answer
event (``full_answer``).

Output that does not parse (or an empty or over-long span, from a backend that ignores the
schema) keeps the method's own answer, and the node says why (state ``parse_failed``). A span
"unknown" becomes ``UNKNOWN_ANSWER``, which the metrics and the triage read as a non-answer;
the method's refusal decision is not changed (a refusal never reaches this step).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .. import trace as T
from ..config import knob
from .answers import extract_answer, is_unknown, normalize_answer
from .generation import greedy, score_dict
from .passages import clip
from .base import Events, RunContext
from .prompts import answer_span as P

PHASE = "span"
KIND = "answer_extraction"
MAX_WORDS = P.MAX_WORDS
MAX_TOKENS = 48                 # the JSON wrapper plus eight words, with room to spare
LONG_ANSWER_CHARS = 2000        # what of the long answer the prompt shows
UNKNOWN_ANSWER = "I don't know"
_UNKNOWN_SPANS = {"unknown", "unkown", "i dont know", "i do not know", "not known", "no answer"}


# Lead-ins after which a method's own reasoning states its short answer (CRP-RAG's step
# demonstrations end "..., so the answer is London.").
SPAN_LEADINS = ("so the answer is", "the answer is")
_SPAN_RE = re.compile(P.SCHEMA["properties"]["answer"]["pattern"])
# A question opening with one of these, and naming no alternatives ("A or B"), asks yes or no.
_YES_NO_OPENERS = {"is", "are", "was", "were", "do", "does", "did", "can", "could", "has",
                   "have", "had", "will", "would", "should", "shall", "may", "might", "must"}
_YES_NO_ANSWER = re.compile(r"^(yes|no)\b(?:[,.!;:]|$)", re.I)


def stated_knob(group: str = "answer") -> Any:
    """The ``span_if_stated`` knob: take a span the long answer states itself, no call."""
    return knob(True, "No extraction call when the long answer states its span: 'Yes, ...' "
                "to a yes/no question, or 'so the answer is X' (X one short clause)",
                group=group, status="extension",
                evidence="docs/methods/overview.md#a-span-the-answer-states-itself")


def is_yes_no_question(question: str) -> bool:
    words = re.findall(r"[a-z]+", (question or "").lower())
    return bool(words) and words[0] in _YES_NO_OPENERS and "or" not in words


def stated_span(question: str, long_answer: str) -> str | None:
    """The short answer a long answer states itself, else None (the call reads it): yes or
    no opening the answer to a yes/no question, or what follows the last lead-in when it is
    one short clause (no comma, semicolon or second sentence, which the call reads better)."""
    text = (long_answer or "").strip()
    m = _YES_NO_ANSWER.match(text)
    if m and is_yes_no_question(question):
        return m.group(1).lower()
    if not any(lead in text.lower() for lead in SPAN_LEADINS):
        return None
    x = extract_answer(text, SPAN_LEADINS)
    # the grammar's own pattern: one to MAX_WORDS words
    if not x or re.search(r"[,;]|[.!?]\s", x) or not _SPAN_RE.match(x):
        return None
    # "the answer is not given" is a non-answer in other words: the call decides it
    if is_unknown(x) and not is_unknown_span(x):
        return None
    return x


def span_knob(paper: str, group: str = "answer") -> Any:
    """The ``answer_span`` knob; ``paper`` says how the paper got its scored answer."""
    # The long answer stays on the graph; off = the method's own answer, as before.
    return knob(True, "One extra constrained call turns the long final answer into a short "
                "span (entity, date, number, yes/no, unknown) for EM and F1; off = the long answer",
                group=group, paper=paper, status="extension",
                evidence="docs/methods/overview.md#every-answer-is-a-short-span")


@dataclass
class Span:
    """What the answer node and event carry. ``node_id`` is None when extraction was off."""
    text: str                       # the span, or the method's own answer when none parsed
    parents: list[str]              # what the answer node hangs from
    node_id: str | None = None
    parsed: bool = False
    unknown: bool = False
    error: str = ""
    confidence: float | None = None     # of the extraction call
    stated: bool = False                # read from the long answer as it stands, no call

    @property
    def layer_offset(self) -> int:
        """Layers the extraction node adds above the answer node."""
        return int(self.node_id is not None)

    def fields(self) -> dict[str, Any]:
        """Attributes for the answer node and the answer event (empty when off)."""
        if self.node_id is None:
            return {}
        out: dict[str, Any] = {"answer_span": {"node": self.node_id, "parsed": self.parsed,
                                               "unknown": self.unknown, "error": self.error,
                                               "confidence": self.confidence,
                                               **({"stated": True} if self.stated else {})}}
        if self.unknown:
            out["idk"] = True
        return out


def parse(text: str) -> tuple[str | None, str]:
    """(span, "") or (None, why it is not one)."""
    try:
        obj = json.loads(text)
    except ValueError as e:
        return None, f"not JSON: {e}"
    if not isinstance(obj, dict) or not isinstance(obj.get("answer"), str):
        return None, "no string field 'answer'"
    span = extract_answer(obj["answer"])
    if not span:
        return None, "empty answer"
    n = len(span.split())
    if n > MAX_WORDS:
        return None, f"{n} words: longer than a short answer ({MAX_WORDS} at most)"
    return span, ""


def is_unknown_span(span: str) -> bool:
    return normalize_answer(span) in _UNKNOWN_SPANS


def extract(ctx: RunContext, question: str, long_answer: str, fallback: str, *,
            parents: list[str], layer: int, enabled: bool = True, if_stated: bool = False,
            node_id: str | None = None) -> Events:
    """Yield the extraction call and node; return the :class:`Span` for the answer node.

    ``fallback`` is what the method answers without extraction (kept when the output does not
    parse); ``parents`` are the nodes whose answer is read. With ``if_stated`` a span the
    long answer states itself (:func:`stated_span`) is taken as it is, with no call."""
    if not enabled:
        return Span(fallback, list(parents))
    yield ctx.set_phase(PHASE)
    xid = node_id or ctx.node_id("x")
    stated = stated_span(question, long_answer) if if_stated else None
    if stated is None:
        comp = yield from ctx.generate("answer_span",
                                       P.messages(question, clip(long_answer, LONG_ANSWER_CHARS)),
                                       greedy(MAX_TOKENS, json_schema=P.SCHEMA), node_id=xid,
                                       prompt_version=P.VERSION)
        span, error = parse(comp.text)
        raw, confidence, how = comp.text, score_dict(comp).get("confidence"), {}
    else:
        span, error, raw, confidence, how = stated, "", "", None, {"read_from": "stated"}
    unknown = span is not None and is_unknown_span(span)
    text = fallback if span is None else UNKNOWN_ANSWER if unknown else span
    state = "parse_failed" if span is None else "unknown" if unknown else "done"
    label = (f"could not read a short answer ({error}); the long answer is kept" if span is None
             else span)
    yield T.node_added(xid, KIND, label, parents=parents, layer=layer, state=state,
                       long_answer=long_answer,
                       long_answer_clipped=stated is None and len(long_answer) > LONG_ANSWER_CHARS,
                       span=span, parsed=span is not None, error=error,
                       raw_output=raw, answer=text, **how)
    # The call's perplexity and confidence show with the call in the inspector; they are not
    # node scores, which the methods' what-if sliders would read as their own thresholds'.
    return Span(text, [xid], xid, span is not None, unknown, error, confidence,
                stated=stated is not None)
