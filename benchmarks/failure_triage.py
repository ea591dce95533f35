"""Knowledge-centric failure triage per method on a dataset with gold evidence: the
failure-class distribution and the gold-evidence recall at the question level (retrievals
made with the question itself, what single-shot retrieval sees) and at the node level
(every retrieval of the run, so a node that finds the second hop's paragraph counts).

    python benchmarks/failure_triage.py [--dataset hotpot100] [--limit 20]
        [--methods standard-rag,ircot,crp-rag,par-rag] [--model NAME_OR_GGUF]
        [--set crp-rag.top_k=5 ...] [--judge off] [--resume EVAL_ID] [--report EVAL_ID]

Runs go through the eval runner, so every run, its events and its triage are stored (the
Evaluate page and `python -m workbench eval show EVAL_ID` show the same figures); an
interrupted run continues with ``--resume EVAL_ID``. The dataset must be imported first,
for HotpotQA-100: ``python -m workbench import hotpotqa ../shared/data/hotpotqa-100
--name hotpot100`` (questions.json plus its corpus.json).

Prints the class counts and recall per method and, as its last line, one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from workbench.config import parse_sets  # noqa: E402
from workbench.eval import queries as Q  # noqa: E402
from workbench.eval.runner import EvalInterrupted, EvalRunner, EvalSpec  # noqa: E402
from workbench.store import Store  # noqa: E402
from workbench.triage import CLASSES  # noqa: E402
from workbench.triage import report  # noqa: E402
from workbench.triage import answer_trail  # noqa: E402
from workbench.triage import store as TS  # noqa: E402

METHODS = "standard-rag,ircot,crp-rag,par-rag"


def figures(st: Store, eval_id: str) -> dict:
    summ = TS.summary(st, eval_id)
    dist = TS.distribution(summ["classes"])
    acc = {r["series"]: r for r in Q.summary(st, eval_id, "correct")}
    eff = {r["series"]: r for r in Q.efficiency(st, eval_id)}
    out = {}
    for r in summ["recall"]:
        s = r["series"]
        out[s] = {"n": r["n"], "classes": dist.get(s, {c: 0 for c in CLASSES}),
                  "recall_q": r["recall_q"], "all_hops_q": r["all_q"], "n_q": r["n_q"],
                  "recall_node": r["recall_node"], "all_hops_node": r["all_node"],
                  "accuracy": acc.get(s, {}).get("mean"),
                  "wall_s_per_q": (eff.get(s, {}).get("wall_ms") or 0) / 1000.0}
    trail = answer_trail.funnel(st, eval_id)
    for r in trail:
        if r["series"] in out:
            out[r["series"]]["answer_trail"] = {s["stage"]: s["held"] for s in r["stages"]}
    return {"summary": summ, "methods": out, "trail": trail}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="hotpot100")
    ap.add_argument("--limit", type=int, default=20, help="first N questions")
    ap.add_argument("--methods", default=METHODS)
    ap.add_argument("--model", help="bundled model name or a .gguf path (default: Settings)")
    ap.add_argument("--threads", type=int, help="llama.cpp threads (default: Settings)")
    ap.add_argument("--workers", type=int, default=1,
                    help="parallel workers, each with its own model (more cores than 2 only)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a knob for every method, or METHOD.KEY=VALUE")
    ap.add_argument("--judge", default="off", help="LLM judge: off (string metrics, default), "
                    "same, or a model")
    ap.add_argument("--resume", metavar="EVAL_ID", help="continue an interrupted run")
    ap.add_argument("--report", metavar="EVAL_ID", help="only report a stored eval")
    args = ap.parse_args()

    st = Store()
    eval_id = args.report
    t0 = time.perf_counter()
    if eval_id is None:
        overrides = {k: v for k, v in {"model": args.model, "n_threads": args.threads}.items()
                     if v is not None}
        common = {"backend_spec": {"kind": "settings", "overrides": overrides},
                  "workers": args.workers}
        if args.resume:
            runner = EvalRunner.resume(st, args.resume, **common)
        else:
            from workbench.datasets import DatasetNotFound, load_dataset
            try:
                load_dataset(args.dataset)
            except DatasetNotFound as e:
                print(f"{e}\nFor HotpotQA-100: python -m workbench import hotpotqa "
                      f"../shared/data/hotpotqa-100 --name hotpot100", file=sys.stderr)
                return 2
            spec = EvalSpec(dataset=args.dataset, methods=args.methods.split(","),
                            limit=args.limit, sets=parse_sets(args.set), judge=args.judge,
                            label="benchmarks/failure_triage.py")
            runner = EvalRunner.new(st, spec, **common)
        eval_id = runner.eval_id
        print(f"eval {eval_id}: {len(runner.questions)} questions x {len(runner.variants)} "
              f"methods on {runner.spec.dataset}; resume with --resume {eval_id}",
              file=sys.stderr, flush=True)

        def progress(p) -> None:
            last = p.last or {}
            print(f"  {p.done}/{p.total} {last.get('method')} {last.get('question_id')} "
                  f"{'ok' if last.get('correct') else '--'} ({p.elapsed_s:.0f} s)",
                  file=sys.stderr, flush=True)
        try:
            runner.run(progress)
        except EvalInterrupted as e:
            print(f"interrupted after {e.done}/{e.total}; resume with --resume {eval_id}",
                  file=sys.stderr)
            return 130
    row = st.query("SELECT dataset, model_name, n_questions FROM eval_batches "
                   "WHERE eval_id = ?", [eval_id])[0]
    fig = figures(st, eval_id)
    print(f"eval {eval_id}: dataset {row['dataset']}, model {row['model_name']}, "
          f"{row['n_questions']} questions")
    print("\n".join(report.lines(fig["summary"]) + answer_trail.lines(fig["trail"])
                     + Q.timing_notes(Q.efficiency(st, eval_id)) + Q.warm_up_notes(st, eval_id)))
    print(json.dumps({"eval_id": eval_id, "dataset": row["dataset"], "model": row["model_name"],
                      "n_questions": row["n_questions"], "seconds": round(time.perf_counter() - t0, 1),
                      "methods": fig["methods"]}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
