"""Execute a method: stamp its events, persist them, and close the run properly.

The CLI, the UI and the batch evaluator all go through :func:`execute`, so a
run is stored the same way wherever it starts. Stopping the consumer of the
generator (the UI's Stop button closes it) stores the run as ``interrupted``.
"""
from __future__ import annotations

import dataclasses
import os
import time
import traceback
from collections import defaultdict
from typing import Any, Iterator

from . import trace as T
from .config import config_hash, to_dict
from .events import EventSchemaError
from .llm.base import LLMError
from .llm.memo import CallMemo
from .methods.base import Method, RunContext


def phase_counts(tr: T.Trace) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"llm_calls": 0, "prompt_tokens": 0,
                                                            "completion_tokens": 0, "llm_ms": 0.0})
    for c in tr.llm_calls.values():
        ph = out[c.get("phase") or "-"]
        if c.get("reused_from"):        # answered by the run's memo: no model call
            continue
        ph["llm_calls"] += 1
        ph["prompt_tokens"] += int(c.get("prompt_tokens", 0))
        ph["completion_tokens"] += int(c.get("completion_tokens", 0))
        ph["llm_ms"] += float(c.get("latency_ms", 0.0))
    return {k: dict(v) for k, v in out.items()}


class _Persister:
    """Buffers events and flushes them in batches (a run can emit hundreds)."""

    def __init__(self, store: Any, every_s: float = 0.5, every_n: int = 64):
        self.store, self.every_s, self.every_n = store, every_s, every_n
        self.buf: list[T.Event] = []
        self.last = time.monotonic()

    def add(self, ev: T.Event) -> None:
        if self.store is None:
            return
        self.buf.append(ev)
        if len(self.buf) >= self.every_n or time.monotonic() - self.last > self.every_s:
            self.flush()

    def flush(self) -> None:
        if self.store is not None and self.buf:
            self.store.add_events(self.buf)
            self.buf = []
        self.last = time.monotonic()


def check_question(question: Any) -> str:
    """The question, or ValueError when it is blank (a run of it would be stored)."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError("the question is blank; type a question, or pick one from the dataset")
    return question


def execute(method: Method, ctx: RunContext, question: str, *, store: Any = None,
            run_id: str | None = None, question_id: str | None = None,
            eval_id: str | None = None, trace_out: T.Trace | None = None,
            memo: bool | None = None, parent_run_id: str | None = None,
            intervention: dict[str, Any] | None = None) -> Iterator[T.Event]:
    """Yield the stamped events of one run; the folded trace is kept in ``trace_out``.
    ``parent_run_id``/``intervention``: the stored run this one re-runs with an
    intervention (a what-if, analysis/whatif.py), kept in ``run_started`` and the run row.
    A blank question raises ValueError at the first ``next()``, before anything is stored.
    ``memo``: answer byte-identical greedy calls of the run once (llm/memo.py); None takes
    ``ctx.extra["call_memo"]`` (default on)."""
    check_question(question)
    if memo is None:
        memo = bool(ctx.extra.get("call_memo", True))
    if memo and dataclasses.is_dataclass(ctx) and not isinstance(ctx.llm, CallMemo):
        ctx = dataclasses.replace(ctx, llm=CallMemo(ctx.llm))
    clock = T.EventClock(run_id)
    tr = trace_out if trace_out is not None else T.Trace()
    cfg = to_dict(ctx.config)
    info = ctx.llm.info
    gold = ctx.gold.to_dict() if ctx.gold else None
    start = T.Event(T.RUN_STARTED, {
        "question": question, "method": method.name, "config": cfg, "seed": ctx.seed,
        "dataset": ctx.dataset, "question_id": question_id, "gold": gold,
        "model": info.to_dict(), "prompt_version": method.prompt_version, "view": method.view,
        "thresholds": {k: list(v) for k, v in method.thresholds.items()},
        "call_memo": bool(memo),
        **({"parent_run_id": parent_run_id, "intervention": intervention}
           if parent_run_id else {}),
    })
    persist = _Persister(store)
    if store is not None:
        store.start_run({
            "run_id": clock.run_id, "method": method.name, "dataset": ctx.dataset,
            "question_id": question_id, "question": question, "config": cfg,
            "config_hash": config_hash({"method": method.name, **cfg}),
            "model_name": info.name, "model_sha256": info.sha256, "seed": ctx.seed,
            "prompt_versions": {method.name: method.prompt_version}, "eval_id": eval_id,
            "pid": os.getpid(), "parent_run_id": parent_run_id,
        })

    def emit(ev: T.Event) -> T.Event:
        clock.stamp(ev)
        tr.apply(ev)
        persist.add(ev)
        return ev

    status, error = "finished", None
    tail: list[T.Event] = []       # events emitted after the method stopped
    try:
        yield emit(start)
        for ev in method.run(ctx, question):
            yield emit(ev)
        if tr.answer is None:
            status, error = "failed", "the method ended without an answer"
        elif tr.answer.get("refused"):
            status = "refused"
    except GeneratorExit:
        status, error = "interrupted", "stopped by the user"
    except KeyboardInterrupt:
        status, error = "interrupted", "interrupted (Ctrl-C)"
    except LLMError as e:
        status, error = "failed", str(e)
    except EventSchemaError:    # strict mode (tests): an undeclared event fails loudly
        raise
    except Exception as e:  # a method bug must still close the run, with the traceback kept
        status, error = "failed", f"{type(e).__name__}: {e}"
        tail.append(emit(T.Event(T.ERROR, {"message": error,
                                           "traceback": traceback.format_exc()})))
    if error and status == "failed" and not tr.errors:
        tail.append(emit(T.Event(T.ERROR, {"message": error})))
    totals = tr.totals()
    ans = tr.answer or {}
    fin = emit(T.Event(T.RUN_FINISHED, {
        "status": status, "error": error, "answer": ans.get("text"),
        "refused": bool(ans.get("refused")), "totals": totals, "by_phase": phase_counts(tr),
    }))
    persist.flush()
    if store is not None:
        store.update_run(clock.run_id, status=status, finished_at=time.time(),
                         answer=ans.get("text"), refused=bool(ans.get("refused")),
                         llm_calls=totals["llm_calls"], prompt_tokens=totals["prompt_tokens"],
                         completion_tokens=totals["completion_tokens"], wall_ms=fin.t_ms,
                         error=error)
    if status != "interrupted":     # a closed generator must not yield again
        yield from tail
        yield fin


def run_to_end(method: Method, ctx: RunContext, question: str, **kw: Any) -> T.Trace:
    tr = T.Trace()
    for _ in execute(method, ctx, question, trace_out=tr, **kw):
        pass
    return tr
