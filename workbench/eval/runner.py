"""Batch evaluation: (question × method × config × seed) items, stored, scored, resumable.

One *eval* (``eval_batches`` row) plans its items up front (:mod:`.plan`): the questions
(ids frozen at the start, so a resume sees the same set), the method variants (a sweep's
grid of knobs, each with its config hash) and the seeds. Each item runs through
:func:`workbench.execution.execute` (:mod:`.item_executor`), so the run, its events and LLM
calls are stored exactly as an interactive run; the item's metrics go to ``eval_items``
and ``runs.correct`` / ``runs.metrics`` in the same transaction (:mod:`.writer`). An
interrupted eval resumes where it stopped: a key is written once, and one runner at a time
holds the eval (a lease in the store, :mod:`.lease`), so two resumers cannot both write it.

Items run on this machine (:mod:`.local_executor`: serial, or threads each with a model in
a worker process of its own, so a native crash fails that item with "model process
crashed: SIGSEGV") or on a Ray cluster (:mod:`.ray_executor`: one actor per worker, each
loading the model and the dataset once). Either way results come back to this process,
which alone writes the store, so resume, config hashes and progress are the same. A
progress callback gets items done, rate and ETA after every item; raising KeyboardInterrupt
from it stops the eval cleanly (the page's Stop button does this).
"""
from __future__ import annotations

import json
import os
import time
import uuid
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .. import trace as T
from ..store import Store
from . import lease
from . import metrics as M
from .item_executor import (ItemExecutor, ItemResult, WorkerSetup, _all_methods, _import,
                            _load_dataset, make_backend)
from .local_executor import run_local
from .plan import EvalSpec, Item, config_drift, item_key, plan_variants, stored_variants
from .writer import ResultWriter

EVAL_PREFIX = "ev_"

# ---------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------

@dataclass
class Progress:
    eval_id: str
    done: int            # items stored in total (including earlier sessions)
    total: int
    session_done: int
    elapsed_s: float
    failed: int = 0
    last: dict[str, Any] | None = None

    @property
    def rate(self) -> float:
        """Items per second in this session."""
        return self.session_done / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        r = self.rate
        return (self.total - self.done) / r if r > 0 else None

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


ProgressFn = Callable[[Progress], None]


# ---------------------------------------------------------------------------
# the eval
# ---------------------------------------------------------------------------

class EvalInterrupted(KeyboardInterrupt):
    def __init__(self, eval_id: str, done: int, total: int):
        super().__init__(f"eval {eval_id} interrupted after {done}/{total} items")
        self.eval_id, self.done, self.total = eval_id, done, total


@dataclass
class EvalResult:
    eval_id: str
    status: str
    n_planned: int
    n_done: int
    n_new: int
    seconds: float


def _new_eval_id() -> str:
    return T.new_id(EVAL_PREFIX)


def latest_eval(store: Store, unfinished: bool = True) -> str | None:
    rows = store.query("SELECT eval_id FROM eval_batches "
                       + ("WHERE status <> 'finished' " if unfinished else "")
                       + "ORDER BY created_at DESC LIMIT 1")
    return rows[0]["eval_id"] if rows else None


def get_eval(store: Store, eval_id: str) -> dict[str, Any]:
    rows = store.query("SELECT * FROM eval_batches WHERE eval_id = ?", [eval_id])
    if not rows:
        raise LookupError(f"no eval {eval_id!r}; `python -m workbench eval list` shows them")
    r = rows[0]
    for c in ("spec", "methods"):
        if isinstance(r.get(c), str):
            r[c] = json.loads(r[c])
    if not r.get("model_name"):
        # the batch records its model when it stops; until then its stored runs know it
        m = store.query("SELECT model_name, model_sha256 FROM runs WHERE eval_id = ? AND "
                        "model_name IS NOT NULL AND model_name <> '' LIMIT 1", [eval_id])
        if m:
            r["model_name"], r["model_sha256"] = m[0]["model_name"], m[0]["model_sha256"]
    return r


class EvalRunner:
    """Plans, runs and resumes one eval. Construct with :meth:`new` or :meth:`resume`."""

    def __init__(self, store: Store, eval_id: str, spec: EvalSpec, *, backend: Any = None,
                 backend_spec: dict[str, Any] | None = None, dataset: Any = None,
                 method_classes: dict[str, type] | None = None,
                 context_factory: Callable | None = None, factories: dict[str, str] | None = None,
                 workers: int = 1, judge_backend: Any = "setup", executor: str = "local",
                 ray: dict[str, Any] | None = None, items_together: int = 1,
                 variants: list[dict[str, Any]] | None = None):
        if executor not in ("local", "ray"):
            raise ValueError(f"unknown executor {executor!r}; use 'local' or 'ray'")
        self.store, self.eval_id, self.spec = store, eval_id, spec
        # this runner's claim on the eval (see .lease); dropped with the runner
        self.lease_token = uuid.uuid4().hex
        weakref.finalize(self, lease.forget, self.lease_token)
        self.executor, self.ray = executor, dict(ray or {})
        # objects handed in (tests, benchmarks) travel to Ray workers; the rest they build
        self.handed = {k: v for k, v in (("backend", backend), ("dataset", dataset),
                                         ("method_classes", method_classes),
                                         ("context_factory", context_factory)) if v is not None}
        self.backend, self.backend_spec = backend, backend_spec or {"kind": "settings"}
        self.factories = factories or {}
        if dataset is None:
            dataset = _import(self.factories["dataset"])() if "dataset" in self.factories \
                else _load_dataset(spec.dataset)
        self.dataset = dataset
        if method_classes is None:
            method_classes = _import(self.factories["methods"])() if "methods" in self.factories \
                else _all_methods()
        self.method_classes = method_classes
        self.context_factory = context_factory
        self.workers = max(1, int(workers))
        self.items_together = max(1, int(items_together))
        self.ray.setdefault("workers", self.workers)    # None: as many as the cluster holds
        self.judge_backend = judge_backend
        # a resume runs the configs the eval started with, not today's defaults: a default
        # changed since would give new config hashes, new item keys, and one eval holding runs
        # of two configs under one label. The stored ones are read first, so a config that
        # no longer builds gets its own message rather than today's planning error.
        stored = None if variants is None else stored_variants(variants, method_classes, eval_id)
        planned = plan_variants(spec, method_classes)
        self.variants = planned if stored is None else stored
        self.config_drift = config_drift(self.variants, planned)
        self.questions = self._questions()
        self._replay: dict[str, Any] | None = None
        if spec.reuse_calls:
            from ..llm.replay import load_calls
            calls, sha = load_calls(store, spec.reuse_calls)
            self._replay = {"source": spec.reuse_calls, "calls": calls, "model_sha256": sha}
        from . import leakage
        leakage.guard(spec, self.questions, self.variants, method_classes)

    # -- construction --
    @classmethod
    def new(cls, store: Store, spec: EvalSpec, **kw: Any) -> "EvalRunner":
        spec.check()
        r = cls(store, _new_eval_id(), spec, **kw)
        if r.spec.question_ids is None:
            r.spec.question_ids = [q.id for q in r.questions]
        r._create_batch()
        lease.acquire(store, r.eval_id, r.lease_token)
        return r

    @classmethod
    def resume(cls, store: Store, eval_id: str | None = None, **kw: Any) -> "EvalRunner":
        eval_id = eval_id or latest_eval(store)
        if not eval_id:
            raise LookupError("no unfinished eval to resume; `python -m workbench eval list` "
                              "shows the stored evals")
        row = get_eval(store, eval_id)
        lease.check(store, eval_id)          # before loading a dataset and methods for nothing
        spec = EvalSpec.from_dict(row["spec"])
        r = cls(store, eval_id, spec, variants=row["spec"].get("variants_planned"), **kw)
        lease.acquire(store, eval_id, r.lease_token)
        return r

    def _questions(self) -> list[Any]:
        qs = list(self.dataset.questions)
        if self.spec.question_ids is not None:
            index = {q.id: q for q in qs}
            missing = [i for i in self.spec.question_ids if i not in index]
            if missing:
                raise LookupError(f"dataset {self.spec.dataset!r} no longer has question(s) "
                                  f"{missing[:5]}{' ...' if len(missing) > 5 else ''}")
            return [index[i] for i in self.spec.question_ids]
        if self.spec.split:
            from ..datasets.splits import select
            qs = select(qs, self.spec.split)
        qs = qs[self.spec.offset:]
        if self.spec.limit is not None:
            qs = qs[: self.spec.limit]
        if not qs:
            raise ValueError(f"dataset {self.spec.dataset!r} has no questions to evaluate "
                             f"(offset {self.spec.offset}, limit {self.spec.limit})")
        return qs

    @property
    def n_planned(self) -> int:
        return len(self.questions) * len(self.variants) * len(self.spec.seeds)

    def _create_batch(self) -> None:
        info = getattr(self.backend, "info", None)
        self.store.execute(
            "INSERT INTO eval_batches (eval_id, created_at, status, dataset, methods, "
            "n_questions, n_planned, n_done, spec, primary_metric, judge, model_name, "
            "model_sha256, preset, label, pid) VALUES (?, ?, 'running', ?, ?, ?, ?, 0, ?, ?, ?, "
            "?, ?, ?, ?, ?)",
            [self.eval_id, time.time(), self.spec.dataset, json.dumps(self.spec.methods),
             len(self.questions), self.n_planned,
             json.dumps(self.spec.to_dict() | {"variants_planned": [v.to_dict() for v in self.variants]},
                        default=str),
             self.spec.primary or "auto", self.spec.judge, getattr(info, "name", None),
             getattr(info, "sha256", None), self.spec.preset, self.spec.label, os.getpid()])

    # -- items --
    def done_keys(self) -> set[str]:
        return {r["item_key"] for r in self.store.query(
            "SELECT item_key FROM eval_items WHERE eval_id = ?", [self.eval_id])}

    def pending(self, done: set[str]) -> Iterator[Item]:
        vds = [v.to_dict() for v in self.variants]
        for i, q in enumerate(self.questions):
            qd = q.to_dict()
            # A variant run right after another one on the same question can find that one's
            # prompts among the kept prefixes, and runs faster for it; reversing the order on
            # every other question keeps any one variant from always being second.
            for v in (vds if i % 2 == 0 else vds[::-1]):
                for s in self.spec.seeds:
                    k = item_key(v, s, q.id)
                    if k not in done:
                        yield Item(k, qd, v, s)

    def _cleanup_orphans(self) -> None:
        """Runs of this eval without an item row (a crash between writes) are removed."""
        orphans = [r["run_id"] for r in self.store.query(
            "SELECT run_id FROM runs WHERE eval_id = ? AND run_id NOT IN "
            "(SELECT run_id FROM eval_items WHERE eval_id = ? AND run_id IS NOT NULL)",
            [self.eval_id, self.eval_id])]
        for rid in orphans:
            self.store.delete_run(rid)

    def retry_failed(self) -> int:
        lease.acquire(self.store, self.eval_id, self.lease_token)   # it deletes rows
        rows = self.store.query("SELECT run_id FROM eval_items WHERE eval_id = ? AND status = 'failed'",
                                [self.eval_id])
        for r in rows:
            self.store.delete_run(r["run_id"])
        self.store.execute("DELETE FROM eval_items WHERE eval_id = ? AND status = 'failed'",
                           [self.eval_id])
        self._sync_done()
        return len(rows)

    def _sync_done(self) -> int:
        n = self.store.query("SELECT count(*) AS n FROM eval_items WHERE eval_id = ?",
                             [self.eval_id])[0]["n"]
        self.store.execute("UPDATE eval_batches SET n_done = ?, n_planned = ? WHERE eval_id = ?",
                           [n, self.n_planned, self.eval_id])
        return n

    def setup(self) -> WorkerSetup:
        return WorkerSetup(
            eval_id=self.eval_id, dataset=self.spec.dataset, backend=self.backend_spec,
            judge=self.spec.judge,
            scoring={"primary": self.spec.primary, "tau_f1": self.spec.tau_f1,
                     "crag_mode": self.spec.crag_mode, "crag_profile": self.spec.crag_profile,
                     "metric_profile": self.spec.metric_profile},
            factories=self.factories, replay=self._replay,
            items_at_once=self.workers * self.items_together if self._mode() == "threads" else 1)

    def _mode(self) -> str:
        return "ray" if self.executor == "ray" else \
            "serial" if self.workers * self.items_together <= 1 else "threads"

    def _own_models(self) -> bool:
        """Whether each parallel worker loads a llama.cpp model of its own. A server, the
        scripted backend or a backend handed in is shared by the workers instead."""
        ov = self.backend_spec.get("overrides") or {}
        return self.backend is None and self.backend_spec.get("kind", "settings") == "settings" \
            and ov.get("backend", "llama_cpp") != "openai_compat" and self.workers > 1

    # -- running --
    def run(self, progress: ProgressFn | None = None) -> EvalResult:
        """Run the pending items. EvalBusy (nothing written) when another runner holds the
        eval's lease."""
        lease.acquire(self.store, self.eval_id, self.lease_token)
        beat = lease.Heartbeat(self.store, self.eval_id, self.lease_token)
        try:
            return self._run(progress)
        finally:
            beat.stop()
            lease.release(self.store, self.eval_id, self.lease_token)

    def _run(self, progress: ProgressFn | None) -> EvalResult:
        t0 = time.perf_counter()
        self._cleanup_orphans()
        done = self.done_keys()
        total = self.n_planned
        self.store.execute("UPDATE eval_batches SET status = 'running', pid = ?, n_planned = ?, "
                           "n_done = ?, error = NULL WHERE eval_id = ?",
                           [os.getpid(), total, len(done), self.eval_id])
        writer = ResultWriter(self.store, self.eval_id, {v.hash: v.to_dict() for v in self.variants},
                              judge_version=M.JUDGE_PROMPT_VERSION if self.spec.judge != "off" else None)
        state = {"done": len(done), "new": 0, "failed": 0}

        def on_result(r: ItemResult) -> None:
            writer.add(r)
            state["done"] += 1
            state["new"] += 1
            state["failed"] += int(r.row["status"] == "failed")
            if progress is not None:
                progress(Progress(self.eval_id, state["done"], total, state["new"],
                                  time.perf_counter() - t0, state["failed"],
                                  {"question_id": r.row["question_id"], "method": r.row["method"],
                                   "correct": r.row["correct"], "status": r.row["status"]}))

        items = self.pending(done)
        status, error = "finished", None
        flush_error: BaseException | None = None
        try:
            if self.executor == "ray":
                from .ray_executor import run_ray
                run_ray(self, items, on_result, self.ray)
            else:
                run_local(self, items, on_result)
        except KeyboardInterrupt:
            status = "interrupted"
        except BaseException as e:
            status, error = "failed", f"{type(e).__name__}: {e}"
            raise
        finally:
            try:
                writer.flush()
            except BaseException as e:  # noqa: keep the original error visible
                status, error = "failed", error or f"{type(e).__name__}: {e}"
                flush_error = e
            n = self._sync_done()
            model = writer.model
            if status == "interrupted" and n >= total:
                status = "finished"          # stopped after the last item: nothing is missing
            self.store.execute(
                "UPDATE eval_batches SET status = ?, finished_at = ?, error = ?, "
                "model_name = coalesce(model_name, ?), model_sha256 = coalesce(model_sha256, ?) "
                "WHERE eval_id = ?",
                [status, time.time(), error, model[0] if model else None,
                 model[1] if model else None, self.eval_id])
        if flush_error is not None:
            raise flush_error
        if status == "interrupted":      # what is stored, which is what a resume skips
            raise EvalInterrupted(self.eval_id, n, total)
        return EvalResult(self.eval_id, status, total, state["done"], state["new"],
                          time.perf_counter() - t0)

    def item_executor(self, backend: Any = None) -> ItemExecutor:
        return ItemExecutor(self.setup(), backend=backend or self.backend, dataset=self.dataset,
                            method_classes=self.method_classes,
                            context_factory=self.context_factory, judge=self.judge_backend)

    def ensure_backend(self) -> None:
        if self.backend is None:
            self.backend = make_backend(self.backend_spec)


# ---------------------------------------------------------------------------
# convenience
# ---------------------------------------------------------------------------

def run_eval(spec: EvalSpec, *, store: Store | None = None, resume: str | None = None,
             progress: ProgressFn | None = None, **kw: Any) -> EvalResult:
    """Start (or resume) an eval and run it to the end."""
    store = store or Store()
    runner = EvalRunner.resume(store, resume, **kw) if resume else EvalRunner.new(store, spec, **kw)
    return runner.run(progress)
