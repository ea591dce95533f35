"""Text utilities: HTML to clean text, chunking, tokenisation and corpus hashing.

HTML pages (CRAG's ``page_result``) are untrusted: we only ever extract their
text here, dropping scripts, styles, navigation and other boilerplate; nothing of
the markup survives into passages.
"""
from __future__ import annotations

import hashlib
import html
import re
import unicodedata
from html.parser import HTMLParser
from typing import Iterable, Sequence

# Elements whose content is never text a reader would see.
_SKIP = frozenset({
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed",
    "head", "title", "meta", "link", "button", "select", "option", "form", "input", "textarea",
    "nav", "footer", "aside",
})
# Elements that end a line / paragraph.
_BLOCK = frozenset({
    "p", "div", "br", "hr", "li", "ul", "ol", "dl", "dt", "dd", "tr", "table", "thead", "tbody",
    "section", "article", "main", "header", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote",
    "pre", "figure", "figcaption", "caption", "address", "details", "summary",
})
_CELL = frozenset({"td", "th"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                   "param", "source", "track", "wbr"})


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip_depth = 0
        self.skip_stack: list[str] = []
        self.title: list[str] = []
        self._in_title = False
        self.pre = 0

    def handle_starttag(self, tag: str, attrs) -> None:  # noqa: ANN001
        if tag == "title":
            self._in_title = True
        if tag == "pre":
            self.pre += 1
        if tag in _SKIP and tag not in _VOID:
            self.skip_stack.append(tag)
            return
        if self.skip_stack:
            return
        if tag in _BLOCK:
            self.parts.append("\n")
        elif tag in _CELL:
            self.parts.append(" | ")

    def handle_startendtag(self, tag: str, attrs) -> None:  # noqa: ANN001
        if not self.skip_stack and tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag == "pre" and self.pre:
            self.pre -= 1
        if self.skip_stack:
            if tag == self.skip_stack[-1]:
                self.skip_stack.pop()
            elif tag in self.skip_stack:     # unbalanced markup: unwind to the matching tag
                while self.skip_stack and self.skip_stack.pop() != tag:
                    pass
            return
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        if not self.skip_stack:
            # source newlines are plain whitespace in HTML; blocks make the line breaks
            self.parts.append(data if self.pre else data.replace("\r", " ").replace("\n", " "))


_WS = re.compile(r"[ \t\r\f\v\u00a0\u200b]+")
_MANY_NL = re.compile(r"\n\s*\n+")


def html_to_text(markup: str, *, min_line_words: int = 1) -> str:
    """Visible text of an HTML page, one block per line, whitespace collapsed.

    ``min_line_words`` drops lines shorter than that many words (menus, buttons).
    """
    if not markup:
        return ""
    p = _TextExtractor()
    try:
        p.feed(markup)
        p.close()
    except Exception:  # malformed markup: keep what was parsed so far
        pass
    text = "".join(p.parts)
    lines = []
    for line in text.split("\n"):
        line = _WS.sub(" ", line).strip(" |")
        line = line.strip()
        if line and len(line.split()) >= min_line_words:
            lines.append(line)
    return "\n".join(lines)


def html_title(markup: str) -> str:
    m = re.search(r"<title[^>]*>(.*?)</title>", markup or "", re.I | re.S)
    return html.unescape(_WS.sub(" ", m.group(1))).strip() if m else ""


_SENT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n+")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text) if s and s.strip()]


def chunk_text(text: str, *, max_words: int = 150, overlap_words: int = 30,
               min_words: int = 8) -> list[str]:
    """Split text into chunks of at most ``max_words`` words on sentence boundaries.

    Sentences longer than ``max_words`` are cut by words. Consecutive chunks share
    about ``overlap_words`` words (whole trailing sentences) so an answer spanning a
    boundary is still found. Chunks shorter than ``min_words`` are dropped unless
    the text has nothing else.
    """
    if max_words < 1:
        raise ValueError("max_words must be at least 1")
    overlap_words = max(0, min(overlap_words, max_words // 2))
    sents: list[list[str]] = []
    for s in split_sentences(text):
        w = s.split()
        while len(w) > max_words:
            sents.append(w[:max_words])
            w = w[max_words - overlap_words:] if overlap_words else w[max_words:]
        if w:
            sents.append(w)
    chunks: list[str] = []
    cur: list[list[str]] = []
    n = 0
    i = 0
    while i < len(sents):
        s = sents[i]
        if cur and n + len(s) > max_words:
            chunks.append(" ".join(" ".join(x) for x in cur))
            # carry trailing sentences as overlap
            keep: list[list[str]] = []
            m = 0
            for x in reversed(cur):
                if m + len(x) > overlap_words:
                    break
                keep.insert(0, x)
                m += len(x)
            if m + len(s) > max_words:
                keep, m = [], 0
            cur, n = keep, m
        cur.append(s)
        n += len(s)
        i += 1
    if cur:
        last = " ".join(" ".join(x) for x in cur)
        if not chunks or not chunks[-1].endswith(last):
            chunks.append(last)
    good = [c for c in chunks if len(c.split()) >= min_words]
    return good or chunks[:1]


# --- tokenisation for BM25 and entity matching ---

STOPWORDS = frozenset("""
a an and are as at be been but by can could did do does for from had has have he her hers him
his how i if in into is it its itself me my no nor not of on or our ours she should so such than
that the their theirs them then there these they this those to too was we were what when where
which while who whom whose why will with would you your yours also about after again against all
am any because before being below between both during each few further here just more most
other out over own same some under until up very s t don now
""".split())

_TOKEN = re.compile(r"\w+", re.UNICODE)


def _fold(text: str) -> str:
    # lower case and strip accents (Alû -> alu) so queries without diacritics still match
    text = text.lower()
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def tokenize(text: str, *, stopwords: frozenset[str] | None = STOPWORDS) -> list[str]:
    """Lower-cased, accent-folded word tokens without stopwords (the BM25 analyser)."""
    toks = _TOKEN.findall(_fold(text))
    if stopwords:
        toks = [t for t in toks if t not in stopwords]
    return toks


def normalize_name(text: str) -> str:
    """Key for entity-name matching: folded word tokens joined by single spaces."""
    return " ".join(_TOKEN.findall(_fold(text)))


def corpus_hash(items: Iterable[Sequence[str]]) -> str:
    """sha256 over (id, title, text) triples, order-sensitive; 16 hex digits."""
    h = hashlib.sha256()
    for it in items:
        for part in it:
            b = (part or "").encode("utf-8", "surrogatepass")
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
    return h.hexdigest()[:16]
