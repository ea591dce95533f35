"""Threshold advice from held-out data: for a gate knob an eval swept (CRP-RAG's tau_ppl,
PAR-RAG's C_t threshold, CogGRAG's epsilon, FRAG's route threshold, top-k, ...), the value
that maximised the metric on the **train** questions, and what that value gives on the
dev and test questions against the method's default, paired on the same questions (and
seeds), with a bootstrap interval. So a gate is trusted for what it does on questions it
was not chosen on.

Each configuration (variant) of a method the eval ran is a candidate; its value of the
knob is what the table shows (a grid over several knobs gives several candidates per
value, each its own row). The default is the candidate whose knob is at the method's
default value (the one with the fewest other knobs set, when several are).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Sequence

import numpy as np

from ..eval.metrics import paired_bootstrap

HELD_OUT = ("dev", "test")


def knob_value(knobs: dict[str, Any], name: str, default: Any) -> Any:
    """The knob as the variant set it, bare (``k``) or method-scoped (``m.k``)."""
    for k, v in (knobs or {}).items():
        if k == name or k.endswith("." + name):
            return v
    return default


def _mean(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if len(xs) else None


def advise(rows: Iterable[dict[str, Any]], gates: dict[str, dict[str, Any]], *,
           n_boot: int = 2000) -> list[dict[str, Any]]:
    """``rows``: one per eval item (method, variant, knobs, question_id, seed, split,
    m = the metric); ``gates``: method -> {knob: default}. One advice per method and
    gate knob that the eval ran at two values or more."""
    by_method: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("m") is not None:
            by_method[r["method"]].append(r)
    out = []
    for method, items in sorted(by_method.items()):
        variants: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in items:
            variants[r.get("variant") or ""].append(r)
        for knob, default in sorted((gates.get(method) or {}).items()):
            vals = {v: knob_value(rs[0].get("knobs") or {}, knob, default)
                    for v, rs in variants.items()}
            if len({repr(x) for x in vals.values()}) < 2:
                continue
            out.append(_advice(method, knob, default, variants, vals, n_boot))
    return out


def _advice(method: str, knob: str, default: Any, variants: dict[str, list[dict[str, Any]]],
            vals: dict[str, Any], n_boot: int) -> dict[str, Any]:
    table = []
    for v, rs in variants.items():
        row = {"variant": v, "value": vals[v], "n_set": len(rs[0].get("knobs") or {})}
        for sp in ("train",) + HELD_OUT:
            xs = [r["m"] for r in rs if r.get("split") == sp]
            row[sp], row[f"n_{sp}"] = _mean(xs), len(xs)
        table.append(row)
    table.sort(key=lambda r: (str(type(r["value"])), r["value"] if r["value"] is not None
                              else 0, r["variant"]))
    adv: dict[str, Any] = {"method": method, "knob": knob, "default": default, "values": table}
    trained = [r for r in table if r["train"] is not None]
    if not trained:
        adv["note"] = "no train question was run: nothing to choose the value on"
        return adv
    best = max(trained, key=lambda r: r["train"])       # ties: the first in value order
    adv["best"] = best["variant"]
    adv["best_value"] = best["value"]
    base = sorted((r for r in table if repr(r["value"]) == repr(default)),
                  key=lambda r: r["n_set"])
    if not base:
        adv["note"] = f"the default {knob} = {default} was not run: no baseline to pair with"
        return adv
    adv["baseline"] = base[0]["variant"]
    key = lambda r: (r.get("question_id"), r.get("seed"))      # noqa: E731
    held_b = {key(r): r["m"] for r in variants[best["variant"]] if r.get("split") in HELD_OUT}
    held_d = {key(r): r["m"] for r in variants[base[0]["variant"]]
              if r.get("split") in HELD_OUT}
    common = sorted(set(held_b) & set(held_d), key=str)
    adv["n_pairs"] = len(common)
    if not common:
        adv["note"] = "no dev or test question was run by both: nothing to measure it on"
        return adv
    d, lo, hi = paired_bootstrap([held_b[k] for k in common], [held_d[k] for k in common],
                                 n_boot=n_boot)
    adv.update(held_best=float(np.mean([held_b[k] for k in common])),
               held_default=float(np.mean([held_d[k] for k in common])),
               diff=d, lo=lo, hi=hi)
    adv["note"] = sentence(adv)
    return adv


def sentence(a: dict[str, Any]) -> str:
    head = (f"{a['method']}: {a['knob']} = {a['best_value']} maximised the metric on train "
            f"({next(r['train'] for r in a['values'] if r['variant'] == a['best']):.3f}); on "
            f"{a['n_pairs']} dev/test questions it gives {a['held_best']:.3f} against "
            f"{a['held_default']:.3f} at the default {a['default']}: "
            f"{a['diff']:+.3f} [{a['lo']:+.3f}, {a['hi']:+.3f}]")
    if a["best"] == a["baseline"]:
        return head + ", the default itself."
    if a["lo"] > 0:
        return head + ", a gain the interval resolves."
    if a["hi"] < 0:
        return head + ": the train choice does worse on held-out questions."
    return head + ": no difference the interval resolves."


# ---------------------------------------------------------------- from the store

def gate_knobs(methods: Iterable[str]) -> dict[str, dict[str, Any]]:
    """method -> {gate knob: default}: the knobs its thresholds name, and top-k."""
    from ..config import knobs
    from ..eval.knobs import EVAL_KNOBS
    from ..methods import all_methods
    classes = all_methods()
    out: dict[str, dict[str, Any]] = {}
    for m in methods:
        cls = classes.get(m)
        if cls is None:
            continue
        defaults = {k.name: k.default for k in knobs(cls.Config)}
        names = {knob for knob, _ in cls.thresholds.values()} | {"top_k"}
        out[m] = {n: defaults[n] if n in defaults else EVAL_KNOBS["top_k"].default
                  for n in names if n in defaults or n == "top_k"}
    return out


def eval_rows(store: Any, eval_id: str, metric: str = "correct") -> list[dict[str, Any]]:
    """The eval's items with the metric and each question's split (from the gold its run
    recorded)."""
    import json

    from ..eval.queries import metric_expr
    from ..eval.runner import get_eval
    get_eval(store, eval_id)
    rows = store.query(f"""
        SELECT i.method, i.variant, i.knobs, i.question_id, i.seed, {metric_expr(metric)} AS m,
               json_extract_string(e.data, '$.gold.split') AS split
        FROM eval_items i LEFT JOIN events e
          ON e.run_id = i.run_id AND e.type = 'run_started'
        WHERE i.eval_id = ?""", [eval_id])
    for r in rows:
        if isinstance(r["knobs"], str):
            r["knobs"] = json.loads(r["knobs"])
    return rows
