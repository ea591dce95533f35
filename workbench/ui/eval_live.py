"""The Evaluate page while an eval runs: its progress (items done, rate and ETA, the
items finished so far) and when to redraw the rest of the page.

An eval runs in a thread of the app's process (:mod:`workbench.eval.jobs`) or in
another process (``python -m workbench eval``); either way the store is the record. The
page polls with ``st.fragment(run_every=...)``: a fragment redraws only itself, so when
the eval ends the fragment that saw it running asks for one full rerun, and everything
drawn outside it (the Results tab, the Launch button) is read again from the store.
"""
from __future__ import annotations

import datetime as dt
import os
import time
from typing import Any

import streamlit as st

from ..eval import jobs
from ..store import Store, _pid_alive
from . import queries as UQ

PROGRESS_EVERY_S = 1.0
RESULTS_EVERY_S = 2.0
# An eval of another process (the CLI) writes the same DuckDB file, which one process at a
# time can open: the page reads it less often then, so the eval's writes rarely wait.
RESULTS_EVERY_S_OTHER = 15.0


def fmt_s(s: float | None) -> str:
    if s is None:
        return "?"
    return str(dt.timedelta(seconds=max(0, int(round(s)))))


def progress_text(snap: dict[str, Any], now: float | None = None) -> str:
    """One line on an eval job: items done, then the rate and an ETA that counts down
    between items, or, before the first item of this session, how long it has run."""
    now = time.time() if now is None else now
    total = snap.get("total") or 0
    head = f"{snap.get('eval_id') or 'starting'}: {snap.get('done', 0)}/{total or '?'} items"
    status = snap.get("status") or "starting"
    if status not in ("running", "starting"):
        took = snap.get("elapsed_s")
        return f"{head} · {status}" + (f" in {fmt_s(took)}" if took is not None else "")
    rate = snap.get("rate") or 0.0
    if rate <= 0:
        what = "first item running" if snap.get("eval_id") else \
            "loading the dataset and methods"
        return f"{head} · {what} for {fmt_s(snap.get('elapsed_s'))} · rate and ETA after " \
               f"the first item"
    eta = snap.get("eta_s")
    if eta is not None and snap.get("updated"):
        eta = max(0.0, eta - (now - snap["updated"]))
    per = f" ({1.0 / rate:.1f} s per item)" if rate < 1 else ""
    return f"{head} · {rate:.2f} items/s{per} · ETA {fmt_s(eta)}"


def live_eval_ids(store: Store) -> set[str]:
    """The evals being run now (see :func:`eval_is_live`). Read this before the store:
    an eval not live then has written everything, so what is read after is final."""
    return {j.eval_id for j in jobs.active() if j.eval_id} | {
        r["eval_id"] for r in UQ.running_evals(store) if eval_is_live(r)}


def results_every(store: Store) -> float | None:
    """How often the Results redraw: while a job of this process runs, every
    ``RESULTS_EVERY_S``; while only another process runs one, less often; else never."""
    if jobs.active():
        return RESULTS_EVERY_S
    if any(eval_is_live(r) for r in UQ.running_evals(store)):
        return RESULTS_EVERY_S_OTHER
    return None


def eval_is_live(row: dict[str, Any] | None) -> bool:
    """Whether this stored eval is being run now: by a job of this process, or marked
    running by another process that is still alive (a dead one's mark is stale)."""
    if not row:
        return False
    if any(j.eval_id == row["eval_id"] for j in jobs.active()):
        return True
    if row.get("status") != "running":
        return False
    pid = row.get("pid")
    return bool(pid) and pid != os.getpid() and _pid_alive(pid)


def items_table(store: Store, eval_id: str, spec: dict[str, Any] | None,
                primary: str | None, limit: int = 200) -> None:
    """The items stored so far, newest first."""
    rows = UQ.eval_items_done(store, eval_id, limit)
    if not rows:
        st.caption("No item finished yet: each one appears here once stored.")
        return
    several = len({r["variant"] for r in rows}) > 1
    st.dataframe([{"question": r["question"] or r["question_id"], "method": r["method"]
                   + (f" [{r['variant']}]" if several and r["variant"] else ""),
                   "answer": r["answer"], "correct": r["correct"], "wall time (s)": r["wall_s"],
                   "LLM calls": r["llm_calls"], "status": r["status"]} for r in rows],
                 hide_index=True, width="stretch",
                 column_config={"wall time (s)": st.column_config.NumberColumn(format="%.1f")})
    newest = f" (the newest {limit})" if len(rows) >= limit else ""
    st.caption(f"{len(rows)} item(s) stored{newest} · {metric_note(spec, primary)}")


def metric_note(spec: dict[str, Any] | None, primary: str | None) -> str:
    """What 'correct' means in this eval's tables: its primary metric and metric profile."""
    from ..eval.metrics import profile_caption
    return f"correct = primary metric ({primary or 'auto'}) · {profile_caption(spec or {})}"


def progress_panel(store: Store) -> None:
    """The job this session launched: a progress bar whose line stays true from the first
    second, the items finished so far, Stop; and one full rerun when it ends."""
    job = jobs.get(st.session_state.get("eval_job"))
    if job is None:
        return
    was_alive = job.alive

    @st.fragment(run_every=PROGRESS_EVERY_S if was_alive else None)
    def _progress() -> None:
        alive = job.alive
        if was_alive and not alive:
            st.rerun()               # the eval ended: redraw the whole page from the store
        s = job.snapshot()
        if s["eval_id"]:
            st.session_state["eval_results_id"] = s["eval_id"]
        st.progress(min(1.0, s["fraction"]), text=progress_text(s))
        if s["failed"]:
            st.warning(f"{s['failed']} item(s) failed (stored as failed runs).")
        if s["error"]:
            st.error(s["error"])
        if alive:
            if st.button("Stop", key=f"stop_{job.id}"):
                job.stop()
        elif s["eval_id"]:
            st.success(f"Eval {s['eval_id']} {s['status']}; its results are in the Results tab.")
        if s["eval_id"]:
            st.markdown("**Items finished**")
            from ..eval.runner import get_eval
            try:
                row = get_eval(store, s["eval_id"])
            except LookupError:
                return
            items_table(store, s["eval_id"], row.get("spec"), row.get("primary_metric"))

    _progress()
