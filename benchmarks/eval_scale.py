"""A 1,000-question eval over the scripted backend: throughput and flat memory.

Runs the real batch runner (standard-rag with BM25 over a synthetic 2,000-passage corpus,
or a toy method if the baselines are absent) into a temporary store, samples the
process's resident memory every 100 items and prints the curve, the peak RSS and the
growth from item 200 to the end (what "flat" means: no per-item leak). Last line: JSON.
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


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


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
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
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


if __name__ == "__main__":
    main()
