"""eval: batch evaluation, resume, export, list, show, presets."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..config import parse_sets
from ..llm.replay import reuse_note
from ..store import Store
from ._common import add_model_args, number, settings_knob


def _kg_note(runner: Any) -> str | None:
    """The caveat of a partly built KG, when a KG method of this eval reads one."""
    from ..knowledge.built_kgs import partial_note
    from ..methods import get_method
    if not any(get_method(v.method).kind == "kg" for v in runner.variants):
        return None
    return partial_note(runner.dataset.kg())


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval", help="batch evaluation over a dataset (run, resume, export, list, show, presets)",
        description="Run methods over a dataset's questions and store per-item metrics "
                    "(`eval run`, the default). `eval resume [EVAL_ID]` continues an interrupted "
                    "eval; `eval export EVAL_ID --format csv|parquet`, `eval list`, `eval show "
                    "EVAL_ID`, `eval presets`, `eval calibration EVAL_ID` and `eval thresholds "
                    "EVAL_ID` read stored evals; `eval repair EVAL_ID` replays each wrong run "
                    "with the gold passages its breaking node lacked.")
    p.add_argument("action", nargs="?", default="run",
                   choices=["run", "resume", "export", "list", "show", "presets", "calibration",
                            "thresholds", "repair"])
    p.add_argument("eval_id", nargs="?",
                   help="for resume (default: the latest unfinished eval), export, show, "
                        "calibration, thresholds and repair: the eval id")
    sel = p.add_argument_group("questions: which dataset and which of its questions")
    sel.add_argument("--dataset", help="dataset name (default: the Settings dataset)")
    sel.add_argument("--methods", help="comma-separated method names")
    sel.add_argument("--split", help="evaluate one split of the dataset (train, dev or test; "
                     "default: every question)")
    sel.add_argument("--allow-leakage", action="store_true",
                     help="score methods on questions their fitted state (a trained router, an "
                          "exemplar store, a calibrated threshold) saw; refused otherwise, and "
                          "such rows are marked")
    sel.add_argument("--limit", type=number(int, 1), help="first N questions (of the split); "
                     "repair: replay at most N wrong runs (a later call goes on)")
    sel.add_argument("--offset", type=number(int, 0), default=0, help="skip the first N questions")
    sel.add_argument("--seed", type=settings_knob("seed"), action="append",
                     help="run seed; repeat for several seeds (default: the Settings seed)")
    var = p.add_argument_group("variants: what each method runs with")
    var.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="a knob for every variant (method knob, eval knob, or METHOD.knob)")
    var.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                     help="sweep a knob over values (cartesian product with other --grid)")
    var.add_argument("--sweep", help="YAML/TOML sweep file (methods, set, grid, variants, seeds)")
    var.add_argument("--study", help="a CRAG study: methods and knobs of one paper experiment "
                     "(see `eval presets`)")
    var.add_argument("--preset", help="a method preset such as small-model (see `methods NAME`), "
                     "for every chosen method that has it")
    score = p.add_argument_group("scoring")
    score.add_argument("--primary", help="metric that decides runs.correct "
                       "(contains, em, f1, rouge_f1, acc_lm, hits1, crag, fever; default by "
                       "dataset)")
    score.add_argument("--judge", default=None,
                       help="LLM judge for Acc-LM / CRAG: 'same' (the methods' model, default), "
                            "'off', or a bundled model name / .gguf path")
    score.add_argument("--crag-mode", choices=["exact_then_llm", "normalised", "exact_only"])
    score.add_argument("--crag-profile", choices=["ragx", "crag_official"],
                       help="ragx (paper, default) or crag_official: the official evaluator's "
                            "'invalid' rule and 75-token cut of each prediction")
    score.add_argument("--metric-profile", choices=["official", "lenient", "crp-paper"],
                       help="how EM/F1/contains normalise and what EM and F1 mean: official "
                            "(HotpotQA/MuSiQue scripts, default), lenient (also folds Unicode and "
                            "typographic punctuation) or crp-paper (EM = containment, F1 = "
                            "ROUGE-L >= tau); `python -m workbench score` shows all three")
    score.add_argument("--tau-f1", type=number(float, 0, 1),
                       help="ROUGE-L cut-off of CRP-RAG's F1 (default 0.5)")
    exe = p.add_argument_group("execution")
    exe.add_argument("--batch", type=number(int, 1), metavar="N",
                     help="independent LLM calls of a run (CRP-RAG's nodes, CogGRAG's siblings, "
                          "...) go to the model together, N at most (the methods' batch_size; "
                          "1 = one at a time, the default; batching pays off on a GPU, not on a "
                          "few CPU cores)")
    exe.add_argument("--items-together", type=number(int, 1), default=1, metavar="K",
                     help="each worker runs K items at once on one model, their single LLM calls "
                          "decoded together as one llama.cpp batch (default 1; local executor)")
    exe.add_argument("--workers", type=number(int, 1),
                     help="parallel workers (default 1; with --executor ray, as many as the "
                          "cluster's CPUs allow); with llama.cpp each loads its own model")
    exe.add_argument("--executor", choices=["local", "ray"], default="local",
                     help="local: threads on this machine; ray: one Ray actor per worker, on "
                          "the cluster at --ray-address or a local Ray instance")
    exe.add_argument("--ray-address", metavar="auto|HOST:PORT",
                     help="with --executor ray: join this cluster (default: start a local one)")
    exe.add_argument("--worker-cpus", type=number(float, 0), default=1,
                     help="with --executor ray: CPUs each worker asks for (llama.cpp threads)")
    exe.add_argument("--worker-gpus", type=number(float, 0), default=0,
                     help="with --executor ray: GPUs each worker asks for (use with "
                          "--n-gpu-layers -1)")
    exe.add_argument("--reuse-calls", metavar="EVAL_ID[,EVAL_ID]",
                     help="answer each LLM call whose prompt and parameters match a stored call "
                          "of those evals' runs (same model) with the stored output: a change to a "
                          "late stage re-runs only the calls it changes. Wall times then do not "
                          "measure the model")
    exe.add_argument("--resume", nargs="?", const="latest", metavar="EVAL_ID",
                     help="continue an interrupted eval (the latest unfinished one without an id)")
    exe.add_argument("--retry-failed", action="store_true",
                     help="with --resume: run again the items whose method failed")
    exe.add_argument("--label", default="", help="a note stored with the eval")
    exe.add_argument("--scripted", metavar="FILE",
                     help="use the scripted backend with this JSON rule table (tests, demos)")
    exe.add_argument("--no-progress", action="store_true", help="no progress bar")
    out = p.add_argument_group("output of export, show, list, calibration and thresholds")
    out.add_argument("--format", choices=["csv", "parquet"], default="csv", help="export format")
    out.add_argument("--out", help="export: output file (default EVAL_ID.FORMAT)")
    out.add_argument("--json", action="store_true",
                     help="list/show/presets: JSON output; calibration, thresholds: JSON on the "
                          "last line")
    out.add_argument("--metric", help="thresholds: the metric a gate value is chosen by "
                     "(correct, em, f1, contains, ...; default correct)")
    rep = p.add_argument_group("repair: gold evidence added to wrong runs, replayed")
    rep.add_argument("--scope", choices=["breaking", "all"], default="breaking",
                     help="breaking: the gold passages the breaking node lacked go to that node "
                          "(default); all: every retrieving node gets the gold passages it "
                          "lacks, in one replay")
    add_model_args(p)
    p.set_defaults(func=cmd_eval)


def _backend_spec(args: argparse.Namespace) -> dict[str, Any]:
    if args.scripted:
        with open(args.scripted, encoding="utf-8") as f:
            data = json.load(f)
        if isinstance(data, dict) and ("rules" in data or "default" in data):
            return {"kind": "scripted", "table": data.get("rules") or [],
                    "default": data.get("default"), "delay_ms": data.get("delay_ms")}
        return {"kind": "scripted", "table": data, "default": None}
    ov = {"backend": args.backend, "model": args.model, "server_url": args.server_url,
          "n_gpu_layers": args.n_gpu_layers, "n_ctx": args.n_ctx, "n_threads": args.n_threads,
          "prefix_cache_tokens": args.prefix_cache_tokens}
    return {"kind": "settings", "overrides": {k: v for k, v in ov.items() if v is not None}}


def _parse_grid(items: list[str]) -> dict[str, list[str]]:
    out = {}
    for k, v in parse_sets(items).items():
        out[k] = [x.strip() for x in v.split(",")] if v else []
    return out


def _spec(args: argparse.Namespace):
    from .. import settings as settings_mod
    from ..eval import presets
    from ..methods import all_methods
    from ..eval.plan import EvalSpec, apply_sweep, batch_sets, load_sweep
    s = settings_mod.load()
    spec = EvalSpec(dataset=args.dataset or s.dataset,
                    methods=[m.strip() for m in (args.methods or "").split(",") if m.strip()],
                    limit=args.limit, offset=args.offset,
                    seeds=args.seed or [s.seed], sets=parse_sets(args.set),
                    grid=_parse_grid(args.grid), label=args.label, split=args.split,
                    allow_leakage=args.allow_leakage, reuse_calls=args.reuse_calls)
    study = getattr(args, "study", None)
    if study:
        if study not in presets.PRESETS:
            raise ValueError(f"no study {study!r}; `eval presets` lists them: "
                             f"{', '.join(sorted(presets.PRESETS))}")
        spec = apply_sweep(spec, presets.to_sweep(study, all_methods(), spec.methods or None))
    if args.preset and args.preset in presets.PRESETS:
        raise ValueError(f"--preset {args.preset} names a CRAG study: pass --study "
                         f"{args.preset} (--preset is a method preset such as small-model)")
    if args.preset:
        spec.sets = {**method_preset_sets(args.preset, spec.methods, all_methods()),
                     **spec.sets}
        spec.label = spec.label or f"preset {args.preset}"
    if args.sweep:
        spec = apply_sweep(spec, load_sweep(args.sweep))
        if args.dataset:
            spec.dataset = args.dataset
        if args.limit is not None:
            spec.limit = args.limit
    for attr, val in (("primary", args.primary), ("judge", args.judge), ("crag_mode", args.crag_mode),
                      ("crag_profile", args.crag_profile), ("tau_f1", args.tau_f1),
                      ("metric_profile", args.metric_profile)):
        if val is not None:
            setattr(spec, attr, val)
    if not spec.methods:
        raise ValueError("pass --methods a,b (or a --sweep file / --study that names them)")
    if args.batch is not None:      # an explicit --set METHOD.batch_size wins
        spec.sets = {**batch_sets(args.batch, spec.methods, all_methods()), **spec.sets}
    return spec


def method_preset_sets(name: str, methods: list[str], classes: dict[str, type]) -> dict[str, str]:
    """``{"METHOD.preset": name}`` for each chosen method that has preset ``name``."""
    from ..config import presets_of
    have = [m for m in methods if m in classes and name in presets_of(classes[m].Config)]
    if not have:
        raise ValueError(f"no preset {name!r} in {', '.join(methods) or 'the methods'} "
                         f"(`methods NAME` lists a method's presets)")
    return {f"{m}.preset": name for m in have}


class _Bar:
    """A tqdm bar fed by the runner's progress callback."""

    def __init__(self, enabled: bool):
        self.enabled, self.bar = enabled, None

    def __call__(self, p) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            from tqdm import tqdm
            self.bar = tqdm(total=p.total, initial=p.done - 1, unit="item", desc=p.eval_id,
                            dynamic_ncols=True, file=sys.stderr)
        self.bar.update(1)
        last = p.last or {}
        self.bar.set_postfix_str(f"{last.get('method', '')} {'ok' if last.get('correct') else '--'}"
                                 f"{' failed=' + str(p.failed) if p.failed else ''}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _print_summary(st: Store, eval_id: str) -> None:
    from ..eval import queries as Q
    from ..eval.metrics import profile_caption
    from ..eval.runner import get_eval
    print("\n" + profile_caption(get_eval(st, eval_id).get("spec")))
    rows = {(r["method"], r["variant"]): r for r in Q.summary(st, eval_id, "correct")}
    extra = {}
    for m in ("em", "f1", "contains", "acc_lm", "crag_score"):
        for r in Q.summary(st, eval_id, m):
            extra.setdefault((r["method"], r["variant"]), {})[m] = r["mean"]
    eff_rows = Q.efficiency(st, eval_id)
    eff = {(r["method"], r["variant"]): r for r in eff_rows}
    w = min(60, max([len(r["series"]) for r in rows.values()] + [6]))
    print(f"\n{'method':{w}s} {'n':>5s} {'correct [95% CI]':>22s} {'EM':>6s} {'F1':>6s} "
          f"{'cont.':>6s} {'AccLM':>6s} {'CRAG':>6s} {'calls':>6s} {'tokens':>7s} {'ms/q':>8s}")
    for key, r in rows.items():
        e, x = eff.get(key, {}), extra.get(key, {})

        def f(v: Any) -> str:
            return "  n/a" if v is None else f"{v:6.3f}"
        ci = f"{r['mean']:.3f} [{r['lo']:.3f},{r['hi']:.3f}]" if r["mean"] is not None else "n/a"
        print(f"{r['series'][:w]:{w}s} {r['n_items']:5d} {ci:>22s} {f(x.get('em'))} {f(x.get('f1'))} "
              f"{f(x.get('contains'))} {f(x.get('acc_lm'))} {f(x.get('crag_score'))} "
              f"{e.get('llm_calls') or 0:6.1f} {e.get('tokens') or 0:7.0f} {e.get('wall_ms') or 0:8.0f}")
    for line in Q.timing_notes(eff_rows) + Q.warm_up_notes(st, eval_id):
        print(line)
    pairs = Q.paired(st, eval_id, "correct")
    if pairs:
        print("\npaired on shared questions (correct): a - b [95% bootstrap CI], McNemar p")
        for p in pairs:
            print(f"  {p['a']} - {p['b']}: {p['diff']:+.3f} [{p['lo']:+.3f},{p['hi']:+.3f}] "
                  f"n={p['n_paired']} p={p['mcnemar_p']:.3g}"
                  + (f"  (retrieved differently: {p['retrieval_a']} vs {p['retrieval_b']})"
                     if p["retriever_confound"] else ""))
    from ..triage import answer_trail, report, store as triage_store
    print()
    print("\n".join(report.lines(triage_store.summary(st, eval_id))
                    + answer_trail.lines(answer_trail.funnel(st, eval_id))))
    from ..analysis import repair
    rep = repair.lines(repair.summary(st, eval_id))
    if rep:
        print("\n".join(rep))


def _cmd_repair(st: Store, args: argparse.Namespace) -> int:
    """`eval repair EVAL_ID`: plan without a model (bad input fails first), load the model,
    refuse another than the eval's, replay, print the summary (JSON last with --json)."""
    from ..analysis import repair as R
    if not args.eval_id:
        raise ValueError("give the eval id: `python -m workbench eval repair EVAL_ID` "
                         "(`eval list` shows them)")
    plan = R.plan(st, args.eval_id, args.scope)
    if args.scripted:
        from ..eval.item_executor import make_backend
        llm = make_backend(_backend_spec(args))
    else:
        from ._common import backend_from_args
        llm = backend_from_args(args)
    R.check_model(plan, llm.info)
    todo = plan.todo[: args.limit] if args.limit else plan.todo
    print(f"gold repair of eval {plan.eval_id} (scope {plan.scope}): {len(plan.targets)} wrong "
          f"run(s), {len(plan.todo)} to replay ({len(todo)} now), "
          f"{sum(t.action == 'skipped' for t in plan.targets)} skipped, "
          f"{sum(t.action == 'held' for t in plan.targets)} held every gold passage, "
          f"{sum(t.action == 'done' for t in plan.targets)} done earlier", file=sys.stderr)

    def say(o: Any) -> None:
        if o.child_run_id:
            print(f"  {o.question_id} {o.series}: {o.status.replace('_', ' ')} "
                  f"(answer {o.answer!r}; {o.fresh_calls} fresh, {o.replayed_calls} "
                  f"replayed call(s)) -> run {o.child_run_id}", file=sys.stderr)
    outcomes = R.run(st, plan, llm=llm, limit=args.limit, on_outcome=say)
    print("\n".join(R.lines({plan.scope: R.summary(st, plan.eval_id).get(plan.scope, {})}))
          or "gold repair: no wrong runs in this eval")
    if args.json:
        print(json.dumps(R.report(st, plan, outcomes), default=str))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from ..eval import presets
    from ..eval import queries as Q
    from ..eval.export import export_eval
    from ..eval.runner import EvalInterrupted, EvalRunner, get_eval, latest_eval
    if args.action == "presets":
        from ..methods import all_methods
        ms = all_methods()
        data = [presets.describe(p, ms) for p in presets.PRESETS]
        if args.json:
            print(json.dumps(data, indent=2, default=str))
            return 0
        for d in data:
            print(f"{d['name']:22s} {d['title']} — sweeps {d['knob']} over {list(d['values'])}; "
                  f"base {d['base']}; {d['paper']}")
            for m, sup in d["support"].items():
                print(f"{'':22s}   {m}: " + ", ".join(f"{k} by {v}" for k, v in sup.items()))
        return 0
    st = Store()
    if args.action == "list":
        rows = Q.list_evals(st)
        if args.json:
            print(json.dumps(rows, indent=2, default=str))
            return 0
        for r in rows:
            print(f"{r['eval_id']}  {r['status']:11s} {r['dataset'] or '':14s} "
                  f"{r['n_done']}/{r['n_planned']:<6} {r['methods']} {r['preset'] or ''} {r['label'] or ''}")
        return 0
    if args.action == "calibration":
        from ._calibration import cmd_calibration
        return cmd_calibration(st, args.eval_id or latest_eval(st, unfinished=False), args.json)
    if args.action == "repair":
        return _cmd_repair(st, args)
    if args.action == "thresholds":
        from ._thresholds import cmd_thresholds
        return cmd_thresholds(st, args.eval_id or latest_eval(st, unfinished=False),
                              args.metric, args.json)
    if args.action in ("export", "show"):
        eval_id = args.eval_id or latest_eval(st, unfinished=False)
        if not eval_id:
            raise LookupError("no eval stored yet")
        if args.action == "show":
            row = get_eval(st, eval_id)
            from ..triage import store as triage_store
            from ..analysis.repair import summary as repair_summary
            if args.json:
                from ..eval.metrics import profile_of
                print(json.dumps({"eval": row, "metric_profile": profile_of(row.get("spec")),
                                  "summary": Q.summary(st, eval_id),
                                  "paired": Q.paired(st, eval_id),
                                  "triage": triage_store.summary(st, eval_id),
                                  "gold_repair": repair_summary(st, eval_id)}, indent=2,
                                 default=str))
                return 0
            print(f"{eval_id} [{row['status']}] dataset={row['dataset']} "
                  f"{row['n_done']}/{row['n_planned']} items, judge={row['judge']}, "
                  f"model={row['model_name']}")
            note = reuse_note(st, eval_id, row["spec"])
            if note:
                print(note)
            _print_summary(st, eval_id)
            return 0
        out = args.out or f"{eval_id}.{args.format}"
        n = export_eval(st, eval_id, out, args.format)
        print(f"wrote {n} rows to {out}")
        return 0

    # run / resume
    if args.action == "resume":
        args.resume = args.resume or args.eval_id or "latest"
    if args.items_together > 1 and args.executor == "ray":
        print("error: --items-together runs on the local executor; with --executor ray add "
              "--workers instead", file=sys.stderr)
        return 2
    common: dict[str, Any] = {"backend_spec": _backend_spec(args), "workers": args.workers or 1,
                              "executor": args.executor, "items_together": args.items_together}
    if args.executor == "ray":
        common["ray"] = {"address": args.ray_address, "workers": args.workers,
                         "cpus": args.worker_cpus, "gpus": args.worker_gpus}
    if args.resume:
        runner = EvalRunner.resume(st, None if args.resume == "latest" else args.resume, **common)
        for d in runner.config_drift:
            print(f"note: today's default differs, the resume keeps the eval's own value: {d}",
                  file=sys.stderr)
        if args.retry_failed:
            print(f"retrying {runner.retry_failed()} failed item(s)", file=sys.stderr)
    else:
        runner = EvalRunner.new(st, _spec(args), **common)
    done = len(runner.done_keys())
    print(f"eval {runner.eval_id}: {len(runner.questions)} questions × {len(runner.variants)} "
          f"config(s) × {len(runner.spec.seeds)} seed(s) = {runner.n_planned} items"
          f"{f', {done} already done' if done else ''}", file=sys.stderr)
    note = _kg_note(runner)
    if note:
        print(f"note: {note}", file=sys.stderr)
    bar = _Bar(not args.no_progress)
    from ..eval.ray_executor import RayWorkerError
    try:
        res = runner.run(bar)
    except RayWorkerError as e:
        bar.close()
        print(f"error: {e}", file=sys.stderr)
        return 2
    except EvalInterrupted as e:
        bar.close()
        print(f"\ninterrupted after {e.done}/{e.total} items; resume with "
              f"`python -m workbench eval resume {e.eval_id}`", file=sys.stderr)
        return 130
    bar.close()
    print(f"eval {res.eval_id} {res.status}: {res.n_done}/{res.n_planned} items "
          f"({res.n_new} new) in {res.seconds:.1f} s", file=sys.stderr)
    note = reuse_note(st, res.eval_id, runner.spec.to_dict())
    if note:
        print(note, file=sys.stderr)
    _print_summary(st, res.eval_id)
    return 0
