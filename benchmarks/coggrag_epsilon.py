"""Calibrate CogGRAG's pruning threshold ε for the active embedder on the demo KG.

For every demo question with a gold path, the "ideal" key of each gold triple is what
CogGRAG's extraction should produce: (head name, relation words, "unknown"). The
candidates are the 1-hop neighbourhood triples of the gold triple's head (as in the
method's expansion). A triple is relevant iff it is on the gold path. For each ε we
report recall (gold triples kept), the mean number kept per question and F1; the
last line is a JSON object with the best ε and the figures at the paper's 0.7.

    python benchmarks/coggrag_epsilon.py --split train [--model PATH_OR_NAME]
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
from workbench.methods.coggrag_retrieval import humanise_rel, verbalise  # noqa: E402
from workbench.methods.frag_kg import is_noise_relation  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None, help="sentence-transformers folder (default MiniLM)")
    ap.add_argument("--split", default="train", help="demo split calibrated on (train)")
    args = ap.parse_args()
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
    table = []
    for eps in np.arange(0.3, 0.96, 0.05):
        kept = scores > eps
        tp = int((kept & rel).sum())
        prec = tp / max(int(kept.sum()), 1)
        rec = tp / max(int(rel.sum()), 1)
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        table.append({"eps": round(float(eps), 2), "recall": round(rec, 3),
                      "precision": round(prec, 3), "f1": round(f1, 3),
                      "kept_per_question": round(float(kept.sum()) / nq, 1)})
        print(f"eps={eps:.2f} recall={rec:.3f} precision={prec:.3f} f1={f1:.3f} "
              f"kept/question={kept.sum() / nq:.1f}")
    best = max(table, key=lambda r: (r["f1"], -r["eps"]))
    at07 = next(r for r in table if abs(r["eps"] - 0.7) < 1e-6)
    print(json.dumps({"embedder": emb.name, "split": args.split,
                      "n_gold_triples": int(rel.sum()),
                      "n_candidates": len(rows), "gold_score_median": round(float(
                          np.median(scores[rel])), 3), "other_score_median": round(float(
                          np.median(scores[~rel])), 3), "best": best, "at_0.7": at07}))


if __name__ == "__main__":
    main()
