"""Independent pieces of a method run together: their LLM calls as one backend batch, their
events in the order a one-after-another run would give.

A method hands :func:`together` a list of *items*, generators written exactly as for a
sequential run (``comp = yield from ctx.generate(...)``, ``ctx.generate_json``,
``ctx.score_many``, ``ctx.retrieve``). While they run together, a call of one of them does
not reach the backend: ``RunContext`` yields a :class:`Call` instead, and :func:`together`
collects the calls of every item in flight, runs them as one ``generate_many`` (and one
``score_many``), and resumes each item with its result. Items never see the difference.

Order. The events of item ``i`` are held back until items ``0..i-1`` have emitted theirs,
so the trace (events, node ids, llm_call order) is the sequential run's. Item 0's events go
out as soon as they exist: the first node of a batch is never delayed behind the batch.
An item that updates state shared with other items (a dict of path results, a list of
accepted proposals) does so in an :class:`InOrder` block, run when the trace reaches it.
``generate_json``'s parse-failure nodes are such blocks, so their ids follow trace order.

Window. At most ``size`` items are in flight: a round's calls are one group of at most
``size`` sequences, and later items start as earlier ones finish. ``size`` 1 runs the
items one after another with plain ``generate`` calls: exactly the unbatched method (so
does a lone item).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from .. import trace as T
from ..config import knob, knobs
from ..llm import batching
from ..llm.base import GenRequest, ScoreRequest

# Off by default, from measurements on 2 CPU cores with the 1.5B default model
# (benchmarks/methods_*.py --batch-compare 4): CRP-RAG 80.6 s a question one call at a time
# against 88.9 s batched, PAR-RAG 1.00x, CogGRAG (small-model) 1.12x. These calls are bound
# by prompt processing, which batching does not shorten, and a batched sequence's numbers
# differ in the last bits, which moves perplexity decisions near a calibrated threshold.
# Decoding-bound calls gain (2.2x at 4 sequences); a GPU should gain more (not measured yet).
DEFAULT_BATCH = 1


def batch_knob() -> Any:
    """The ``batch_size`` knob every method with independent calls has."""
    # 1 is the default because on 2 CPU cores the methods' calls are bound by prompt
    # processing and batching did not speed them up (figures above). The trace is the same
    # either way; a batched sequence's numbers can differ in the last bits, so a near-tie can
    # flip. Each call records its batch.
    return knob(DEFAULT_BATCH, "Independent LLM calls run together as one llama.cpp batch of "
                "at most this many sequences (1 = one after another, unbatched; try 4 on a GPU)",
                min=1, max=8, group="batching", status="extension",
                evidence="docs/performance.md#batching-a-runs-calls")


def has_batching(method_cls: type) -> bool:
    """Whether a method has independent calls to run together (its config has the knob)."""
    return any(k.name == "batch_size" for k in knobs(method_cls.Config))


@dataclass
class Call:
    """What ``RunContext`` yields instead of calling the backend while items run together."""
    generate: GenRequest | None = None
    score: list[ScoreRequest] | None = None


@dataclass
class InOrder:
    """Events (and the state changes that make them) to run when the trace reaches them."""
    events: Iterator[T.Event]
    phase: str = ""


@dataclass
class _Item:
    gen: Iterator[Any]
    phase: str
    buf: deque = field(default_factory=deque)
    call: Call | None = None
    done: bool = False
    result: Any = None


def together(ctx: Any, items: Sequence[Iterator[Any]], size: int) -> Iterator[T.Event]:
    """Run ``items`` (generators of events) with their LLM calls batched; yields their
    events in item order and returns their return values in item order."""
    items = list(items)
    if size <= 1 or len(items) <= 1:
        out = []
        for g in items:
            out.append((yield from relay(g, run_in_order=True)))
        return out
    outer = ctx.phase
    state = [_Item(g, outer) for g in items]
    head = started = 0
    active: list[int] = []
    try:
        while True:
            while len(active) < size and started < len(state):
                _advance(ctx, state[started], None, None)
                if not state[started].done:
                    active.append(started)
                started += 1
            head = yield from _flush(ctx, state, head)
            if not active:
                break
            _round(ctx, state, active, size)
            active = [i for i in active if not state[i].done]
    except Exception:
        yield from _flush(ctx, state, head)     # what a one-after-another run shows first
        raise
    finally:
        for it in state:
            it.gen.close()
        ctx.phase = state[-1].phase if state and head == len(state) else outer
    return [it.result for it in state]


def relay(gen: Iterator[Any], *, seen: Callable[[Any], None] | None = None,
          run_in_order: bool = False) -> Iterator[Any]:
    """``yield from gen`` that shows each yielded item to ``seen`` first and, with
    ``run_in_order`` (an item on its own), runs InOrder blocks where they stand. What is
    sent or thrown in goes on to ``gen``, so a batched call's result or error reaches it."""
    sent: Any = None
    err: Exception | None = None
    while True:
        try:
            x = gen.throw(err) if err is not None else gen.send(sent)
        except StopIteration as stop:
            return stop.value
        sent, err = None, None
        if seen is not None:
            seen(x)
        if run_in_order and isinstance(x, InOrder):
            yield from x.events
            continue
        try:
            sent = yield x
        except Exception as e:
            err = e


def _advance(ctx: Any, it: _Item, value: Any, error: BaseException | None) -> None:
    """Resume one item until it asks for an LLM call or ends; its events are kept."""
    ctx.phase = it.phase
    was, ctx._together = ctx._together, True
    try:
        x = it.gen.throw(error) if error is not None else it.gen.send(value)
        while not isinstance(x, Call):
            if isinstance(x, InOrder):
                x.phase = ctx.phase
            it.buf.append(x)
            x = next(it.gen)
        it.call = x
    except StopIteration as stop:
        it.done, it.call, it.result = True, None, stop.value
    finally:
        ctx._together = was
        it.phase = ctx.phase


def _flush(ctx: Any, state: list[_Item], head: int) -> Iterator[T.Event]:
    """Emit what the trace can have so far: every kept event of the items from ``head`` on
    until one that is still running. Returns the new head."""
    while head < len(state):
        it = state[head]
        while it.buf:
            x = it.buf.popleft()
            if isinstance(x, InOrder):
                ctx.phase = x.phase
                yield from x.events
            else:
                yield x
        if not it.done:
            break
        head += 1
    return head


def _round(ctx: Any, state: list[_Item], active: list[int], size: int) -> None:
    """One batch: the pending generations of the items in flight, then their scorings."""
    gens = [i for i in active if state[i].call.generate is not None]
    scores = [i for i in active if state[i].call.score is not None]
    results: dict[int, Any] = {}
    errors: dict[int, BaseException] = {}
    if gens:
        plan = ctx.batch_plans.pop(0) if ctx.batch_plans else None
        max_batch = min(size, ctx.max_batch) if ctx.max_batch else size
        _run(lambda: batching.generate_many(ctx.llm, [state[i].call.generate for i in gens],
                                            max_batch=max_batch, plan=plan),
             gens, lambda r, k: r[k], results, errors)
    if scores:
        flat = [r for i in scores for r in state[i].call.score]
        starts = [0]
        for i in scores:
            starts.append(starts[-1] + len(state[i].call.score))
        _run(lambda: batching.score_many(ctx.llm, flat), scores,
             lambda r, k: r[starts[k]:starts[k + 1]], results, errors)
    for i in active:
        _advance(ctx, state[i], results.get(i), errors.get(i))


def _run(call: Callable[[], list[Any]], who: list[int], part: Callable[[list[Any], int], Any],
         results: dict[int, Any], errors: dict[int, BaseException]) -> None:
    try:
        got = call()
    except Exception as e:      # each item meets the error where a lone call would have
        errors.update({i: e for i in who})
        return
    results.update({i: part(got, k) for k, i in enumerate(who)})
