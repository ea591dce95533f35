"""Text methods on the demo questions with the default model: LLM calls, tokens, wall time and
answer accuracy (contains-gold; a refusal or failure counts as wrong), token F1, and each method's wall
time and tokens as a multiple of the vanilla LLM's in the same run. ``NAME@PRESET`` runs a
method preset (``crp-rag@small-model``). What the methods fit (PAR-RAG's exemplars,
CRP-RAG's tau_ppl) comes from demo:train, so report figures on ``--split test``.

    python benchmarks/methods_text.py --split test [--methods crp-rag,crp-rag@small-model,...]
                                      [--limit N] [--set crp-rag.max_nodes=8 ...] [--store]
                                      [--model gemma3-270m] [--batch-compare [N]]

Prints one row per method and, as its last line, one JSON object of the figures.
``--batch-compare N`` instead runs each question of the methods with batched calls at
batch_size 1 and N (see _batch_compare.py) and reports both.

``--eval EVAL_ID`` reports the same figures from a stored eval instead of running (for
example one run with ``eval --reuse-calls``, which re-runs only what a change touched);
with ``--split dev,test`` only on those splits' questions.
Accuracy is then the eval's contains metric, and wall time is the mean over the runs that
made every call themselves, one at a time, while other work took at most 20% of the CPU
(``n_wall``): a run answered from stored calls, or slowed by other work or other items, did
not time the method alone.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _paired import paired_differences  # noqa: E402
from workbench.config import parse_sets  # noqa: E402
from workbench.cpu_share import CONTENDED, Meter, describe  # noqa: E402
from workbench.datasets import load_dataset  # noqa: E402
from workbench.datasets.splits import select_many  # noqa: E402
from workbench.llm.registry import load_backend  # noqa: E402
from workbench import settings as settings_mod  # noqa: E402
from workbench.eval.metrics import DEFAULT_PROFILE, exact_match, token_f1  # noqa: E402
from workbench.methods.answers import contains_gold  # noqa: E402
from workbench.execution import run_to_end  # noqa: E402
from workbench.trace import retrieval_label  # noqa: E402
from workbench.workspace import build_context, warm_context  # noqa: E402

METHODS = ["vanilla", "standard-rag", "ircot", "crp-rag", "par-rag"]
BASELINE = "vanilla"

# --old-vs-new NAME: a method before and after a change of defaults, on the same questions,
# each question run both ways in turn (so load on the machine hits both alike).
# NAME -> (method, sides); each side: (label, knob overrides, in-run call memo on, backend
# overrides and run settings, see RUN_SETTINGS). A side with {"prefix_cache_tokens": 0} runs
# on a backend of its own that keeps no prompts, so each call reuses only the previous call's
# prompt: the llama.cpp backend before kept prefixes (llm/prefix_store.py), as when the cost
# of these methods was first measured.
ONE_PREFIX = {"prefix_cache_tokens": 0}
# generations caught in a loop run on to max_tokens, as before the check (llm/repetition.py):
# a run setting (Settings.loop_stop), given to the side's runs, not to its backend
NO_LOOP_STOP = {"loop_stop": 0}
# CRP-RAG's span call even when the long answer states its span itself
CRP_EVERY_CALL = {"span_if_stated": False}
# CRP-RAG's proposals before samples_below_root: samples_per_sink (two) at every open step
TWO_BELOW_ROOT = {"samples_below_root": 0}
# CRP-RAG's answer paths before one became the default: up to three, integrated by one call
THREE_PATHS = {"max_answer_paths": 3}
# CogGRAG's changes of #42: the method's (one extraction call, scoring only when read) and
# the forms of its prompts and outputs (docs/methods/coggrag.md, "fewer tokens")
COG_OLD_METHOD = {"local_extraction": "per_node", "extract_batch": 1,
                  "verdict_scores": "always"}
# as first measured (coggrag-method's table); the keys went back to a call per node, decoded
# together, once the one call was seen copying key sets
COG_ONE_CALL = {"local_extraction": "one_call", "verdict_scores": "when_used"}
COG_NEW_METHOD = {"local_extraction": "per_node", "extract_batch": 4,
                  "verdict_scores": "when_used"}
COG_OLD_FORM = {"prompt_layout": "paper", "answer_echo": True}
COG_NEW_FORM = {"prompt_layout": "knowledge_first", "answer_echo": False}
OLD_VS_NEW = {
    # the defaults when CRP-RAG's cost was first measured against today's: then two sampled
    # proposals at every open step, today two at the root and one below it; today reworded
    # proposals merge (tau_combine 0.80, was 0.90), the best valid path answers alone (was up
    # to three, integrated), a run's memo answers repeated greedy calls and kept prefixes
    # serve each kind of call's instructions
    "crp-rag": ("crp-rag", (
        ("crp-rag [old: two samples at every step, up to three answer paths, tau_combine "
         "0.9, span call always, no memo, one prefix, loops run on]",
         {"proposals": "samples", **TWO_BELOW_ROOT, **THREE_PATHS, "tau_combine": 0.9,
          **CRP_EVERY_CALL},
         False, {**ONE_PREFIX, **NO_LOOP_STOP}),
        ("crp-rag [new: one sample below the root, the best answer path, tau_combine 0.8, "
         "stated spans read, memo, kept prefixes, loops stopped]",
         {"proposals": "samples", "samples_below_root": 1, "max_answer_paths": 1,
          "tau_combine": 0.8}, True, {}))),
    # the best answer path alone against up to three integrated: today's defaults otherwise
    "crp-rag-paths": ("crp-rag", (
        ("crp-rag [up to three answer paths, integrated]", THREE_PATHS, True, {}),
        ("crp-rag [the best answer path]", {"max_answer_paths": 1}, True, {}))),
    # one sampled proposal below the root alone: both sides today's defaults otherwise
    "crp-rag-below-root": ("crp-rag", (
        ("crp-rag [two samples at every step]", TWO_BELOW_ROOT, True, {}),
        ("crp-rag [one sample below the root]", {"samples_below_root": 1}, True, {}))),
    # the loop check alone
    "crp-rag-loop": ("crp-rag", (
        ("crp-rag [loops run on]", {}, True, NO_LOOP_STOP),
        ("crp-rag [loops stopped]", {}, True, {}))),
    # the span call alone, where the long answer states its span ("Yes, ...")
    "crp-rag-span": ("crp-rag", (
        ("crp-rag [span call always]", CRP_EVERY_CALL, True, {}),
        ("crp-rag [no span call for a stated span]", {}, True, {}))),
    # the backend and the memo alone, at the earlier merge threshold on both sides
    "crp-rag-cache": ("crp-rag", (
        ("crp-rag [old: no memo, one prefix]",
         {"proposals": "samples", **TWO_BELOW_ROOT, "tau_combine": 0.9}, False, ONE_PREFIX),
        ("crp-rag [new: memo, kept prefixes]",
         {"proposals": "samples", **TWO_BELOW_ROOT, "tau_combine": 0.9}, True, {}))),
    # the merge threshold alone: both sides keep prefixes and the memo
    "crp-rag-merge": ("crp-rag", (
        ("crp-rag [tau_combine 0.9]", {"tau_combine": 0.9}, True, {}),
        ("crp-rag [tau_combine 0.8]", {"tau_combine": 0.8}, True, {}))),
    # the merge call alone (Eq. 6's P_combine against keeping the group's first proposal,
    # final when a member is): both sides today's defaults otherwise
    "crp-rag-merge-by": ("crp-rag", (
        ("crp-rag [merge call]", {"merge_by": "call"}, True, {}),
        ("crp-rag [first proposal, no call]", {"merge_by": "first"}, True, {}))),
    # the proposal experiment (samples stayed): both sides keep prefixes
    "crp-rag-list": ("crp-rag", (
        ("crp-rag [samples, no memo]", {"proposals": "samples"}, False, {}),
        ("crp-rag [list, memo]", {"proposals": "list"}, True, {}))),
    # a KG method, but its calls are text calls: needs the dataset's KG (`kg build`)
    "coggrag": ("coggrag", (
        ("coggrag [old: keys per node, scores always, paper prompts, no memo, "
         "one prefix]", {**COG_OLD_METHOD, **COG_OLD_FORM}, False, ONE_PREFIX),
        ("coggrag [new: keys per node decoded together, scores when used, knowledge "
         "first, answers alone, memo, kept prefixes]", {**COG_NEW_METHOD, **COG_NEW_FORM}, True, {}))),
    # the forms alone (prompt layout, answer echo): both sides keep prefixes and the memo
    "coggrag-form": ("coggrag", (
        ("coggrag [paper prompts]", COG_OLD_FORM, True, {}),
        ("coggrag [knowledge first, answers alone]", COG_NEW_FORM, True, {}))),
    # the same change of the method alone, in the forms it was measured in: both sides keep
    # prefixes
    "coggrag-method": ("coggrag", (
        ("coggrag [keys per node, scores always, no memo]",
         {**COG_OLD_METHOD, **COG_OLD_FORM}, False, {}),
        ("coggrag [keys in one call, scores when used, memo]",
         {**COG_ONE_CALL, **COG_OLD_FORM}, True, {}))),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--dataset", default="demo")
    ap.add_argument("--split", help="dataset split(s), comma-separated (test for reported "
                    "figures; default: all)")
    ap.add_argument("--limit", type=int, default=0, help="first N answerable questions (0 = all)")
    ap.add_argument("--first", type=int, default=0,
                    help="only among the dataset's first N questions (before --split)")
    ap.add_argument("--stride", type=int, default=1,
                    help="every S-th answerable question (a spread over hop counts and types)")
    ap.add_argument("--ids", help="comma-separated question ids (overrides limit/stride)")
    ap.add_argument("--set", action="append", default=[], metavar="METHOD.KEY=VALUE")
    ap.add_argument("--store", action="store_true", help="also store every run in the Store")
    ap.add_argument("--verbose", action="store_true", help="one line per run")
    ap.add_argument("--model", help="bundled model name or a .gguf path (default: Settings)")
    ap.add_argument("--threads", type=int, help="llama.cpp threads (default: Settings; 1 is "
                    "faster when other processes share the cores)")
    ap.add_argument("--batch-compare", type=int, nargs="?", const=4, metavar="N",
                    help="each question with batch_size 1 and N (default 4): wall time, "
                         "answers that differ, accuracy and token F1 both ways")
    ap.add_argument("--eval", metavar="EVAL_ID",
                    help="report a stored eval's runs instead of running the methods")
    ap.add_argument("--old-vs-new", choices=sorted(OLD_VS_NEW), metavar="NAME",
                    help="instead of --methods: a method with its old and its new defaults "
                         f"({', '.join(sorted(OLD_VS_NEW))}), paired on the same questions")
    args = ap.parse_args()
    if args.eval:
        report_eval(args.eval, args.split)
        return

    overrides: dict[str, dict[str, str]] = {}
    for k, v in parse_sets(args.set).items():
        meth, _, key = k.partition(".")
        overrides.setdefault(meth, {})[key] = v
    ds = load_dataset(args.dataset)
    pool = ds.questions[: args.first] if args.first else ds.questions
    try:
        chosen = select_many(pool, args.split, known=ds.questions)
    except LookupError as e:
        sys.exit(f"--split: {e}")
    qs = [q for q in chosen if q.answerable and q.answers][:: max(1, args.stride)]
    if args.ids:
        want = args.ids.split(",")
        qs = [ds.question(i) for i in want]
    elif args.limit:
        qs = qs[: args.limit]
    be = load_backend(n_threads=args.threads, model=args.model)
    store = None
    if args.store:
        from workbench.store import Store
        store = Store()
    print(f"model {be.info.name} ({be.info.quantization}), dataset {ds.name}, "
          f"{len(qs)} questions, {os.cpu_count()} CPU cores", flush=True)
    # warm up: the model's first call is not charged to a method
    m, ctx = build_context("standard-rag", llm=be, dataset=args.dataset)
    run_to_end(m, ctx, qs[0].question)
    meter = Meter()
    run_info = {"model": be.info.name, "dataset": ds.name, "split": args.split,
                "questions": len(qs), "question_ids": [q.id for q in qs],
                "cpu_cores": os.cpu_count(), "n_threads": args.threads}
    if args.batch_compare:
        out = batch_compare(args, be, qs, overrides, store)
        print(json.dumps({**run_info, "cpu_others": meter.share(), "batch_compare": out}))
        return

    if args.old_vs_new:
        ids = {q.id for q in qs}
        spare = next((q for q in ds.questions if q.id not in ids and q.answerable), qs[0])
        out = old_vs_new(args, be, qs, overrides, store, warm=spare)
        print(json.dumps({**run_info, "cpu_others": meter.share(), "methods": out}))
        return

    table = Table()
    for label in args.methods.split(","):
        name, over = method_overrides(label, overrides)
        # the retrievers this method's knobs name load here, not in its first timed question
        run_info.setdefault("warm_up_s", {})[label] = warm_context(
            build_context(name, llm=be, dataset=args.dataset, overrides=over)[1],
            qs[0].question)
        rows, used = [], set()
        for q in qs:
            m, ctx = build_context(name, llm=be, dataset=args.dataset, overrides=over,
                                   question_id=q.id)
            t0 = time.perf_counter()
            tr = run_to_end(m, ctx, q.question, store=store, question_id=q.id)
            wall = time.perf_counter() - t0
            used |= tr.retrievers()
            tot = tr.summary.get("totals", {})
            ans = tr.answer or {}
            refused = bool(ans.get("refused"))
            text = "" if refused else ans.get("text", "")
            # contains-gold credits an answer that names both options of a comparison;
            # token F1 does not, so both are reported
            rows.append(row_of(q, tr, wall))
            if args.verbose:
                print(f"  {label} {q.id}: {ans.get('text')!r} gold={q.answers!r} "
                      f"{'OK' if rows[-1].ok else '--'} calls={rows[-1].calls} {wall:.1f}s "
                      f"[{tr.status}]", flush=True)
        table.add(label, rows, retrieval_label(used))
    cpu_others = meter.share()
    print(describe(cpu_others))
    print(json.dumps({**run_info, "cpu_others": cpu_others,
                      "methods": table.finish()}))


def row_of(q, tr, wall: float) -> "Row":
    tot = tr.summary.get("totals", {})
    ans = tr.answer or {}
    refused = bool(ans.get("refused"))
    text = "" if refused else ans.get("text", "")
    sib = next((e["data"] for e in tr.log if e["type"] == "sibling_near_duplicates"), None)
    # contains-gold credits an answer that names both options of a comparison;
    # token F1 does not, so both are reported
    return Row(q.id, tot.get("llm_calls", 0),
               tot.get("prompt_tokens", 0) + tot.get("completion_tokens", 0),
               wall, float(bool(ans) and not refused and contains_gold(text, q.gold_answers)),
               exact_match(text, q.gold_answers) if text else 0.0,
               token_f1(text, q.gold_answers) if text else 0.0,
               refused, tr.status == "failed",
               tot.get("cached_prompt_tokens", 0), tot.get("prompt_tokens", 0),
               tot.get("reused_calls", 0),
               (sib["pairs"], sib["near_duplicates"]) if sib else None,
               unknown=refused or bool(ans.get("idk")))


def side_backends(sides, be, load: Callable[[dict], Any]) -> dict[str, Any]:
    """A backend of its own for each side of an ``--old-vs-new`` pair, loaded before anything
    is timed; the first side without backend options takes ``be``. With one backend the
    second side found the first side's prompts of the same question among the kept prefixes
    (one CRP-RAG question, the same calls: 839 fresh prompt tokens against 2,951, 63 s
    against 92 s)."""
    llms: dict[str, Any] = {}
    for label, _, _, bo in sides:
        bo = {k: v for k, v in bo.items() if k not in RUN_SETTINGS}
        llms[label] = be if not bo and be not in llms.values() else load(bo)
    return llms


# Settings a run takes from build_context, not from its backend
RUN_SETTINGS = ("loop_stop",)


def side_settings(bo: dict) -> Any:
    """The Settings a side's runs are built with: the host's, with the side's run settings."""
    s = settings_mod.load()
    return replace(s, **{k: v for k, v in bo.items() if k in RUN_SETTINGS})


def old_vs_new(args, be, qs, overrides, store, warm) -> dict:
    """``--old-vs-new NAME``: each question with the old defaults, then the new.

    Each side first runs ``warm``, a question outside the measured ones, untimed: otherwise
    the side that goes first pays for putting the instructions of its calls in the prompt
    cache and the other finds its shared ones there (measured on one question: CogGRAG's old
    side 15% cached, the new 84%)."""
    method, sides = OLD_VS_NEW[args.old_vs_new]
    base = {**overrides.get(method, {})}
    llms = side_backends(sides, be, lambda bo: load_backend(
        shared=False, n_threads=args.threads, model=args.model, **bo))
    settings = {label: side_settings(bo) for label, _, _, bo in sides}
    # the untimed runs also load what a run builds on first use (indexes, embedder)
    for label, knobs, memo, _ in sides:
        m, ctx = build_context(method, llm=llms[label], dataset=args.dataset,
                               overrides={**base, **knobs}, question_id=warm.id,
                               settings=settings[label])
        run_to_end(m, ctx, warm.question, memo=memo)
    print(f"  warm-up: each side ran {warm.id} untimed", flush=True)
    rows: dict[str, list[Row]] = {label: [] for label, *_ in sides}
    used: dict[str, set] = {label: set() for label, *_ in sides}
    for q in qs:
        for label, knobs, memo, _ in sides:
            m, ctx = build_context(method, llm=llms[label], dataset=args.dataset,
                                   overrides={**base, **knobs}, question_id=q.id,
                                   settings=settings[label])
            t0 = time.perf_counter()
            tr = run_to_end(m, ctx, q.question, store=store, question_id=q.id, memo=memo)
            wall = time.perf_counter() - t0
            used[label] |= tr.retrievers()
            rows[label].append(row_of(q, tr, wall))
            r = rows[label][-1]
            print(f"  {label} {q.id}: {(tr.answer or {}).get('text')!r} gold={q.answers!r} "
                  f"F1={r.f1:.2f} calls={r.calls} reused={r.reused} fresh={r.prompt - r.cached} "
                  f"{wall:.1f}s [{tr.status}]", flush=True)
    table = Table()
    for label, *_ in sides:
        table.add(label, rows[label], retrieval_label(used[label]))
    figs = table.finish(against=sides[0][0])
    old, new = figs[sides[0][0]], figs[sides[1][0]]
    ratio = {k: round(new[k] / old[k], 3) if old.get(k) and new.get(k) is not None else None
             for k in ("mean_llm_calls", "mean_fresh_prompt_tokens", "mean_wall_s")}
    print(f"new/old: calls {ratio['mean_llm_calls']}, fresh prompt tokens "
          f"{ratio['mean_fresh_prompt_tokens']}, wall {ratio['mean_wall_s']}", flush=True)
    new["new_over_old"] = ratio
    return figs


@dataclass
class Row:
    """One method's run on one question."""
    qid: str
    calls: int
    tokens: int
    wall: float | None          # None: the run did not time the model (reused calls)
    ok: float                   # contains-gold
    em: float
    f1: float
    refused: bool
    failed: bool
    # prompt tokens the prefix cache served: two series' wall times compare only at like shares
    cached: int = 0
    prompt: int = 0
    reused: int = 0             # calls answered by the run's memo (not in ``calls``)
    siblings: tuple[int, int] | None = None   # CRP-RAG: sibling pairs, near-duplicates
    # answered "I don't know": a refusal, or an answer the span call read as unknown (which
    # is not a refusal: the method answered), so refusal rates alone undercount non-answers
    unknown: bool = False


class Table:
    """One printed row per method, then the vanilla ratios and the paired differences."""

    def __init__(self) -> None:
        self.figures: dict[str, dict[str, float]] = {}
        self.per_q: dict[str, dict[str, list[float]]] = {}
        print(f"metrics: {DEFAULT_PROFILE} profile (acc = whole-token contains, EM/F1 as the "
              f"HotpotQA/MuSiQue scripts; workbench.eval.metrics)", flush=True)
        print(f"{'method':22s} {'n':>3s} {'calls':>6s} {'tokens':>7s} {'wall_s':>7s} "
              f"{'cached':>6s} {'acc':>5s} {'EM':>5s} {'F1':>5s} {'refused':>7s} {'failed':>6s} "
              "retrieval",
              flush=True)

    def add(self, label: str, rows: list[Row], retrieval: str) -> None:
        n = len(rows)
        timed = [r for r in rows if r.wall is not None]
        walls = [r.wall for r in timed]
        f = {"n": n, "mean_llm_calls": round(statistics.mean(r.calls for r in rows), 2),
             "mean_tokens": round(statistics.mean(r.tokens for r in rows), 1),
             "mean_wall_s": round(statistics.mean(walls), 2) if walls else None,
             "n_wall": len(walls),
             "metric_profile": DEFAULT_PROFILE,
             "accuracy": round(statistics.mean(r.ok for r in rows), 3),
             "em": round(statistics.mean(r.em for r in rows), 3),
             "token_f1": round(statistics.mean(r.f1 for r in rows), 3),
             "refusal_rate": round(sum(r.refused for r in rows) / n, 3),
             "unknown_answer_rate": round(sum(r.unknown for r in rows) / n, 3),
             "failed": sum(r.failed for r in rows), "retrieval": retrieval,
             "cached_prompt_share": round(sum(r.cached for r in timed)
                                          / max(sum(r.prompt for r in timed), 1), 3)
             if timed else None,
             # prompt tokens the model evaluated (not served by a cache, not memo reuses)
             "mean_fresh_prompt_tokens": round(statistics.mean(r.prompt - r.cached
                                                               for r in rows), 1),
             "mean_reused_calls": round(statistics.mean(r.reused for r in rows), 2)}
        sib = [r.siblings for r in rows if r.siblings]
        if sib:
            pairs = sum(p for p, _ in sib)
            f["sibling_pairs"] = pairs
            f["sibling_near_duplicate_rate"] = round(sum(d for _, d in sib) / pairs, 3) \
                if pairs else None
        self.figures[label] = f
        self.per_q[label] = {"accuracy": [r.ok for r in rows], "token_f1": [r.f1 for r in rows]}
        if walls and len(walls) == n:
            self.per_q[label]["wall_s"] = [r.wall for r in rows]
        wall = f"{f['mean_wall_s']:7.2f}" if walls else f"{'-':>7s}"
        cached = f"{f['cached_prompt_share']:6.0%}" if timed else f"{'-':>6s}"
        print(f"{label:22s} {n:3d} {f['mean_llm_calls']:6.1f} {f['mean_tokens']:7.0f} "
              f"{wall} {cached} {f['accuracy']:5.2f} {f['em']:5.2f} {f['token_f1']:5.2f} "
              f"{f['refusal_rate']:7.2f} {f['failed']:6d} {retrieval}"
              + (f"  (wall over {len(walls)} runs)" if len(walls) < n else ""), flush=True)
        print(f"{'':22s} fresh prompt tokens {f['mean_fresh_prompt_tokens']:.0f}, reused calls "
              f"{f['mean_reused_calls']:.2f}, answered \"I don't know\" "
              f"{f['unknown_answer_rate']:.2f}"
              + (f", sibling near-duplicates {f['sibling_near_duplicate_rate']} of "
                 f"{f['sibling_pairs']} pairs" if "sibling_pairs" in f else ""), flush=True)

    def finish(self, against: str | None = None) -> dict[str, dict[str, float]]:
        base = self.figures.get(BASELINE)
        if base and base["mean_wall_s"]:   # the papers' efficiency table: multiples of the plain LLM's
            for f in self.figures.values():
                if f["mean_wall_s"] is not None:
                    f["wall_ratio_vs_vanilla"] = round(f["mean_wall_s"] / base["mean_wall_s"], 2)
                f["token_ratio_vs_vanilla"] = round(f["mean_tokens"] / max(base["mean_tokens"],
                                                                            1e-9), 2)
        if against:
            paired_differences(self.figures, self.per_q, against)
        else:
            paired_differences(self.figures, self.per_q)
        return self.figures


def report_eval(eval_id: str, split: str | None = None) -> None:
    """The table of a stored eval: its items on the questions every method answered (of
    ``split`` only, when given: an eval over a dataset's first N questions mixes splits,
    and a knob fitted on train should be read on the others)."""
    from workbench.eval.queries import retrieval, series
    from workbench.eval.runner import get_eval
    from workbench.llm.replay import runs_with_reused_calls
    from workbench.store import Store
    st = Store()
    ev = get_eval(st, eval_id)
    items = st.query(
        "SELECT run_id, method, variant, question_id, llm_calls, prompt_tokens, "
        "completion_tokens, wall_ms, contains, em, f1, refused, status, cpu_others, "
        "items_at_once FROM eval_items WHERE eval_id = ? ORDER BY question_id", [eval_id])
    # from the calls, not run_finished's totals: runs stored before those counted it have none
    cached = {r["run_id"]: int(r["n"] or 0) for r in st.query(
        "SELECT e.run_id, sum(CAST(json_extract(e.data, '$.cached_prompt_tokens') AS BIGINT)) "
        "AS n FROM events e JOIN eval_items i ON i.run_id = e.run_id "
        "WHERE i.eval_id = ? AND e.type = 'llm_call' GROUP BY e.run_id", [eval_id])}
    # a run that reused calls, or shared the CPU with other work or other items, did not
    # time the method alone
    untimed = runs_with_reused_calls(st, eval_id) | {
        it["run_id"] for it in items
        if (it["cpu_others"] or 0) > CONTENDED or (it["items_at_once"] or 1) > 1}
    model = ev["model_name"] or next(iter(st.query(   # an eval killed before its end
        "SELECT model_name FROM runs WHERE eval_id = ? LIMIT 1", [eval_id])), {}).get("model_name")
    by_series: dict[str, dict[str, dict]] = {}
    for it in series(items):       # one row per variant where a method ran several
        by_series.setdefault(it["series"], {})[it["question_id"]] = it
    shared = set.intersection(*(set(v) for v in by_series.values())) if by_series else set()
    if split:
        shared &= {q.id for q in select_many(load_dataset(ev["dataset"]).questions, split)}
    print(f"eval {eval_id}: model {model}, dataset {ev['dataset']}, "
          f"{len(shared)} questions every method answered"
          + (f" (split {split})" if split else ""), flush=True)
    table, how = Table(), retrieval(st, eval_id)
    for label, got in by_series.items():
        table.add(label, [Row(q, it["llm_calls"] or 0,
                               (it["prompt_tokens"] or 0) + (it["completion_tokens"] or 0),
                               None if it["run_id"] in untimed else (it["wall_ms"] or 0) / 1000.0,
                               it["contains"] or 0.0, it["em"] or 0.0, it["f1"] or 0.0,
                               bool(it["refused"]), it["status"] == "failed",
                               cached.get(it["run_id"], 0), it["prompt_tokens"] or 0)
                           for q, it in sorted(got.items()) if q in shared], how[label])
    print(json.dumps({"eval": eval_id, "model": model, "dataset": ev["dataset"],
                      "split": split, "questions": len(shared),
                      "reuse_calls": ev["spec"].get("reuse_calls"),
                      "methods": table.finish()}))


def method_overrides(label: str, overrides: dict[str, dict[str, str]]) -> tuple[str, dict]:
    """``crp-rag@small-model`` -> ("crp-rag", {"preset": "small-model", ...--set knobs})."""
    name, _, preset = label.partition("@")
    return name, {**({"preset": preset} if preset else {}), **overrides.get(name, {}),
                  **overrides.get(label, {})}


def batch_compare(args, be, qs, overrides, store) -> dict:
    from _batch_compare import compare_methods, run_timed

    def run_one(name, over, q):
        m, ctx = build_context(name, llm=be, dataset=args.dataset, overrides=over,
                               question_id=q.id)
        return run_timed(m, ctx, q.question, store=store, question_id=q.id)
    return compare_methods(args.methods.split(","), qs, args.batch_compare,
                           lambda label: method_overrides(label, overrides), run_one,
                           lambda a, q: (contains_gold(a, q.gold_answers),
                                         token_f1(a, q.gold_answers)), llm=be)


if __name__ == "__main__":
    main()
