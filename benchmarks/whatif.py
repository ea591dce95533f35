"""What an intervention costs against running the question again.

For each method and demo question: one full run with the method's defaults (fresh, after a
warm-up run of another question, which loads the model and the indexes and leaves each kind
of call's instructions in the prompt cache), then two what-ifs of that run, each dropping the
first evidence item of one node: the last node that kept evidence, then the first one. A
what-if re-runs the method behind CallReplay of the run's own calls, so only the calls
downstream of the node run on the model. Prints, per case, fresh and replayed calls and wall
time, and the ratio of each what-if's wall time to the full run's (target for the late node:
<= 0.3), then per method the median ratios. The last line is JSON.

The questions are the demo test split's with three or more hops (one-hop runs keep
evidence at one node, where the first and the late node are the same).

    .venv/bin/python benchmarks/whatif.py                    # default model, 3 questions
    .venv/bin/python benchmarks/whatif.py --model smollm2-135m --questions 2 --methods crp-rag
    .venv/bin/python benchmarks/whatif.py --ids q014 --methods crp-rag --small

With ``--together K`` it also attributes the answer to the late node's evidence (leave-one-out,
then all dropped) twice: one variant at a time, then K at a time with their fresh calls
decoded as one batch; it prints both wall times, their ratio, and whether every variant's
answer agreed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import llama_cpp  # noqa: E402,F401  (before numpy: see docs/gpu.md)

from workbench.analysis.attribute import attribute, evidence_items  # noqa: E402
from workbench.analysis.whatif import whatif  # noqa: E402
from workbench.methods.intervene import Intervention  # noqa: E402

# --small: knobs that keep a default-model run within a few minutes on a slow 2-core
# machine. They cap CRP-RAG's graph at a node or two with evidence, so its late node's
# summary is a large share of the run (a late-node what-if of 0.64x on q014 with them, 0.08x
# on q029's 24-call run without; docs/whatif.md).
SMALL = {"crp-rag": {"max_nodes": 4, "samples_per_sink": 1, "max_iterations": 2},
         "par-rag": {}, "coggrag": {}}


def full_run(store, method: str, question: dict, llm, knobs: dict) -> tuple[str, float, int]:
    from workbench.execution import execute
    from workbench.workspace import build_context
    m, ctx = build_context(method, llm=llm, dataset="demo", overrides=knobs,
                           question_id=question["id"])
    t0 = time.perf_counter()
    evs = list(execute(m, ctx, question["question"], store=store, question_id=question["id"]))
    wall = time.perf_counter() - t0
    run_id = evs[0].run_id
    return run_id, wall, int(store.trace(run_id).totals()["llm_calls"])


def _attribute_both_ways(store, rid: str, node: str, llm, k: int) -> dict:
    walls, answers = {}, {}
    for n in (1, k):
        t0 = time.perf_counter()
        res = attribute(store, rid, node, llm=llm, together=n)
        walls[n] = time.perf_counter() - t0
        answers[n] = [e.answer for e in res.items + ([res.drop_all] if res.drop_all else [])]
    out = {"node": node, "variants": len(answers[1]), "alone_s": round(walls[1], 2),
           "together": res.together, "together_s": round(walls[k], 2),
           "ratio": round(walls[k] / walls[1], 3), "same_answers": answers[1] == answers[k]}
    print(f"  attribution of {node} ({out['variants']} variants): one at a time "
          f"{out['alone_s']:.1f} s, {out['together']} at a time {out['together_s']:.1f} s "
          f"({out['ratio']:.2f}x); same answers: {out['same_answers']}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="bundled name or .gguf (default: the default)")
    ap.add_argument("--methods", default="crp-rag,par-rag,coggrag")
    ap.add_argument("--questions", type=int, default=3,
                    help="demo test questions of three or more hops per method")
    ap.add_argument("--ids", default="", help="demo question ids instead (e.g. multi-hop ones, "
                    "whose runs keep evidence at several nodes)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--together", type=int, default=1, metavar="K",
                    help="also attribute the late node's evidence one variant at a time and K "
                         "at a time (K > 1)")
    ap.add_argument("--small", action="store_true",
                    help="cap each method's run (SMALL above) instead of its defaults")
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="wb-whatif-")
    os.environ["WORKBENCH_HOME"] = home
    from workbench.datasets import load_dataset
    from workbench.llm.registry import load_backend
    from workbench.store import Store
    over = {"isolate_model": False}
    if args.model:
        over["model"] = args.model
    if args.threads:
        over["n_threads"] = args.threads
    llm = load_backend(shared=False, **over)
    ds = load_dataset("demo")
    ids = [i.strip() for i in args.ids.split(",") if i.strip()]
    qs = [q.to_dict() if hasattr(q, "to_dict") else q for q in ds.questions
          if (q.id in ids if ids else q.split == "test" and (q.hops or 0) >= 3)]
    qs = qs if ids else qs[: args.questions]
    if not qs:
        ap.error(f"no demo question {args.ids!r}" if ids else "no demo test question")
    store = Store(Path(home) / "whatif.duckdb")
    rows = []
    print(f"model: {llm.info.name}; {len(qs)} demo test question(s); wall times in s")
    # warm-up on another question: model, indexes, embedder, and the prompt cache holding
    # each kind of call's instructions, as after any earlier run, but none of the measured
    # question's prompts (llm/prefix_store.py)
    others = [q.to_dict() if hasattr(q, "to_dict") else q for q in ds.questions
              if q.id not in {x["id"] for x in qs}]
    for method in args.methods.split(","):
        knobs = SMALL.get(method, {}) if args.small else {}
        full_run(store, method, others[0], llm, knobs)
        for q in qs:
            rid, wall, calls = full_run(store, method, q, llm, knobs)
            tr = store.trace(rid)
            nodes = [n for n in tr.nodes.values() if evidence_items(n)]
            if not nodes:
                print(f"{method} {q['id']}: no node kept evidence; skipped")
                continue
            # the late node first: it then finds the prompt cache as a what-if made right
            # after the run does, not holding the first node's what-if's prompts
            cases = {"late": nodes[-1], "first": nodes[0]}
            row = {"method": method, "question": q["id"], "full_s": round(wall, 2),
                   "full_calls": calls, "evidence_nodes": len(nodes)}
            for label, n in cases.items():
                if label == "first" and n is cases["late"]:
                    # one node with evidence: the same what-if again would find its own
                    # prompts in the cache
                    row[label] = row["late"]
                    continue
                drop = evidence_items(n)[0][0]
                t0 = time.perf_counter()
                res = whatif(store, rid, Intervention(n.id, drop=[drop]), llm=llm, write=False)
                w = time.perf_counter() - t0
                # beyond the model time of its fresh calls: replay, retrieval, bookkeeping
                row[label] = {"node": n.id, "fresh": res.fresh_calls,
                              "replayed": res.replayed_calls, "wall_s": round(w, 2),
                              "model_s": round(res.llm_ms / 1000, 2),
                              "other_s": round(w - res.llm_ms / 1000, 2),
                              "ratio": round(w / wall, 3) if wall else None,
                              "answer_changed": res.answer_changed}
            if args.together > 1:
                row["attribute"] = _attribute_both_ways(store, rid, cases["late"].id, llm,
                                                        args.together)
            rows.append(row)
            f, late = row["first"], row["late"]
            print(f"{method:8s} {q['id']}: full run {wall:6.1f} s, {calls} calls | first node "
                  f"{f['node']}: {f['fresh']} fresh / {f['replayed']} replayed, "
                  f"{f['wall_s']:.1f} s ({f['ratio']:.2f}x) | late node {late['node']}: "
                  f"{late['fresh']} fresh / {late['replayed']} replayed, {late['wall_s']:.1f} s "
                  f"({late['ratio']:.2f}x; target <= 0.3; {late['other_s']:.1f} s beside "
                  f"its fresh calls)")
    summary = {}
    for method in args.methods.split(","):
        mine = [r for r in rows if r["method"] == method]
        if not mine:
            continue
        # a run that kept evidence at one node has no late node apart from its first
        late = [r["late"]["ratio"] for r in mine if r["evidence_nodes"] > 1]
        summary[method] = {"questions": len(mine), "with_a_late_node": len(late),
                           "median_first": statistics.median(r["first"]["ratio"]
                                                             for r in mine),
                           "median_late": statistics.median(late) if late else None,
                           "late_within_0.3": sum(x <= 0.3 for x in late)}
        f = summary[method]
        print(f"{method:8s} over {len(mine)} question(s): median what-if / full run "
              f"{f['median_first']:.2f}x on the first node; "
              + (f"{f['median_late']:.2f}x on the late node ({f['late_within_0.3']} of "
                 f"{len(late)} within 0.3)" if late else "no run kept evidence at two nodes"))
    print(json.dumps({"model": llm.info.name, "knobs": "small" if args.small else "defaults",
                      "summary": summary, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
