"""SQL for the Runs and Annotate pages (aggregation happens in DuckDB, not pandas)."""
from __future__ import annotations

from typing import Any

from ..store import Store


def runs(st: Store, *, method: str | None = None, dataset: str | None = None,
         status: str | None = None, correct: str = "any", annotation: str = "any",
         text: str = "", question: str | None = None, limit: int = 500) -> list[dict[str, Any]]:
    """Runs with annotation counts and tags.

    ``correct``: any | correct | incorrect | unjudged. ``annotation``: any | annotated |
    unannotated | a tag id.
    """
    where, args = [], []
    for col, val in (("r.method", method), ("r.dataset", dataset), ("r.status", status)):
        if val:
            where.append(f"{col} = ?")
            args.append(val)
    if correct == "correct":
        where.append("r.correct = TRUE")
    elif correct == "incorrect":
        where.append("r.correct = FALSE")
    elif correct == "unjudged":
        where.append("r.correct IS NULL")
    if annotation == "annotated":
        where.append("EXISTS (SELECT 1 FROM annotations a WHERE a.run_id = r.run_id)")
    elif annotation == "unannotated":
        where.append("NOT EXISTS (SELECT 1 FROM annotations a WHERE a.run_id = r.run_id)")
    elif annotation not in ("any", "", None):
        where.append("EXISTS (SELECT 1 FROM annotations a WHERE a.run_id = r.run_id AND "
                     "list_contains(CAST(a.tags AS VARCHAR[]), ?))")
        args.append(annotation)
    if text:
        where.append("(r.question ILIKE ? OR r.answer ILIKE ? OR r.run_id ILIKE ?)")
        args += [f"%{text}%"] * 3
    if question:
        where.append("r.question = ?")
        args.append(question)
    sql = f"""
        WITH ann AS (
            SELECT a.run_id, count(*) AS n_annotations,
                   list_distinct(flatten(list(CAST(a.tags AS VARCHAR[])))) AS tags
            FROM annotations a GROUP BY a.run_id)
        SELECT r.run_id, r.created_at, r.status, r.method, r.dataset, r.question_id,
               r.question, r.answer, r.correct, r.llm_calls,
               coalesce(r.prompt_tokens, 0) + coalesce(r.completion_tokens, 0) AS tokens,
               r.wall_ms, r.model_name, r.error, r.parent_run_id,
               coalesce(ann.n_annotations, 0) AS n_annotations, ann.tags
        FROM runs r LEFT JOIN ann ON ann.run_id = r.run_id
        {"WHERE " + " AND ".join(where) if where else ""}
        ORDER BY r.created_at DESC LIMIT ?"""
    return st.query(sql, args + [limit])


def distinct(st: Store, column: str) -> list[str]:
    if column not in ("method", "dataset", "status", "model_name"):
        raise ValueError(column)
    return [r["v"] for r in st.query(
        f"SELECT DISTINCT {column} AS v FROM runs WHERE {column} IS NOT NULL ORDER BY v")]


def tag_counts(st: Store, run_id: str | None = None, method: str | None = None) -> list[dict[str, Any]]:
    where, args = [], []
    if run_id:
        where.append("a.run_id = ?")
        args.append(run_id)
    if method:
        where.append("r.method = ?")
        args.append(method)
    return st.query(f"""
        SELECT t AS tag, r.method AS method, count(*) AS n
        FROM annotations a JOIN runs r ON r.run_id = a.run_id,
             unnest(CAST(a.tags AS VARCHAR[])) AS u(t)
        {"WHERE " + " AND ".join(where) if where else ""}
        GROUP BY t, r.method ORDER BY n DESC""", args)


def all_annotations(st: Store, run_id: str | None = None) -> list[dict[str, Any]]:
    return st.annotations(run_id)


def questions_with_runs(st: Store, limit: int = 200) -> list[dict[str, Any]]:
    return st.query("""
        SELECT question, count(*) AS n_runs, list(DISTINCT method) AS methods,
               max(created_at) AS last
        FROM runs GROUP BY question ORDER BY last DESC LIMIT ?""", [limit])


# -- the Evaluate page ----------------------------------------------------------------------

def eval_items_done(st: Any, eval_id: str, limit: int = 200) -> list[dict[str, Any]]:
    """The eval's stored items, newest first, with the question and answer of each run."""
    return st.query("""
        SELECT i.question_id, r.question, i.method, i.variant, r.answer, i.correct, i.status,
               i.wall_ms / 1000.0 AS wall_s, i.llm_calls, i.confidence, i.created_at
        FROM eval_items i LEFT JOIN runs r ON r.run_id = i.run_id
        WHERE i.eval_id = ? ORDER BY i.created_at DESC, i.item_key LIMIT ?""",
                    [eval_id, int(limit)])


def eval_facts(st: Any, eval_id: str) -> dict[str, Any]:
    """What the eval's stored items hold, so each empty chart can say why it is empty:
    items (and failed ones), answers with a confidence, CRAG questions, hop counts and
    question types, and the LLM calls made and how many returned log-probabilities."""
    items = st.query("""
        SELECT count(*) AS n_items,
               count(*) FILTER (WHERE status = 'failed') AS n_failed,
               count(confidence) AS n_confidence,
               count(*) FILTER (WHERE static_or_dynamic IS NOT NULL OR
                                (domain IS NOT NULL AND question_type IS NOT NULL)) AS n_crag,
               count(hops) AS n_hops, count(qtype) AS n_qtype,
               count(DISTINCT method || '|' || coalesce(variant, '')) AS n_series
        FROM eval_items WHERE eval_id = ?""", [eval_id])[0]
    calls = st.query("""
        SELECT count(*) AS n_calls, count(c.perplexity) AS n_calls_scored
        FROM llm_calls c JOIN eval_items i ON i.run_id = c.run_id WHERE i.eval_id = ?""",
                     [eval_id])[0]
    return {**items, **calls}


def running_evals(st: Any) -> list[dict[str, Any]]:
    """Evals marked running, with the process that marked them."""
    return st.query("SELECT eval_id, status, pid FROM eval_batches WHERE status = 'running'")


def swept_knobs(st: Any, eval_id: str) -> list[str]:
    """The knobs an eval sweeps: those taking two or more values within one method (a
    knob set once is in the spec, and would chart as one point)."""
    import json
    seen: dict[tuple[str, str], set[str]] = {}
    for r in st.query("SELECT DISTINCT method, knobs FROM eval_items WHERE eval_id = ?",
                      [eval_id]):
        knobs = json.loads(r["knobs"]) if isinstance(r["knobs"], str) else (r["knobs"] or {})
        for k, v in knobs.items():
            seen.setdefault((r["method"], k), set()).add(json.dumps(v, sort_keys=True))
    return sorted({k for (_, k), vs in seen.items() if len(vs) > 1})
