"""The prompt helper every method uses (:func:`chat`) and the prompts several share
(``answer_span``). Each method's own prompts live in its package (``<method>/prompts.py``),
each module with a ``VERSION`` string.

Written for small local instruct models (the default is SmolLM2-135M-Instruct):
short instructions, few-shot turns from the demo film world, and JSON/grammar
constrained outputs wherever a step produces structure. Change ``VERSION``
whenever a template changes, so stored runs say which prompts they used.
"""
from __future__ import annotations

Message = dict


def chat(system: str, shots: list[tuple[str, str]], user: str) -> list[Message]:
    """System message, few-shot (user, assistant) turns, then the real user turn."""
    msgs: list[Message] = [{"role": "system", "content": system}]
    for u, a in shots:
        msgs.append({"role": "user", "content": u})
        msgs.append({"role": "assistant", "content": a})
    msgs.append({"role": "user", "content": user})
    return msgs
