"""frag train-router / frag route: FRAG's hop-range classifier (see methods/frag_router.py)."""
from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("frag", help="FRAG's simple/complex question router")
    fs = p.add_subparsers(dest="frag_action", metavar="ACTION")

    t = fs.add_parser("train-router", help="train the TF-IDF + logistic-regression router on "
                                           "questions with known hop counts and save it")
    t.add_argument("--per-hop", type=int, default=60,
                   help="template questions generated per hop count from the demo KG")
    t.add_argument("--datasets", nargs="*",
                   help="datasets whose questions carry hop counts (default: all available)")
    t.add_argument("--no-demo", action="store_true",
                   help="keep the demo world's hand-written questions out of training")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--json", action="store_true")
    t.set_defaults(func=cmd_train)

    r = fs.add_parser("route", help="show the router's guess for a question")
    r.add_argument("question")
    r.add_argument("--estimator", choices=["tfidf_lr", "heuristic"], default="tfidf_lr")
    r.add_argument("--threshold", type=float, default=0.5)
    r.set_defaults(func=cmd_route)
    p.set_defaults(func=lambda a: (p.print_help(), 1)[1])


def cmd_train(args: argparse.Namespace) -> int:
    from ..methods.frag_router import train_router
    _, rep = train_router(datasets=args.datasets, per_hop=args.per_hop, seed=args.seed,
                          include_demo=not args.no_demo)
    if args.json:
        print(json.dumps(rep, indent=2))
        return 0
    print(f"trained on {sum(rep['sources'].values())} questions {rep['sources']} "
          f"labels {rep['labels']} in {rep['train_seconds']} s")
    for k in ("heldout_demo_accuracy", "cv5_demo_accuracy", "heuristic_demo_accuracy",
              "train_accuracy"):
        if rep.get(k) is not None:
            print(f"  {k}: {rep[k]:.3f}")
    print(f"saved {rep['path']}")
    return 0


def cmd_route(args: argparse.Namespace) -> int:
    from ..methods import frag_router
    if args.estimator == "heuristic":
        est = frag_router.HeuristicRouter().estimate(args.question, args.threshold)
    else:
        r = frag_router.load_router(auto_train=True)
        if r is None:
            raise LookupError("no router could be trained (no questions with hop counts); "
                              "use --estimator heuristic")
        est = r.estimate(args.question, args.threshold)
    print(f"{est.label.upper()}  p_complex={est.p_complex:.3f}  (threshold {est.threshold}, "
          f"{est.estimator})")
    return 0
