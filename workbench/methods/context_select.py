"""What a prompt keeps of a passage under a character budget.

``head`` keeps the first N characters (the old cut, which loses a fact that sits late in
its passage: "...and Studio Ghibli handled the release."). ``relevance`` keeps the
sentences that best match the query that found the passage, best first while they fit,
and shows them in passage order with " ... " where text was left out. ``whole`` keeps
everything. The title is never cut: callers print it before the body.

Relevance is BM25 over the sentences of each passage (idf from those sentences; long
sentences split after commas), with words cut to their first six letters so "directed" meets "director" and
"produced" meets "producer". It is pure and deterministic and costs microseconds; the run's
sentence embedder would add a model call per prompt for one-line sentences where the
question's own words (names, "studio", "born", "released") already pick the right one.

Every cut is recorded (:meth:`Cut.record`): the budget, the characters kept and cut, and
the passage's sentences marked kept or cut, so the inspector can grey what the model did
not see.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

MODES = ("relevance", "head", "whole")
GAP = " ... "
TAIL = " ..."

_STOP = frozenset("""a an the of in on at to for from by with and or but is are was were be been
being do does did has have had what which who whom whose where why how that this these
those it its as into than then there their they he she his her him i you we our your not no
yes film movie name named""".split())
# a full stop after one of these does not end a sentence
_ABBREV = frozenset("mr mrs ms dr st jr sr bros co inc ltd vs no mt ft u.s e.g i.e".split())
_END = re.compile(r"[.!?][\"')\]]*\s+(?=[A-Z0-9\"'(\[])")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def sentences(text: str) -> list[str]:
    """Split on ., ! or ? followed by a capital or digit, except after an initial or a
    common abbreviation ("Warner Bros. Pictures", "J. R. R. Tolkien")."""
    text = " ".join((text or "").split())
    out, start = [], 0
    for m in _END.finditer(text):
        prev = text[start:m.start()].rsplit(" ", 1)[-1].lower()
        if len(prev) <= 1 or prev in _ABBREV:
            continue
        out.append(text[start:m.end()].strip())
        start = m.end()
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


_CLAUSE = re.compile(r"(?<=[,;:])\s+")


def clauses(sents: Sequence[str], limit: int, min_len: int = 40) -> list[str]:
    """Sentences longer than ``limit`` split after commas and semicolons into pieces of at
    least ``min_len`` characters: a long list ("Among the films it produced are A (1986),
    B (1988), My Neighbor Totoro (1988), ...") is then kept in the part that answers,
    not left out whole because it does not fit."""
    out: list[str] = []
    for s in sents:
        if len(s) <= limit:
            out.append(s)
            continue
        cur = ""
        for piece in _CLAUSE.split(s):
            cur = f"{cur} {piece}" if cur else piece
            if len(cur) >= min_len:
                out.append(cur)
                cur = ""
        if cur:
            if out and len(out[-1]) + len(cur) < limit:
                out[-1] = f"{out[-1]} {cur}"
            else:
                out.append(cur)
    return out


_YEAR = re.compile(r"^(1[5-9]|20)\d\d$")
YEAR = "<year>"          # a four-digit year; a question asking "what year" or "when" wants one


def terms(text: str, query: bool = False) -> list[str]:
    """Lower-cased words without stop words, cut to six letters (a crude stemmer). In a
    passage a year also counts as :data:`YEAR`, which a query with "year" or "when" asks
    for ("ten-year-old" in a passage is no answer to "what year")."""
    out = []
    for w in (x.lower() for x in _WORD.findall(text or "")):
        if query and w in ("year", "when"):
            out.append(YEAR)          # the word itself ("that year") answers nothing
            continue
        if not query and _YEAR.match(w):
            out.append(YEAR)
        if w not in _STOP and (len(w) > 1 or w.isdigit()):
            out.append(w[:6])
    return out


@dataclass
class Cut:
    """One passage body as a prompt shows it, and what was left out."""
    text: str
    segments: list[tuple[str, bool]]          # (sentence, kept) in passage order
    mode: str
    budget: int

    @property
    def kept_chars(self) -> int:
        return sum(len(s) for s, k in self.segments if k)

    @property
    def cut_chars(self) -> int:
        return sum(len(s) for s, k in self.segments if not k)

    def record(self) -> dict[str, Any]:
        return {"mode": self.mode, "budget": self.budget, "kept_chars": self.kept_chars,
                "cut_chars": self.cut_chars,
                "segments": [[s, k] for s, k in self.segments] if self.cut_chars else []}


def _render(sents: Sequence[str], keep: set[int]) -> str:
    """Kept sentences in order, " ... " for each gap; a cut end gets the head cut's " ..."."""
    parts, last = [], -1
    for i in sorted(keep):
        if parts:
            parts.append(GAP if i != last + 1 else " ")
        elif i > 0:
            parts.append("... ")
        parts.append(sents[i])
        last = i
    return "".join(parts)


def _bm25(query: Sequence[str], docs: Sequence[Sequence[str]], k1: float = 1.2,
          b: float = 0.75, weight: dict[str, float] | None = None) -> list[float]:
    n = len(docs) or 1
    avg = sum(len(d) for d in docs) / n or 1.0
    df: dict[str, int] = {}
    for d in docs:
        for t in set(d):
            df[t] = df.get(t, 0) + 1
    out = []
    for d in docs:
        s = 0.0
        for t in set(query):
            tf = d.count(t)
            if tf:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += (weight or {}).get(t, 1.0) * idf * tf * (k1 + 1) / (
                    tf + k1 * (1 - b + b * len(d) / avg))
        out.append(s)
    return out


def head(text: str, budget: int) -> Cut:
    """The first ``budget`` characters, cut at a word boundary (the old behaviour)."""
    norm = " ".join((text or "").split())
    if budget <= 0 or len(norm) <= budget:
        return Cut(norm, [(norm, True)] if norm else [], "head", budget)
    cut = norm[:budget]
    sp = cut.rfind(" ")
    kept = cut[:sp] if sp > budget // 2 else cut
    return Cut(kept + TAIL, [(kept, True), (norm[len(kept):].strip(), False)], "head", budget)


TITLE_WEIGHT = 0.1


def select_many(texts: Sequence[str], queries: Sequence[str] | str, budget: int,
                mode: str = "relevance", titles: Sequence[str] | None = None) -> list[Cut]:
    """One :class:`Cut` per passage. ``queries``: one per passage (what found it) or one
    for all. In relevance mode, idf comes from the passage's own sentences (the choice is
    between them: a year is rare in one passage, common in five about films), and a query
    word that is in the passage's title counts a tenth: the title is always
    shown, so "Totoro" in "Which studio produced My Neighbor Totoro?" says the passage is
    on topic, not which of its sentences answers."""
    if mode not in MODES:
        raise ValueError(f"context mode {mode!r} is not one of {', '.join(MODES)}; "
                         f"pick one of those")
    qs = [queries] * len(texts) if isinstance(queries, str) else list(queries)
    if len(qs) != len(texts):
        raise ValueError(f"{len(texts)} passages but {len(qs)} queries; give one query "
                         f"per passage or one for all")
    if mode == "whole" or budget <= 0:
        return [Cut(n, [(n, True)] if n else [], "whole", budget)
                for n in (" ".join((t or "").split()) for t in texts)]
    if mode == "head":
        return [head(t, budget) for t in texts]
    out = []
    for j, (t, q) in enumerate(zip(texts, qs)):
        ss = clauses(sentences(t), max(budget // 2, 80))
        in_title = set(terms(titles[j])) if titles else set()
        scores = _bm25(terms(q, query=True), [terms(s) for s in ss],
                       weight={w: TITLE_WEIGHT for w in in_title})
        out.append(_select(ss, scores, budget, t))
    return out


def select(text: str, query: str, budget: int, mode: str = "relevance",
           title: str = "") -> Cut:
    return select_many([text], query, budget, mode, [title])[0]


def _select(sents: list[str], scores: list[float], budget: int, text: str) -> Cut:
    norm = " ".join((text or "").split())
    if len(norm) <= budget:
        return Cut(norm, [(norm, True)] if norm else [], "relevance", budget)
    keep: set[int] = set()
    # best first; ties (and sentences that match nothing) by position, so with no match
    # the result is the head cut at sentence boundaries
    for i in sorted(range(len(sents)), key=lambda i: (-scores[i], i)):
        if len(_render(sents, keep | {i})) <= budget:
            keep.add(i)
    if not keep:          # no whole sentence fits: the best one, cut at a word boundary
        best = max(range(len(sents)), key=lambda i: (scores[i], -i))
        lead = "... " if best else ""
        part = head(sents[best], max(budget - len(lead), 1)).segments
        segs = [(s, False) for s in sents[:best]] + part + [(s, False) for s in sents[best + 1:]]
        return Cut(lead + part[0][0] + TAIL, _merge(segs), "relevance", budget)
    body = _render(sents, keep)
    tail = TAIL if max(keep) < len(sents) - 1 else ""
    return Cut(body + tail, _merge([(s, i in keep) for i, s in enumerate(sents)]),
               "relevance", budget)


def _merge(segs: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Neighbouring sentences with the same mark as one segment (a smaller record)."""
    out: list[tuple[str, bool]] = []
    for s, k in segs:
        if out and out[-1][1] == k:
            out[-1] = (out[-1][0] + " " + s, k)
        else:
            out.append((s, k))
    return out


def context_knob(**kw: Any) -> Any:
    """The ``context`` knob every method with a passage budget shares (same default)."""
    from ..config import knob
    return knob("relevance", "Passage text kept within passage_chars: the sentences most "
                "relevant to the query (title kept), the first characters, or whole passages",
                choices=list(MODES), status="extension",
                evidence="docs/methods/baselines.md#passage-context-relevance-not-position", **kw)


def cut_html(record: dict[str, Any] | None) -> str:
    """A context record's cut passages as HTML for the inspector: the kept text as the
    prompt had it, the cut text greyed. Passage text is untrusted: all of it is escaped.
    Empty when nothing was cut."""
    import html
    passages = (record or {}).get("passages") or []
    if not passages:
        return ""
    grey = '<span style="color:#9a9a9a" title="not in the prompt">{}</span>'
    out = []
    for p in passages:
        body = " ".join(html.escape(str(s)) if k else grey.format(html.escape(str(s)))
                        for s, k in p.get("segments") or [])
        out.append(f"<p><b>{html.escape(str(p.get('title') or p.get('id') or ''))}</b>: "
                   f"{body}</p>")
    return "".join(out)
