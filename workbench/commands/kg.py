"""kg build / kg info: an LLM-extracted knowledge graph for a text-only dataset."""
from __future__ import annotations

import argparse
import json
import sys

from ._common import add_model_args, backend_from_args, number


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kg", help="build or inspect knowledge graphs (for the KG methods)")
    ks = p.add_subparsers(dest="kg_action", metavar="ACTION")

    b = ks.add_parser("build", help="extract a KG from a dataset's passages with the LLM "
                                    "(resumable; cached per corpus and model)")
    b.add_argument("dataset")
    b.add_argument("--limit", type=number(int, 1), help="only the first N (selected) passages")
    b.add_argument("--first", type=number(int, 1), metavar="N",
                   help="only the passages that came with the dataset's first N questions "
                        "(as the benchmarks' --first picks them)")
    b.add_argument("--split", help="only the passages that came with the questions of these "
                                   "splits (comma-separated, e.g. dev,test)")
    b.add_argument("--max-triples", type=number(int, 1), default=8,
                   help="triples per passage (default 8)")
    b.add_argument("--max-tokens", type=number(int, 1), default=320)
    b.add_argument("--batch", type=number(int, 1), default=4,
                   help="passages decoded together (default 4; 1 decodes one at a time)")
    b.add_argument("--restart", action="store_true", help="discard the checkpoint and start over")
    b.add_argument("--no-progress", action="store_true")
    add_model_args(b)
    b.set_defaults(func=cmd_build)

    i = ks.add_parser("info", help="the KGs a dataset has (its own and built ones)")
    i.add_argument("dataset")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_info)
    p.set_defaults(func=lambda a: (p.print_help(), 1)[1])


def cmd_build(args: argparse.Namespace) -> int:
    from ..datasets import load_dataset
    from ..knowledge.kg_build import build_kg
    ds = load_dataset(args.dataset)
    ids, selection = None, None
    if args.first or args.split:
        try:
            ids, selection = question_passages(ds, args.first, args.split)
        except LookupError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if not ids:
            print(f"error: the selected questions of {ds.name} came with no passages of their "
                  f"own (only datasets imported with per-question contexts, such as HotpotQA, "
                  f"have them); build without --first/--split, or with --limit",
                  file=sys.stderr)
            return 2
    llm = backend_from_args(args)
    res = build_kg(ds, llm, limit=args.limit, max_triples=args.max_triples,
                   max_tokens=args.max_tokens, batch=args.batch, progress=not args.no_progress,
                   restart=args.restart, passage_ids=ids, selection=selection,
                   echo=lambda s: print(s, file=sys.stderr))
    state = "complete" if res.complete else "partial (run again to resume)"
    print(f"{res.dataset}: {res.passages_total} selected passages {state}; "
          f"{res.passages_done}/{res.meta.get('passages_total')} corpus passages extracted, "
          f"{res.newly_done} new, {res.parse_failures} parse failures -> "
          f"{res.n_entities} entities, {res.n_triples} triples in {res.seconds:.1f} s; {res.dir}")
    return 0


def question_passages(ds, first: int | None, split: str | None) -> tuple[list[str], str]:
    """The ids of the passages that came with a set of questions (the first ``first``, then
    those of ``split``), so a KG can be built for the questions a benchmark will ask."""
    from ..datasets import splits
    pool = ds.questions[:first] if first else ds.questions
    qs = splits.select_many(pool, split, known=ds.questions)
    ids = list(dict.fromkeys(i for q in qs for i in q.meta.get("context_ids") or []))
    words = ", ".join(w for w in (f"first {first}" if first else "",
                                  f"split {split}" if split else "") if w)
    return ids, f"{len(qs)} question{'' if len(qs) == 1 else 's'} ({words})"


def cmd_info(args: argparse.Namespace) -> int:
    from ..datasets import load_dataset
    from ..knowledge.built_kgs import built_kgs
    ds = load_dataset(args.dataset)
    own = ds.kg() if getattr(ds, "has_kg", False) else None
    built = built_kgs(ds.name)
    if args.json:
        print(json.dumps({"dataset": ds.name, "own": own.stats() if own else None,
                          "built": built}, indent=2, default=str))
        return 0
    print(f"{ds.name}: own KG: " + (f"{own.n_entities} entities, {own.n_triples} triples"
                                    if own else "none"))
    for m in built:
        print(f"  built with {m.get('model')} ({str(m.get('model_sha256', ''))[:12]}): "
              f"{m.get('passages_done')}/{m.get('passages_total')} passages"
              f"{'' if m.get('corpus_complete') else ' (partial)'}"
              f"{', passages of ' + m['selection'] if m.get('selection') else ''}, "
              f"{m.get('entities')} entities, "
              f"{m.get('triples')} triples, {m.get('parse_failures')} parse failures  "
              f"{m.get('path')}")
    if own is None and not built:
        print(f"  no KG: build one with `python -m workbench kg build {ds.name} --limit 50`")
    return 0
