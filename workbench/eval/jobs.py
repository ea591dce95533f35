"""Background evals for the Streamlit page: start one in a thread, poll its progress,
stop it. Jobs live in this module (one registry per process), so they survive the
page's reruns; the store, not the job, is the record of what was done.
"""
from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from ..trace import new_id
from .runner import EvalInterrupted, EvalRunner, EvalSpec, Progress


@dataclass
class Job:
    id: str
    spec: EvalSpec | None
    resume: str | None = None
    status: str = "starting"          # starting | running | finished | interrupted | failed
    eval_id: str | None = None
    progress: Progress | None = None
    error: str | None = None
    started: float = field(default_factory=time.time)
    ended: float | None = None
    updated: float | None = None      # when the last item finished (an ETA counts down from it)
    cancel: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    @property
    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def stop(self) -> None:
        """Ask the eval to stop after the current item (finished items are kept)."""
        self.cancel.set()

    def snapshot(self) -> dict[str, Any]:
        p = self.progress
        return {"id": self.id, "status": self.status, "eval_id": self.eval_id,
                "done": p.done if p else 0, "total": p.total if p else None,
                "rate": p.rate if p else 0.0, "eta_s": p.eta_s if p else None,
                "fraction": p.fraction if p else 0.0, "failed": p.failed if p else 0,
                "error": self.error, "elapsed_s": (self.ended or time.time()) - self.started,
                "updated": self.updated}


_JOBS: dict[str, Job] = {}
_LOCK = threading.Lock()


def start(spec: EvalSpec | None, *, store: Any, resume: str | None = None, **runner_kw: Any) -> Job:
    """Run an eval (or resume one) in a daemon thread. ``runner_kw`` go to EvalRunner
    (``backend=``, ``backend_spec=``, ``workers=``, ...)."""
    job = Job(new_id("job_"), spec, resume)

    def on_progress(p: Progress) -> None:
        job.progress = p
        job.updated = time.time()
        job.status = "running"
        if job.cancel.is_set():
            raise KeyboardInterrupt

    def target() -> None:
        try:
            runner = EvalRunner.resume(store, resume, **runner_kw) if resume \
                else EvalRunner.new(store, spec, **runner_kw)
            job.eval_id = runner.eval_id
            job.status = "running"
            job.progress = Progress(runner.eval_id, len(runner.done_keys()), runner.n_planned, 0, 0.0)
            res = runner.run(on_progress)
            job.status = res.status
        except EvalInterrupted:
            job.status = "interrupted"
        except BaseException as e:  # noqa: shown on the page
            job.status = "failed"
            job.error = f"{type(e).__name__}: {e}"
            job.traceback = traceback.format_exc()  # type: ignore[attr-defined]
        finally:
            job.ended = time.time()

    job.thread = threading.Thread(target=target, name=f"eval-{job.id}", daemon=True)
    with _LOCK:
        _JOBS[job.id] = job
    job.thread.start()
    return job


def get(job_id: str | None) -> Job | None:
    return _JOBS.get(job_id) if job_id else None


def active() -> list[Job]:
    return [j for j in _JOBS.values() if j.alive]


def wait(job: Job, timeout: float | None = None) -> Job:
    if job.thread is not None:
        job.thread.join(timeout)
    return job


def parse_lines(text: str) -> dict[str, str]:
    """``key=value`` per line (blank lines and ``#`` comments ignored) — the page's knob box."""
    from ..config import parse_sets
    return parse_sets([ln.strip() for ln in (text or "").splitlines()
                       if ln.strip() and not ln.strip().startswith("#")])


def build_spec(*, dataset: str, methods: list[str], limit: int | None, seed: int = 0,
               sets_text: str = "", grid_text: str = "", preset: str | None = None,
               judge: str = "same", primary: str | None = None, label: str = "",
               method_classes: dict[str, type] | None = None, split: str | None = None,
               allow_leakage: bool = False, reuse_calls: list[str] | None = None) -> EvalSpec:
    """The Evaluate page's form as an :class:`EvalSpec` (the same rules as the CLI)."""
    from . import presets
    from ..methods import all_methods
    from .plan import apply_sweep
    grid = {k: [x.strip() for x in v.split(",") if x.strip()]
            for k, v in parse_lines(grid_text).items()}
    spec = EvalSpec(dataset=dataset, methods=list(methods), limit=limit, seeds=[int(seed)],
                    sets=parse_lines(sets_text), grid=grid, judge=judge, primary=primary,
                    label=label, split=split or None, allow_leakage=allow_leakage,
                    reuse_calls=",".join(reuse_calls or []) or None)
    if preset:
        spec = apply_sweep(spec, presets.to_sweep(preset, method_classes or all_methods(),
                                                  methods or None))
    return spec
