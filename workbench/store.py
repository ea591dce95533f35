"""The DuckDB store: runs, events, LLM calls, annotations.

Connections are short-lived: each operation opens the file, does its work in a
transaction and closes it, so a CLI batch run and the Streamlit app (separate
processes) can share one store; DuckDB allows one writing process at a time,
so a locked file is retried for ``lock_timeout`` seconds before a clear error.
Within a process a lock serialises writers (Streamlit serves sessions from
threads).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

import duckdb

from . import settings as settings_mod
from .trace import Event, Trace

SCHEMA_VERSION = 7

_MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)""",
        """CREATE TABLE IF NOT EXISTS runs (
            run_id VARCHAR PRIMARY KEY,
            created_at DOUBLE, finished_at DOUBLE,
            status VARCHAR, method VARCHAR, dataset VARCHAR, question_id VARCHAR,
            question VARCHAR, config JSON, config_hash VARCHAR,
            model_name VARCHAR, model_sha256 VARCHAR, seed BIGINT,
            answer VARCHAR, refused BOOLEAN, correct BOOLEAN, metrics JSON,
            llm_calls INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER,
            wall_ms DOUBLE, error VARCHAR, pid INTEGER, prompt_versions JSON)""",
        """CREATE TABLE IF NOT EXISTS events (
            run_id VARCHAR, seq INTEGER, t_ms DOUBLE, ts DOUBLE, type VARCHAR,
            node_id VARCHAR, llm_call_id VARCHAR, data JSON,
            PRIMARY KEY (run_id, seq))""",
        """CREATE TABLE IF NOT EXISTS llm_calls (
            run_id VARCHAR, call_id VARCHAR, node_id VARCHAR, purpose VARCHAR,
            prompt_tokens INTEGER, completion_tokens INTEGER, latency_ms DOUBLE,
            perplexity DOUBLE, finish_reason VARCHAR,
            PRIMARY KEY (run_id, call_id))""",
        """CREATE TABLE IF NOT EXISTS annotations (
            id VARCHAR PRIMARY KEY, run_id VARCHAR, target_kind VARCHAR, target_id VARCHAR,
            tags JSON, note VARCHAR, author VARCHAR, created_at DOUBLE)""",
    ],
    2: [
        # v2: an eval batch id so evaluation rows can be grouped and resumed.
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS eval_id VARCHAR",
        "CREATE INDEX IF NOT EXISTS runs_method_idx ON runs (method)",
    ],
    3: [
        # v3: evaluation batches and one row of metrics per (question, method, config, seed);
        # the hot grouping columns are copied onto each item so the Evaluate page's
        # aggregates are single-table GROUP BYs (see workbench/eval/queries.py).
        """CREATE TABLE IF NOT EXISTS eval_batches (
            eval_id VARCHAR PRIMARY KEY, created_at DOUBLE, finished_at DOUBLE,
            status VARCHAR, dataset VARCHAR, methods JSON, n_questions INTEGER,
            n_planned INTEGER, n_done INTEGER, spec JSON, primary_metric VARCHAR,
            judge VARCHAR, model_name VARCHAR, model_sha256 VARCHAR, preset VARCHAR,
            label VARCHAR, pid INTEGER, error VARCHAR)""",
        """CREATE TABLE IF NOT EXISTS eval_items (
            eval_id VARCHAR, item_key VARCHAR, run_id VARCHAR, question_id VARCHAR,
            method VARCHAR, variant VARCHAR, knobs JSON, config_hash VARCHAR,
            model_sha256 VARCHAR, seed BIGINT, status VARCHAR, correct BOOLEAN,
            refused BOOLEAN, em DOUBLE, f1 DOUBLE, contains DOUBLE, rouge_l DOUBLE,
            rouge_f1 DOUBLE, hits1 DOUBLE, acc_lm DOUBLE, fever DOUBLE,
            crag_label VARCHAR, crag_points INTEGER, crag_decided_by VARCHAR,
            confidence DOUBLE, hops INTEGER, qtype VARCHAR, domain VARCHAR,
            question_type VARCHAR, static_or_dynamic VARCHAR, llm_calls INTEGER,
            prompt_tokens INTEGER, completion_tokens INTEGER, wall_ms DOUBLE,
            judge VARCHAR, judge_ms DOUBLE, structure JSON, created_at DOUBLE,
            PRIMARY KEY (eval_id, item_key))""",
        "CREATE INDEX IF NOT EXISTS runs_eval_idx ON runs (eval_id)",
    ],
    4: [
        # v4: knowledge-centric failure triage, one row per run (workbench/triage), and the
        # people's own failure-class labels, kept apart from the suggestions.
        """CREATE TABLE IF NOT EXISTS triage (
            run_id VARCHAR PRIMARY KEY, version INTEGER, created_at DOUBLE,
            verdict BOOLEAN, failure_class VARCHAR, reason VARCHAR, break_node VARCHAR,
            break_kind VARCHAR, knowledge VARCHAR, hops INTEGER, found INTEGER,
            found_q INTEGER, recall_q DOUBLE, recall_node DOUBLE, detail JSON)""",
        """CREATE TABLE IF NOT EXISTS triage_labels (
            run_id VARCHAR PRIMARY KEY, failure_class VARCHAR, break_node VARCHAR,
            author VARCHAR, note VARCHAR, created_at DOUBLE)""",
    ],
    5: [
        # v5: the share of the CPU other work took while an item ran (workbench/cpu_share.py)
        # and how many items its process ran at once, so wall times measured beside other
        # work are flagged
        "ALTER TABLE eval_items ADD COLUMN IF NOT EXISTS cpu_others DOUBLE",
        "ALTER TABLE eval_items ADD COLUMN IF NOT EXISTS items_at_once INTEGER",
    ],
    6: [
        # v6: the lease of the runner running an eval (workbench/eval/lease.py), so two
        # resumers of one eval cannot both write its items
        """CREATE TABLE IF NOT EXISTS eval_leases (
            eval_id VARCHAR PRIMARY KEY, token VARCHAR, pid INTEGER, host VARCHAR,
            started_at DOUBLE, heartbeat_at DOUBLE)""",
    ],
    7: [
        # v7: the run a what-if re-ran with an intervention (workbench/analysis/whatif.py)
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS parent_run_id VARCHAR",
    ],
}

_RUN_COLUMNS = ("run_id", "created_at", "finished_at", "status", "method", "dataset",
                "question_id", "question", "config", "config_hash", "model_name",
                "model_sha256", "seed", "answer", "refused", "correct", "metrics",
                "llm_calls", "prompt_tokens", "completion_tokens", "wall_ms", "error", "pid",
                "prompt_versions", "eval_id", "parent_run_id")
_JSON_COLUMNS = {"config", "metrics", "prompt_versions"}


def event_rows(events: Iterable[Event]) -> tuple[list[tuple], list[tuple]]:
    """The ``events`` and ``llm_calls`` table rows of some events."""
    rows, calls = [], []
    for e in events:
        rows.append((e.run_id, e.seq, e.t_ms, e.ts, e.type, e.node_id, e.llm_call_id,
                     json.dumps(e.data, default=str)))
        if e.type == "llm_call":
            d = e.data
            calls.append((e.run_id, e.llm_call_id or d.get("call_id") or f"call{e.seq}",
                          e.node_id, d.get("purpose"), d.get("prompt_tokens"),
                          d.get("completion_tokens"), d.get("latency_ms"),
                          (d.get("scores") or {}).get("perplexity"), d.get("finish_reason")))
    return rows, calls


def bulk_insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple], *,
                replace: bool = False) -> None:
    """Insert rows (in the table's column order) through one Arrow scan.

    DuckDB's executemany inserts row by row (5-20 ms a row here); one Arrow
    table per batch costs well under a millisecond a row.
    """
    if not rows:
        return
    import pyarrow as pa
    cols = [d[0] for d in con.execute(f"SELECT * FROM {table} LIMIT 0").description]
    data = list(zip(*rows))
    tbl = pa.table({c: pa.array(list(v)) for c, v in zip(cols, data)})
    view = f"_wb_{table}_{id(tbl):x}"
    con.register(view, tbl)
    try:
        names = ", ".join(cols[: len(data)])
        con.execute(f"INSERT {'OR REPLACE ' if replace else ''}INTO {table} ({names}) "
                    f"SELECT {names} FROM {view}")
    except BaseException:
        # An aborted transaction refuses even the unregister; the insert's error is the one
        # that says what happened (an interrupt, a full disk, ...).
        with contextlib.suppress(duckdb.Error):
            con.unregister(view)
        raise
    con.unregister(view)


def interrupted(e: BaseException) -> bool:
    """Whether ``e`` is Ctrl-C: DuckDB turns a SIGINT that lands inside a query into an
    error of its own (an InterruptException, or a RuntimeError inside an Arrow scan)."""
    return isinstance(e, (KeyboardInterrupt, duckdb.InterruptException)) or (
        isinstance(e, RuntimeError) and "interrupted" in str(e).lower())


class StoreError(Exception):
    pass


class StoreLockedError(StoreError):
    pass


def _is_lock_error(e: Exception) -> bool:
    msg = str(e).lower()
    return "lock" in msg and ("conflicting" in msg or "could not set" in msg)


def _is_read_only(path: Path, e: Exception) -> bool:
    """Whether opening the store failed for want of write access, not for a damaged file
    (telling the user to move a healthy store aside would be wrong)."""
    msg = str(e).lower()
    if any(s in msg for s in ("permission denied", "read-only file system",
                              "operation not permitted")):
        return True
    target = path if path.exists() else path.parent
    return not os.access(target, os.W_OK)


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Store:
    _locks: dict[str, threading.RLock] = {}
    _locks_guard = threading.Lock()

    def __init__(self, path: str | Path | None = None, *, lock_timeout: float = 10.0):
        self.path = Path(path) if path else settings_mod.store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock_timeout = lock_timeout
        with Store._locks_guard:
            self._lock = Store._locks.setdefault(str(self.path.resolve()), threading.RLock())
        self._migrate()
        self._mark_orphans_interrupted()

    # -- connection handling --
    @contextmanager
    def _conn(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            deadline = time.monotonic() + self.lock_timeout
            while True:
                try:
                    con = duckdb.connect(str(self.path))
                    break
                except duckdb.Error as e:
                    if _is_lock_error(e) and time.monotonic() < deadline:
                        time.sleep(0.2)
                        continue
                    if _is_lock_error(e):
                        raise StoreLockedError(
                            f"The store {self.path} is locked by another process ({e}). "
                            f"Wait for that workbench process (a batch eval or another app) to "
                            f"finish, or point WORKBENCH_HOME at another folder.") from e
                    if _is_read_only(self.path, e):
                        raise StoreError(
                            f"Cannot write the store {self.path}: {e}. The file or its folder is "
                            f"read-only: make it writable, or choose another store (Settings > "
                            f"store, or WORKBENCH_STORE / WORKBENCH_HOME).") from e
                    raise StoreError(
                        f"Cannot open the store {self.path}: {e}. If the file is damaged, move "
                        f"it aside (it is a DuckDB file) and the workbench will create a new one."
                    ) from e
            try:
                yield con
            finally:
                con.close()

    @contextmanager
    def _tx(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._conn() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def _migrate(self) -> None:
        with self._conn() as con:
            has_meta = con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'"
            ).fetchone()[0]
            current = 0
            if has_meta:
                row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                current = int(row[0]) if row else 0
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"The store {self.path} has schema version {current}, newer than this workbench "
                f"({SCHEMA_VERSION}). Upgrade the workbench, or set WORKBENCH_HOME to use a "
                f"separate store.")
        if current == SCHEMA_VERSION:
            return
        if current > 0:
            # Keep a copy of the old file: a failed migration must lose nothing.
            backup = self.path.with_name(self.path.name + f".v{current}.bak")
            if not backup.exists():
                shutil.copy2(self.path, backup)
        with self._tx() as con:
            for v in range(current + 1, SCHEMA_VERSION + 1):
                for sql in _MIGRATIONS[v]:
                    con.execute(sql)
            con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                        [str(SCHEMA_VERSION)])

    def schema_version(self) -> int:
        with self._conn() as con:
            return int(con.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])

    def _mark_orphans_interrupted(self) -> None:
        """Runs and evals left 'running' by a process that no longer exists died midway."""
        with self._conn() as con:
            rows = con.execute("SELECT run_id, pid FROM runs WHERE status = 'running'").fetchall()
            evals = con.execute("SELECT eval_id, pid FROM eval_batches "
                                "WHERE status = 'running'").fetchall()
        def orphans(pairs: list[tuple[str, int]]) -> list[tuple[str, int]]:
            return [(key, pid) for key, pid in pairs
                    if pid != os.getpid() and not _pid_alive(pid)]
        dead, dead_evals = orphans(rows), orphans(evals)
        if dead or dead_evals:
            # Only while the dead process still holds it: between the read above and this
            # write, a resume may have taken the eval over (its own pid, 'running').
            with self._tx() as con:
                for rid, pid in dead:
                    con.execute("UPDATE runs SET status = 'interrupted', error = coalesce(error, "
                                "'the process running it stopped') WHERE run_id = ? AND "
                                "status = 'running' AND pid = ?", [rid, pid])
                for eid, pid in dead_evals:
                    con.execute("UPDATE eval_batches SET status = 'interrupted', error = "
                                "coalesce(error, ?) WHERE eval_id = ? AND status = 'running' "
                                "AND pid = ?",
                                [f"the process running it stopped; `python -m workbench eval "
                                 f"--resume {eid}` finishes it", eid, pid])

    # -- runs --
    def start_run(self, run: dict[str, Any]) -> None:
        row = {c: run.get(c) for c in _RUN_COLUMNS}
        row["status"] = row["status"] or "running"
        row["created_at"] = row["created_at"] or time.time()
        row["pid"] = row["pid"] or os.getpid()
        for c in _JSON_COLUMNS:
            if row[c] is not None:
                row[c] = json.dumps(row[c])
        cols = ", ".join(_RUN_COLUMNS)
        marks = ", ".join("?" for _ in _RUN_COLUMNS)
        with self._tx() as con:
            con.execute(f"INSERT INTO runs ({cols}) VALUES ({marks})", [row[c] for c in _RUN_COLUMNS])

    def update_run(self, run_id: str, **fields: Any) -> None:
        bad = set(fields) - set(_RUN_COLUMNS)
        if bad:
            raise ValueError(f"unknown run columns: {sorted(bad)}")
        if not fields:
            return
        vals = [json.dumps(v) if k in _JSON_COLUMNS and v is not None else v
                for k, v in fields.items()]
        sets = ", ".join(f"{k} = ?" for k in fields)
        with self._tx() as con:
            con.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", vals + [run_id])

    def add_events(self, events: Iterable[Event]) -> int:
        rows, calls = event_rows(events)
        if not rows:
            return 0
        with self._tx() as con:
            bulk_insert(con, "events", rows, replace=True)
            bulk_insert(con, "llm_calls", calls, replace=True)
        return len(rows)

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        rows = self.query(f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE run_id = ?", [run_id])
        return rows[0] if rows else None

    def list_runs(self, *, method: str | None = None, dataset: str | None = None,
                  status: str | None = None, correct: bool | None = None,
                  eval_id: str | None = None, limit: int = 200,
                  offset: int = 0) -> list[dict[str, Any]]:
        where, args = [], []
        for col, val in (("method", method), ("dataset", dataset), ("status", status),
                         ("correct", correct), ("eval_id", eval_id)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = (f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs"
               + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY created_at DESC LIMIT ? OFFSET ?")
        return self.query(sql, args + [limit, offset])

    def events(self, run_id: str, upto: int | None = None) -> list[Event]:
        sql = "SELECT run_id, seq, t_ms, ts, type, node_id, llm_call_id, data FROM events WHERE run_id = ?"
        args: list[Any] = [run_id]
        if upto is not None:
            sql += " AND seq <= ?"
            args.append(upto)
        with self._conn() as con:
            rows = con.execute(sql + " ORDER BY seq", args).fetchall()
        return [Event(run_id=r[0], seq=r[1], t_ms=r[2], ts=r[3], type=r[4], node_id=r[5],
                      llm_call_id=r[6], data=json.loads(r[7]) if r[7] else {}) for r in rows]

    def trace(self, run_id: str, upto: int | None = None) -> Trace:
        return Trace.fold(self.events(run_id, upto))

    def delete_run(self, run_id: str) -> None:
        """Remove a run everywhere; an eval it belonged to loses that item (its count drops,
        and ``eval --resume`` runs the item again) rather than keeping a result with no run."""
        with self._tx() as con:
            evals = [r[0] for r in con.execute(
                "SELECT DISTINCT eval_id FROM eval_items WHERE run_id = ?", [run_id]).fetchall()]
            for table in ("events", "llm_calls", "annotations", "eval_items", "triage",
                          "triage_labels", "runs"):
                con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
            for eid in evals:
                con.execute("UPDATE eval_batches SET n_done = (SELECT count(*) FROM eval_items "
                            "WHERE eval_id = ?) WHERE eval_id = ?", [eid, eid])

    def require_run(self, run_id: str) -> dict[str, Any]:
        """The run, or a StoreError naming the unknown id."""
        run = self.get_run(run_id)
        if run is None:
            raise StoreError(f"No run {run_id!r} in {self.path}. `python -m workbench runs list` "
                             f"shows the stored runs.")
        return run

    def export_run(self, run_id: str) -> dict[str, Any]:
        run = self.require_run(run_id)
        events = self.events(run_id)
        return {"run": run, "events": [e.to_dict() for e in events],
                "trace": Trace.fold(events).to_dict(),
                "annotations": self.annotations(run_id)}

    # -- annotations --
    def add_annotation(self, run_id: str, target_kind: str, target_id: str,
                       tags: list[str], note: str = "", author: str = "") -> str:
        from .trace import new_id
        aid = new_id("ann_")
        with self._tx() as con:
            con.execute("INSERT INTO annotations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [aid, run_id, target_kind, target_id, json.dumps(tags), note, author,
                         time.time()])
        return aid

    def annotations(self, run_id: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT id, run_id, target_kind, target_id, tags, note, author, created_at FROM annotations"
        rows = self.query(sql + (" WHERE run_id = ?" if run_id else "") + " ORDER BY created_at",
                          [run_id] if run_id else [])
        for r in rows:
            r["tags"] = json.loads(r["tags"]) if isinstance(r["tags"], str) else r["tags"]
        return rows

    def delete_annotation(self, ann_id: str) -> None:
        with self._tx() as con:
            con.execute("DELETE FROM annotations WHERE id = ?", [ann_id])

    # -- generic read access for aggregate queries (aggregate in SQL, not pandas) --
    def query(self, sql: str, args: list[Any] | None = None) -> list[dict[str, Any]]:
        with self._conn() as con:
            cur = con.execute(sql, args or [])
            cols = [d[0] for d in cur.description]
            out = [dict(zip(cols, r)) for r in cur.fetchall()]
        for r in out:
            for c in _JSON_COLUMNS & r.keys():
                if isinstance(r[c], str):
                    try:
                        r[c] = json.loads(r[c])
                    except json.JSONDecodeError:
                        pass
        return out

    def execute(self, sql: str, args: list[Any] | None = None) -> None:
        with self._tx() as con:
            con.execute(sql, args or [])

    def executemany(self, sql: str, rows: list[list[Any]] | list[tuple]) -> None:
        with self._tx() as con:
            con.executemany(sql, rows)
