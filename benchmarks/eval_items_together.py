"""Eval items decoded together (``eval --items-together K``) against one item at a time.

The same eval (dataset, split, methods, questions) runs twice on one model in one process,
into a temporary store: with K items at once whose single LLM calls share llama.cpp batches,
and one by one. Printed per K: wall time per item, the speed-up, how many answers differ
(llama.cpp's numbers in a batch differ in the last bits), accuracy (the dataset's primary
metric) and token F1 both ways with the paired difference and its 95% bootstrap interval.
Last line: JSON.

    python benchmarks/eval_items_together.py --methods standard-rag --split test --limit 8
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default="standard-rag")
    ap.add_argument("--dataset", default="demo")
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--together", default="4", help="comma-separated K values to compare with 1")
    ap.add_argument("--model", help="bundled model name or a .gguf path (default: Settings)")
    ap.add_argument("--set", action="append", default=[], metavar="METHOD.KEY=VALUE")
    args = ap.parse_args()

    from workbench.config import parse_sets
    from workbench.cpu_share import Meter, describe
    from workbench.eval import metrics as M
    from workbench.eval.item_executor import make_backend
    from workbench.eval.runner import EvalRunner, EvalSpec
    from workbench.store import Store

    overrides = {"model": args.model} if args.model else {}
    backend_spec = {"kind": "settings", "overrides": overrides}
    backend = make_backend(backend_spec)          # one model for every run, loaded once
    spec = EvalSpec(args.dataset, args.methods.split(","), judge="off", split=args.split,
                    limit=args.limit, sets=parse_sets(args.set))
    ks = [1] + [int(k) for k in args.together.split(",") if int(k) > 1]
    with tempfile.TemporaryDirectory() as tmp:
        st = Store(Path(tmp) / "bench.duckdb")
        # warm-up, not timed: the embedder, the indexes and the first call's caches
        from dataclasses import replace
        EvalRunner.new(st, replace(spec, limit=1), backend=backend,
                       backend_spec=backend_spec).run()
        runs = {}
        meter = Meter()
        for k in ks:
            r = EvalRunner.new(st, spec, backend=backend, backend_spec=backend_spec,
                               items_together=k)
            t0 = time.perf_counter()
            r.run()
            wall = time.perf_counter() - t0
            rows = st.query("SELECT i.question_id, i.method, i.correct, i.f1, r.answer FROM "
                            "eval_items i JOIN runs r USING (run_id) WHERE i.eval_id = ? "
                            "ORDER BY 1, 2", [r.eval_id])
            runs[k] = {"wall_s": wall, "rows": rows}
            print(f"items together {k}: {len(rows)} items in {wall:.1f} s "
                  f"({wall / max(len(rows), 1):.2f} s/item)", flush=True)
        base = runs[1]
        out = {"model": getattr(backend.info, "name", "?"), "methods": spec.methods,
               "dataset": args.dataset, "split": args.split, "n_items": len(base["rows"]),
               "cpu_others": meter.share(),
               "one_by_one": {"s_per_item": round(base["wall_s"] / max(len(base["rows"]), 1), 3),
                              "accuracy": _mean(base["rows"], "correct"),
                              "token_f1": _mean(base["rows"], "f1")}}
        for k in ks[1:]:
            rows = runs[k]["rows"]
            acc = M.paired_bootstrap([float(bool(x["correct"])) for x in rows],
                                     [float(bool(x["correct"])) for x in base["rows"]])
            f1 = M.paired_bootstrap([float(x["f1"] or 0) for x in rows],
                                    [float(x["f1"] or 0) for x in base["rows"]])
            res = {"s_per_item": round(runs[k]["wall_s"] / max(len(rows), 1), 3),
                   "speedup": round(base["wall_s"] / max(runs[k]["wall_s"], 1e-9), 3),
                   "answers_differ": sum(a["answer"] != b["answer"]
                                         for a, b in zip(rows, base["rows"])),
                   "accuracy": _mean(rows, "correct"), "token_f1": _mean(rows, "f1"),
                   "accuracy_diff_ci95": [round(v, 3) for v in acc],
                   "token_f1_diff_ci95": [round(v, 3) for v in f1]}
            out[f"together_{k}"] = res
            print(f"K={k}: {res['s_per_item']} s/item against "
                  f"{out['one_by_one']['s_per_item']} (x{res['speedup']}), answers differ "
                  f"{res['answers_differ']}/{len(rows)}, accuracy {res['accuracy']} vs "
                  f"{out['one_by_one']['accuracy']} (diff {res['accuracy_diff_ci95']}), "
                  f"token F1 {res['token_f1']} vs {out['one_by_one']['token_f1']}", flush=True)
    print(describe(out["cpu_others"]))
    print(json.dumps(out))


def _mean(rows: list[dict], key: str) -> float:
    return round(sum(float(x[key] or 0) for x in rows) / max(len(rows), 1), 3)


if __name__ == "__main__":
    main()
