"""frag train-router / route / feedback: FRAG's hop-range classifier (``router.py``) and the
paper's batch FRAG-F (``feedback.py``). The CLI finds this module because the package has
one (``workbench/cli.py``)."""
from __future__ import annotations

import argparse
import json
import sys

from ...commands._common import add_model_args, backend_from_args, number


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("frag", help="FRAG's simple/complex question router")
    fs = p.add_subparsers(dest="frag_action", metavar="ACTION")

    t = fs.add_parser("train-router", help="train the TF-IDF + logistic-regression router on "
                                           "one question split (plus template questions from "
                                           "its KG), report in-sample and held-out accuracy")
    t.add_argument("--train", default="demo:train", metavar="DATASET:SPLIT",
                   help="the questions it learns from (default demo:train)")
    t.add_argument("--name", help="artefact name (default: from --train, e.g. demo-train)")
    t.add_argument("--per-hop", type=number(int, 0), default=60,
                   help="template questions generated per hop count from the dataset's KG")
    t.add_argument("--seed", type=number(int, 0), default=0)
    t.add_argument("--json", action="store_true")
    t.set_defaults(func=cmd_train)

    r = fs.add_parser("route", help="show the router's guess for a question")
    r.add_argument("question")
    r.add_argument("--estimator", choices=["tfidf_lr", "heuristic"], default="tfidf_lr")
    r.add_argument("--router", default="demo:train",
                   help="router name or DATASET:SPLIT it is trained on (default demo:train)")
    r.add_argument("--threshold", type=number(float, 0, 1), default=0.5)
    r.set_defaults(func=cmd_route)

    f = fs.add_parser("feedback", help="FRAG-F as in the paper: LLM feedback on a share of a "
                                       "question set adapts a copy of the router, saved as a "
                                       "new named router (evaluate with --set router=NAME)")
    f.add_argument("--dataset", default="demo")
    f.add_argument("--split", default="test",
                   help="the question set feedback is collected on (the paper: the evaluated "
                        "questions themselves; eval then needs --allow-leakage)")
    f.add_argument("--router", default="", help="the router to adapt (default: FRAG's)")
    f.add_argument("--ratio", type=number(float, 0, 1), default=0.25,
                   help="share of questions that give feedback (paper 0.25)")
    f.add_argument("--seed", type=number(int, 0), default=0,
                   help="order of the questions (paper 0)")
    f.add_argument("--name", help="name of the adapted router")
    f.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a FRAG knob for the retrieval behind the feedback")
    f.add_argument("--json", action="store_true")
    add_model_args(f)
    f.set_defaults(func=cmd_feedback)
    p.set_defaults(func=lambda a: (p.print_help(), 1)[1])


def cmd_train(args: argparse.Namespace) -> int:
    from .router import train_router
    _, rep = train_router(args.train, name=args.name, per_hop=args.per_hop, seed=args.seed)
    if args.json:
        print(json.dumps(rep, indent=2))
        return 0
    print(f"router {rep['name']!r} trained on {rep['train']}: {rep['n_questions']} questions "
          f"+ {rep['n_templates']} template questions, labels {rep['labels']}, "
          f"in {rep['train_seconds']} s")
    print(f"  routing accuracy on {rep['train']} (in-sample): {rep['in_sample_accuracy']}")
    for split, h in rep["heldout"].items():
        print(f"  routing accuracy on {split} (held out, n={h['n']}): {h['accuracy']}  "
              f"(heuristic {h['heuristic_accuracy']})")
    print(f"saved {rep['path']}")
    return 0


def cmd_route(args: argparse.Namespace) -> int:
    from . import router as frag_router
    if args.estimator == "heuristic":
        est = frag_router.HeuristicRouter().estimate(args.question, args.threshold)
    else:
        r = frag_router.load_router(args.router, auto_train=True)
        if r is None:
            raise LookupError(f"no router {args.router!r}: train one with `python -m workbench "
                              f"frag train-router --train DATASET:SPLIT`, or use --estimator "
                              f"heuristic")
        est = r.estimate(args.question, args.threshold)
    print(f"{est.label.upper()}  p_complex={est.p_complex:.3f}  (threshold {est.threshold}, "
          f"{est.estimator})")
    return 0


def cmd_feedback(args: argparse.Namespace) -> int:
    from ...config import parse_sets
    from .feedback import build_feedback_router
    llm = backend_from_args(args)
    _, rep = build_feedback_router(
        llm, args.dataset, args.split, base=args.router, ratio=args.ratio, seed=args.seed,
        name=args.name, overrides=parse_sets(args.set),
        echo=None if args.json else (lambda s: print(s, file=sys.stderr)))
    if args.json:
        print(json.dumps(rep, indent=2))
        return 0
    print(f"adapted router {rep['name']!r} from {rep['base']!r}: {rep['feedback']} feedback "
          f"labels from {rep['consulted']} of {rep['questions']} questions "
          f"(target {rep['target']}); {rep['rerouted']} question(s) now routed differently")
    print(f"saved {rep['path']}; evaluate with --set router={rep['name']}")
    return 0
