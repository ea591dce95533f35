"""Answer-span extraction: the short answer (entity, date, number, yes/no or unknown) that a
method's long reasoning answer gives, as JSON ``{"answer": "..."}``.

The few-shot turns use demo-world facts that no demo question asks about (Psycho, Vertigo,
Alfred Hitchcock, Gus Van Sant), so no shot gives a test answer away.
"""
from __future__ import annotations

import json

from . import chat

VERSION = "span-2"

MAX_WORDS = 8
# A span of one to MAX_WORDS words, none holding a quote, a backslash or a control character
# (those would need escaping inside the JSON string): the grammar itself keeps the answer
# short, so even a 135M model cannot copy a whole sentence.
_WORD = r'[^"\\\x00-\x1F ]+'
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string",
                              "pattern": f"^{_WORD}( {_WORD}){{0,{MAX_WORDS - 1}}}$"}},
    "required": ["answer"],
}

TAG = "Task: extract the short answer."
SYSTEM = (TAG + " You get a question and a long answer to it. Reply with the short answer the "
          "long answer gives, in a few words: a name, a place, a date, a number, or yes or no. "
          "If the long answer does not answer the question, reply unknown. Reply in JSON.")


def user(question: str, long_answer: str) -> str:
    return f"Question: {question}\nLong answer: {long_answer}\nShort answer?"


def _shot(question: str, long_answer: str, span: str) -> tuple[str, str]:
    return user(question, long_answer), json.dumps({"answer": span})


SHOTS = [
    _shot("Where was the director of Psycho (1960) born?",
          "Psycho (1960) was directed by Alfred Hitchcock. Alfred Hitchcock was born in London, "
          "England in 1899.", "London"),
    # a whole date: without this shot the 1.5B model cut "April 5, 1975" to "April 5"
    _shot("On which date was Psycho first shown?",
          "Psycho premiered on June 16, 1960, at the DeMille Theatre in New York.",
          "June 16, 1960"),
    _shot("Which film came out first, Psycho or Vertigo?",
          "Vertigo was released in 1958 and Psycho in 1960, so Vertigo came out first.",
          "Vertigo"),
    _shot("Did Alfred Hitchcock direct Psycho (1998)?",
          "Psycho (1998) was directed by Gus Van Sant, so Hitchcock did not direct it.", "no"),
    _shot("Which studio released My Own Private Idaho?",
          "The knowledge says Gus Van Sant directed My Own Private Idaho but does not name its "
          "studio.", "unknown"),
]


def messages(question: str, long_answer: str) -> list[dict]:
    return chat(SYSTEM, SHOTS, user(question, long_answer))
