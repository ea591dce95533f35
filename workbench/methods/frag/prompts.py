"""FRAG prompts (spec frag.md §3.6), paraphrased from the spec's description: one zero-shot
answering call over the top reasoning paths, and FRAG-F's path-extraction call."""
from __future__ import annotations

import re
from typing import Sequence

VERSION = "frag-1"

PERSONA = ("You reason carefully about how entities are linked by relations. Study the "
           "reasoning paths you are given and answer the question clearly and accurately.")
INSTRUCTION = "Answer the question using the reasoning paths. Reply with the answer entity only."
FEEDBACK_TASK = ("From the reasoning paths, copy the one path that answers the question, "
                 "exactly as written. If no path fits, reply NO.")


def build(question: str, path_texts: Sequence[str], mode: str,
          task: str = INSTRUCTION) -> tuple[list[dict[str, str]] | str, str]:
    """``(what the model gets, the text shown as the prompt)``: a raw completion string
    (the released code, for local models) or chat messages with the persona as system."""
    block = "\n".join(path_texts)
    body = f"{task}\n\nReasoning paths:\n{block}\n\nQuestion:\n{question}\n\nAnswer:"
    if mode == "raw":
        text = f"{PERSONA}\n{body}"
        return text, text
    return [{"role": "system", "content": PERSONA}, {"role": "user", "content": body}], body


def first_line(text: str) -> str:
    """The answer: the first non-empty line, an "Answer:" lead-in dropped."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return re.sub(r"^(answer|a)\s*[:\-]\s*", "", line, flags=re.I).strip()
    return ""


def path_hops(line: str) -> int:
    """Hops of a path line the model copied: arrows // 2 (the released code's rule)."""
    return len(re.findall(r"->|<-", line)) // 2
