"""Baseline prompts: vanilla LLM, standard RAG, IRCoT (interleaved retrieval + CoT)."""
from __future__ import annotations

from ..prompts import chat

VERSION = "base-3"

VANILLA_TAG = "Task: answer a question."
VANILLA_SYSTEM = (VANILLA_TAG + " Answer the question with a short answer: a name, a place, a "
                  "year or a number. Do not explain.")
# No few-shot turn: with one ("Who directed Psycho (1960)?" -> "Alfred Hitchcock"),
# SmolLM2-135M answered "Alfred Hitchcock ..." to 8 of 11 demo questions (1/11 correct);
# zero-shot it got 3/11. Prompts with passages keep their demo shot.
VANILLA_SHOTS: list[tuple[str, str]] = []


def vanilla(question: str) -> list[dict]:
    return chat(VANILLA_SYSTEM, VANILLA_SHOTS, question)


RAG_TAG = "Task: answer from passages."
RAG_SYSTEM = (RAG_TAG + " Answer the question using the passages. Reply with a short answer: a "
              "name, a place, a year or a number. Do not explain.")


def rag_user(passages: str, question: str) -> str:
    return f"Passages:\n{passages}\nQuestion: {question}\nAnswer:"


RAG_SHOTS = [(rag_user("- Psycho (1960 film): Alfred Hitchcock directed Psycho, a horror thriller "
                       "released in 1960. It was a Paramount Pictures release.",
                       "Which studio released Psycho (1960)?"), "Paramount Pictures")]


def rag(passages: str, question: str) -> list[dict]:
    return chat(RAG_SYSTEM, RAG_SHOTS, rag_user(passages, question))


IRCOT_TAG = "Task: reason step by step."
LEADIN = "So the answer is:"
IRCOT_SYSTEM = (IRCOT_TAG + " Using the passages, write the NEXT reasoning sentence only. When "
                f"you know the answer, write: {LEADIN} <short answer>")


def ircot_user(passages: str, question: str, thoughts: list[str]) -> str:
    done = " ".join(thoughts) if thoughts else "(none yet)"
    return (f"Passages:\n{passages}\nQuestion: {question}\nReasoning so far: {done}\n"
            f"Next sentence:")


_IRCOT_DOCS = ("- Psycho (1960 film): Alfred Hitchcock directed Psycho, a horror thriller "
               "released in 1960.\n- Alfred Hitchcock: Alfred Hitchcock was born in London, "
               "England in 1899.")
IRCOT_SHOTS = [
    (ircot_user(_IRCOT_DOCS, "Where was the director of Psycho (1960) born?", []),
     "Psycho was directed by Alfred Hitchcock."),
    (ircot_user(_IRCOT_DOCS, "Where was the director of Psycho (1960) born?",
                ["Psycho was directed by Alfred Hitchcock."]),
     f"Alfred Hitchcock was born in London. {LEADIN} London"),
]


def ircot_step(passages: str, question: str, thoughts: list[str]) -> list[dict]:
    return chat(IRCOT_SYSTEM, IRCOT_SHOTS, ircot_user(passages, question, thoughts))


IRCOT_READ_TAG = "Task: answer after reasoning."
IRCOT_READ_SYSTEM = (IRCOT_READ_TAG + " Using the passages and the reasoning, answer the question. "
                     f"Reply with one line: {LEADIN} <short answer>")


def ircot_read(passages: str, question: str, thoughts: list[str]) -> list[dict]:
    done = " ".join(thoughts) if thoughts else "(none)"
    return chat(IRCOT_READ_SYSTEM, [],
                f"Passages:\n{passages}\nQuestion: {question}\nReasoning: {done}\nFinal answer:")
