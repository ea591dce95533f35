"""Runs: history from the store, filters, replay with a step slider, export, delete."""
from __future__ import annotations

import time

import streamlit as st

from workbench.annotations import TAXONOMY, node_badges
from workbench.trace import Trace
from workbench.ui import access
from workbench.ui import data as D
from workbench.ui import queries as Q
from workbench.ui import whatif_view as WV
from workbench.ui import widgets as W
from workbench.ui.waterfall_view import waterfall
from workbench.viz.export import run_json, standalone_html
from workbench.viz.names import event_name

K = "runs"
ss = st.session_state
W.setup_page()
st.title("Runs")
store = W.store_or_stop()

f = st.columns([2, 2, 2, 2, 2, 3])
method = f[0].selectbox("Method", ["(any)"] + Q.distinct(store, "method"), key=f"{K}__fm")
dataset = f[1].selectbox("Dataset", ["(any)"] + Q.distinct(store, "dataset"), key=f"{K}__fd")
status = f[2].selectbox("Status", ["(any)"] + Q.distinct(store, "status"), key=f"{K}__fs")
correct = f[3].selectbox("Correctness", ["any", "correct", "incorrect", "unjudged"], key=f"{K}__fc")
tag_opts = ["any", "annotated", "unannotated"] + [t.id for t in TAXONOMY]
annotation = f[4].selectbox("Annotation", tag_opts, key=f"{K}__fa",
                            format_func=lambda t: W.tag_text([t]) if t not in tag_opts[:3] else t)
text = f[5].text_input("Search question / answer / id", key=f"{K}__ft")
rows = Q.runs(store, method=None if method == "(any)" else method,
              dataset=None if dataset == "(any)" else dataset,
              status=None if status == "(any)" else status, correct=correct,
              annotation=annotation, text=text.strip())

if not rows:
    st.info("No stored runs match. Runs appear here after you run a method on the Ask or "
            "Compare page (or with `python -m workbench`).")
    st.stop()

table = [{"when": time.strftime("%m-%d %H:%M", time.localtime(r["created_at"] or 0)),
          "method": r["method"], "status": r["status"], "question": r["question"],
          "answer": r["answer"], "correct": r["correct"], "LLM calls": r["llm_calls"],
          "tokens": r["tokens"], "wall s": round((r["wall_ms"] or 0) / 1000, 2),
          "tags": W.tag_text(r["tags"] or []), "run": r["run_id"],
          "counterfactual of": r.get("parent_run_id") or ""} for r in rows]
event = st.dataframe(table, hide_index=True, width="stretch",
                     height=min(246, 36 + 35 * len(table)), on_select="rerun",
                     selection_mode="single-row", key=WV.table_key(K))
st.caption(f"{len(rows)} run(s). Select a row to open it.")

sel = event.selection.rows if event and event.selection else []
run_id = rows[sel[0]]["run_id"] if sel else st.query_params.get("run")
if not run_id or store.get_run(run_id) is None:
    st.stop()
st.query_params["run"] = run_id
run = store.get_run(run_id)

cache = ss.setdefault("runs_events", {})
if run_id not in cache or run["status"] == "running":
    cache.clear()
    cache[run_id] = store.events(run_id)
events = cache[run_id]
if not events:
    W.error("This run has no stored events.")
    st.stop()

st.markdown(f"#### {W.md_escape(run['method'])} · {W.md_escape(run['status'])} · "
            f"`{run_id}`\n**Question:** {W.md_escape(run['question'])}")
if run.get("error"):
    st.caption("Error: " + W.md_escape(run["error"]))
full = Trace.fold(events)
if run.get("parent_run_id"):        # a counterfactual: the original beside it
    with st.container(border=True):
        WV.result(store, run, full, key=K)
rc = st.columns([3, 2], vertical_alignment="bottom")
step = rc[0].slider("Replay: rebuild the graph at event", 0, len(events) - 1, len(events) - 1,
                    key=f"{K}__step_{run_id}",
                    help="Rebuilds the graph from the stored events up to this one.")
tr = full if step == len(events) - 1 else Trace.fold(events[: step + 1])
ev = events[step]
rc[1].caption(f"Event {step} of {len(events) - 1}: **{W.md_escape(event_name(ev.type))}**"
              + (f" · node {W.md_escape(ev.node_id)}" if ev.node_id else "")
              + f" · t = {ev.t_ms / 1000:.2f} s")
anns = store.annotations(run_id)
badges = node_badges(anns, tr)

left, right = st.columns([3, 2])
with right:
    t_ins, t_wi, t_cf, t_ann, t_exp = st.tabs(["Inspector", "What-if", "Counterfactual",
                                                "Annotations", "Export"],
                                               default=WV.tab_default(K, run_id))
with t_wi:
    w, rerun = W.whatif_panel(tr, key=f"{K}_{run_id}", method_cls=D.method_classes().get(run["method"]))
    if rerun:
        ss["ask_prefill"] = {"question": run["question"], "question_id": run["question_id"],
                             "method": run["method"],
                             "overrides": {**{k: v for k, v in (tr.config or {}).items()},
                                           **rerun}, "autorun": True}
        st.switch_page("pages/ask.py")
with left:
    W.status_line(W.run_summary(tr), status=tr.status, elapsed_s=tr.last_t_ms / 1000.0)
    W.draw_graph(tr, key=K, whatif=w, badges=badges, height=500)
    with st.expander("LLM calls on a time line", expanded=False):
        waterfall(tr, key=K)
    W.answer_box(tr, {"correct": run["correct"]} if run.get("correct") is not None else None)
with t_ins:
    nid = W.node_picker(tr, key=K)
    W.inspector(tr, nid, key=K)
with t_cf:
    WV.form(store, run, full, key=K, default_node=nid,
            method_cls=D.method_classes().get(run["method"]))
with t_ann:
    if anns:
        st.dataframe([{"target": f"{a['target_kind']} {a['target_id']}",
                       "tags": W.tag_text(a["tags"]), "note": a["note"], "author": a["author"]}
                      for a in anns], hide_index=True, width="stretch")
    else:
        st.caption("No annotations yet.")
    if st.button("Annotate this run", key=f"{K}__annotate"):
        ss["annotate_run"] = run_id
        st.switch_page("pages/annotate.py")
with t_exp:
    # Deferred: the files are built only when a button is pressed.
    st.download_button("Export JSON", lambda: run_json(store.export_run(run_id)),
                       file_name=f"{run_id}.json", mime="application/json", key=f"{K}__json")
    st.download_button("Export standalone HTML", lambda: standalone_html(store.export_run(run_id)),
                       file_name=f"{run_id}.html", mime="text/html", key=f"{K}__html",
                       help="Graph and inspector data in one file; opens without a server.")
    st.divider()
    may_delete = access.host_only("Deleting runs")      # the one store is everyone's
    confirm = st.checkbox("I want to delete this run", key=f"{K}__confirm",
                          disabled=not may_delete)
    if st.button("Delete run", disabled=not (confirm and may_delete), key=f"{K}__delete") \
            and confirm and may_delete:
        store.delete_run(run_id)
        cache.clear()
        st.query_params.clear()
        st.success(f"Deleted {run_id}.")
        st.rerun()
