"""The Evaluate page's aggregate queries over 100,000 stored results.

Inserts N synthetic eval results (eval_items rows with their runs rows, plus annotations)
into a temporary store, then times every query the page runs for one eval (median of
several repetitions, each through ``Store.query`` as the page does: open, query, close).
The baseline, measured in the same run, is what the page would do without SQL
aggregation: read all of the eval's rows into pandas and compute the same aggregates.
Prints per-query times and, as its last line, one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def populate(st, eval_id: str, n: int) -> None:
    """N results: 4 methods × 3 variants of a knob, CRAG-like labels and metadata."""
    st.execute(
        "INSERT INTO eval_batches (eval_id, created_at, status, dataset, methods, n_questions, "
        "n_planned, n_done, spec, primary_metric, judge) VALUES (?, epoch(now()), 'finished', "
        "'synthetic', '[\"m0\",\"m1\",\"m2\",\"m3\"]', ?, ?, ?, '{}', 'contains', 'off')",
        [eval_id, n // 12, n, n])
    st.execute(f"""
        INSERT INTO eval_items
        SELECT '{eval_id}', 'k' || i, 'run_' || i, 'q' || (i // 12), 'm' || (i % 4),
               'noise_k=' || ((i // 4) % 3), ('{{"noise_k": ' || ((i // 4) % 3) || '}}')::JSON,
               'h' || (i % 12), 'sha', 0, CASE WHEN i % 97 = 0 THEN 'failed' ELSE 'finished' END,
               r < 0.4, r > 0.95, (r < 0.3)::INT, least(1.0, r * 1.5), (r < 0.4)::INT,
               r, (r < 0.45)::INT, (r < 0.42)::INT, NULL, NULL,
               CASE WHEN r < 0.4 THEN 'accurate' WHEN r > 0.8 THEN 'missing' ELSE 'hallucinated' END,
               CASE WHEN r < 0.4 THEN 1 WHEN r > 0.8 THEN 0 ELSE -1 END, 'exact',
               least(1.0, greatest(0.0, r + (random() - 0.5) * 0.4)), 1 + i % 3,
               CASE WHEN i % 2 = 0 THEN 'bridge' ELSE 'comparison' END,
               ['finance', 'sports', 'music', 'movie', 'open'][1 + i % 5], 'simple', 'static',
               1 + i % 7, 300 + i % 500, 20 + i % 30, 100 + (i % 1000), NULL, 0.0, NULL,
               epoch(now()) + i
        FROM (SELECT range AS i, random() AS r FROM range({n}))""")
    st.execute(f"""
        INSERT INTO runs (run_id, created_at, finished_at, status, method, dataset, question_id,
                          question, config, config_hash, model_name, model_sha256, seed, answer,
                          refused, correct, llm_calls, prompt_tokens, completion_tokens, wall_ms,
                          eval_id)
        SELECT 'run_' || i, epoch(now()), epoch(now()), 'finished', 'm' || (i % 4), 'synthetic',
               'q' || (i // 12), 'Synthetic question ' || (i // 12) || '?', '{{}}', 'h', 'scripted',
               'sha', 0, 'answer ' || i, false, false, 1, 300, 20, 100.0, '{eval_id}'
        FROM range({n}) t(i)""")
    st.execute("""
        INSERT INTO annotations
        SELECT 'ann_' || i, 'run_' || (i * 37), 'run', '', ('["' ||
               ['retrieval_miss', 'wrong_entity', 'parse_failure'][1 + i % 3] || '"]')::JSON,
               '', 'bench', epoch(now())
        FROM range(2000) t(i)""")


def page_queries(st, eid: str) -> dict[str, callable]:
    from workbench.eval import queries as Q
    return {
        "summary": lambda: Q.summary(st, eid, "correct"),
        "by_hops": lambda: Q.by_group(st, eid, "correct", "hops"),
        "by_qtype": lambda: Q.by_group(st, eid, "correct", "qtype"),
        "efficiency": lambda: Q.efficiency(st, eid),
        "calibration": lambda: Q.calibration(st, eid),
        "crag": lambda: Q.crag(st, eid),
        "crag_by_domain": lambda: Q.crag(st, eid, "domain"),
        "knob_response": lambda: Q.knob_response(st, eid, "noise_k", "correct"),
        "error_modes": lambda: Q.error_modes(st, eid),
        "runs_behind": lambda: Q.runs_behind(st, eid, method="m1", variant="noise_k=2",
                                             group="hops", value="2"),
        "list_evals": lambda: Q.list_evals(st),
    }


def pandas_page(st, eid: str) -> dict:
    """The same aggregates computed in pandas over all of the eval's rows."""
    import numpy as np
    import pandas as pd  # noqa: F401 - the baseline is pandas
    with st._conn() as con:
        df = con.execute("SELECT * FROM eval_items WHERE eval_id = ?", [eid]).df()
        ann = con.execute("SELECT run_id, tags FROM annotations").df()
    df["c"] = df["correct"].astype(float)
    out = {}
    g = df.groupby(["method", "variant"])
    out["summary"] = g["c"].agg(["count", "sum", "mean"])
    out["by_hops"] = df.groupby(["method", "variant", "hops"])["c"].agg(["count", "mean"])
    out["by_qtype"] = df.groupby(["method", "variant", "qtype"])["c"].agg(["count", "mean"])
    out["efficiency"] = g[["llm_calls", "prompt_tokens", "completion_tokens", "wall_ms"]].mean()
    out["wall_p50"] = g["wall_ms"].quantile(0.5)
    d = df[df["confidence"].notna()].copy()
    d["bin"] = np.minimum((d["confidence"] * 10).astype(int), 9)
    out["calibration"] = d.groupby(["method", "variant", "bin"]).agg(
        n=("c", "size"), conf=("confidence", "mean"), acc=("c", "mean"))
    for key, by in (("crag", ["method", "variant"]), ("crag_by_domain", ["method", "variant", "domain"])):
        out[key] = df.assign(acc=df.crag_label.eq("accurate"), hal=df.crag_label.eq("hallucinated"),
                             mis=df.crag_label.eq("missing")).groupby(by)[
            ["acc", "hal", "mis", "crag_points"]].mean()
    k = df["knobs"].map(lambda s: json.loads(s).get("noise_k"))
    out["knob"] = df.assign(k=k).groupby(["method", "k"])["crag_points"].mean()
    ann = ann.assign(tag=ann["tags"].map(json.loads)).explode("tag")
    out["modes"] = ann.merge(df[["run_id", "method"]], on="run_id").groupby(["method", "tag"]).size()
    out["runs"] = df[(df.method == "m1") & (df.variant == "noise_k=2") & (df.hops == 2)].head(200)
    return out


def timed(fn, reps: int) -> float:
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="wb-storebench-")
    os.environ["WORKBENCH_HOME"] = home
    from workbench.store import Store
    st = Store(Path(home) / "bench.duckdb")
    eid = "ev_bench"
    t0 = time.perf_counter()
    populate(st, eid, args.rows)
    insert_s = time.perf_counter() - t0
    n = st.query("SELECT count(*) AS n FROM eval_items")[0]["n"]
    print(f"inserted {n} results (+{n} runs, 2000 annotations) in {insert_s:.1f} s; "
          f"store {Path(st.path).stat().st_size / 1e6:.1f} MB")
    from workbench.eval import queries as Q
    qs = page_queries(st, eid)
    for fn in qs.values():      # warm the file cache once
        fn()
    # each query on its own connection (Store.query: open, query, close)
    per_conn = {name: timed(fn, args.reps) for name, fn in qs.items()}
    # what the page does: all of them in one Session (one connection)
    times: dict[str, float] = {name: [] for name in qs}
    session_totals = []
    for _ in range(args.reps):
        t_all = time.perf_counter()
        with Q.session(st) as db:
            for name, fn in page_queries(db, eid).items():
                t1 = time.perf_counter()
                fn()
                times[name].append((time.perf_counter() - t1) * 1000.0)
        session_totals.append((time.perf_counter() - t_all) * 1000.0)
    times = {k: statistics.median(v) for k, v in times.items()}
    for name, ms in times.items():
        print(f"  {name:16s} {ms:8.1f} ms in the page's session   "
              f"({per_conn[name]:6.1f} ms on a connection of its own)")
    sql_total = statistics.median(session_totals)
    per_conn_total = sum(per_conn.values())
    pandas_page(st, eid)
    pandas_ms = timed(lambda: pandas_page(st, eid), max(2, args.reps // 2))
    ratio = pandas_ms / sql_total
    print(f"page total (SQL aggregates, {len(times)} queries, one connection): {sql_total:.0f} ms "
          f"(one connection per query: {per_conn_total:.0f} ms); slowest "
          f"{max(times, key=times.get)} {max(times.values()):.0f} ms")
    print(f"baseline (all rows into pandas, same aggregates): {pandas_ms:.0f} ms; "
          f"baseline / SQL = {ratio:.1f}x")
    print(json.dumps({"rows": n, "insert_s": round(insert_s, 2),
                      "page_sql_total_ms": round(sql_total, 1),
                      "page_sql_total_one_conn_per_query_ms": round(per_conn_total, 1),
                      "slowest_query_ms": round(max(times.values()), 1),
                      "query_ms": {k: round(v, 1) for k, v in times.items()},
                      "pandas_baseline_ms": round(pandas_ms, 1),
                      "baseline_over_sql_ratio": round(ratio, 2)}))


if __name__ == "__main__":
    main()
