"""whatif: re-run a stored run with one intervention on one node, behind its stored calls
(workbench/analysis/whatif.py)."""
from __future__ import annotations

import argparse

from ..store import Store
from ._common import add_model_args, backend_from_args, number


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "whatif", help="re-run a stored run with an intervention on one node; unchanged "
        "calls are replayed from the store, only the calls downstream of the node run")
    p.add_argument("run_id", metavar="RUN_ID", help="the stored run (`runs list`)")
    p.add_argument("--node", required=True, help="the node to change (`runs show RUN_ID`)")
    p.add_argument("--drop", action="append", default=[], metavar="ID",
                   help="drop this evidence of the node: a passage id, a KG triple or path "
                        "id (repeatable)")
    p.add_argument("--add", action="append", default=[], metavar="TEXT",
                   help="add a passage with this text to the node's evidence (repeatable)")
    p.add_argument("--add-id", action="append", default=[], metavar="ID", dest="add_ids",
                   help="add the dataset passage with this id (repeatable)")
    p.add_argument("--step", metavar="TEXT",
                   help="replace the node's sub-question / step text")
    p.add_argument("--verdict", choices=["sufficient", "insufficient", "pass", "fail"],
                   help="force the node's verdict (CRP-RAG sufficiency; PAR-RAG or CogGRAG "
                        "review)")
    p.add_argument("--json", action="store_true",
                   help="a JSON summary as the last line")
    add_model_args(p)
    p.set_defaults(func=cmd_whatif)

    p = sub.add_parser(
        "attribute", help="leave-one-out over a node's evidence, or over the nodes of the "
        "answer's path: per item, does the answer or its correctness change (each a replayed "
        "what-if)")
    p.add_argument("run_id", metavar="RUN_ID", help="the stored run (`runs list`)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--node", help="the node whose evidence is attributed")
    which.add_argument("--answer-path", action="store_true",
                       help="drop all evidence of one node of the answer's path at a time: "
                            "which nodes the answer depends on")
    p.add_argument("--limit", type=number(int, 1), help="at most this many evidence items")
    p.add_argument("--loo-max", type=number(int, 1), default=12,
                   help="above this many items, random ablations and a linear surrogate "
                        "instead of one re-run per item (default 12)")
    p.add_argument("--samples", type=number(int, 2),
                   help="random ablations of the surrogate (default: twice the items)")
    p.add_argument("--together", type=number(int, 1), default=1, metavar="K",
                   help="run K variants at once, their fresh LLM calls decoded together as one "
                        "llama.cpp batch: for a GPU; on a few CPU cores it is slower (the "
                        "variants one at a time share their prompts through the KV cache). "
                        "Default 1")
    p.add_argument("--keep-runs", action="store_true",
                   help="store each variant as a run with parent_run_id (default: not stored)")
    p.add_argument("--json", action="store_true", help="a JSON summary as the last line")
    add_model_args(p)
    p.set_defaults(func=cmd_attribute)


def _refusal_as_json(func):
    """With --json, a refused what-if also prints its reason code and message as the last
    line of stdout (then the usual error on stderr, exit 2)."""
    import functools
    import json

    @functools.wraps(func)
    def run(args: argparse.Namespace) -> int:
        from ..analysis.whatif import WhatIfError
        try:
            return func(args)
        except WhatIfError as e:
            if args.json:
                print(json.dumps({"error": e.code, "message": str(e)}))
            raise
    return run


@_refusal_as_json
def cmd_whatif(args: argparse.Namespace) -> int:
    from ..analysis.whatif import check, whatif
    from ..methods.intervene import Intervention
    iv = Intervention(node=args.node, drop=list(args.drop), add=list(args.add),
                      add_ids=list(args.add_ids), step=args.step, verdict=args.verdict)
    st = Store()
    check(st, args.run_id, iv)          # bad input fails before the model loads
    res = whatif(st, args.run_id, iv, llm=backend_from_args(args))
    print(res.summary())
    if args.json:
        print(res.json_line())
    return 0


@_refusal_as_json
def cmd_attribute(args: argparse.Namespace) -> int:
    from ..analysis.attribute import attribute, attribute_path, precheck
    st = Store()
    precheck(st, args.run_id, None if args.answer_path else args.node)   # before the model loads
    if args.answer_path:
        res = attribute_path(st, args.run_id, llm=backend_from_args(args), write=args.keep_runs,
                             together=args.together)
    else:
        res = attribute(st, args.run_id, args.node, llm=backend_from_args(args),
                        write=args.keep_runs, limit=args.limit, loo_max=args.loo_max,
                        samples=args.samples, together=args.together)
    print(res.summary())
    if args.json:
        print(res.json_line())
    return 0
