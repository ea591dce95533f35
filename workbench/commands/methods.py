"""ask, methods: run one method on one question; list the methods and their knobs."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .. import trace as T
from ..config import NOT_IN_PAPER, STATUSES, KnobSpec, knobs, parse_sets, presets_of
from ..methods import all_methods
from ..execution import check_question, execute
from ..store import Store
from ._common import add_model_args, backend_from_args, settings_knob


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ask", help="answer one question with one method (the run is stored)")
    p.add_argument("question", nargs="?", help="the question (optional with --question-id)")
    p.add_argument("--method", default=None,
                   help="method name (see `python -m workbench methods`); default: the "
                        "reference method, standard RAG")
    p.add_argument("--dataset", help="dataset whose passages are searched (default: Settings)")
    p.add_argument("--question-id", help="a dataset question id: its gold answer is scored")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a method knob (repeatable)")
    p.add_argument("--preset", help="a named group of knobs, e.g. small-model (see `methods "
                   "NAME`); --set values win over it; recorded in the run's config")
    p.add_argument("--seed", type=settings_knob("seed"), help="run seed (default: Settings)")
    p.add_argument("--json", action="store_true", help="print the full trace as JSON")
    p.add_argument("--quiet", action="store_true", help="no live progress on stderr")
    add_model_args(p)
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("methods", help="list methods with their knobs and each knob's status")
    p.add_argument("name", nargs="?", help="show one method only")
    p.add_argument("--status", choices=list(STATUSES), action="append",
                   help="list only knobs of this status (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_methods)


def _progress(ev: T.Event, tr: T.Trace) -> str | None:
    if ev.type == T.PHASE:
        return f"[{ev.t_ms / 1000:7.2f}s] phase {ev.data.get('name')}"
    if ev.type == T.NODE_ADDED:
        return (f"[{ev.t_ms / 1000:7.2f}s]   + {ev.data.get('kind')} {ev.node_id}: "
                f"{str(ev.data.get('text', ''))[:70]}")
    if ev.type == T.NODE_SCORED:
        sc = ", ".join(f"{k}={v:.3g}" for k, v in ev.data.get("scores", {}).items()
                       if isinstance(v, (int, float)))
        return f"[{ev.t_ms / 1000:7.2f}s]     {ev.node_id} scored {sc}"
    if ev.type == T.PATH:
        return f"[{ev.t_ms / 1000:7.2f}s]   path {ev.data['path_id']} {ev.data['state']}"
    return None


def cmd_ask(args: argparse.Namespace) -> int:
    from ..methods.answers import contains_gold
    from ..workspace import build_context
    if args.question is not None:
        check_question(args.question)        # before the model loads
    overrides = parse_sets(args.set)
    if args.preset:
        overrides = {"preset": args.preset, **overrides}
    be = backend_from_args(args)
    name = args.method or next(n for n, cls in all_methods().items() if cls.reference)
    method, ctx = build_context(name, llm=be, dataset=args.dataset, overrides=overrides,
                                seed=args.seed, question_id=args.question_id)
    question = args.question or (ctx.gold.question if ctx.gold else None)
    if not question:
        raise ValueError("give a QUESTION, or --question-id with a dataset question id")
    tr = T.Trace()
    live = not (args.json or args.quiet)
    for ev in execute(method, ctx, question, store=Store(), question_id=args.question_id,
                      trace_out=tr):
        if live:
            line = _progress(ev, tr)
            if line:
                print(line, file=sys.stderr, flush=True)
    if args.json:
        print(tr.to_json(indent=1, default=str))
        return 0 if tr.status in ("finished", "refused") else 1
    print(_report(tr, ctx.gold))
    if ctx.gold and tr.answer and not tr.answer.get("refused"):
        ok = contains_gold(tr.answer.get("text", ""), ctx.gold.gold_answers)
        print(f"gold: {ctx.gold.answers!r} -> {'correct' if ok else 'incorrect'} (contains)")
    return 0 if tr.status in ("finished", "refused") else 1


def _report(tr: T.Trace, gold: Any) -> str:
    lines = []
    ans = tr.answer or {}
    if tr.status == "failed":
        lines.append(f"FAILED: {tr.summary.get('error')}")
    elif ans.get("refused"):
        lines.append(f"Refused: {ans.get('text')}")
        lines.append(f"reason: {ans.get('reason')}")
    else:
        lines.append(f"Answer: {ans.get('text')}")
        info = ans.get("info") or {}
        if info.get("answer_span"):          # the short answer was read out of this one
            lines.append(f"long answer: {info.get('full_answer')}")
    by_phase = tr.summary.get("by_phase", {})
    tot = tr.summary.get("totals", {})
    lines.append(f"run {tr.run_id} ({tr.method}, {tr.status}), {len(tr.nodes)} nodes, "
                 f"{len(tr.edges)} edges")
    lines.append(f"{'phase':10s} {'calls':>5s} {'prompt_tok':>10s} {'compl_tok':>9s} "
                 f"{'llm_s':>7s}")
    for ph, c in by_phase.items():
        lines.append(f"{ph:10s} {c['llm_calls']:5d} {c['prompt_tokens']:10d} "
                     f"{c['completion_tokens']:9d} {c['llm_ms'] / 1000:7.2f}")
    lines.append(f"{'total':10s} {tot.get('llm_calls', 0):5d} {tot.get('prompt_tokens', 0):10d} "
                 f"{tot.get('completion_tokens', 0):9d} {tot.get('llm_ms', 0) / 1000:7.2f}   "
                 f"wall {tr.last_t_ms / 1000:.2f} s")
    return "\n".join(lines)


def _knob_line(k: KnobSpec) -> str:
    rng = ""
    if k.choices:
        rng = " {" + "|".join(map(str, k.choices)) + "}"
    elif k.min is not None or k.max is not None:
        rng = f" [{'' if k.min is None else k.min}..{'' if k.max is None else k.max}]"
    paper = "" if k.paper == NOT_IN_PAPER else \
        (" [paper: same]" if k.paper == k.default else f" [paper: {k.paper}]")
    return f"    {k.name} = {k.default!r} ({k.type}{rng}) [{k.status}]{paper}: {k.description}"


def cmd_methods(args: argparse.Namespace) -> int:
    ms = all_methods()
    wanted = set(getattr(args, "status", None) or STATUSES)
    if args.name:
        if args.name not in ms:
            raise LookupError(f"unknown method {args.name!r}; available: {', '.join(ms)}")
        ms = {args.name: ms[args.name]}
    if args.json:
        out = []
        for name, cls in ms.items():
            out.append({"name": name, "title": cls.title, "kind": cls.kind, "view": cls.view,
                        "prompt_version": cls.prompt_version, "description": cls.description,
                        "thresholds": {k: list(v) for k, v in cls.thresholds.items()},
                        "knobs": [vars(k) for k in knobs(cls.Config)
                                  if k.status in wanted],
                        "presets": {n: {"description": p.description, "knobs": p.knobs}
                                    for n, p in presets_of(cls.Config).items()}})
        print(json.dumps(out, indent=2, default=str))
        return 0
    for name, cls in ms.items():
        print(f"{name}  —  {cls.title}  [{cls.kind}, view {cls.view}, "
              f"prompts {cls.prompt_version}]")
        if cls.description:
            print(f"  {cls.description}")
        if cls.thresholds:
            th = ", ".join(f"{s} ({k}, {d} is better)" for s, (k, d) in cls.thresholds.items())
            print(f"  thresholds: {th}")
        for k in knobs(cls.Config):
            if k.status in wanted:
                print(_knob_line(k))
        for pname, pre in presets_of(cls.Config).items():
            if pre.knobs:
                sets = ", ".join(f"{k}={v!r}" for k, v in pre.knobs.items())
                print(f"  preset {pname}: {sets}. {pre.description}")
        print()
    if not args.name:
        from ..eval.knobs import EVAL_KNOBS
        print("eval knobs (any method: `eval --set NAME=VALUE`)")
        for k in EVAL_KNOBS.values():
            if k.status in wanted:
                print(_knob_line(k))
        print()
    print("status: " + "; ".join(f"{s} = {d}" for s, d in STATUSES.items()))
    print("evidence: docs/methods/<method>.md, `methods --json` gives each knob's link")
    return 0
