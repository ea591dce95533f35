"""Items on this machine: one after another, or on worker threads.

With llama.cpp each worker loads a model of its own, in a worker process of its own
(:class:`~workbench.llm.isolated.IsolatedBackend`), and gets an equal share of the cores; a
server, the scripted backend or a backend handed in is shared by the workers instead.
With ``items_together`` K > 1 each worker runs K items at once on K threads, whose single
LLM calls its model decodes together (:class:`~workbench.llm.items_together.ItemsTogether`).
"""
from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..llm.items_together import ItemsTogether
from .item_executor import ItemResult, make_backend
from .plan import Item

if TYPE_CHECKING:
    from .runner import EvalRunner

OnResult = Callable[[ItemResult], None]


def run_local(runner: "EvalRunner", items: Iterator[Item], on_result: OnResult) -> None:
    if runner.workers <= 1 and runner.items_together <= 1:
        run_serial(runner, items, on_result)
    else:
        run_threads(runner, items, on_result)


def run_serial(runner: "EvalRunner", items: Iterator[Item], on_result: OnResult) -> None:
    runner.ensure_backend()
    ex = runner.item_executor()
    for it in items:
        on_result(ex.run(it))


def _worker_backend(runner: "EvalRunner") -> Any:
    """A model of the worker's own, in its own process, sharing the cores: N llama.cpp
    instances each using every core oversubscribe the CPU, and llama.cpp's spinning
    threads then slow down by an order of magnitude."""
    ov = dict(runner.backend_spec.get("overrides") or {})
    ov.setdefault("n_threads", max(1, (os.cpu_count() or 1) // runner.workers))
    return make_backend({**runner.backend_spec, "overrides": ov}, shared=False)


def run_threads(runner: "EvalRunner", items: Iterator[Item], on_result: OnResult) -> None:
    own = runner._own_models()
    if not own:
        runner.ensure_backend()
    k = runner.items_together
    local = threading.local()
    lock = threading.Lock()
    stop = threading.Event()
    owned: list[Any] = []          # the workers' own models, closed at the end
    models: list[Any] = []         # per worker: the backend its threads use (None: the runner's)
    thread_no = itertools.count()

    def work(it: Item) -> ItemResult:
        if stop.is_set():
            raise KeyboardInterrupt
        ex = getattr(local, "ex", None)
        if ex is None:
            with lock:
                w = next(thread_no) // k        # threads 0..k-1 are worker 0's, and so on
                if w == len(models):
                    be = _worker_backend(runner) if own else None
                    if be is not None:
                        owned.append(be)
                    if k > 1:
                        be = ItemsTogether(be or runner.backend, k)
                    models.append(be)
                ex = local.ex = runner.item_executor(models[w])
        return ex.run(it)

    pool = ThreadPoolExecutor(runner.workers * k, thread_name_prefix="eval")
    inflight: set = set()
    try:
        it = iter(items)
        exhausted = False
        while True:
            while not exhausted and len(inflight) < 2 * runner.workers * k:
                nxt = next(it, None)
                if nxt is None:
                    exhausted = True
                    break
                inflight.add(pool.submit(work, nxt))
            if not inflight:
                break
            finished, inflight = wait(inflight, return_when=FIRST_COMPLETED)
            for f in finished:
                on_result(f.result())
    except BaseException:
        stop.set()
        for f in inflight:
            f.cancel()
        # items that complete while stopping are stored too
        for f in inflight:
            if f.cancelled():
                continue
            try:
                r = f.result()
            except BaseException:
                continue
            keep(r, on_result)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for be in owned:
            close = getattr(be, "close", None)
            if callable(close):
                close()


def keep(r: ItemResult, on_result: OnResult) -> None:
    """Store a result that finished while stopping, without letting the progress callback
    (which may be what raised the interrupt) stop it again."""
    try:
        on_result(r)
    except KeyboardInterrupt:
        pass
