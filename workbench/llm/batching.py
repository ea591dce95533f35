"""Batch plans of ``generate_many``/``score_many`` calls, and the fallback that loops.

A *plan* says which requests of one call run together: a list of groups of request
indices, a partition of ``range(n)``. Every result carries its group in ``batch``::

    {"call": "batch_1f2e...", "mode": "llama_cpp", "group": 0, "groups": 2,
     "members": [0, 1, 2, 3], "slot": 2, "size": 4, "shared_prefix_tokens": 61}

``mode`` is how the group ran: ``llama_cpp`` (sequences of one llama.cpp batch),
``single`` (a group of one, run as a plain ``generate``), ``concurrent`` (requests in
flight together to a server) or ``sequential`` (one after another). Because llama.cpp's
numbers depend on which sequences share a step, a re-run passes the recorded plan back
(:func:`plans_from_records`) to get the same groups, whatever ``max_batch`` it uses.
"""
from __future__ import annotations

import uuid
from typing import Any, Callable, Sequence

from .base import Completion, GenRequest, LLMError, ScoredText, ScoreRequest

DEFAULT_MAX_BATCH = 8


def chunked(n: int, max_batch: int) -> list[list[int]]:
    """The default plan: consecutive groups of ``max_batch``."""
    size = max(1, int(max_batch))
    return [list(range(i, min(n, i + size))) for i in range(0, n, size)]


def check_plan(plan: Sequence[Sequence[int]], n: int) -> list[list[int]]:
    """A given plan as lists, or an LLMError naming what is wrong with it."""
    groups = [list(g) for g in plan]
    flat = sorted(i for g in groups for i in g)
    if any(not g for g in groups) or flat != list(range(n)):
        raise LLMError(
            f"The batch plan {groups!r} does not cover the {n} requests exactly once each "
            f"(it must split 0..{n - 1} into non-empty groups). Pass the plan recorded with "
            f"the same requests, or none to let the backend plan.")
    return groups


def new_call_id() -> str:
    return "batch_" + uuid.uuid4().hex[:12]


def record(call: str, mode: str, plan: list[list[int]], group: int, slot: int,
           **extra: Any) -> dict[str, Any]:
    members = plan[group]
    return {"call": call, "mode": mode, "group": group, "groups": len(plan),
            "members": list(members), "slot": slot, "size": len(members), **extra}


def plans_from_records(records: Sequence[dict[str, Any] | None]) -> list[list[list[int]]]:
    """The plans of the batched calls among stored ``llm_call`` records, in call order.

    ``records`` are the payloads of ``llm_call`` events (or ``Completion.to_record()``);
    records without a ``batch`` entry (plain ``generate`` calls) are skipped, and so are single
    calls that ran in a batch with other eval items' calls (``across_items``).
    """
    plans: dict[str, dict[int, list[int]]] = {}
    for rec in records:
        b = (rec or {}).get("batch")
        if b and not b.get("across_items"):     # other items' timing made it: not replayable
            plans.setdefault(b["call"], {})[b["group"]] = list(b["members"])
    return [[groups[g] for g in sorted(groups)] for groups in plans.values()]


def run_plan(requests: Sequence[Any], plan: list[list[int]], mode: str,
             run_group: Callable[[list[Any]], list[Any]]) -> list[Any]:
    """Run each group with ``run_group`` (its requests in, their results out, in order),
    attach the batch records and return the results in request order."""
    call = new_call_id()
    out: list[Any] = [None] * len(requests)
    for g, members in enumerate(plan):
        results = run_group([requests[i] for i in members])
        for slot, (i, res) in enumerate(zip(members, results)):
            extra = res.batch or {}
            res.batch = record(call, extra.pop("mode", mode), plan, g, slot, **extra)
            out[i] = res
    return out


def resolve_plan(n: int, max_batch: int | None, plan: Sequence[Sequence[int]] | None
                 ) -> list[list[int]]:
    if plan is not None:
        return check_plan(plan, n)
    return chunked(n, max_batch or DEFAULT_MAX_BATCH)


def sequential_generate_many(backend: Any, requests: Sequence[GenRequest], *,
                             max_batch: int | None = None,
                             plan: Sequence[Sequence[int]] | None = None) -> list[Completion]:
    """``generate_many`` for a backend that runs one request at a time: the same results as
    calling ``generate`` on each request in plan order (request order by default)."""
    groups = resolve_plan(len(requests), max_batch, plan)
    return run_plan(requests, groups, "sequential",
                    lambda reqs: [backend.generate(r.messages, r.params) for r in reqs])


def sequential_score_many(backend: Any, requests: Sequence[ScoreRequest], *,
                          max_batch: int | None = None,
                          plan: Sequence[Sequence[int]] | None = None) -> list[ScoredText]:
    groups = resolve_plan(len(requests), max_batch, plan)
    return run_plan(requests, groups, "sequential",
                    lambda reqs: [backend.score(r.context, r.continuation) for r in reqs])


def generate_many(llm: Any, requests: Sequence[GenRequest], **kw: Any) -> list[Completion]:
    """``llm.generate_many`` where the backend has it (a proxy to another process may
    not), else the sequential fallback."""
    native = getattr(llm, "generate_many", None)
    if native is None:
        return sequential_generate_many(llm, requests, **kw)
    return native(list(requests), **kw)


def score_many(llm: Any, requests: Sequence[ScoreRequest], **kw: Any) -> list[ScoredText]:
    native = getattr(llm, "score_many", None)
    if native is None:
        return sequential_score_many(llm, requests, **kw)
    return native(list(requests), **kw)
