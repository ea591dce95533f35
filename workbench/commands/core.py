"""models, generate, runs."""
from __future__ import annotations

import argparse
import json
import sys

from ..llm.base import GenParams
from ..llm.registry import BUNDLED, DEFAULT_MODEL, describe, list_models, resolve
from ..store import Store
from ._common import add_model_args, backend_from_args, number, settings_knob


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list or verify installed models")
    p.add_argument("action", nargs="?", default="list", choices=["list", "verify"])
    p.add_argument("model", nargs="?", help="for verify: bundled name or .gguf path")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("generate", help="one LLM call: text, tokens/s and perplexity")
    p.add_argument("prompt")
    p.add_argument("--max-tokens", type=number(int, 1), default=64)
    p.add_argument("--temperature", type=number(float, 0), default=0.0)
    p.add_argument("--seed", type=settings_knob("seed"))
    p.add_argument("--plain", action="store_true", help="no chat template")
    p.add_argument("--json-schema", help="constrain output by this JSON schema (inline JSON)")
    p.add_argument("--grammar", help="constrain output by a GBNF grammar file")
    p.add_argument("--show-tokens", action="store_true")
    add_model_args(p)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("runs", help="list, show, export or diff stored runs")
    p.add_argument("action", nargs="?", default="list",
                   choices=["list", "show", "export", "delete", "diff"])
    p.add_argument("run_id", nargs="?")
    p.add_argument("run_b", nargs="?", help="diff: the second run (RUN_A RUN_B)")
    p.add_argument("--method")
    p.add_argument("--limit", type=number(int, 1), default=20)
    p.add_argument("--out", help="export: write JSON here instead of stdout")
    p.add_argument("--threshold", type=number(float, 0, 1),
                   help="diff: how alike two nodes' texts must be to match (cosine, default 0.7)")
    p.add_argument("--json", action="store_true", help="diff: the diff as JSON on the last line")
    p.set_defaults(func=cmd_runs)


def cmd_models(args: argparse.Namespace) -> int:
    if args.action == "verify":
        name = args.model or DEFAULT_MODEL
        e = describe(resolve(name), name, name in BUNDLED)
        pinned = " (matches the pinned SHA-256)" if e.verified else ""
        print(f"OK {e.path}: GGUF {e.architecture}, {e.quantization}, context {e.context_length}, "
              f"{e.size_bytes / 1e6:.1f} MB, sha256 {e.sha256}{pinned}")
        return 0
    entries = list_models()
    if args.json:
        print(json.dumps([e.to_dict() for e in entries], indent=2))
        return 0
    if not entries:
        print("no models installed; run scripts/setup.sh")
        return 1
    for e in entries:
        check = {True: "verified", False: "MISMATCH", None: ""}[e.verified]
        default = " (default)" if e.name == DEFAULT_MODEL else ""
        print(f"{e.name + default:30s} {e.quantization:7s} ctx={e.context_length!s:6s} "
              f"{e.size_bytes / 1e6:7.1f} MB  quality={e.quality or '-':7s} "
              f"sha256={e.sha256[:16]} {check:8s} {e.path}" + (f"  [{e.note}]" if e.note else ""))
    build = llama_build()
    print(f"\nllama.cpp build: {build['features']}"
          + (f"\nwarning: {build['warning']}" if build["warning"] else ""))
    return 0


def llama_build() -> dict:
    """The installed llama.cpp's CPU features, and a warning when its AMX path is on."""
    from ..llm import native
    try:
        info = native.system_info()
    except ImportError as e:
        return {"features": "", "amx_int8": None, "warning": f"llama-cpp-python is not "
                f"installed ({e}); run scripts/setup.sh"}
    amx = native.amx_enabled(info)
    return {"features": native.cpu_summary(info), "amx_int8": amx,
            "warning": "AMX_INT8 = 1: multi-token decodes crash on CPUs with AMX; rebuild with "
                       "scripts/setup.sh" if amx else ""}


def cmd_generate(args: argparse.Namespace) -> int:
    be = backend_from_args(args)
    grammar = open(args.grammar).read() if args.grammar else None
    params = GenParams(max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed,
                       chat=not args.plain, grammar=grammar,
                       json_schema=json.loads(args.json_schema) if args.json_schema else None)
    c = be.generate(args.prompt if args.plain else [{"role": "user", "content": args.prompt}], params)
    sc = c.scores()
    print(c.text)
    gen_s = max((c.latency_ms - (c.prompt_eval_ms or 0)) / 1000.0, 1e-9)
    ppl = f"{sc.perplexity:.3f}" if sc.perplexity is not None else "n/a (no logprobs)"
    print(f"\n[{c.completion_tokens} tokens, {c.completion_tokens / gen_s:.1f} tok/s, prompt "
          f"{c.prompt_tokens} tokens ({c.cached_prompt_tokens} cached), perplexity {ppl}, "
          f"finish {c.finish_reason}]", file=sys.stderr)
    if args.show_tokens:
        for t in c.tokens:
            print(f"{t.piece!r:>16} logprob={t.logprob:.3f}", file=sys.stderr)
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    st = Store()
    if args.action == "list":
        for r in st.list_runs(method=args.method, limit=args.limit):
            print(f"{r['run_id']}  {r['status']:11s} {r['method'] or '':14s} "
                  f"calls={r['llm_calls'] or 0:<3} {(r['answer'] or '')[:40]!r:44s} {r['question'][:60]!r}")
        return 0
    if not args.run_id:
        raise ValueError(f"runs {args.action} needs a RUN_ID (see `python -m workbench runs list`)")
    if args.action == "diff":
        from ._run_diff import cmd_diff
        return cmd_diff(st, args)
    if args.action == "delete":
        st.require_run(args.run_id)
        st.delete_run(args.run_id)
        print(f"deleted {args.run_id}")
        return 0
    data = st.export_run(args.run_id)
    if args.action == "show":
        tr = data["trace"]
        run = data["run"]
        print(f"{run['run_id']} {run['method']} [{run['status']}] {run['question']}")
        for n in tr["nodes"].values():
            print(f"  {n['id']:8s} {n['kind']:12s} {n['state']:14s} {n['text'][:80]!r}")
        print(f"answer: {run['answer']!r}  calls={run['llm_calls']} wall={run['wall_ms']} ms")
        return 0
    text = json.dumps(data, indent=2, default=str)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0
