"""A generation caught in a loop: its last tokens are one block said over and over.

Greedy decoding of a small model sometimes settles into a cycle (a knowledge summary that
writes the same sentence until ``max_tokens``). Every token after the cycle closes is paid
for and says nothing new, and a perplexity read over the repeats looks confident. The
backend stops such a generation (finish ``"loop"``) and keeps the output up to the end of the
block's first copy.

A block must come back at least three times in a row, and the copies must cover
``min_tokens`` tokens in all, so a list whose items share a long clause, or one sentence
restated once, is not cut: only a cycle is.

A call whose JSON schema bounds its output (every list with a most count, every string with
a most length) is never cut: its grammar closes each list at its bound, so a repeated item
costs a few tokens and the output still parses, where a cut one never does (and its call
is made again, then replaced). The 1.5B model's key extraction lists one entity six times,
and CogGRAG's reasoning answers "I don't know" to several questions in a row: both tripped
the check.
"""
from __future__ import annotations

from typing import Any, Sequence

# Tokens the repeated copies must cover before they count as a loop (GenParams.loop_stop,
# the Settings field of the same name).
DEFAULT_LOOP_STOP = 24


def bounds_output(schema: Any) -> bool:
    """Whether output held to the JSON ``schema`` has a most length (as llama.cpp's schema
    grammar reads it: an object takes only its listed properties unless it allows more, and
    whitespace is at most one space)."""
    if not isinstance(schema, dict):
        return False
    if "const" in schema or "enum" in schema:
        return True
    kind = schema.get("type")
    if kind in ("boolean", "null"):
        return True
    if kind == "string":
        return "maxLength" in schema and "pattern" not in schema and "format" not in schema
    if kind == "array":
        return "maxItems" in schema and bounds_output(schema.get("items"))
    if kind in ("object", None) and "properties" in schema:
        extra = schema.get("additionalProperties")
        return (extra is None or extra is False) and all(
            bounds_output(v) for v in schema["properties"].values())
    return False        # numbers, patterns, unions, refs: not worth proving


def loop_cut(ids: Sequence[Any], min_tokens: int) -> int | None:
    """How many tokens of ``ids`` to keep when the output ends in a loop, else None.

    A loop: the last ``r * p`` tokens are one block of ``p`` tokens ``r`` times, with
    ``r = max(3, ceil(min_tokens / p))``. The cut keeps everything up to the end of the
    cycle's first turn (which may start before the copies counted, mid-sentence where the
    model's first copy differed in its opening words). ``min_tokens`` 0 turns the check off.
    """
    n = len(ids)
    if min_tokens <= 0 or n < max(min_tokens, 3):
        return None
    last = ids[-1]
    for p in range(1, n // 3 + 1):
        if ids[-1 - p] != last:
            continue
        r = max(3, -(-min_tokens // p))
        if r * p > n:
            continue
        start = n - r * p
        if all(ids[i] == ids[i + p] for i in range(start, n - p)):
            while start > 0 and ids[start - 1] == ids[start - 1 + p]:
                start -= 1      # the cycle began before the copies counted
            return start + p
    return None


def first_loop_cut(ids: Sequence[Any], min_tokens: int) -> int | None:
    """The cut of the first loop a generation of ``ids`` ran into, token by token, or None.

    For outputs made without the check: a server's, or a call stored before it existed
    (which stands for a checked one only when this is None)."""
    for n in range(1, len(ids) + 1):
        keep = loop_cut(ids[:n], min_tokens)
        if keep is not None:
            return keep
    return None
