"""The Evaluate page's aggregates, computed in DuckDB (never pandas over all rows).

Every function takes a :class:`~workbench.store.Store` and one or more eval ids and returns
a short list of dicts (one per method/variant/group), ready for :mod:`workbench.viz.eval_charts`.
Confidence intervals come from the aggregated counts: Wilson for 0/1 metrics, the normal
approximation (mean ± z·sd/√n) for graded ones (token F1, ROUGE-L, CRAG points).
Metric and grouping names are checked against whitelists before they reach SQL; values go
in as parameters.
"""
from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from .. import cpu_share
from ..trace import retrieval_confound, retrieval_label

Z95 = 1.959963984540054

# column expression, label, binary?
METRICS: dict[str, tuple[str, str, bool]] = {
    "correct": ("CAST(correct AS DOUBLE)", "Correct (primary metric)", True),
    "em": ("em", "Exact match (SQuAD)", True),
    "f1": ("f1", "Token F1 (SQuAD)", False),
    "contains": ("contains", "EM, contains gold (CRP-RAG)", True),
    "rouge_f1": ("rouge_f1", "ROUGE-L ≥ τ (CRP-RAG F1)", True),
    "rouge_l": ("rouge_l", "ROUGE-L", False),
    "acc_lm": ("acc_lm", "Acc-LM (LLM judge)", True),
    "hits1": ("hits1", "Hits@1", True),
    "fever": ("fever", "FEVER label accuracy", True),
    "crag_accuracy": ("CAST(crag_label = 'accurate' AS DOUBLE)", "CRAG accuracy", True),
    "crag_hallucination": ("CAST(crag_label = 'hallucinated' AS DOUBLE)", "CRAG hallucination", True),
    "crag_missing": ("CAST(crag_label = 'missing' AS DOUBLE)", "CRAG missing", True),
    "crag_score": ("CAST(crag_points AS DOUBLE)", "CRAG score (acc − halluc)", False),
    "refused": ("CAST(refused AS DOUBLE)", "Refusal rate", True),
}

GROUPS = {"hops": "CAST(hops AS VARCHAR)", "qtype": "qtype", "domain": "domain",
          "question_type": "question_type", "static_or_dynamic": "static_or_dynamic",
          "method": "method", "variant": "variant", "status": "status", "seed": "CAST(seed AS VARCHAR)"}

_KNOB_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")

class Session:
    """Several page queries over one open connection: opening the DuckDB file costs
    20-50 ms, more than most of these aggregates. Anything with ``query(sql, args)``
    (a Store, a Session) can be passed to the functions below."""

    def __init__(self, con: Any):
        self.con = con

    def query(self, sql: str, args: list[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, args or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]


@contextmanager
def session(store: Any) -> Iterator[Session]:
    """``with session(store) as db: summary(db, eval_id)...`` (read-only use)."""
    with store._conn() as con:
        yield Session(con)


def metric_expr(metric: str) -> str:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; one of {', '.join(METRICS)}")
    return METRICS[metric][0]


def group_expr(group: str) -> str:
    if group.startswith("knob:"):
        name = group[5:]
        if not _KNOB_RE.match(name):
            raise ValueError(f"bad knob name {name!r}")
        return f"json_extract_string(knobs, '$.\"{name}\"')"
    if group not in GROUPS:
        raise ValueError(f"unknown grouping {group!r}; one of {', '.join(GROUPS)} or knob:NAME")
    return GROUPS[group]


def eval_where(eval_ids: str | Sequence[str]) -> tuple[str, list[str]]:
    """The WHERE clause that selects the rows of the given evals, and its parameters."""
    ids = [eval_ids] if isinstance(eval_ids, str) else list(eval_ids)
    if not ids:
        raise ValueError("no eval selected")
    return "eval_id IN (" + ", ".join("?" for _ in ids) + ")", ids


def _ci_sql(binary: bool) -> str:
    if binary:   # Wilson score interval from k successes in n
        return (f"CASE WHEN n > 0 THEN (mean + {Z95}^2/(2*n) - {Z95}*sqrt(mean*(1-mean)/n + "
                f"{Z95}^2/(4*n*n))) / (1 + {Z95}^2/n) END AS lo, "
                f"CASE WHEN n > 0 THEN (mean + {Z95}^2/(2*n) + {Z95}*sqrt(mean*(1-mean)/n + "
                f"{Z95}^2/(4*n*n))) / (1 + {Z95}^2/n) END AS hi")
    return (f"mean - {Z95} * coalesce(sd, 0) / sqrt(greatest(n, 1)) AS lo, "
            f"mean + {Z95} * coalesce(sd, 0) / sqrt(greatest(n, 1)) AS hi")


def series(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Label each row: the method, plus its variant when a method has several (a lone
    variant's knobs are in the eval's spec, and would only lengthen every chart label)."""
    per: dict[str, set[str]] = {}
    for r in rows:
        per.setdefault(r["method"], set()).add(r.get("variant") or "default")
    for r in rows:
        v = r.get("variant") or "default"
        r["series"] = r["method"] if len(per[r["method"]]) == 1 else f"{r['method']} [{v}]"
    return rows


# ---------------------------------------------------------------------------

def list_evals(store: Any, limit: int = 100) -> list[dict[str, Any]]:
    return store.query(
        "SELECT eval_id, created_at, finished_at, status, dataset, methods, n_questions, "
        "n_planned, n_done, primary_metric, judge, model_name, preset, label "
        "FROM eval_batches ORDER BY created_at DESC LIMIT ?", [limit])


def summary(store: Any, eval_ids: str | Sequence[str], metric: str = "correct") -> list[dict[str, Any]]:
    """Per method/variant: n, successes, mean and 95% CI of ``metric``."""
    expr, binary = metric_expr(metric), METRICS[metric][2]
    where, args = eval_where(eval_ids)
    rows = store.query(f"""
        WITH a AS (
            SELECT method, variant, count(m) AS n, sum(m) AS k, avg(m) AS mean,
                   stddev_samp(m) AS sd, count(*) AS n_items
            FROM (SELECT method, variant, {expr} AS m FROM eval_items WHERE {where})
            GROUP BY method, variant)
        SELECT method, variant, n, n_items, k, mean, sd, {_ci_sql(binary)}
        FROM a ORDER BY method, variant""", args)
    return series(rows)


def by_group(store: Any, eval_ids: str | Sequence[str], metric: str, group: str
             ) -> list[dict[str, Any]]:
    """Per method/variant and group value (hop count, question type, domain, a knob)."""
    expr, binary, g = metric_expr(metric), METRICS[metric][2], group_expr(group)
    where, args = eval_where(eval_ids)
    rows = store.query(f"""
        WITH a AS (
            SELECT method, variant, grp, count(m) AS n, sum(m) AS k, avg(m) AS mean,
                   stddev_samp(m) AS sd
            FROM (SELECT method, variant, coalesce({g}, '-') AS grp, {expr} AS m
                  FROM eval_items WHERE {where})
            GROUP BY method, variant, grp)
        SELECT method, variant, grp, n, k, mean, sd, {_ci_sql(binary)}
        FROM a ORDER BY method, variant, TRY_CAST(grp AS DOUBLE) NULLS LAST, grp""", args)
    return series(rows)


def efficiency(store: Any, eval_ids: str | Sequence[str]) -> list[dict[str, Any]]:
    """The papers' efficiency table: LLM calls, tokens and wall time per question."""
    where, args = eval_where(eval_ids)
    rows = store.query(f"""
        SELECT method, variant, count(*) AS n,
               avg(llm_calls) AS llm_calls, avg(prompt_tokens) AS prompt_tokens,
               avg(completion_tokens) AS completion_tokens,
               avg(prompt_tokens + completion_tokens) AS tokens,
               avg(wall_ms) AS wall_ms, quantile_cont(wall_ms, 0.5) AS wall_ms_p50,
               quantile_cont(wall_ms, 0.9) AS wall_ms_p90, sum(wall_ms) / 1000.0 AS total_s,
               avg(judge_ms) AS judge_ms, count(cpu_others) AS cpu_measured,
               count(*) FILTER (WHERE cpu_others > {cpu_share.CONTENDED}) AS cpu_contended,
               max(items_at_once) AS items_at_once
        FROM eval_items WHERE {where}
        GROUP BY method, variant ORDER BY method, variant""", args)
    return series(rows)


def timing_notes(eff_rows: list[dict[str, Any]]) -> list[str]:
    """Lines naming the series of :func:`efficiency` rows whose wall times overstate what
    the method costs alone (none when every item ran alone)."""
    out = []
    busy = [r for r in eff_rows if r.get("cpu_contended")]
    if busy:
        each = ", ".join(f"{r['series']}: {r['cpu_contended']} of {r['cpu_measured']}"
                         for r in busy)
        out.append(f"Items that ran while other work took more than {cpu_share.CONTENDED:.0%} "
                   f"of the CPU ({each}): their wall times overstate the method's cost.")
    shared = [r for r in eff_rows if (r.get("items_at_once") or 1) > 1]
    if shared:
        each = ", ".join(f"{r['series']}: {r['items_at_once']}" for r in shared)
        out.append(f"Items run several at once on one machine ({each}): each wall time is an "
                   f"item's latency while the others shared its cores, not the method's cost "
                   f"alone.")
    return out


def warm_up_notes(store: Any, eval_ids: str | Sequence[str]) -> list[str]:
    """Lines naming what each series loaded before its first timed item (a retrieval index,
    a KG's entity index), which its wall times leave out; and each load that failed."""
    where, args = eval_where(eval_ids)
    rows = series(store.query(f"""
        SELECT i.method, i.variant, json_extract(r.metrics, '$.warm_up') AS warm
        FROM (SELECT * FROM eval_items WHERE {where}) i JOIN runs r ON r.run_id = i.run_id
        WHERE json_extract(r.metrics, '$.warm_up') IS NOT NULL
        ORDER BY i.method, i.variant, i.created_at""", args))
    loaded: dict[str, dict[str, float]] = {}
    failed: list[str] = []
    for r in rows:
        warm = json.loads(r["warm"]) if isinstance(r["warm"], str) else r["warm"]
        steps = loaded.setdefault(r["series"], {})
        for step, sec in (warm.get("seconds") or {}).items():
            steps[step] = max(steps.get(step, 0.0), float(sec))   # each worker loads its own
        failed += [f"{r['series']}: {step}: {err}" for step, err in (warm.get("errors") or {}).items()]
    out = []
    if loaded:
        each = "; ".join(f"{name}: " + ", ".join(f"{step} {sec:.1f} s" for step, sec in steps.items())
                         for name, steps in loaded.items())
        out.append(f"Loaded before the first timed item, not in the wall times ({each}).")
    if failed:
        out.append("Loading failed before the first item (its runs report it too): "
                   + "; ".join(dict.fromkeys(failed)) + ".")
    return out


def calibration(store: Any, eval_ids: str | Sequence[str], bins: int = 10,
                metric: str = "correct") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Reliability bins (count, mean confidence, accuracy) and each series' ECE."""
    expr = metric_expr(metric)
    where, args = eval_where(eval_ids)
    b = int(bins)
    bin_rows = store.query(f"""
        SELECT method, variant, least(CAST(floor(confidence * {b}) AS INTEGER), {b - 1}) AS bin,
               count(*) AS n, avg(confidence) AS conf, avg({expr}) AS acc
        FROM eval_items WHERE {where} AND confidence IS NOT NULL AND {expr} IS NOT NULL
        GROUP BY method, variant, bin ORDER BY method, variant, bin""", args)
    ece_rows = store.query(f"""
        WITH b AS (
            SELECT method, variant, least(CAST(floor(confidence * {b}) AS INTEGER), {b - 1}) AS bin,
                   count(*) AS n, avg(confidence) AS conf, avg({expr}) AS acc
            FROM eval_items WHERE {where} AND confidence IS NOT NULL AND {expr} IS NOT NULL
            GROUP BY method, variant, bin)
        SELECT method, variant, sum(n) AS n, sum(n * abs(conf - acc)) / sum(n) AS ece,
               sum(n * conf) / sum(n) AS mean_conf, sum(n * acc) / sum(n) AS accuracy
        FROM b GROUP BY method, variant ORDER BY method, variant""", args)
    return series(bin_rows), series(ece_rows)


def crag(store: Any, eval_ids: str | Sequence[str], group: str | None = None
         ) -> list[dict[str, Any]]:
    """CRAG accuracy / hallucination / missing / score, overall or by a grouping
    (``domain``, ``question_type``, ``static_or_dynamic``, ``knob:NAME``, ...)."""
    where, args = eval_where(eval_ids)
    g = group_expr(group) if group else "'all'"
    rows = store.query(f"""
        WITH a AS (
            SELECT method, variant, coalesce({g}, '-') AS grp, count(*) AS n,
                   avg(CAST(crag_label = 'accurate' AS DOUBLE)) AS accuracy,
                   avg(CAST(crag_label = 'hallucinated' AS DOUBLE)) AS hallucination,
                   avg(CAST(crag_label = 'missing' AS DOUBLE)) AS missing,
                   avg(CAST(crag_points AS DOUBLE)) AS score,
                   stddev_samp(CAST(crag_points AS DOUBLE)) AS sd,
                   avg(CAST(crag_decided_by = 'exact' AS DOUBLE)) AS exact_accuracy
            FROM eval_items WHERE {where}
            GROUP BY method, variant, grp)
        SELECT *, score - {Z95} * coalesce(sd, 0) / sqrt(n) AS score_lo,
               score + {Z95} * coalesce(sd, 0) / sqrt(n) AS score_hi
        FROM a ORDER BY method, variant, TRY_CAST(grp AS DOUBLE) NULLS LAST, grp""", args)
    return series(rows)


def knob_response(store: Any, eval_ids: str | Sequence[str], knob: str,
                  metric: str = "correct") -> list[dict[str, Any]]:
    """Metric and CRAG outcomes against one swept knob (the study's response curves)."""
    g = group_expr(f"knob:{knob}")
    expr, binary = metric_expr(metric), METRICS[metric][2]
    where, args = eval_where(eval_ids)
    rows = store.query(f"""
        WITH a AS (
            SELECT method, coalesce({g}, 'default') AS value, count(m) AS n, avg(m) AS mean,
                   stddev_samp(m) AS sd,
                   avg(CAST(crag_label = 'accurate' AS DOUBLE)) AS accuracy,
                   avg(CAST(crag_label = 'hallucinated' AS DOUBLE)) AS hallucination,
                   avg(CAST(crag_label = 'missing' AS DOUBLE)) AS missing,
                   avg(CAST(crag_points AS DOUBLE)) AS score,
                   stddev_samp(CAST(crag_points AS DOUBLE)) AS score_sd
            FROM (SELECT *, {expr} AS m FROM eval_items WHERE {where})
            GROUP BY method, value)
        SELECT *, {_ci_sql(binary)},
               score - {Z95} * coalesce(score_sd, 0) / sqrt(greatest(n, 1)) AS score_lo,
               score + {Z95} * coalesce(score_sd, 0) / sqrt(greatest(n, 1)) AS score_hi
        FROM a ORDER BY method, TRY_CAST(value AS DOUBLE) NULLS FIRST, value""", args)
    return rows


def paired(store: Any, eval_ids: str | Sequence[str], metric: str = "correct", *,
           n_boot: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """Every pair of series compared on the questions both answered (same question and
    seed): mean difference with a paired-bootstrap 95% CI, and McNemar's exact p for 0/1
    metrics. Only the metric column of the selected evals leaves DuckDB."""
    from itertools import combinations

    from .metrics import mcnemar, paired_bootstrap
    expr, binary = metric_expr(metric), METRICS[metric][2]
    where, args = eval_where(eval_ids)
    rows = series(store.query(f"""
        SELECT method, variant, question_id, seed, {expr} AS m FROM eval_items
        WHERE {where} AND question_id IS NOT NULL AND {expr} IS NOT NULL""", args))
    per: dict[str, dict[tuple, float]] = {}
    for r in rows:
        per.setdefault(r["series"], {})[(r["question_id"], r["seed"])] = float(r["m"])
    how = retrieval(store, eval_ids)
    out = []
    for sa, sb in combinations(sorted(per), 2):
        keys = sorted(per[sa].keys() & per[sb].keys(), key=str)
        if not keys:
            continue
        a = [per[sa][k] for k in keys]
        b = [per[sb][k] for k in keys]
        diff, lo, hi = paired_bootstrap(a, b, n_boot=n_boot, seed=seed)
        row = {"a": sa, "b": sb, "n_paired": len(keys), "mean_a": sum(a) / len(a),
               "mean_b": sum(b) / len(b), "diff": diff, "lo": lo, "hi": hi,
               "significant": not (lo <= 0.0 <= hi),
               "retrieval_a": how.get(sa, ""), "retrieval_b": how.get(sb, ""),
               "retriever_confound": retrieval_confound(how.get(sa, ""), how.get(sb, ""))}
        if binary:
            t = mcnemar(a, b)
            row.update(a_only=t["a_only"], b_only=t["b_only"], mcnemar_p=t["p"])
        out.append(row)
    return out


def retrieval(store: Any, eval_ids: str | Sequence[str]) -> dict[str, str]:
    """What each series retrieved its knowledge with: the passage retrievers its runs'
    retrieval events name (a knob of "default" resolves to the Settings choice at run time,
    so the events, not the knobs, say what ran; a knowledge-graph method's are "kg"), or
    "none" for one that retrieves nothing. Standard RAG's default (hybrid) is not the
    dense retriever the paper methods default to: :func:`paired` marks such pairs."""
    where, args = eval_where(eval_ids)
    rows = series(store.query(f"""
        SELECT i.method, i.variant,
               list(DISTINCT json_extract_string(e.data, '$.retriever'))
                   FILTER (WHERE e.run_id IS NOT NULL) AS names
        FROM (SELECT run_id, method, variant FROM eval_items WHERE {where}) i
        LEFT JOIN events e ON e.run_id = i.run_id AND e.type = 'retrieved'
        GROUP BY i.method, i.variant""", args))
    return {r["series"]: retrieval_label(r["names"] or []) for r in rows}


def error_modes(store: Any, eval_ids: str | Sequence[str]) -> list[dict[str, Any]]:
    """Counts of annotation tags on the eval's runs, per method."""
    where, args = eval_where(eval_ids)
    return store.query(f"""
        SELECT i.method, t.tag, count(*) AS n, count(DISTINCT i.run_id) AS runs
        FROM (SELECT run_id, method FROM eval_items WHERE {where}) i
        JOIN (SELECT run_id, unnest(from_json(tags, '["VARCHAR"]')) AS tag FROM annotations) t
          ON t.run_id = i.run_id
        GROUP BY i.method, t.tag ORDER BY n DESC, i.method, t.tag""", args)


def status_counts(store: Any, eval_ids: str | Sequence[str]) -> list[dict[str, Any]]:
    where, args = eval_where(eval_ids)
    return store.query(f"SELECT method, status, count(*) AS n FROM eval_items WHERE {where} "
                       f"GROUP BY method, status ORDER BY method, status", args)


def runs_behind(store: Any, eval_ids: str | Sequence[str], *, method: str | None = None,
                variant: str | None = None, group: str | None = None, value: Any = None,
                metric: str | None = None, outcome: Any = None, limit: int = 200
                ) -> list[dict[str, Any]]:
    """The runs behind one bar or point: filter by method, variant, a group value and
    optionally an outcome (``metric="crag_label", outcome="hallucinated"``, or a metric
    name and its value)."""
    where, args = eval_where(eval_ids)
    conds = [where]
    if method is not None:
        conds.append("method = ?")
        args.append(method)
    if variant is not None:
        conds.append("variant = ?")
        args.append(variant)
    if group is not None and value is not None:
        conds.append(f"coalesce({group_expr(group)}, '-') = ?")
        args.append(str(value))
    if metric is not None and outcome is not None:
        conds.append("crag_label = ?" if metric == "crag_label" else f"({metric_expr(metric)}) = ?")
        args.append(outcome)
    args.append(int(limit))
    return store.query(f"""
        SELECT i.run_id, i.question_id, r.question, r.answer, i.method, i.variant, i.correct,
               i.crag_label, i.f1, i.confidence, i.llm_calls, i.wall_ms, i.status
        FROM (SELECT * FROM eval_items WHERE {' AND '.join(conds)}
              ORDER BY question_id, method LIMIT ?) i
        LEFT JOIN runs r ON r.run_id = i.run_id
        ORDER BY i.question_id, i.method""", args)
