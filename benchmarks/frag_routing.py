"""FRAG's router: routing accuracy in-sample against held out (no LLM).

Labels are the paper's: SIMPLE iff the KG shortest path from a topic entity to an answer
entity is at most 2 hops. Two routers are trained on the same template questions from
the dataset's KG plus:

* ``train``: the train split only (the default; what FRAG uses);
* ``all``: every question of the dataset, the test split included (what the router used to
  do), so its accuracy on the test split is in-sample.

For each router the script prints its accuracy on every split, and the heuristic
estimator's for reference. The last line is one JSON object.

    python benchmarks/frag_routing.py [--dataset demo] [--per-hop 60] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.datasets import load_dataset  # noqa: E402
from workbench.methods.frag import router as R  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="demo")
    ap.add_argument("--per-hop", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    ds = load_dataset(args.dataset)
    kg = ds.kg() if ds.has_kg else None
    data = {s: R.labelled_questions(ds.split(s), kg) for s in sorted(ds.split_counts)}
    out: dict = {"dataset": ds.name, "n": {s: len(v) for s, v in data.items()},
                 "labels": {s: {"complex": sum(x.label for x in v),
                                "simple": sum(1 - x.label for x in v)} for s, v in data.items()}}
    with tempfile.TemporaryDirectory() as tmp:
        for fit in ("train", "all"):
            r, rep = R.train_router(f"{ds.name}:{fit}", out_dir=Path(tmp), name=f"bench-{fit}",
                                    per_hop=args.per_hop, seed=args.seed)
            acc = {s: R.accuracy(r, v) for s, v in data.items()}
            seen = {s: (fit == "all" or s == fit) for s in data}
            out[f"router_{fit}"] = {"accuracy": acc, "in_sample": seen,
                                    "n_templates": rep["n_templates"]}
            print(f"router fitted on {ds.name}:{fit} (+{rep['n_templates']} template questions)")
            for s, a in acc.items():
                print(f"  {s:6s} n={len(data[s]):3d}  routing accuracy {a}  "
                      f"({'in-sample' if seen[s] else 'held out'})")
    out["heuristic"] = {s: R.accuracy(R.HeuristicRouter(), v) for s, v in data.items()}
    print(f"heuristic (no training): {out['heuristic']}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
