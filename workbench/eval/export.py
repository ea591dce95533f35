"""An eval's items joined with their runs, written to CSV or Parquet by DuckDB itself."""
from __future__ import annotations

import re

from ..store import Store
from .runner import get_eval
from .writer import ITEM_COLUMNS


def export_eval(store: Store, eval_id: str, path: str, fmt: str = "csv") -> int:
    """Write the eval's items joined with their runs to CSV or Parquet, in SQL."""
    if not re.fullmatch(r"[A-Za-z0-9_\-]+", eval_id):
        raise ValueError(f"bad eval id {eval_id!r}")
    get_eval(store, eval_id)
    if fmt not in ("csv", "parquet"):
        raise ValueError("format must be csv or parquet")
    cols = ", ".join(f"i.{c}" for c in ITEM_COLUMNS)
    sql = (f"SELECT {cols}, r.question, r.answer, r.status AS run_status, r.model_name, "
           f"r.prompt_versions, r.config, r.error FROM eval_items i LEFT JOIN runs r "
           f"ON r.run_id = i.run_id WHERE i.eval_id = '{eval_id}' ORDER BY i.created_at, i.item_key")
    opts = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER"
    target = str(path).replace("'", "''")
    store.execute(f"COPY ({sql}) TO '{target}' ({opts})")
    return store.query("SELECT count(*) AS n FROM eval_items WHERE eval_id = ?", [eval_id])[0]["n"]
