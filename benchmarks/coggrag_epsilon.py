"""Calibrate CogGRAG's pruning threshold ε for the active embedder on the demo KG.

For every demo question with a gold path, the "ideal" key of each gold triple is what
CogGRAG's extraction should produce: (head name, relation words, "unknown"). The
candidates are the 1-hop neighbourhood triples of the gold triple's head (as in the
method's expansion). A triple is relevant iff it is on the gold path. For each ε we
report recall (gold triples kept), the mean number kept per question and F1; the
last line is a JSON object with the best ε and the figures at the paper's 0.7.

    python benchmarks/coggrag_epsilon.py --split train [--model PATH_OR_NAME]

``--eval EVAL_ID`` calibrates instead on the stored CogGRAG runs of an eval, for a dataset
whose KG was built from its passages (``kg build``; HotpotQA): the candidates are each
run's own (the model's keys, linked and expanded), with the similarity the run scored;
a candidate is relevant iff it was extracted from one of its question's gold passages.
Only the questions of ``--split`` count (train: never calibrate on the questions you
report). Recall is then the share of gold passages that keep at least one triple, beside
the share any candidate reaches (the ceiling no ε can pass).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.datasets import load_dataset  # noqa: E402
from workbench.knowledge.dense import get_embedder  # noqa: E402
from workbench.methods.coggrag.retrieval import humanise_rel, verbalise  # noqa: E402
from workbench.methods.frag.kg import is_noise_relation  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None, help="sentence-transformers folder (default MiniLM)")
    ap.add_argument("--split", default="train", help="split calibrated on (train)")
    ap.add_argument("--eval", metavar="EVAL_ID",
                    help="calibrate on the stored CogGRAG runs of this eval (gold passages)")
    ap.add_argument("--variant", help="with --eval: the CogGRAG variant, where it ran several")
    args = ap.parse_args()
    if args.eval:
        return from_eval(args.eval, args.split, args.variant)
    ds = load_dataset("demo")
    kg = ds.kg()
    emb = get_embedder(args.model)
    rows = []          # (score, relevant, qid)
    for q in ds.split(args.split):
        for h, r, t in q.gold_path or []:
            key = verbalise(kg.name(h), humanise_rel(r, "last"), "unknown", "plain")
            cands = [(h, rel, o) if d == "out" else (o, rel, h) for rel, o, d in kg.neighbors(h)
                     if not is_noise_relation(rel)]
            texts = [verbalise(kg.name(a), humanise_rel(b, "last"), kg.name(c), "plain")
                     for a, b, c in cands]
            if not texts:
                continue
            sims = emb.encode(texts, memo=False) @ emb.encode(key)
            for (a, b, c), s in zip(cands, sims):
                rows.append((float(s), (a, b, c) == (h, r, t), q.id))
    scores = np.array([r[0] for r in rows])
    rel = np.array([r[1] for r in rows])
    nq = len({r[2] for r in rows})

    def recall(kept: np.ndarray) -> float:
        return int((kept & rel).sum()) / max(int(rel.sum()), 1)
    report(scores, rel, nq, recall, {"embedder": emb.name, "split": args.split,
                                     "n_gold_triples": int(rel.sum())})


def report(scores: np.ndarray, rel: np.ndarray, nq: int, recall, head: dict) -> None:
    """Per ε: recall (``recall(kept mask)``), precision of the kept candidates, F1 and
    kept per question; the last line is JSON with the best ε by F1 and the figures at 0.7."""
    table = []
    for eps in np.arange(0.3, 0.96, 0.05):
        kept = scores > eps
        prec = int((kept & rel).sum()) / max(int(kept.sum()), 1)
        rec = recall(kept)
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        table.append({"eps": round(float(eps), 2), "recall": round(rec, 3),
                      "precision": round(prec, 3), "f1": round(f1, 3),
                      "kept_per_question": round(float(kept.sum()) / nq, 1)})
        print(f"eps={eps:.2f} recall={rec:.3f} precision={prec:.3f} f1={f1:.3f} "
              f"kept/question={kept.sum() / nq:.1f}")
    best = max(table, key=lambda r: (r["f1"], -r["eps"]))
    at07 = next(r for r in table if abs(r["eps"] - 0.7) < 1e-6)
    print(json.dumps({**head, "n_candidates": len(scores),
                      "gold_score_median": round(float(np.median(scores[rel])), 3)
                      if rel.any() else None,
                      "other_score_median": round(float(np.median(scores[~rel])), 3)
                      if (~rel).any() else None, "best": best, "at_0.7": at07}))


def from_eval(eval_id: str, split: str, variant: str | None = None) -> None:
    from workbench.store import Store
    from workbench.triage.gold import TRIPLES, gold_evidence, hop_matches
    st = Store()
    runs = st.query("SELECT run_id, variant FROM eval_items WHERE eval_id = ? AND method = "
                    "'coggrag' AND status IN ('finished', 'refused') ORDER BY question_id",
                    [eval_id])
    variants = sorted({r["variant"] for r in runs})
    if variant is None and len(variants) > 1:
        raise SystemExit(f"eval {eval_id} ran CogGRAG as {variants}; pick one with --variant")
    runs = [r for r in runs if variant is None or r["variant"] == variant]
    rows = []              # (score, relevant, run index, gold hop indexes the triple holds)
    n_hops, nq, knobs = 0, 0, set()
    for r in runs:
        tr = st.trace(r["run_id"])
        gold = (tr.meta or {}).get("gold") or {}
        if gold.get("split") != split:
            continue
        ev = gold_evidence(gold, TRIPLES)
        main = next((e for e in tr.nodes["kg"].evidence if not e.get("attributed")), None) \
            if "kg" in tr.nodes else None
        if ev is None or main is None:
            continue
        knobs.add((tr.meta.get("config") or {}).get("expand_hops", 1))
        for h in main["hits"]:
            held = {hop.index for hop in ev.hops if hop_matches(hop, h)}
            rows.append((float(h["meta"]["similarity"]), bool(held), nq, held))
        n_hops += len(ev.hops)
        nq += 1
    if not rows:
        raise SystemExit(f"eval {eval_id} has no CogGRAG run on a {split!r} question with gold "
                         f"passages; run `eval --methods coggrag` on a dataset with a built KG")
    scores = np.array([r[0] for r in rows])
    rel = np.array([r[1] for r in rows])

    def recall(kept: np.ndarray) -> float:
        found = {(r[2], i) for r, k in zip(rows, kept) if k for i in r[3]}
        return len(found) / max(n_hops, 1)
    reach = round(recall(np.ones(len(rows), dtype=bool)) * n_hops)   # every candidate kept
    print(f"{nq} {split} questions of eval {eval_id}: {len(rows)} candidates; any candidate "
          f"reaches {reach} of {n_hops} gold passages ({reach / max(n_hops, 1):.2f})")
    report(scores, rel, nq, recall, {"eval": eval_id, "split": split, "questions": nq,
                                     "gold_passages": n_hops, "reachable": reach,
                                     "expand_hops": sorted(knobs)})


if __name__ == "__main__":
    main()
