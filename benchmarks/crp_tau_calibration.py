"""Calibrate CRP-RAG's tau_ppl for a model on ONE split (spec crp-rag.md §7 gap 2).

For each gold sub-question of the split's demo questions (used as a reasoning-graph node),
retrieve top-k passages, aggregate them with P_integration and score the P_evaluation
answer's perplexity, with exactly the prompts and budgets of the chosen preset (``paper``:
plain perplexity, the paper's integration prompt; ``small-model``: the UNKNOWN sentinel
with one demo and the short summary). A node is labelled *supported* when its gold
sub-answer occurs in the knowledge summary. Negatives pair each step with another step's
knowledge. The script prints the PPL distribution of both classes and the threshold with
the best balanced accuracy, and as its last line one JSON object.

Gold sub-questions are not the steps CRP-RAG writes: on the demo's test split the tau they
give (1.091) refused 8 of the first 9 questions. ``--from-eval`` calibrates on the nodes of a
stored eval's CRP-RAG runs instead: the steps the method itself wrote, with the PPLs it
scored (run that eval with a tau that prunes nothing; the PPLs do not depend on it). A node
counts as supported when its knowledge contains one of the question's gold sub-answers or its
answer (a step needs one of them; which one is not known), or, on a dataset with neither
(HotpotQA has supporting facts), when a passage it retrieved is one of the question's
supporting-fact pages (a proxy: the page may hold the other hop's fact).
Run that eval on a train split the scored questions do not overlap. The proxy is weak where
steps name the question's entities: on HotpotQA-100 (train questions 51-100, default model)
16 of 19 paper-preset nodes and all 12 nodes with query_with_question retrieved a supporting
page, so the fit has almost no negatives. There, choose tau by the train questions' F1
instead (``eval --split train --grid crp-rag.tau_ppl=... --reuse-calls EVAL_ID``).

A tau that ships as a default must come from the train split:

    python benchmarks/crp_tau_calibration.py --split train --preset paper [--model NAME]
    python benchmarks/crp_tau_calibration.py --split train --preset small-model
    python benchmarks/crp_tau_calibration.py --split test --tau 1.42   # check a tau held out
    python benchmarks/crp_tau_calibration.py --from-eval EVAL_ID [--variant LABEL]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from workbench import config as cfgmod  # noqa: E402
from workbench.datasets import load_dataset  # noqa: E402
from workbench.llm.registry import load_backend  # noqa: E402
from workbench.methods.answers import contains_gold, is_unknown  # noqa: E402
from workbench.methods.generation import greedy  # noqa: E402
from workbench.methods.passages import format_passages  # noqa: E402
from workbench.methods.crp_rag.method import CrpRagConfig  # noqa: E402
from workbench.methods.crp_rag import prompts as P  # noqa: E402


def balanced_acc(pos: list[float], neg: list[float], tau: float) -> float:
    tpr = sum(p < tau for p in pos) / len(pos) if pos else 0.0
    tnr = sum(n >= tau for n in neg) / len(neg) if neg else 0.0
    return (tpr + tnr) / 2


def best_tau(pos: list[float], neg: list[float]) -> tuple[float, float]:
    cands = sorted(set(pos + neg))
    grid = [(a + b) / 2 for a, b in zip(cands, cands[1:])] or cands
    acc, neg_t = max(((balanced_acc(pos, neg, t), -t) for t in grid), default=(0.0, -1.0))
    return -neg_t, acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="train", help="the questions calibrated on (train)")
    ap.add_argument("--preset", default="paper", help="CRP-RAG preset whose prompts are used")
    ap.add_argument("--limit", type=int, default=0, help="questions of the split used (0 = all)")
    ap.add_argument("--model", help="bundled model name or .gguf path (default: Settings)")
    ap.add_argument("--tau", type=float, help="also report the balanced accuracy at this tau")
    ap.add_argument("--threads", type=int, help="llama.cpp threads (default: Settings; 1 is "
                    "faster when other processes share the cores)")
    ap.add_argument("--from-eval", metavar="EVAL_ID", help="fit on the nodes of this stored "
                    "eval's CRP-RAG runs instead of the demo's gold sub-questions")
    ap.add_argument("--variant", help="with --from-eval: the variant label (default: all)")
    args = ap.parse_args()
    if args.from_eval:
        out, meta = nodes_from_eval(args.from_eval, args.variant)
        return report(out, meta["sentinel"], meta, args.tau)
    cfg = cfgmod.build(CrpRagConfig, {"preset": args.preset})
    sentinel = cfg.sufficiency_mode == "ppl+unknown"
    be = load_backend(model=args.model, n_threads=args.threads)
    ds = load_dataset("demo")
    r = ds.retriever(cfg.retriever if cfg.retriever != "default" else "dense")
    qs = [q for q in ds.split(args.split) if q.answerable and q.decomposition]
    if args.limit:
        qs = qs[: args.limit]
    steps = []
    for q in qs:
        for d in q.decomposition:
            if d.get("question") and d.get("answer"):
                steps.append((d["question"], str(d["answer"])))
    rows = []
    for sq, ans in steps:
        hits = r.search(sq, cfg.top_k)
        passages = format_passages(hits, cfg.passage_chars, numbered=False)
        k = " ".join(be.generate(P.aggregate(sq, passages, cfg.integration_prompt,
                                             cfg.comparison_demos),
                                 greedy(cfg.summary_max_tokens)).text.split())
        rows.append({"step": sq, "gold": ans, "knowledge": k,
                     "supported": contains_gold(k, [ans])})
    out = []
    for i, row in enumerate(rows):
        for kind, know in (("own", row["knowledge"]),
                           ("other", rows[(i + len(rows) // 2) % len(rows)]["knowledge"])):
            sup = row["supported"] if kind == "own" else contains_gold(know, [row["gold"]])
            c = be.generate(P.evaluate(row["step"], know, sentinel, cfg.eval_shots),
                            greedy(cfg.eval_max_tokens))
            ppl = c.scores().perplexity
            out.append({"step": row["step"], "kind": kind, "supported": sup,
                        "answer": c.text.strip(), "ppl": ppl, "unknown": is_unknown(c.text)})
            print(f"  {kind:5s} sup={int(sup)} ppl={ppl if ppl is None else round(ppl, 3)} "
                  f"{row['step'][:50]!r} -> {c.text.strip()[:40]!r}", file=sys.stderr, flush=True)
    report(out, sentinel, {"model": be.info.name, "preset": args.preset,
                           "mode": cfg.sufficiency_mode, "split": args.split,
                           "questions": [x.id for x in qs], "steps": len(steps)}, args.tau)


def nodes_from_eval(eval_id: str, variant: str | None) -> tuple[list[dict], dict]:
    """The evaluated nodes of a stored eval's CRP-RAG runs (finished or refused), labelled as
    :func:`label_nodes` says."""
    from workbench.store import Store
    st = Store()
    batch = st.query("SELECT dataset, model_name FROM eval_batches WHERE eval_id = ?", [eval_id])
    if not batch:
        raise SystemExit(f"no eval {eval_id}; `python -m workbench eval list` shows them")
    ds = load_dataset(batch[0]["dataset"])
    gold = {q.id: q for q in ds.questions}
    items = st.query("SELECT i.run_id, i.question_id, i.variant, r.config FROM eval_items i "
                     "JOIN runs r ON r.run_id = i.run_id WHERE i.eval_id = ? AND i.method = "
                     "'crp-rag' AND i.status IN ('finished', 'refused')"
                     + (" AND i.variant = ?" if variant else ""),
                     [eval_id] + ([variant] if variant else []))
    if not items:
        raise SystemExit(f"eval {eval_id} has no finished or refused CRP-RAG runs"
                         + (f" in variant {variant!r}" if variant else ""))
    modes = {it["config"].get("sufficiency_mode") for it in items}
    if len(modes) > 1:
        raise SystemExit(f"eval {eval_id} mixes sufficiency modes {sorted(modes)}; pick one "
                         f"with --variant")
    out, skipped = [], 0
    for it in items:
        q = gold[it["question_id"]]
        titles = {t.lower() for t in (q.gold_titles or [])}
        answers = [str(d["answer"]) for d in (q.decomposition or []) if d.get("answer")]
        answers += [str(a) for a in (q.answers or [])] if answers else []
        if not (titles or answers):
            skipped += 1
            continue
        out += [{**row, "question": q.id}
                for row in label_nodes(st.events(it["run_id"]), titles, answers)]
    if skipped:
        print(f"{skipped} question(s) without gold sub-answers or supporting-fact pages "
              f"skipped", file=sys.stderr)
    qids = sorted({it["question_id"] for it in items})
    splits = sorted({gold[i].split for i in qids})
    mode = modes.pop()
    return out, {"model": batch[0]["model_name"], "eval": eval_id, "variant": variant,
                 "mode": mode, "sentinel": mode == "ppl+unknown",
                 "split": f"{ds.name}:{'+'.join(splits)}", "questions": qids,
                 "steps": len(out)}


def label_nodes(events: list, gold_titles: set[str], gold_answers: list[str] = ()) -> list[dict]:
    """One row per evaluated node that retrieved. With ``gold_answers``: supported when the
    node's knowledge contains one of them; else when a retrieved passage's title is one of
    ``gold_titles`` (lower-cased)."""
    docs: dict[str, set[str]] = {}
    knowledge: dict[str, str] = {}
    texts: dict[str, str] = {}
    out = []
    for e in events:
        if e.type == "node_added":
            texts[e.node_id] = e.data.get("text", "")
        elif e.type == "node_retrieved":
            docs[e.node_id] = {str(d.get("title", "")).lower() for d in e.data.get("docs", [])}
        elif e.type == "node_aggregated":
            knowledge[e.node_id] = e.data.get("knowledge", "")
        elif e.type == "node_evaluated" and e.node_id in docs:
            sup = contains_gold(knowledge.get(e.node_id, ""), list(gold_answers)) \
                if gold_answers else bool(docs[e.node_id] & gold_titles)
            out.append({"step": texts.get(e.node_id, e.node_id), "supported": sup,
                        "ppl": e.data.get("perplexity"), "unknown": bool(e.data.get("unknown"))})
    return out


def report(out: list[dict], sentinel: bool, meta: dict, at_tau: float | None) -> None:
    # in ppl+unknown mode an UNKNOWN answer is insufficient whatever its perplexity
    def eff(o: dict) -> float:
        return 1e9 if sentinel and o["unknown"] else o["ppl"]
    pos = [eff(o) for o in out if o["supported"] and o["ppl"] is not None]
    neg = [eff(o) for o in out if not o["supported"] and o["ppl"] is not None]
    tau, acc = best_tau(pos, neg)

    def q(xs: list[float]) -> str:
        xs = [x for x in xs if x < 1e9]
        if not xs:
            return "-"
        s = sorted(xs)
        return (f"n={len(s)} min={s[0]:.3f} q25={s[len(s) // 4]:.3f} "
                f"median={statistics.median(s):.3f} q75={s[3 * len(s) // 4]:.3f} max={s[-1]:.3f}")

    print(f"model {meta['model']}, {meta.get('preset') or meta.get('variant') or 'all'} "
          f"({meta['mode']}), split {meta['split']}: {len(meta['questions'])} questions, "
          f"{meta['steps']} steps, {len(out)} evaluations")
    print(f"supported   PPL: {q(pos)}")
    print(f"unsupported PPL: {q(neg)}")
    for t in (1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2.0, 2.5, 3.0):
        print(f"  tau={t:<4}: balanced accuracy {balanced_acc(pos, neg, t):.3f}")
    print(f"best tau = {tau:.3f}, balanced accuracy {acc:.3f}")
    at = round(balanced_acc(pos, neg, at_tau), 3) if at_tau else None
    if at is not None:
        print(f"at tau = {at_tau}: balanced accuracy {at:.3f}")
    unk = sum(o["unknown"] for o in out)
    print(f"UNKNOWN answers: {unk}/{len(out)}")
    print(json.dumps({**{k: v for k, v in meta.items() if k != "sentinel"},
                      "n_pos": len(pos), "n_neg": len(neg),
                      "median_ppl_supported": statistics.median([x for x in pos if x < 1e9])
                      if pos else None,
                      "median_ppl_unsupported": statistics.median([x for x in neg if x < 1e9])
                      if neg else None,
                      "best_tau": round(tau, 3), "balanced_acc": round(acc, 3),
                      "tau": at_tau, "balanced_acc_at_tau": at, "unknown": unk}))


if __name__ == "__main__":
    main()
