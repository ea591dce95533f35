"""Triage stored with the run, people's labels beside it, and per-method roll-ups.

- ``triage`` (one row per run, store schema v4): the class, breaking node and recall
  figures as columns for SQL, the whole :class:`~.classify.Triage` as ``detail``. A run
  is triaged the first time something asks for it (:func:`ensure`), from its stored
  events (LLM-call events are not read: triage never needs them), so runs stored before
  triage existed are classified when first opened. Rows of an older rules version are
  recomputed.
- ``triage_labels``: a person's failure class and breaking node for a run, confirmed or
  changed on the Annotate page; never mixed with the suggestions, so their agreement can
  be measured (:func:`agreement`).
"""
from __future__ import annotations

import json
import time
from typing import Any, Iterable, Sequence

from .. import trace as T
from ..eval.queries import series
from ..store import Store, bulk_insert
from .classify import CLASSES, VERSION, Triage, triage

_CHUNK = 200


def _fallback_gold(run: dict[str, Any]) -> dict[str, Any] | None:
    """The question from its dataset, for runs whose events carry no gold."""
    if not run.get("dataset") or not run.get("question_id"):
        return None
    try:
        from ..datasets import load_dataset
        return load_dataset(run["dataset"]).question(run["question_id"]).to_dict()
    except Exception:      # noqa: BLE001 - a removed dataset leaves the run untriaged
        return None


def _row(run_id: str, verdict: bool | None, t: Triage) -> tuple:
    return (run_id, VERSION, time.time(), verdict, t.failure_class, t.reason, t.break_node,
            t.break_kind, t.knowledge, len(t.hops) if t.hops else None,
            len(t.found) if t.hops else None,
            len(t.found_q) if t.found_q is not None else None, t.recall_q, t.recall_node,
            json.dumps(t.to_dict(), default=str))


def classify_run(tr: T.Trace, run: dict[str, Any]) -> Triage:
    gold = (tr.meta or {}).get("gold") or _fallback_gold(run)
    return triage(tr, gold, run.get("correct"))


def ensure(store: Store, run_ids: Sequence[str] | None = None, *,
           eval_ids: Sequence[str] | None = None,
           traces: dict[str, T.Trace] | None = None) -> int:
    """Triage the given runs (or every run of the given evals) that have no current row
    (none yet, older rules, or a verdict stored since); returns how many were computed.
    Runs still running are left alone."""
    where = ["(t.run_id IS NULL OR t.version <> ? OR r.correct IS DISTINCT FROM t.verdict)",
             "r.status <> 'running'"]
    args: list[Any] = [VERSION]
    if run_ids is not None:
        if not run_ids:
            return 0
        where.append("r.run_id IN (" + ", ".join("?" for _ in run_ids) + ")")
        args += list(run_ids)
    if eval_ids is not None:
        where.append("r.eval_id IN (" + ", ".join("?" for _ in eval_ids) + ")")
        args += list(eval_ids)
    todo = store.query(
        "SELECT r.run_id, r.correct, r.dataset, r.question_id, "
        "json_extract(r.metrics, '$.triage') AS scored FROM runs r "
        "LEFT JOIN triage t ON t.run_id = r.run_id WHERE " + " AND ".join(where), args)
    traces = traces or {}
    n = 0
    for i in range(0, len(todo), _CHUNK):
        chunk = todo[i:i + _CHUNK]
        done = {r["run_id"]: t for r in chunk if (t := _scored(r)) is not None}
        need = [r["run_id"] for r in chunk if r["run_id"] not in traces and
                r["run_id"] not in done]
        folded = dict(traces)
        folded.update(_fold(store, need))
        rows = [_row(r["run_id"], r["correct"], done.get(r["run_id"]) or
                     classify_run(folded.get(r["run_id"], T.Trace()), r)) for r in chunk]
        with store._tx() as con:
            bulk_insert(con, "triage", rows, replace=True)
        n += len(rows)
    return n


def _scored(run: dict[str, Any]) -> Triage | None:
    """The triage the eval computed when it scored the run, if it is of the current rules
    and the stored verdict is the one it used (no need to read the events again)."""
    d = run.get("scored")
    if isinstance(d, str):
        d = json.loads(d)
    if not isinstance(d, dict) or d.get("version") != VERSION or \
            d.get("correct") != (bool(run["correct"]) if run["correct"] is not None else None):
        return None
    return Triage.from_dict(d)


def _fold(store: Store, run_ids: list[str]) -> dict[str, T.Trace]:
    if not run_ids:
        return {}
    marks = ", ".join("?" for _ in run_ids)
    out: dict[str, T.Trace] = {}
    with store._conn() as con:
        cur = con.execute(
            f"SELECT run_id, seq, t_ms, ts, type, node_id, llm_call_id, data FROM events "
            f"WHERE run_id IN ({marks}) AND type <> 'llm_call' ORDER BY run_id, seq", run_ids)
        for r in cur.fetchall():
            tr = out.setdefault(r[0], T.Trace())
            tr.apply(T.Event(run_id=r[0], seq=r[1], t_ms=r[2], ts=r[3], type=r[4], node_id=r[5],
                             llm_call_id=r[6], data=json.loads(r[7]) if r[7] else {}))
    return out


def get(store: Store, run_id: str, trace: T.Trace | None = None) -> Triage | None:
    """The run's triage (computed and stored on first use); None for a run still running
    or unknown to the store."""
    ensure(store, [run_id], traces={run_id: trace} if trace is not None else None)
    rows = store.query("SELECT detail FROM triage WHERE run_id = ?", [run_id])
    if not rows:
        return None
    d = rows[0]["detail"]
    return Triage.from_dict(json.loads(d) if isinstance(d, str) else d)


def eval_metrics(tr: T.Trace, question: dict[str, Any], correct: bool | None) -> dict[str, Any]:
    """What an eval stores in ``runs.metrics`` when it scores an item: the class and recall
    figures (read by exports) and the whole triage (so :func:`ensure` need not read the
    run's events again)."""
    t = triage(tr, question, correct)
    return {"failure_class": t.failure_class, "break_node": t.break_node,
            "gold_recall_q": t.recall_q, "gold_recall_node": t.recall_node,
            "triage": t.to_dict()}


# ---------------------------------------------------------------- people's labels

def set_label(store: Store, run_id: str, failure_class: str, break_node: str | None = None,
              author: str = "", note: str = "") -> None:
    if failure_class not in CLASSES:
        raise ValueError(f"unknown failure class {failure_class!r}; one of {', '.join(CLASSES)}")
    store.execute("INSERT OR REPLACE INTO triage_labels VALUES (?, ?, ?, ?, ?, ?)",
                  [run_id, failure_class, break_node or None, author, note, time.time()])


def get_label(store: Store, run_id: str) -> dict[str, Any] | None:
    rows = store.query("SELECT * FROM triage_labels WHERE run_id = ?", [run_id])
    return rows[0] if rows else None


def agreement(store: Any, eval_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """How often people kept the suggestion: over runs with both a label and a suggested
    class, the share whose class agrees, and (where both name one) whose breaking node
    agrees."""
    where, args = "", []
    if eval_ids:
        where = ("WHERE l.run_id IN (SELECT run_id FROM eval_items WHERE eval_id IN ("
                 + ", ".join("?" for _ in eval_ids) + "))")
        args = list(eval_ids)
    r = store.query(f"""
        SELECT count(*) AS n_labels,
               count(t.failure_class) AS n_compared,
               sum(CAST(l.failure_class = t.failure_class AS INTEGER)) AS class_agree,
               count(CASE WHEN l.break_node IS NOT NULL AND t.break_node IS NOT NULL
                          THEN 1 END) AS n_nodes,
               sum(CAST(l.break_node = t.break_node AS INTEGER)) AS node_agree
        FROM triage_labels l LEFT JOIN triage t ON t.run_id = l.run_id {where}""", args)[0]
    nc, nn = r["n_compared"] or 0, r["n_nodes"] or 0
    return {"n_labels": r["n_labels"] or 0, "n_compared": nc,
            "class_agreement": (r["class_agree"] or 0) / nc if nc else None,
            "n_nodes": nn, "node_agreement": (r["node_agree"] or 0) / nn if nn else None}


# ---------------------------------------------------------------- roll-ups per method

def _ids(eval_ids: str | Iterable[str]) -> tuple[str, list[str]]:
    ids = [eval_ids] if isinstance(eval_ids, str) else list(eval_ids)
    if not ids:
        raise ValueError("no eval selected")
    return "i.eval_id IN (" + ", ".join("?" for _ in ids) + ")", ids


def class_counts(db: Any, eval_ids: str | Iterable[str]) -> list[dict[str, Any]]:
    """Per method/variant and class: n, and the share of the series' triaged runs."""
    where, args = _ids(eval_ids)
    return series(db.query(f"""
        WITH c AS (
            SELECT i.method, i.variant, t.failure_class AS cls, count(*) AS n
            FROM eval_items i JOIN triage t ON t.run_id = i.run_id
            WHERE {where} AND t.failure_class IS NOT NULL
            GROUP BY i.method, i.variant, t.failure_class)
        SELECT *, n / sum(n) OVER (PARTITION BY method, variant) AS share
        FROM c ORDER BY method, variant, cls""", args))


def untriaged(db: Any, eval_ids: str | Iterable[str]) -> list[dict[str, Any]]:
    """Runs left without a class, per reason."""
    where, args = _ids(eval_ids)
    return db.query(f"""
        SELECT i.method, coalesce(t.reason, 'not triaged yet') AS reason, count(*) AS n
        FROM eval_items i LEFT JOIN triage t ON t.run_id = i.run_id
        WHERE {where} AND t.failure_class IS NULL
        GROUP BY i.method, reason ORDER BY i.method, n DESC""", args)


def break_kinds(db: Any, eval_ids: str | Iterable[str], top: int = 5) -> list[dict[str, Any]]:
    """The most common kinds of breaking node per method/variant (wrong runs only)."""
    where, args = _ids(eval_ids)
    return series(db.query(f"""
        WITH k AS (
            SELECT i.method, i.variant, t.break_kind AS kind, count(*) AS n,
                   list(DISTINCT t.failure_class ORDER BY t.failure_class) AS classes
            FROM eval_items i JOIN triage t ON t.run_id = i.run_id
            WHERE {where} AND t.break_kind IS NOT NULL
            GROUP BY i.method, i.variant, t.break_kind),
        r AS (SELECT *, n / sum(n) OVER (PARTITION BY method, variant) AS share,
                     row_number() OVER (PARTITION BY method, variant ORDER BY n DESC, kind)
                     AS rk FROM k)
        SELECT method, variant, kind, n, share, classes FROM r WHERE rk <= ?
        ORDER BY method, variant, n DESC, kind""", args + [int(top)]))


def recall(db: Any, eval_ids: str | Iterable[str]) -> list[dict[str, Any]]:
    """Gold-evidence recall per method/variant: mean share of hops found and the share of
    questions with every hop found ("both supports" on HotpotQA), at the question level
    (retrievals with the question itself; ``n_q`` runs made one) and at the node level
    (every retrieval of the run)."""
    where, args = _ids(eval_ids)
    return series(db.query(f"""
        SELECT i.method, i.variant, count(*) AS n,
               count(t.found_q) AS n_q,
               avg(t.recall_q) AS recall_q,
               avg(CASE WHEN t.found_q IS NOT NULL THEN CAST(t.found_q = t.hops AS DOUBLE) END)
                   AS all_q,
               avg(t.recall_node) AS recall_node,
               avg(CAST(t.found = t.hops AS DOUBLE)) AS all_node,
               avg(t.hops) AS hops
        FROM eval_items i JOIN triage t ON t.run_id = i.run_id
        WHERE {where} AND t.hops IS NOT NULL
        GROUP BY i.method, i.variant ORDER BY i.method, i.variant""", args))


def summary(store: Store, eval_ids: str | Sequence[str]) -> dict[str, Any]:
    """Everything the Evaluate page and ``eval show`` report, after triaging what is new."""
    ids = [eval_ids] if isinstance(eval_ids, str) else list(eval_ids)
    ensure(store, eval_ids=ids)
    from ..eval.queries import session
    with session(store) as db:
        return {"classes": class_counts(db, ids), "break_kinds": break_kinds(db, ids),
                "recall": recall(db, ids), "untriaged": untriaged(db, ids),
                "agreement": agreement(db, ids)}


def distribution(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """series -> {class: n} in :data:`CLASSES` order (zeros included)."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r["series"], {c: 0 for c in CLASSES})[r["cls"]] = int(r["n"])
    return out


def runs_of_class(db: Any, eval_ids: str | Iterable[str], *, method: str | None = None,
                  variant: str | None = None, failure_class: str | None = None,
                  limit: int = 200) -> list[dict[str, Any]]:
    """The runs behind one bar segment of the failure-class chart."""
    where, args = _ids(eval_ids)
    conds = [where]
    for col, val in (("i.method", method), ("i.variant", variant),
                     ("t.failure_class", failure_class)):
        if val is not None:
            conds.append(f"{col} = ?")
            args.append(val)
    return db.query(f"""
        SELECT i.run_id, i.question_id, r.question, r.answer, i.method, i.variant,
               t.failure_class, t.break_node, t.break_kind, t.found, t.hops
        FROM eval_items i JOIN triage t ON t.run_id = i.run_id
        LEFT JOIN runs r ON r.run_id = i.run_id
        WHERE {' AND '.join(conds)} ORDER BY i.question_id, i.method LIMIT ?""",
        args + [int(limit)])
