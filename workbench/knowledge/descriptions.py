"""Entity descriptions: the lead sentence of the passage titled with an entity's name.

CogGRAG's released code puts Wikidata entity descriptions beside the KG triples (spec
coggrag.md §7.2, item 3). In a corpus of encyclopaedia articles (HotpotQA, 2Wiki, the
demo world) the opening sentence of an entity's own article plays that part: "Demon Dice,
originally published as Chaos Progenitus, is a collectible dice game created by ...".
A KG built from such a corpus (``kg build``) names many entities exactly as the article
titles, so the lookup is by name, with Wikipedia's trailing "(disambiguation)" dropped.
"""
from __future__ import annotations

import re
import threading
from typing import Any, Callable, Sequence

from .text import split_sentences

_PAREN = re.compile(r"\s*\([^()]*\)\s*$")


def _key(name: str) -> str:
    return " ".join(str(name).casefold().split())


class EntityDescriptions:
    """Name → (passage id, lead sentence), built from the passages on first lookup."""

    def __init__(self, passages: Callable[[], Sequence[Any]]):
        self._passages = passages
        self._index: dict[str, tuple[str, str]] | None = None
        self._lock = threading.Lock()

    def _build(self) -> dict[str, tuple[str, str]]:
        exact: dict[str, tuple[str, str]] = {}
        loose: dict[str, tuple[str, str]] = {}
        for p in self._passages():
            title = (getattr(p, "title", "") or "").strip()
            sents = split_sentences(getattr(p, "text", "") or "")
            if not title or not sents:
                continue
            exact.setdefault(_key(title), (str(p.id), sents[0]))
            loose.setdefault(_key(_PAREN.sub("", title)), (str(p.id), sents[0]))
        return {**loose, **exact}       # an exact title wins over a shortened one

    def _names(self) -> dict[str, tuple[str, str]]:
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._build()
        return self._index

    def lookup(self, name: str) -> tuple[str, str] | None:
        return self._names().get(_key(name))

    def __len__(self) -> int:
        return len(self._names())
