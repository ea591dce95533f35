"""Answers: extraction from free text, citations, refusals and "I don't know", gold matching."""
from __future__ import annotations

import re
from typing import Iterable, Sequence

from ..eval import metrics as _M


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
