"""Eval throughput and memory.

Default: a 1,000-question eval over the scripted backend. Runs the real batch runner
(standard-rag with BM25 over a synthetic 2,000-passage corpus, or a toy method if the
baselines are absent) into a temporary store, samples the process's resident memory every
100 items and prints the curve, the peak RSS and the growth from item 200 to the end (what
"flat" means: no per-item leak).

``--executor ray``: items/s for 1, 2 and 4 workers, local executor (threads, each with its
model in a worker process) against Ray actors on one local Ray instance, on the same
scripted items and real SmolLM2 items (vanilla on the demo questions), with the driver's
peak memory for each; then the Ray actor's model in-process against isolated in a model
process of its own. Last line: JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def rss_mb() -> float:
    return _status_mb("VmRSS")


class SynthDataset:
    name = "synthetic"

    def __init__(self, n: int):
        from workbench.datasets.base import Passage, Question
        words = ["river", "castle", "engine", "violin", "harbour", "comet", "orchard", "lantern"]
        self.questions = [Question(id=f"s{i:05d}", question=f"Which {words[i % 8]} is linked to "
                                   f"entity{i} in region{i % 37}?", answers=[f"answer{i}"],
                                   hops=1 + i % 3, type=["bridge", "comparison"][i % 2])
                          for i in range(n)]
        self.passages = [Passage(id=f"p{i}", title=f"Entity {i}",
                                 text=f"entity{i} in region{i % 37} is linked to answer{i}; "
                                      f"the {words[i % 8]} stands near it. " * 3)
                         for i in range(2 * n)]
        self._bm25 = None

    def retriever(self, kind: str = "bm25"):
        if self._bm25 is None:
            from workbench.knowledge.bm25 import BM25Retriever
            self._bm25 = BM25Retriever(self.passages)
        return self._bm25


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=None,
                    help="scripted questions (default 1000; 200 with --executor ray)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--executor", choices=["local", "ray"], default="local")
    ap.add_argument("--real-items", type=int, default=8,
                    help="with --executor ray: demo questions run with SmolLM2")
    args = ap.parse_args()
    if args.executor == "ray":
        ray_main(args)
        return
    args.questions = args.questions or 1000
    home = tempfile.mkdtemp(prefix="wb-evalscale-")
    os.environ["WORKBENCH_HOME"] = home
    from workbench.eval.runner import EvalRunner, EvalSpec
    from workbench.llm.scripted import ScriptedBackend
    from workbench.methods import all_methods
    from workbench.store import Store

    ms = all_methods()
    if "standard-rag" in ms:
        methods, classes, sets = ["standard-rag"], ms, {"retriever": "bm25", "top_k": 3}
    else:  # pragma: no cover - before the baselines land
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from test_eval_helpers import toy_methods
        methods, classes, sets = ["toy-rag"], toy_methods(), {"k": 3}
    ds = SynthDataset(args.questions)
    be = ScriptedBackend(default="answer7")   # one right answer in 1,000
    st = Store(Path(home) / "bench.duckdb")
    r = EvalRunner.new(st, EvalSpec("synthetic", methods, sets=sets, judge="off"), backend=be,
                       dataset=ds, method_classes=classes, workers=args.workers)
    ds.retriever()                             # build the index before timing
    samples: list[tuple[int, float]] = []
    rss0 = rss_mb()
    t0 = time.perf_counter()

    def progress(p) -> None:
        if p.done % 100 == 0 or p.done == p.total:
            samples.append((p.done, rss_mb()))

    res = r.run(progress)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    n_items = st.query("SELECT count(*) AS n FROM eval_items")[0]["n"]
    n_events = st.query("SELECT count(*) AS n FROM events")[0]["n"]
    at = dict(samples)
    base = at.get(200, samples[0][1])
    end = samples[-1][1]
    print(f"{res.n_done} items ({methods[0]}, scripted backend, {args.workers} worker(s)) in "
          f"{wall:.1f} s = {res.n_done / wall:.1f} items/s; {n_events} events stored")
    print("RSS by items done: " + ", ".join(f"{d}: {m:.0f} MB" for d, m in samples))
    print(f"RSS before the eval {rss0:.0f} MB; at 200 items {base:.0f} MB; at the end {end:.0f} MB "
          f"(growth {end - base:+.1f} MB); peak RSS {peak:.0f} MB")
    store_mb = (Path(home) / "bench.duckdb").stat().st_size / 1e6
    print(json.dumps({"questions": args.questions, "items": n_items, "events": n_events,
                      "wall_s": round(wall, 2), "items_per_s": round(res.n_done / wall, 1),
                      "rss_start_mb": round(rss0, 1), "rss_at_200_mb": round(base, 1),
                      "rss_end_mb": round(end, 1), "rss_growth_200_to_end_mb": round(end - base, 1),
                      "peak_rss_mb": round(peak, 1), "store_mb": round(store_mb, 1)}))


class WorkerMemory:
    """Peak summed RSS of this process's descendants (eval workers and their model
    processes; Ray's own daemons excluded), sampled every 0.2 s."""

    def __init__(self) -> None:
        import threading
        self.peak = 0.0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        import psutil
        skip = ("gcs_server", "raylet", "ray::DashboardAgent", "ray::RuntimeEnvAgent",
                "ray::IDLE", "log_monitor", "monitor.py", "dashboard")
        while not self._stop.wait(0.2):
            total = 0
            for p in psutil.Process().children(recursive=True):
                try:
                    cmd = " ".join(p.cmdline()[:3])
                    if not any(s in cmd for s in skip):
                        total += p.memory_info().rss
                except psutil.Error:
                    continue
            self.peak = max(self.peak, total / 1e6)

    def stop(self) -> None:
        self._stop.set()
        self._t.join()


def reset_peak() -> None:
    """Start a new VmHWM (peak RSS) window for this process (Linux)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_mb() -> float:
    return _status_mb("VmHWM")


def ray_main(args) -> None:
    home = tempfile.mkdtemp(prefix="wb-evalscale-ray-")
    os.environ["WORKBENCH_HOME"] = home
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import logging

    import ray
    from workbench.eval.runner import EvalRunner, EvalSpec
    from workbench.llm.scripted import ScriptedBackend
    from workbench.methods import all_methods
    from workbench.store import Store

    n_q = args.questions or 200
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f} at the start")
    ds = SynthDataset(n_q)
    ds.retriever()
    t = time.perf_counter()
    ray.init(num_cpus=max(4, os.cpu_count() or 1), include_dashboard=False, log_to_driver=False,
             object_store_memory=100 * 1024 * 1024, logging_level=logging.WARNING)
    ray_start_s = time.perf_counter() - t
    st = Store(Path(home) / "bench.duckdb")
    ms = all_methods()
    real_spec = {"kind": "settings", "overrides": {"model": "smollm2-135m", "n_ctx": 2048}}
    results: list[dict] = []

    def one(kind: str, executor: str, workers: int, isolate: bool | None = None) -> dict:
        if kind == "scripted":
            spec = EvalSpec("synthetic", ["standard-rag"], judge="off",
                            sets={"retriever": "bm25", "top_k": 3})
            kw = dict(backend=ScriptedBackend(default="answer7"), dataset=ds, method_classes=ms)
            n = n_q
        else:
            spec = EvalSpec("demo", ["vanilla"], judge="off", limit=args.real_items,
                            sets={"answer_max_tokens": 16})
            # both executors: one model per worker, the cores shared equally between them
            ov = {**real_spec["overrides"], "n_threads": max(1, (os.cpu_count() or 1) // workers)}
            kw = dict(backend_spec={**real_spec, "overrides": ov})
            n = args.real_items
        ray_opts = {"isolate_model": bool(isolate)} if executor == "ray" else None
        r = EvalRunner.new(st, spec, workers=workers, executor=executor, ray=ray_opts, **kw)
        reset_peak()
        stamps: list[float] = []
        workers_mb = WorkerMemory()
        t0 = time.perf_counter()
        try:
            res = r.run(lambda p: stamps.append(time.perf_counter()))
        finally:
            workers_mb.stop()
        wall = time.perf_counter() - t0
        assert res.n_new == n, res
        # after the first result: without starting workers and loading models
        steady = (n - 1) / (stamps[-1] - stamps[0]) if n > 1 and stamps[-1] > stamps[0] else None
        row = {"items": kind, "executor": executor, "workers": workers,
               "items_per_s": round(n / wall, 2), "wall_s": round(wall, 2),
               "steady_items_per_s": round(steady, 2) if steady else None,
               "first_result_s": round(stamps[0] - t0, 2),
               "driver_peak_mb": round(peak_mb(), 1), "workers_peak_mb": round(workers_mb.peak, 1)}
        if isolate is not None:
            row["model"] = "isolated" if isolate else "in-process"
        results.append(row)
        print(f"{kind:8s} {executor:5s} workers={workers} "
              f"{row.get('model', ''):10s} {n:4d} items in {wall:6.1f} s = "
              f"{row['items_per_s']:7.2f} items/s (after the first result, at "
              f"{row['first_result_s']:.1f} s: {row['steady_items_per_s'] or 0:7.2f}/s); "
              f"driver peak RSS {row['driver_peak_mb']:.0f} MB, its workers' "
              f"{row['workers_peak_mb']:.0f} MB", flush=True)
        return row

    from workbench.llm.registry import resolve, sha256_of
    sha256_of(resolve("smollm2-135m"))         # hashed and in the page cache before timing
    for kind in ("scripted", "real"):
        for w in (1, 2, 4):
            one(kind, "local", w)
            one(kind, "ray", w, isolate=False)
    for w in (1, 2):
        one("real", "ray", w, isolate=True)
    ray.shutdown()

    def rate(kind: str, ex: str, w: int, model: str | None = "in-process") -> float:
        return next(r["steady_items_per_s"] or r["items_per_s"] for r in results if r["items"] == kind and
                    r["executor"] == ex and r["workers"] == w and r.get("model") == model)

    cores = os.cpu_count() or 1
    real1, real2 = rate("real", "ray", 1), rate("real", "ray", 2)
    per_core = rate("real", "ray", min(cores, 4)) / min(cores, 4)
    driver_cap = max(r["steady_items_per_s"] or 0 for r in results
                     if r["items"] == "scripted" and r["executor"] == "ray")
    load_end = os.getloadavg()
    print(f"\nRay instance start {ray_start_s:.1f} s (once). Real items after the first result: "
          f"1 -> 2 Ray workers x{real2 / real1:.2f}, bounded by the {os.cpu_count()} cores all "
          f"workers share.")
    print(f"Per added machine of C cores: about C x {per_core:.2f} items/s more (one 1-core "
          f"worker per core, each with its own model, nothing shared but the driver), until "
          f"the driver's ceiling of about {driver_cap:.0f} items/s (its scripted-item rate "
          f"with Ray: receiving, scoring and writing each result).")
    print(f"load average at the end {load_end[0]:.1f} {load_end[1]:.1f} {load_end[2]:.1f}")
    print("re-run on a quiet machine: .venv/bin/python benchmarks/eval_scale.py --executor ray"
          f" --questions {n_q} --real-items {args.real_items}")
    print(json.dumps({"cores": os.cpu_count(), "load_start": round(load[0], 2),
                      "load_end": round(load_end[0], 2), "ray_start_s": round(ray_start_s, 2),
                      "scripted_items": n_q, "real_items": args.real_items,
                      "runs": results,
                      "real_speedup_ray_1_to_2": round(real2 / real1, 3),
                      "real_items_per_s_per_core": round(per_core, 3),
                      "driver_ceiling_items_per_s": round(driver_cap, 1)}))


if __name__ == "__main__":
    main()
