"""Eval items on a Ray cluster: one actor per worker, results streamed back to the driver.

Each actor builds one :class:`~.item_executor.ItemExecutor` from the eval's
:class:`~.item_executor.WorkerSetup`, so it loads the model (a llama.cpp GGUF, or the
OpenAI-compatible backend pointed at a server) and the dataset's indexes once, then runs
items. The driver keeps at most two items in flight per actor, hands each result to the
runner (which alone writes the store), and never schedules anything itself: Ray places
the actors by their CPU/GPU request and restarts a dead one.

A worker that dies loses only its in-flight items. Each is run again once on a live worker
(``retries``); an item whose worker died on every try is stored as a failed run naming the
cause (:func:`~.item_executor.lost_item`), so the eval still holds each item exactly once.

The actor's model runs in the actor's own process (``isolate_model=False``): the actor is
already a process of its own that Ray restarts, so a native crash costs the driver nothing
(the item runs again on a live worker), and a model process per actor only adds a hop per
LLM call and another process. ``benchmarks/eval_scale.py --executor ray`` measures both: on
2 loaded cores the isolated model took about 40 MB more per worker (the workers' peak RSS
596 against 558 MB with 1 worker, 968 against 895 MB with 2) and its speed was within the
noise (SmolLM2, 8 items: 0.06 vs 0.12 items/s with 1 worker, 0.29 vs 0.39 with 2, in one run;
the other way round in another).
"""
from __future__ import annotations

import collections
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .item_executor import ItemExecutor, ItemResult, WorkerSetup, lost_item
from .local_executor import keep
from .plan import Item

if TYPE_CHECKING:
    from .runner import EvalRunner

ROOT = Path(__file__).resolve().parents[2]      # the folder that holds the workbench package
IN_FLIGHT_PER_WORKER = 2
# the actors pass these on to the code they run (home folder, caches, offline flags)
_ENV_PREFIXES = ("WORKBENCH_", "HF_", "TRANSFORMERS_", "SENTENCE_TRANSFORMERS_")


class RayWorkerError(RuntimeError):
    """The Ray workers could not start, or all of them died."""


class EvalWorker:
    """The actor: one item executor, built once. Construction errors are kept and reported
    by :meth:`ready`, so a missing model or dataset reads as that, not as a dead actor."""

    def __init__(self, setup: WorkerSetup, handed: dict[str, Any]):
        self.error: str | None = None
        self.ex: ItemExecutor | None = None
        try:
            self.ex = ItemExecutor(setup, **handed)
        except Exception as e:      # reported by ready()
            self.error = f"{type(e).__name__}: {e}"

    def ready(self) -> dict[str, Any]:
        import ray
        info = getattr(self.ex.backend, "info", None) if self.ex else None
        return {"pid": os.getpid(), "node": ray.util.get_node_ip_address(),
                "error": self.error, "model": info}

    def run(self, item: Item) -> ItemResult:
        return self.ex.run(item)


def worker_env() -> dict[str, str]:
    """What the actors see of the driver's environment: set per eval (not per Ray instance),
    since one driver may run evals for several home folders. Every node imports the
    workbench from the checkout at the driver's path (and finds the demo world beside it)."""
    env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", ""))
                                        if p)
    return env


def _token_auth_like_ray_start(address: str | None) -> None:
    """`ray start` turns token authentication on when a token exists (~/.ray/auth_token or
    RAY_AUTH_TOKEN); a driver joining it must as well, and Ray reads the mode at import."""
    if address and "RAY_AUTH_MODE" not in os.environ and (
            os.environ.get("RAY_AUTH_TOKEN") or (Path.home() / ".ray" / "auth_token").exists()):
        os.environ["RAY_AUTH_MODE"] = "token"


def _reachable(address: str) -> None:
    """A HOST:PORT nobody listens on is reported at once (Ray itself keeps retrying)."""
    import socket
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or address.startswith("ray://"):
        return                     # "auto" and client addresses: Ray resolves them
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as e:
        raise RayWorkerError(
            f"no Ray cluster answers at {address} ({e}). Start one there with `ray start "
            f"--head --port {port}` (see the README), or leave out --ray-address to start a "
            f"local Ray instance.") from e


def connect(address: str | None, min_cpus: float = 0) -> bool:
    """Join the cluster at ``address`` ("auto": the one `ray start` set up on this machine),
    or start a local Ray instance. Returns whether this call did it (and so must shut it
    down); an already connected driver (a notebook, a test, a benchmark) is reused."""
    import logging

    import ray
    if ray.is_initialized():
        return False
    kw: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False,
                              logging_level=logging.WARNING)
    if address:
        _reachable(address)
        try:
            ray.init(address=address, **kw)
        except ConnectionError as e:
            raise RayWorkerError(
                f"cannot join the Ray cluster at {address!r} ({e}). Start it with `ray start "
                f"--head` (see the README), or leave out --ray-address to start a local "
                f"Ray instance.") from e
    else:
        ray.init(num_cpus=max(os.cpu_count() or 1, int(min_cpus + 0.999)),
                 object_store_memory=100 * 1024 * 1024, **kw)
    return True


def actor_backend(runner: "EvalRunner", cpus: float, isolate: bool) -> dict[str, Any]:
    """The backend spec the actors build: the driver's settings resolved here (a node's own
    settings file must not change the model), one llama.cpp thread per CPU the actor holds."""
    spec = runner.backend_spec
    if spec.get("kind", "settings") != "settings":
        return spec
    from .. import settings as settings_mod
    s = settings_mod.load()
    ov = {"backend": s.backend, "model": s.model, "n_gpu_layers": s.n_gpu_layers,
          "n_ctx": s.n_ctx, "n_batch": s.n_batch, "seed": s.seed, "server_url": s.server_url,
          "server_model": s.server_model, "n_threads": max(1, int(cpus))}
    ov.update({k: v for k, v in (spec.get("overrides") or {}).items() if v is not None})
    ov["isolate_model"] = isolate
    return {**spec, "overrides": ov}


def death_cause(e: BaseException, worker: dict[str, Any] | None) -> str:
    """One line for a dead actor: Ray's exit detail, or the error its constructor raised."""
    text = str(e).strip()
    m = re.search(r"Worker exit detail: ([^\n]*?)(?:\. |\n|$)", text)
    errors = re.findall(r"^\w*(?:Error|Exception): .*$", text, re.M)
    detail = m.group(1) if m else errors[-1] if errors else \
        text.splitlines()[0] if text else type(e).__name__
    if worker is None:
        return f"a Ray worker could not start: {detail}"
    return (f"Ray worker died while running the item (pid {worker.get('pid')} on "
            f"{worker.get('node')}): {detail}")


def _death_errors() -> tuple[type, ...]:
    import ray.exceptions as E
    return tuple(getattr(E, n) for n in ("RayActorError", "WorkerCrashedError", "OutOfMemoryError",
                                         "NodeDiedError") if hasattr(E, n))


def run_ray(runner: "EvalRunner", items: Iterator[Item], on_result: Callable[[ItemResult], None],
            opts: dict[str, Any]) -> None:
    _token_auth_like_ray_start(opts.get("address"))
    import ray
    cpus = float(opts.get("cpus") or 1)
    gpus = float(opts.get("gpus") or 0)
    retries = int(opts.get("retries", 1))
    started = connect(opts.get("address"), cpus * (opts.get("workers") or 1))
    n = opts.get("workers") or max(1, int(ray.cluster_resources().get("CPU", 1) // cpus))
    setup = runner.setup()
    setup.backend = actor_backend(runner, cpus, bool(opts.get("isolate_model", False)))
    handed = dict(runner.handed)
    if runner.judge_backend != "setup":
        handed["judge"] = runner.judge_backend
    Actor = ray.remote(EvalWorker).options(
        num_cpus=cpus, num_gpus=gpus, max_restarts=int(opts.get("max_restarts", 3)),
        max_task_retries=0, runtime_env={"env_vars": worker_env()})
    dies = _death_errors()
    actors = [Actor.remote(setup, handed) for _ in range(n)]
    info: dict[int, dict[str, Any]] = {}          # actor index -> ready() answer
    live: set[int] = set()
    probes: dict[Any, int] = {a.ready.remote(): i for i, a in enumerate(actors)}
    busy: collections.Counter[int] = collections.Counter()
    # ref -> (actor index, item, tries, the worker it was sent to: a restarted actor has
    # another pid, and an item lost with the old one must name the one that died)
    inflight: dict[Any, tuple[int, Item, int, dict[str, Any]]] = {}
    again: collections.deque[tuple[Item, int]] = collections.deque()
    source = iter(items)
    peeked: list[Item] = []
    start_timeout = float(opts.get("start_timeout_s", 600))
    deadline = time.monotonic() + start_timeout
    last_cause = ""

    def has_work() -> bool:
        if again or peeked:
            return True
        nxt = next(source, None)
        if nxt is not None:
            peeked.append(nxt)
        return bool(peeked)

    def next_item() -> tuple[Item, int] | None:
        if again:
            return again.popleft()
        return (peeked.pop(), 0) if has_work() else None

    def on_machine(r: ItemResult, i: int) -> ItemResult:
        """Record how many actors shared actor i's machine: their items ran beside its own,
        like a local eval's threads (its CPU meter counts them as other work)."""
        node = info.get(i, {}).get("node")
        beside = sum(1 for w in info.values() if w.get("node") == node) if node else 1
        r.row["items_at_once"] = max(r.row.get("items_at_once") or 1, beside)
        return r

    def lost(item: Item, cause: str) -> ItemResult:
        from ..llm.base import ModelInfo
        model = next((w["model"] for w in info.values() if w.get("model")), None)
        return lost_item(setup, item, cause, runner.method_classes[item.variant["method"]],
                         model or ModelInfo(name="unknown"))

    try:
        while True:
            for i in sorted(live, key=lambda j: busy[j]):
                while busy[i] < IN_FLIGHT_PER_WORKER and (got := next_item()) is not None:
                    inflight[actors[i].run.remote(got[0])] = (i, *got, info.get(i, {}))
                    busy[i] += 1
            if not inflight:
                if not has_work():
                    break
                if not probes:
                    raise RayWorkerError(f"all {n} Ray workers died; the last cause: {last_cause}")
            timeout = None if inflight else max(1.0, deadline - time.monotonic())
            done, _ = ray.wait(list(inflight) + list(probes), num_returns=1, timeout=timeout)
            if not done:
                raise RayWorkerError(
                    f"no Ray worker was ready within {start_timeout:g} s: each asks for "
                    f"{cpus:g} CPU(s) and {gpus:g} GPU(s); free in the cluster: "
                    f"{ray.available_resources()} (`ray status` shows the nodes)")
            ref = done[0]
            if ref in probes:
                i = probes.pop(ref)
                try:
                    w = ray.get(ref)
                except dies as e:
                    if type(e).__name__ == "ActorUnavailableError":   # still restarting
                        time.sleep(0.2)
                        probes[actors[i].ready.remote()] = i
                    else:                    # restarts used up, or it never started
                        last_cause = death_cause(e, None if i not in info else info[i])
                    continue
                if w["error"]:
                    raise RayWorkerError(f"a Ray worker could not start on {w['node']}: "
                                         f"{w['error']}")
                info[i] = w
                live.add(i)
                continue
            i, item, tries, sent_to = inflight.pop(ref)
            busy[i] -= 1
            try:
                r = ray.get(ref)
            except dies as e:
                last_cause = death_cause(e, sent_to)
                if i in live:                # wait until Ray has restarted it (or given up)
                    live.discard(i)
                    probes[actors[i].ready.remote()] = i
                    deadline = time.monotonic() + start_timeout
                if tries < retries:
                    again.append((item, tries + 1))
                else:
                    on_result(lost(item, last_cause))
                continue
            on_result(on_machine(r, i))
    except BaseException:
        # keep what finishes while stopping; what does not is run again on resume
        grace = float(opts.get("stop_grace_s", 10))
        if inflight:
            done, _ = ray.wait(list(inflight), num_returns=len(inflight), timeout=grace)
            for ref in done:
                try:
                    keep(ray.get(ref), on_result)
                except Exception:
                    continue
        raise
    finally:
        for a in actors:
            ray.kill(a)
        if started:
            ray.shutdown()
