"""Test helpers for the answer-span extraction call (methods/answer_span.py): a scripted
rule for it, and what a real model's span answer must be."""
from __future__ import annotations

import json
import re

from workbench.llm.scripted import Rule
from workbench.methods.prompts import answer_span as P


def long_answer(prompt: str) -> str:
    """The long answer shown in an extraction prompt (its last user turn)."""
    user = prompt.rsplit("<user>", 1)[-1]
    return re.search(r"Long answer: (.*)\nShort answer\?", user, re.S).group(1)


def add_span_rule(be, span: str | None = None, raw: str | None = None):
    """Extraction calls answer ``{"answer": span}``; with ``span=None`` the long answer itself
    (what a model that copies does); with ``raw``, that text as it is. The rule goes first,
    before any rule that might also match the extraction prompt."""
    def text(prompt: str) -> str:
        if raw is not None:
            return raw
        return json.dumps({"answer": long_answer(prompt) if span is None else span})
    be.rules.insert(0, Rule(P.TAG, text))
    return be


def assert_span_answer(tr, where: str = "") -> None:
    """A real model's run: the answer is the span its extraction node read (the grammar keeps
    it to 8 words), and the long answer it came from is kept."""
    (x,) = [n for n in tr.nodes.values() if n.kind == "answer_extraction"]
    assert x.state in ("done", "unknown"), (where, x.attrs.get("error"), x.attrs.get("raw_output"))
    words = tr.answer["text"].split()
    assert 1 <= len(words) <= P.MAX_WORDS, (where, tr.answer["text"])
    assert tr.nodes[tr.answer["node_id"]].parents == [x.id], where
    assert tr.answer["info"]["full_answer"] == x.attrs["long_answer"], where
