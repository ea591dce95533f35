"""Do the confidence signals of nodes (and of answers) predict anything?

Metrics (numpy, no I/O)
-----------------------
- :func:`auroc`: how well a signal separates positives from negatives (0.5: not at all);
  ties count half (the Mann-Whitney statistic with average ranks).
- :func:`ece`: expected calibration error over **equal-mass** bins (each bin holds the
  same number of items, give or take one; tied values stay in one bin, so a bin may grow),
  so a signal bunched near 1 still gets bins that hold data; :func:`reliability_bins` are
  the same bins.
- :func:`brier`: mean squared error of a probability.
- :func:`risk_coverage`: accuracy when abstaining below each confidence threshold,
  against the share answered; :func:`at_coverage` reads it at one coverage.
- :class:`Isotonic` (pool-adjacent-violators) and :class:`Platt` (a one-feature logistic
  regression) recalibrate a signal into a probability; they are fitted on the train
  split only and applied to the other splits (:func:`recalibrated`).

Signals and labels
------------------
A node's signals are every number in its ``scores`` (perplexity, mean / minimum token
probability, mean entropy, the method's own scores: C_t, p_right, a router's probability,
...) plus ``verdict`` (1 for sufficient / verified, 0 for insufficient / failed
verification). Signals where low means confident (perplexity, NLL, entropy) are negated
before AUROC. ECE and Brier need a probability: probabilities are taken as they are,
perplexity becomes 1 / perplexity (the geometric mean token probability); other
signals get ECE and Brier only after recalibration.

Node labels (:func:`node_records`), from the triage of each run:

- ``gold_evidence``: the node retrieved, and holds a gold hop (the triage marks);
- ``correct_path``: the node lies on the answer path of a correct answer (nodes of
  triaged runs; 0 off the path or on the path of a wrong answer); a node that judges its
  parent (a method's ``check_kinds``: PAR-RAG's reviews) takes its parent's place, since a
  passed review hangs off the path and a failed one leads into the retry;
- ``hop_answer``: the node's intermediate answer contains the gold answer of the
  decomposition step it asks (MuSiQue's ``question_decomposition``), where the triage
  matched the node to a step.

A signal with fewer than ``min_n`` labelled nodes, or fewer than ``min_class`` of
either class, gets its counts and no number (a noisy AUROC reads as a finding).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from ..eval import metrics as M
from ..viz.inspect import ANSWER_KEYS

MIN_N = 20
MIN_CLASS = 5
N_BINS = 10
LOWER_IS_CONFIDENT = frozenset({"perplexity", "ppl", "mean_nll", "nll", "mean_entropy",
                                "entropy"})
VERDICT_STATES = {"sufficient": 1.0, "verified": 1.0, "insufficient": 0.0,
                  "failed_verification": 0.0}
LABELS = {"gold_evidence": "holds gold evidence",
          "correct_path": "on the path of a correct answer",
          "hop_answer": "its hop's gold answer"}


# ---------------------------------------------------------------- metrics

def _xy(x: Sequence[float], y: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xa.shape != ya.shape:
        raise ValueError(f"{xa.size} scores but {ya.size} labels; give one label per score")
    return xa, ya


def average_ranks(s: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values sharing their mean rank (scipy's rankdata, without
    importing scipy.stats, which costs seconds)."""
    order = np.argsort(s, kind="mergesort")
    v = s[order]
    new = np.r_[True, v[1:] != v[:-1]]
    starts = np.flatnonzero(new)
    counts = np.diff(np.r_[starts, s.size])
    ranks = np.empty(s.size)
    ranks[order] = (starts + (counts + 1) / 2.0)[np.cumsum(new) - 1]
    return ranks


def auroc(scores: Sequence[float], labels: Sequence[Any]) -> float | None:
    """Area under the ROC curve; None when one class is missing."""
    s, y = _xy(scores, labels)
    pos = y > 0.5
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if not n1 or not n0:
        return None
    return float((average_ranks(s)[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def reliability_bins(probs: Sequence[float], labels: Sequence[Any],
                     n_bins: int = N_BINS) -> list[dict[str, float]]:
    """Equal-mass bins, lowest confidence first: count, mean confidence, accuracy."""
    p, y = _xy(probs, labels)
    if not p.size:
        return []
    order = np.argsort(p, kind="stable")
    v = p[order]
    k = min(n_bins, p.size)
    cuts = []
    for c in np.cumsum([p.size // k + (i < p.size % k) for i in range(k)])[:-1]:
        # tied values share a bin: a binary signal gets two bins, not ones that mix 0 and 1
        while c < p.size and v[c] == v[c - 1]:
            c += 1
        if c < p.size and (not cuts or c > cuts[-1]):
            cuts.append(int(c))
    out = []
    for idx in np.split(order, cuts):
        out.append({"n": int(idx.size), "conf": float(p[idx].mean()), "acc": float(y[idx].mean()),
                    "lo": float(p[idx].min()), "hi": float(p[idx].max())})
    return out


def ece(probs: Sequence[float], labels: Sequence[Any], n_bins: int = N_BINS) -> float | None:
    bins = reliability_bins(probs, labels, n_bins)
    if not bins:
        return None
    n = sum(b["n"] for b in bins)
    return float(sum(b["n"] * abs(b["conf"] - b["acc"]) for b in bins) / n)


def brier(probs: Sequence[float], labels: Sequence[Any]) -> float | None:
    p, y = _xy(probs, labels)
    return float(np.mean((p - y) ** 2)) if p.size else None


def risk_coverage(conf: Sequence[float], correct: Sequence[Any]) -> list[dict[str, float]]:
    """One point per distinct confidence, highest first: answer the items at or above it
    (ties answered or abstained on together), the share answered and their accuracy."""
    c, y = _xy(conf, correct)
    if not c.size:
        return []
    out = []
    for t in np.unique(c)[::-1]:
        keep = c >= t
        out.append({"threshold": float(t), "coverage": float(keep.mean()),
                    "accuracy": float(y[keep].mean()), "n": int(keep.sum())})
    return out


def at_coverage(curve: Sequence[dict[str, float]], coverage: float) -> dict[str, float] | None:
    """The first point answering at least ``coverage`` of the items."""
    return next((p for p in curve if p["coverage"] >= coverage - 1e-12), None)


class Isotonic:
    """Non-decreasing fit (pool adjacent violators), linear between the fitted points and
    flat outside them (scikit-learn's IsotonicRegression with out_of_bounds='clip')."""

    def fit(self, x: Sequence[float], y: Sequence[Any]) -> "Isotonic":
        xa, ya = _xy(x, y)
        ux, inv = np.unique(xa, return_inverse=True)
        w = np.bincount(inv).astype(float)
        v = np.bincount(inv, weights=ya) / w
        blocks: list[list[float]] = []              # [value, weight, n points]
        for vi, wi in zip(v, w):
            blocks.append([vi, wi, 1])
            while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
                v2, w2, n2 = blocks.pop()
                v1, w1, n1 = blocks.pop()
                blocks.append([(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
        self.x = ux
        self.y = np.concatenate([np.full(int(n), b) for b, _, n in blocks]) if blocks \
            else np.zeros(0)
        return self

    def predict(self, x: Sequence[float]) -> np.ndarray:
        return np.interp(np.asarray(x, dtype=float), self.x, self.y)


class Platt:
    """p = sigmoid(a * score + b), the maximum-likelihood fit (Newton's method; a tiny
    ridge keeps a perfectly separating signal finite)."""

    def fit(self, x: Sequence[float], y: Sequence[Any], ridge: float = 1e-6) -> "Platt":
        xa, ya = _xy(x, y)
        self.mu, self.sd = float(xa.mean()), float(xa.std()) or 1.0
        X = np.column_stack([(xa - self.mu) / self.sd, np.ones_like(xa)])
        w = np.zeros(2)
        for _ in range(100):
            p = 1 / (1 + np.exp(-X @ w))
            g = X.T @ (p - ya) + ridge * w
            H = X.T @ (X * (p * (1 - p))[:, None]) + ridge * np.eye(2)
            step = np.linalg.solve(H, g)
            w -= step
            if np.abs(step).max() < 1e-10:
                break
        self.a, self.b = float(w[0] / self.sd), float(w[1] - w[0] * self.mu / self.sd)
        return self

    def predict(self, x: Sequence[float]) -> np.ndarray:
        return 1 / (1 + np.exp(-(self.a * np.asarray(x, dtype=float) + self.b)))


def recalibrated(train_x: Sequence[float], train_y: Sequence[Any], test_x: Sequence[float],
                 test_y: Sequence[Any], test_p: Sequence[float] | None = None,
                 n_bins: int = N_BINS) -> dict[str, Any]:
    """ECE and Brier on the held-out items before (``test_p``, the signal's own
    probability, if it has one) and after Platt and isotonic fits on the train items."""
    out: dict[str, Any] = {"n_train": len(train_x), "n_test": len(test_x)}
    if test_p is not None:
        out["before"] = {"ece": ece(test_p, test_y, n_bins), "brier": brier(test_p, test_y)}
    for name, model in (("platt", Platt()), ("isotonic", Isotonic())):
        p = model.fit(train_x, train_y).predict(test_x)
        out[name] = {"ece": ece(p, test_y, n_bins), "brier": brier(p, test_y)}
    return out


def weighted_auroc(scores: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """AUROC under each row of ``weights`` (rows, items): item i counts weights[r, i]
    times. NaN where a row leaves one class empty."""
    order = np.argsort(scores, kind="mergesort")
    v = scores[order]
    starts = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
    w = np.atleast_2d(weights)[:, order]
    pos = labels[order] > 0.5
    p = np.add.reduceat(w * pos, starts, axis=1)          # positive weight per distinct score
    n = np.add.reduceat(w * ~pos, starts, axis=1)
    below = np.cumsum(n, axis=1) - n                       # negatives strictly below
    num = (p * (below + 0.5 * n)).sum(axis=1)
    den = p.sum(axis=1) * n.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def bootstrap_auroc(scores: np.ndarray, labels: np.ndarray, clusters: Sequence[Any], *,
                    n_boot: int = 300, seed: int = 0, level: float = 0.95
                    ) -> tuple[float, float] | None:
    """Percentile interval of the AUROC, resampling whole clusters (a question's nodes
    are not independent of each other); each resample weighs an item by how often its
    cluster was drawn."""
    keys = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
    k = len(keys)
    if k < 2:
        return None
    cid = np.array([keys[c] for c in clusters])
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(k, np.full(k, 1.0 / k), size=n_boot)
    vals = weighted_auroc(np.asarray(scores, float), np.asarray(labels, float), draws[:, cid])
    vals = vals[np.isfinite(vals)]
    if vals.size < n_boot // 2:
        return None
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(vals, [tail, 100 - tail])
    return float(lo), float(hi)


# ---------------------------------------------------------------- signals

def oriented(signal: str, x: np.ndarray) -> np.ndarray:
    """Higher = more confident."""
    return -x if signal in LOWER_IS_CONFIDENT else x


def as_probability(signal: str, x: np.ndarray) -> np.ndarray | None:
    if signal in ("perplexity", "ppl"):
        return np.where(x > 0, 1.0 / np.maximum(x, 1e-12), np.nan)
    if signal in ("mean_nll", "nll"):
        return np.exp(-x)
    if signal in LOWER_IS_CONFIDENT or not x.size or x.min() < 0 or x.max() > 1:
        return None
    return x


def node_signals(node: Any) -> dict[str, float]:
    out = {k: float(v) for k, v in (node.scores or {}).items()
           if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
    if node.state in VERDICT_STATES:
        out["verdict"] = VERDICT_STATES[node.state]
    return out


def _intermediate(node: Any) -> str | None:
    for k in ("answer_final",) + ANSWER_KEYS:
        v = node.attrs.get(k)
        if isinstance(v, str) and v.strip():
            return v
    return None


def node_records(tr: Any, tri: Any, *, method: str, run_id: str, question_id: str,
                 split: str, check_kinds: Iterable[str] = ()) -> list[dict[str, Any]]:
    """One record per node of a run: its signals and the labels its triage allows. A node
    of one of ``check_kinds`` (the method's reviews of their parent) is on the path when
    the node it judges is."""
    if tri is None or tri.failure_class is None:
        return []
    gold = (tr.meta or {}).get("gold") or {}
    decomposition = gold.get("decomposition") or []
    on_path = set(tri.path)
    checks = set(check_kinds)
    out = []
    for nid, n in tr.nodes.items():
        labels: dict[str, float] = {}
        if n.evidence:
            labels["gold_evidence"] = 1.0 if tri.marks.get(nid) else 0.0
        judged = n.parents[0] if n.kind in checks and n.parents else nid
        labels["correct_path"] = 1.0 if (tri.correct and judged in on_path) else 0.0
        step = tri.steps.get(nid)
        ans = _intermediate(n)
        if step and step.get("matched") and ans is not None and step["step"] < len(decomposition):
            d = decomposition[step["step"]]
            hop_gold = d.get("answer") if isinstance(d, dict) else None
            if hop_gold:
                labels["hop_answer"] = float(M.contains_match(ans, [hop_gold]))
        out.append({"method": method, "kind": n.kind, "node": nid, "run_id": run_id,
                    "question_id": question_id, "split": split,
                    "signals": node_signals(n), "labels": labels})
    return out


# ---------------------------------------------------------------- the report

@dataclass
class Cell:
    """One (method, node kind, signal, label): numbers, or the counts when too few."""
    method: str
    kind: str
    signal: str
    label: str
    n: int
    n_pos: int
    too_few: bool
    auroc: float | None = None
    auroc_lo: float | None = None
    auroc_hi: float | None = None
    ece: float | None = None
    brier: float | None = None
    bins: list[dict[str, float]] | None = None
    recal: dict[str, Any] | None = None
    rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def node_report(records: Iterable[dict[str, Any]], *, min_n: int = MIN_N,
                min_class: int = MIN_CLASS, n_bins: int = N_BINS, n_boot: int = 300,
                all_kinds: bool = True) -> list[Cell]:
    """Every (method, node kind, signal, label) the records hold, ranked by AUROC within
    each (method, kind, label); ``all_kinds`` adds kind "*" (every node of the method)."""
    groups: dict[tuple[str, str, str, str], list[tuple[float, float, str, str]]] = \
        defaultdict(list)
    for r in records:
        kinds = [r["kind"]] + (["*"] if all_kinds else [])
        for sig, x in r["signals"].items():
            for lab, y in r["labels"].items():
                for k in kinds:
                    groups[(r["method"], k, sig, lab)].append(
                        (x, y, r["question_id"] or r["run_id"], r.get("split") or ""))
    cells = []
    for (method, kind, sig, lab), rows in sorted(groups.items()):
        x = np.array([r[0] for r in rows])
        y = np.array([r[1] for r in rows])
        n, n_pos = int(y.size), int((y > 0.5).sum())
        few = n < min_n or min(n_pos, n - n_pos) < min_class
        c = Cell(method, kind, sig, lab, n, n_pos, few)
        if not few:
            s = oriented(sig, x)
            c.auroc = auroc(s, y)
            ci = bootstrap_auroc(s, y, [r[2] for r in rows], n_boot=n_boot)
            if ci:
                c.auroc_lo, c.auroc_hi = ci
            p = as_probability(sig, x)
            if p is not None and np.isfinite(p).all():
                c.ece, c.brier = ece(p, y, n_bins), brier(p, y)
                c.bins = reliability_bins(p, y, n_bins)
            train = np.array([r[3] == "train" for r in rows])
            ytr, yte = y[train], y[~train]
            if ytr.size >= min_n and yte.size and 0 < ytr.sum() < ytr.size:
                c.recal = recalibrated(s[train], ytr, s[~train], yte,
                                       None if p is None else p[~train], n_bins)
        cells.append(c)
    by_group: dict[tuple[str, str, str], list[Cell]] = defaultdict(list)
    for c in cells:
        if c.auroc is not None:
            by_group[(c.method, c.kind, c.label)].append(c)
    for group in by_group.values():
        for i, c in enumerate(sorted(group, key=lambda c: -c.auroc), 1):
            c.rank = i
    return cells


def answer_report(items: Iterable[dict[str, Any]], *, n_bins: int = N_BINS,
                  min_n: int = MIN_N, coverage: float = 0.5) -> list[dict[str, Any]]:
    """Per series (method and variant): the final answer's confidence against its
    correctness: AUROC, ECE, Brier, the risk-coverage curve and its point at
    ``coverage``, and recalibration fitted on the train items."""
    series: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for it in items:
        if it.get("confidence") is None or it.get("correct") is None:
            continue
        series[(it["method"], it.get("variant") or "")].append(it)
    out = []
    for (method, variant), rows in sorted(series.items()):
        c = np.array([float(r["confidence"]) for r in rows])
        y = np.array([1.0 if r["correct"] else 0.0 for r in rows])
        n, n_pos = int(y.size), int(y.sum())
        row: dict[str, Any] = {"method": method, "variant": variant, "n": n, "n_correct": n_pos,
                               "too_few": n < min_n}
        if n >= min_n:
            curve = risk_coverage(c, y)
            row.update(auroc=auroc(c, y), ece=ece(c, y, n_bins), brier=brier(c, y),
                       bins=reliability_bins(c, y, n_bins), curve=curve,
                       at_coverage=at_coverage(curve, coverage), coverage=coverage)
            train = np.array([r.get("split") == "train" for r in rows])
            if train.sum() >= min_n and (~train).any() and 0 < y[train].sum() < train.sum():
                row["recal"] = recalibrated(c[train], y[train], c[~train], y[~train],
                                            c[~train], n_bins)
        out.append(row)
    return out


def best_and_worst(cells: Sequence[Cell], method: str, kind: str = "*"
                   ) -> tuple[Cell | None, Cell | None]:
    """The method's best and worst node-level signal by AUROC (any label)."""
    ok = [c for c in cells if c.method == method and c.kind == kind and c.auroc is not None]
    if not ok:
        return None, None
    ok.sort(key=lambda c: c.auroc)
    return ok[-1], ok[0]
