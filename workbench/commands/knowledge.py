"""import, datasets, index: the knowledge-layer commands."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .. import datasets as D
from ._common import number


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="import a dataset (questions + corpus and/or KG)",
                       description="Import a public QA dataset. Kinds: " + ", ".join(D.KINDS)
                       + ". Malformed records name the file and line; --on-error chooses to "
                         "stop (nothing is written) or skip them.")
    p.add_argument("kind", choices=sorted(set(D.KINDS) | {"hotpot", "hover", "rog", "2wikimultihopqa",
                                                           "generic"}), metavar="KIND",
                   help="one of: " + ", ".join(D.KINDS))
    p.add_argument("path", help="the dataset file or folder")
    p.add_argument("--name", help="dataset name (default: from the file name)")
    p.add_argument("--on-error", choices=["stop", "skip"], default="stop",
                   help="on a malformed record: stop without writing anything (default) or "
                        "skip it and go on")
    p.add_argument("--replace", action="store_true", help="replace a dataset of that name")
    p.add_argument("--corpus", help="a separate corpus file/folder (HotpotQA corpus.json, "
                                    "FEVER wiki-pages, passages.jsonl)")
    p.add_argument("--limit", type=number(int, 1), help="import only the first N questions")
    p.add_argument("--chunk-words", type=number(int, 1), help="CRAG: words per chunk (150)")
    p.add_argument("--chunk-overlap", type=number(int, 0), help="CRAG: overlapping words (30)")
    p.add_argument("--evidence-kg", action="store_true",
                   help="2Wiki: also build a KG from the gold evidence triples")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("datasets", help="list, show or remove datasets")
    p.add_argument("action", nargs="?", default="list", choices=["list", "show", "remove"])
    p.add_argument("name", nargs="?")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_datasets)

    p = sub.add_parser("index", help="build (or load cached) retrieval indexes of a dataset "
                                     "and report sizes and times")
    p.add_argument("corpus", metavar="CORPUS", help="dataset name (see `datasets`)")
    p.add_argument("--kind", choices=["bm25", "dense", "hybrid", "kg", "all"], default="all",
                   help="which index (default all that apply)")
    p.add_argument("--model", help="dense: local sentence-transformers folder "
                                   "(default all-MiniLM-L6-v2)")
    p.add_argument("--variant", choices=["okapi", "lucene"], help="BM25 variant")
    p.add_argument("--rebuild", action="store_true", help="ignore cached indexes")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_index)


def cmd_import(args: argparse.Namespace) -> int:
    echo = (lambda m: print(m, file=sys.stderr))
    opts = {"corpus": args.corpus, "limit": args.limit, "progress": not args.quiet}
    kind = D.importers.KIND_ALIASES.get(args.kind, args.kind)
    if kind == "crag":
        opts.update(chunk_words=args.chunk_words, chunk_overlap=args.chunk_overlap)
    elif args.chunk_words or args.chunk_overlap:
        raise ValueError("--chunk-words/--chunk-overlap apply to crag only")
    if kind == "2wiki" and args.evidence_kg:
        opts["evidence_kg"] = True
    if kind in ("musique", "crag", "webqsp", "cwq") and args.corpus:
        raise ValueError(f"--corpus does not apply to {kind}: its passages come with it")
    if kind in ("musique", "crag", "webqsp", "cwq"):
        opts.pop("corpus")
    t0 = time.perf_counter()
    try:
        m = D.import_dataset(kind, args.path, args.name, on_error=args.on_error,
                             replace=args.replace, echo=echo, **opts)
    except D.ImportProblem as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except FileExistsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    c = m["counts"]
    print(f"imported {m['name']!r} ({m['kind']}): {c['questions']} questions, "
          f"{c['passages']} passages, {c['entities']} entities, {c['triples']} triples "
          f"in {time.perf_counter() - t0:.1f} s")
    sp = m.get("splits") or {}
    if sp.get("counts"):
        how = "from the source" if sp.get("source") != "seeded" else \
            f"seeded (seed {sp.get('seed')}, the source has no train/dev/test split)"
        print(f"splits {sp['counts']} {how}")
    if m.get("skipped"):
        print(f"skipped {m['skipped']} malformed record(s); first: "
              + "; ".join(m.get("problems", [])[:3]), file=sys.stderr)
    print(f"stored in {D.dataset_dir(m['name'])}")
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    if args.action == "remove":
        if not args.name:
            raise ValueError("datasets remove NAME")
        D.remove_dataset(args.name)
        print(f"removed {args.name}")
        return 0
    if args.action == "show":
        if not args.name:
            raise ValueError("datasets show NAME")
        ds = D.load_dataset(args.name)
        split_counts = ds.split_counts          # loads the questions (and legacy splits)
        info = dict(ds.manifest)
        info["path"] = str(ds.path)
        if args.json:
            print(json.dumps(info, indent=1, default=str))
            return 0
        info["split_counts"] = split_counts
        for k in ("name", "kind", "source", "path", "counts", "split_counts", "splits",
                  "corpus_hash", "created_iso", "skipped", "info"):
            if info.get(k) not in (None, {}, ""):
                print(f"{k:12s} {info[k]}")
        for q in ds.questions[:3]:
            print(f"  {q.id}: {q.question}  -> {q.gold_answers[:3]}")
        return 0
    rows = D.list_datasets()
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
        return 0
    if not rows:
        print("no datasets; import one with `python -m workbench import KIND PATH`")
        return 0
    print(f"{'name':28s} {'kind':9s} {'questions':>9s} {'passages':>9s} {'entities':>9s} "
          f"{'triples':>9s}  created")
    for r in rows:
        c = r.get("counts", {})
        created = r.get("created_iso") or ("built-in" if r.get("builtin") else "")
        print(f"{r['name']:28s} {r.get('kind', ''):9s} {c.get('questions', 0):9d} "
              f"{c.get('passages', 0):9d} {c.get('entities', 0):9d} {c.get('triples', 0):9d}  "
              f"{created}")
    return 0


def _size(path: Path | None) -> int:
    return path.stat().st_size if path and Path(path).is_file() else 0


def cmd_index(args: argparse.Namespace) -> int:
    ds = D.load_dataset(args.corpus)
    report: dict = {"dataset": ds.name, "passages": len(ds.passages)}
    kinds = ["bm25", "dense", "kg"] if args.kind == "all" else \
        (["bm25", "dense", "hybrid"] if args.kind == "hybrid" else [args.kind])
    if not ds.passages:
        kinds = [k for k in kinds if k == "kg"]
    if "bm25" in kinds:
        from ..knowledge.bm25 import BM25Params
        opts = {"variant": args.variant} if args.variant else {}
        if args.rebuild:
            f = D.bm25_cache_path(ds.corpus_hash, BM25Params(**opts))
            f.unlink(missing_ok=True)
        t0 = time.perf_counter()
        r = ds.retriever("bm25", **opts)
        secs = time.perf_counter() - t0
        idx = r.index
        report["bm25"] = {"variant": idx.params.variant, "vocab": len(idx.vocab),
                          "postings": int(idx.W.nnz), "memory_mb": round(idx.nbytes() / 1e6, 2),
                          "disk_mb": round(_size(r.cache_path) / 1e6, 2), "cached": r.cached,
                          "seconds": round(secs, 3), "path": str(r.cache_path)}
    if "dense" in kinds:
        from ..knowledge.dense import cache_path, get_embedder
        emb = get_embedder(args.model)
        f = cache_path(ds.corpus_hash, emb)
        if args.rebuild:
            f.unlink(missing_ok=True)
        t0 = time.perf_counter()
        opts = {"model": args.model} if args.model else {}
        r = ds.retriever("dense", **opts)
        secs = time.perf_counter() - t0
        report["dense"] = {"model": emb.name, "dim": emb.dim, "shape": list(r.E.shape),
                           "disk_mb": round(_size(f) / 1e6, 2), "cached": r.info["cached"],
                           "seconds": round(secs, 3),
                           "passages_per_s": None if r.info["cached"] else
                           round(len(ds.passages) / max(r.info["seconds"], 1e-9), 1),
                           "path": str(f)}
    if "hybrid" in kinds:
        t0 = time.perf_counter()
        ds.retriever("hybrid", **({"model": args.model} if args.model else {}))
        report["hybrid"] = {"seconds": round(time.perf_counter() - t0, 3)}
    if "kg" in kinds and ds.has_kg:
        t0 = time.perf_counter()
        kg = ds.kg()
        report["kg"] = {**kg.stats(), "seconds": round(time.perf_counter() - t0, 3)}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"{ds.name}: {report['passages']} passages")
    for k in ("bm25", "dense", "hybrid", "kg"):
        if k in report:
            v = report[k]
            print(f"  {k:6s} " + ", ".join(f"{a}={b}" for a, b in v.items() if a != "path")
                  + (f"\n         {v['path']}" if v.get("path") else ""))
    return 0
