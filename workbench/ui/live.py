"""Runs started from the UI execute in a background thread, so the page never freezes.

A :class:`LiveBatch` runs one or more jobs (method + overrides) on one question, one
after another (Compare), through :func:`workbench.execution.execute` — the same path as
the CLI, so runs are stored identically. The worker only appends events to a list;
the page folds them into its own :class:`~workbench.trace.Trace` on the script thread
(:meth:`LiveBatch.view`), so no trace is read while another thread mutates it.
``stop()`` closes the event stream at the next event, which the runner stores as
``interrupted``.

Browser sessions share one model (:mod:`.backend`). Each job holds it for its whole run,
taking its turn in the model's :class:`~workbench.llm.locked.ModelQueue`; turns per LLM
call would make every one of several runs asked together last as long as all of them.
Until its turn the job is ``waiting``, with a ticket that tells its place in line;
``stop()`` then cancels the wait, and the run is neither started nor stored, like a
Compare job stopped before it started.
"""
from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from .. import trace as T
from ..llm.base import LLMError
from ..llm.locked import Ticket, WaitCancelled
from . import data as uidata
from .gold import golds_of, judge


@dataclass
class Job:
    method: str
    overrides: dict[str, Any] = field(default_factory=dict)
    label: str = ""


@dataclass
class JobState:
    job: Job
    events: list[T.Event] = field(default_factory=list)
    status: str = "pending"          # pending | starting | waiting | running | finished | ...
    error: str | None = None
    run_id: str | None = None
    started: float | None = None
    ended: float | None = None
    first_node_s: float | None = None
    verdict: dict[str, Any] | None = None
    partial: str = ""                # text of the LLM call in flight, token by token
    ticket: Ticket | None = None     # its place in line while it waits for the model
    call_started: float | None = None  # monotonic start of the model call in flight, if any
    call_what: str = ""              # what that call is ("LLM call", "batch of 4 LLM calls")
    call_tokens: int = 0             # tokens it has generated so far (streamed calls only)
    clock0: float | None = None      # monotonic time of the run's t_ms = 0 (its event clock)
    busy_started: float | None = None  # monotonic start of a search in flight (no LLM call)
    busy_what: str = ""              # that search ("retrieval (dense)")
    _trace: T.Trace = field(default_factory=T.Trace)
    _applied: int = 0


def make_context(method: str, llm: Any, dataset: str, overrides: dict[str, Any] | None,
                 question_id: str | None, settings: Any) -> tuple[Any, Any]:
    """(method, RunContext) from the workspace's one builder; a plug-in dataset registered
    with the UI is handed over as its object."""
    from ..workspace import build_context
    ds = uidata.get_dataset(dataset) if uidata.is_extra(dataset) else dataset
    return build_context(method, llm=llm, dataset=ds, overrides=overrides,
                         question_id=question_id, settings=settings)


class TokenTap:
    """The run's backend, passing each generated token to the job as it comes (the page
    shows the call in flight); every other attribute is the backend's own."""

    def __init__(self, inner: Any, js: JobState):
        self.inner, self.js = inner, js

    def _sink(self, tok: Any) -> None:
        self.js.partial += tok.piece
        self.js.call_tokens += 1

    def _begin(self, what: str) -> None:
        self.js.partial = ""
        self.js.call_what = what
        self.js.call_tokens = 0
        self.js.call_started = time.monotonic()

    def _end(self) -> None:
        self.js.partial = ""
        self.js.call_started = None

    def generate(self, messages: Any, params: Any = None) -> Any:
        self._begin("LLM call")
        try:
            return self.inner.generate(messages, params, on_token=self._sink)
        finally:
            self._end()

    # The batched and scoring entry points are wrapped as well, so the page can tell which
    # call is running and for how long whatever the method asks for.
    def _many(self, name: str, what: str, requests: Any, kw: dict[str, Any]) -> Any:
        from ..llm import batching
        native = getattr(self.inner, name, None)
        if native is None:          # one call after another, each shown as it runs
            return getattr(batching, f"sequential_{name}")(self, requests, **kw)
        self._begin(f"batch of {len(requests)} {what}")
        try:
            return native(requests, **kw)
        finally:
            self._end()

    def generate_many(self, requests: Any, **kw: Any) -> Any:
        return self._many("generate_many", "LLM calls", requests, kw)

    def score(self, context: Any, continuation: str) -> Any:
        self._begin("teacher-forced scoring")
        try:
            return self.inner.score(context, continuation)
        finally:
            self._end()

    def score_many(self, requests: Any, **kw: Any) -> Any:
        return self._many("score_many", "teacher-forced scorings", requests, kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class RetrieverTap:
    """A run's retriever, marking the job busy while a search runs: a dense index is built
    (or read from disk) on its first search, which takes minutes for a corpus on a small
    CPU with no LLM call in flight, and the page says so instead of showing nothing."""

    def __init__(self, inner: Any, js: JobState, kind: str):
        self.inner, self.js, self.kind = inner, js, kind

    def search(self, query: str, k: int = 5) -> Any:
        self.js.busy_what = f"retrieval ({self.kind})"
        self.js.busy_started = time.monotonic()
        try:
            return self.inner.search(query, k)
        finally:
            self.js.busy_started = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class LiveBatch:
    def __init__(self, jobs: list[Job], question: str, *, question_id: str | None,
                 dataset: str, llm: Any, store: Any, settings: Any, together: bool = False):
        self.jobs = [JobState(j) for j in jobs]
        # side by side in time: one turn in the model's line for the whole batch
        self.together = together and len(jobs) > 1
        self.question, self.question_id, self.dataset = question, question_id, dataset
        self.llm, self.store, self.settings = llm, store, settings
        self._stop = threading.Event()
        self._first_node = threading.Event()
        self._shown = threading.Event()  # something worth drawing: a node, a wait, the end
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.current = 0
        self.thread = threading.Thread(target=self._run, name="workbench-run", daemon=True)

    # -- worker side --
    def start(self) -> "LiveBatch":
        self.thread.start()
        return self

    def _run(self, only: int | None = None, llm: Any = None) -> None:
        if self.together and only is None:
            return self._run_together()
        from ..execution import execute
        llm = llm if llm is not None else self.llm
        for i, js in enumerate(self.jobs):
            if only is not None and i != only:
                continue
            if self._stop.is_set():
                js.status, js.error = "interrupted", "stopped before it started"
                continue
            self.current = i
            if i and only is None:
                self._first_node.clear()
                self._shown.clear()
            js.started = time.monotonic()
            js.status = "starting"
            try:
                method, ctx = make_context(js.job.method, TokenTap(llm, js), self.dataset,
                                           js.job.overrides, self.question_id, self.settings)
            except Exception as e:      # noqa: BLE001 - shown as a readable message
                js.status, js.error = "failed", _readable(e)
                js.ended = time.monotonic()
                continue
            ctx.retrievers = {k: RetrieverTap(r, js, k) for k, r in (ctx.retrievers or {}).items()}
            queue = getattr(llm, "queue", None)
            if queue is not None and not self._take_turn(js, queue):
                js.status = "interrupted"
                js.error = "Cancelled while waiting for the model; the run was not started."
                js.ended = time.monotonic()
                continue
            js.status = "running"
            gen = execute(method, ctx, self.question, store=self.store,
                          question_id=self.question_id)
            try:
                for ev in gen:
                    if js.run_id is None:
                        js.run_id = ev.run_id
                        js.clock0 = time.monotonic() - ev.t_ms / 1000.0
                    if ev.type == T.NODE_ADDED and js.first_node_s is None:
                        js.first_node_s = time.monotonic() - js.started
                        self._first_node.set()
                        self._shown.set()
                    js.events.append(ev)
                    if self._stop.is_set():
                        gen.close()
                        break
            except Exception as e:      # noqa: BLE001 - the runner already closed the run
                js.error = _readable(e)
            finally:
                if queue is not None:
                    queue.release()     # the next session's run may start
            fin = next((e for e in reversed(js.events) if e.type == T.RUN_FINISHED), None)
            if fin is not None:
                js.status = fin.data.get("status", "finished")
                js.error = js.error or fin.data.get("error")
            else:
                js.status = "interrupted" if self._stop.is_set() else "failed"
                if js.status == "interrupted":
                    js.error = js.error or "stopped by the user"
                self._reload(js)
            js.ended = time.monotonic()
            self._judge(js, ctx)
        self._shown.set()

    def _run_together(self) -> None:
        """Every job in a thread of its own, all at once, for a backend that serves
        concurrent calls (:func:`serves_calls_together`). The batch waits once in the model's
        line, every job showing that wait, and holds the model until the last job ends; the
        jobs call the backend itself, since the line's lock is this thread's."""
        queue = getattr(self.llm, "queue", None)
        if queue is not None:
            t = queue.join("run", " + ".join(js.job.label or js.job.method for js in self.jobs))
            if t.granted is None:
                for js in self.jobs:
                    js.ticket, js.status = t, "waiting"
                if self._stop.is_set():
                    t.cancel()
                self._shown.set()
                try:
                    queue.wait(t)
                except WaitCancelled:
                    for js in self.jobs:
                        js.status = "interrupted"
                        js.error = "Cancelled while waiting for the model; the run was not started."
                    return
                finally:
                    for js in self.jobs:
                        js.ticket = None
                    self._shown.set()
        try:
            inner = getattr(self.llm, "inner", self.llm)
            threads = [threading.Thread(target=self._run, args=(i, inner), daemon=True,
                                        name=f"workbench-run-{i}") for i in range(len(self.jobs))]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        finally:
            if queue is not None:
                queue.release()
        self._shown.set()

    def _take_turn(self, js: JobState, queue: Any) -> bool:
        """Wait for the model (``waiting`` meanwhile); False when stopped before its turn."""
        t = queue.join("run", js.job.label or js.job.method)
        if t.granted is None:
            js.ticket, js.status = t, "waiting"
            if self._stop.is_set():     # stop() ran before the ticket was visible to it
                t.cancel()
            self._shown.set()
            try:
                queue.wait(t)
            except WaitCancelled:
                return False
            finally:
                js.ticket = None
        if self._stop.is_set():         # stopped just as its turn came
            queue.release()
            return False
        return True

    def _reload(self, js: JobState) -> None:
        """After a stop the closed stream cannot yield its final event; the store has it."""
        if self.store is None or js.run_id is None:
            return
        try:
            evs = self.store.events(js.run_id)
        except Exception:               # noqa: BLE001 - the live events are still shown
            return
        if evs:
            with self._lock:
                js.events, js._trace, js._applied = evs, T.Trace(), 0

    def _judge(self, js: JobState, ctx: Any) -> None:
        golds = golds_of(getattr(ctx, "gold", None))
        if not golds or js.run_id is None:
            return
        fin = next((e for e in reversed(js.events) if e.type == T.RUN_FINISHED), None)
        if fin is None:
            return
        verdict = judge(fin.data.get("answer"), golds, bool(fin.data.get("refused")))
        js.verdict = verdict
        if verdict is not None and self.store is not None and js.status != "interrupted":
            try:
                self.store.update_run(js.run_id, correct=bool(verdict["correct"]), metrics=verdict)
            except Exception:           # noqa: BLE001 - correctness is a convenience here
                pass

    # -- page side --
    def wait_first_node(self, timeout: float) -> bool:
        """Block up to ``timeout`` s for the first node (so the first draw already has it);
        returns early, False, when the run waits for the model or ends without a node."""
        self._shown.wait(timeout)
        return self._first_node.is_set()

    def stop(self) -> None:
        """Stop at the next event, or leave the line at once if waiting for the model."""
        self._stop.set()
        t = self.jobs[self.current].ticket
        if t is not None:
            t.cancel()

    def ticket(self, i: int = 0) -> Ticket | None:
        """The job's place in line while it waits for the model, else None."""
        return self.jobs[i].ticket

    @property
    def stopping(self) -> bool:
        return self._stop.is_set() and self.running

    @property
    def running(self) -> bool:
        return self.thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def view(self, i: int = 0) -> T.Trace:
        """The job's trace, folded up to the events received so far (script thread only)."""
        js = self.jobs[i]
        with self._lock:
            n = len(js.events)
            for ev in js.events[js._applied:n]:
                js._trace.apply(ev)
            js._applied = n
        return js._trace

    def in_flight(self, i: int = 0) -> dict[str, Any] | None:
        """The model call running now, on the run's clock: ``{"start_ms", "elapsed_ms",
        "what", "tokens", "partial"}`` (the call waterfall draws it), or None."""
        js = self.jobs[i]
        started, clock0 = js.call_started, js.clock0
        if started is None or clock0 is None or js.ended is not None:
            return None
        partial = js.partial
        return {"start_ms": max(0.0, (started - clock0) * 1000.0),
                "elapsed_ms": (time.monotonic() - started) * 1000.0, "what": js.call_what,
                "tokens": js.call_tokens or None, "partial": partial}

    def busy(self, i: int = 0) -> dict[str, Any] | None:
        """A search in flight, with no LLM call: ``{"what", "elapsed_ms"}``, or None."""
        js = self.jobs[i]
        started = js.busy_started
        if started is None or js.ended is not None:
            return None
        return {"what": js.busy_what, "elapsed_ms": (time.monotonic() - started) * 1000.0}

    def elapsed(self, i: int = 0) -> float:
        js = self.jobs[i]
        if js.started is None:
            return 0.0
        return (js.ended or time.monotonic()) - js.started


def serves_calls_together(llm: Any) -> bool:
    """Whether the model answers several calls at once: a server, or the scripted backend.
    A llama.cpp model in this process runs one call at a time, so runs interleaved on it
    would each take as long as all of them together (and their wall times would mean
    nothing); they take turns instead."""
    return getattr(getattr(llm, "info", None), "backend", "") in ("openai_compat", "scripted")


def _readable(e: BaseException) -> str:
    """One clear line for the page; the traceback only for unexpected errors (in an expander)."""
    from ..config import ConfigError
    from ..store import StoreError
    if isinstance(e, (LLMError, ConfigError, StoreError, LookupError, FileNotFoundError)):
        return str(e)
    tb = traceback.format_exception_only(type(e), e)[-1].strip()
    return f"Unexpected error while preparing the run: {tb}"
