"""The parent side of an eval: item results written in bulk, one transaction a batch."""
from __future__ import annotations

import json
import threading
import time
from typing import Any

from .. import trace as T
from ..store import Store, bulk_insert, event_rows, interrupted
from . import knobs as K
from .item_executor import ItemResult


ITEM_COLUMNS = ("eval_id", "item_key", "run_id", "question_id", "method", "variant", "knobs",
                "config_hash", "model_sha256", "seed", "status", "correct", "refused", "em", "f1",
                "contains", "rouge_l", "rouge_f1", "hits1", "acc_lm", "fever", "crag_label",
                "crag_points", "crag_decided_by", "confidence", "hops", "qtype", "domain",
                "question_type", "static_or_dynamic", "llm_calls", "prompt_tokens",
                "completion_tokens", "wall_ms", "judge", "judge_ms", "structure", "created_at",
                "cpu_others", "items_at_once")

# Arrow types of the rows the writer inserts (DuckDB casts VARCHAR to JSON on insert).
class ResultWriter:
    """Buffers item results and writes each batch in one transaction, in bulk.

    A result's recorded runner writes (start_run, add_events, update_run) are folded into
    one ``runs`` row plus its ``events`` / ``llm_calls`` rows — the same rows the Store
    would write — and inserted together with the ``eval_items`` rows."""

    def __init__(self, store: Store, eval_id: str, variants: dict[str, dict[str, Any]],
                 every_n: int = 64, every_s: float = 1.0, judge_version: str | None = None):
        self.store, self.eval_id, self.variants = store, eval_id, variants
        self.every_n, self.every_s = every_n, every_s
        self.judge_version = judge_version
        self.buf: list[ItemResult] = []
        self.last = time.monotonic()
        self.written = 0
        self.model: tuple[str, str] | None = None
        self._lock = threading.RLock()     # the runner's flushes and the timer's, one at a time
        self._timer: threading.Timer | None = None

    def add(self, r: ItemResult) -> None:
        with self._lock:
            self.buf.append(r)
            due = len(self.buf) >= self.every_n or time.monotonic() - self.last >= self.every_s
        if due:
            self.flush()
        elif self._timer is None or not self._timer.is_alive():
            # a batched item is stored within every_s even when the next item takes minutes
            # (the Evaluate page lists items as they land)
            self._timer = threading.Timer(self.every_s, self._timed_flush)
            self._timer.daemon = True
            self._timer.start()

    def _timed_flush(self) -> None:
        try:
            self.flush()
        except BaseException:   # noqa: BLE001 - the rows are back in buf for the last flush
            pass

    def _run_row(self, r: ItemResult) -> tuple[dict[str, Any], list[T.Event]]:
        from ..store import _JSON_COLUMNS, _RUN_COLUMNS
        v = self.variants[r.row["config_hash"]]
        run: dict[str, Any] = {}
        events: list[T.Event] = []
        for name, args, kw in r.ops:
            if name == "start_run":
                run = {c: args[0].get(c) for c in _RUN_COLUMNS}
                run["status"] = run["status"] or "running"
                run["created_at"] = run["created_at"] or time.time()
            elif name == "update_run":
                run.update(kw)
            elif name == "add_events":
                events.extend(args[0])
        if v["eval_knobs"]:
            run["config"] = {**(run.get("config") or {}), "_eval": v["eval_knobs"]}
            run["config_hash"] = v["hash"]
        pv = dict(run.get("prompt_versions") or {})
        if r.row.get("judge") and self.judge_version:
            pv["judge"] = self.judge_version
        if v["eval_knobs"].get("idk_prompt"):
            pv["idk_prompt"] = K.IDK_PROMPT_VERSION
        run["prompt_versions"] = pv
        run["correct"] = r.row["correct"]
        run["metrics"] = r.row.get("_metrics") or {}
        for c in _JSON_COLUMNS:
            if run.get(c) is not None:
                run[c] = json.dumps(run[c])
        if self.model is None:
            self.model = (run.get("model_name") or "", run.get("model_sha256") or "")
        return run, events

    def flush(self) -> None:
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        if not self.buf:
            self.last = time.monotonic()
            return
        from ..store import _RUN_COLUMNS
        batch, self.buf = self.buf, []
        runs, evs, calls, items = [], [], [], []
        for r in batch:
            run, events = self._run_row(r)
            runs.append(tuple(run.get(c) for c in _RUN_COLUMNS))
            e, c = event_rows(events)
            evs += e
            calls += c
            items.append(tuple(r.row.get(c) for c in ITEM_COLUMNS))
        try:
            with self.store._tx() as con:
                bulk_insert(con, "runs", runs)
                bulk_insert(con, "events", evs, replace=True)
                bulk_insert(con, "llm_calls", calls, replace=True)
                bulk_insert(con, "eval_items", items)
                con.execute("UPDATE eval_batches SET n_done = n_done + ? WHERE eval_id = ?",
                            [len(items), self.eval_id])
        except BaseException as e:
            self.buf[:0] = batch         # rolled back: the runner's last flush writes them
            if interrupted(e):           # Ctrl-C inside the write is still Ctrl-C
                raise KeyboardInterrupt from e
            raise
        self.written += len(items)
        self.last = time.monotonic()
