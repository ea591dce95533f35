"""Compare: one question through 2–4 methods (or one method with different knobs), side
by side, run one after another with live progress; or stored runs of one question."""
from __future__ import annotations

import streamlit as st

from workbench.llm.base import LLMError
from workbench.ui import backend, live
from workbench.ui import queries as Q
from workbench.ui import triage_view as TV
from workbench.ui import widgets as W
from workbench.ui import model_status as MS
from workbench.viz.figures import compare_bars

K = "cmp"
ss = st.session_state
settings = W.setup_page(warm_up=True)
st.title("Compare")

methods = W.methods_or_stop()

mode = st.segmented_control("Source", ["Run live", "Stored runs"], default="Run live",
                            key=f"{K}__mode")
batch: live.LiveBatch | None = ss.get("cmp_batch")
running = batch is not None and batch.running

if mode == "Stored runs":
    store = W.store_or_stop()
    qs = Q.questions_with_runs(store)
    if not qs:
        st.info("No stored runs yet. Run something on the Ask page or here.")
        st.stop()
    qtext = st.selectbox("Question", [r["question"] for r in qs],
                         format_func=lambda q: W.shorten(q, 120), key=f"{K}__sq")
    rows = Q.runs(store, question=qtext, limit=50)
    picked = st.multiselect(
        "Runs (2–4)", [r["run_id"] for r in rows], default=[r["run_id"] for r in rows][:2],
        max_selections=4, key=f"{K}__sruns",
        format_func=lambda rid: next(f"{r['method']} · {r['status']} · {rid}" for r in rows
                                     if r["run_id"] == rid))
    traces = [(rid, store.trace(rid)) for rid in picked]
    cols = st.columns(max(1, len(traces)))
    table = []
    for (rid, tr), col in zip(traces, cols):
        run = store.get_run(rid) or {}
        tri = TV.for_run(store, tr, rid)
        with col:
            st.markdown(f"**{W.md_escape(tr.method)}** · `{rid}`")
            W.draw_graph(tr, key=f"{K}__s_{rid}", height=360, triage=tri)
            W.answer_box(tr, {"correct": run["correct"]} if run.get("correct") is not None else None)
            TV.banner(tri)
        table.append(W.summary_row(tr, f"{tr.method} {rid[-5:]}",
                                   {"correct": run["correct"]} if run.get("correct") is not None
                                   else None, (run.get("wall_ms") or 0) / 1000.0))
    if table:
        st.dataframe(table, hide_index=True, width="stretch")
        st.plotly_chart(compare_bars(table), key=f"{K}__sbars", config={"displayModeBar": False})
    if len(traces) >= 2 and st.toggle("Where do these runs part ways? (the first two runs)",
                                      key=f"{K}__diffon"):
        from workbench.ui.diff_view import render_diff
        render_diff(traces[0][1], traces[1][1], key=f"{K}__diff")
    st.stop()

qc = st.columns([5, 1], vertical_alignment="bottom")
with qc[0]:
    question, qid, qobj = W.question_picker(settings.dataset, key=K)
n = qc[1].selectbox("Columns", [2, 3, 4], key=f"{K}__n",
                    help="2–4 methods, or one method with different knobs")
jobs = []
cols = st.columns(n)
for i, col in enumerate(cols):
    with col:
        kk = f"{K}__c{i}"
        m = W.method_picker(methods, key=kk, label=f"Method {i + 1}", offset=i)
        with st.expander("Knobs"):
            ov = W.knob_inputs(methods[m].Config, f"{kk}__knobs__{m}")
        lab = m + (" · " + ", ".join(f"{k}={v}" for k, v in ov.items()) if ov else "")
        jobs.append(live.Job(m, ov, lab))

b1, b2 = st.columns([1, 5])
if b1.button("Run all", type="primary", disabled=running or not question, key=f"{K}__run"):
    try:
        with st.spinner("Loading the model (once per process)…"):
            llm = backend.get_llm(settings)
        ss["cmp_batch"] = live.LiveBatch(jobs, question, question_id=qid,
                                         dataset=settings.dataset, llm=llm,
                                         store=W.store_or_stop(), settings=settings).start()
        ss["cmp_was_running"] = True
        running = True
    except LLMError as e:
        W.error(f"The model could not be loaded: {e}", "Check the model in Settings.")
if not question:
    b2.caption("Pick or type a question first.")


@st.fragment(run_every=0.5 if running else None)
def panel() -> None:
    b: live.LiveBatch | None = ss.get("cmp_batch")
    if b is None:
        st.info("Choose the methods (or one method twice with different knobs) and press "
                "**Run all**; they run one after another.")
        return
    st.markdown(f"**Question:** {W.md_escape(b.question)}")
    if b.running and b.ticket(b.current) is not None:
        if st.button("Cancel", key=f"{K}__cancel", disabled=b.stopping,
                     help="Leave the line for the model; the runs not yet started are not "
                          "run or stored."):
            b.stop()
    elif b.running and st.button("Stop", key=f"{K}__stop", disabled=b.stopping):
        b.stop()
    cols = st.columns(len(b.jobs))
    table = []
    tris = []
    for i, (js, col) in enumerate(zip(b.jobs, cols)):
        tr = b.view(i)
        tri = TV.for_run(W.store_or_stop(), tr, js.run_id, (js.verdict or {}).get("correct")) \
            if js.run_id and js.status not in ("running", "pending", "starting") else None
        tris.append(tri)
        with col:
            st.markdown(f"**{i + 1}. {W.md_escape(js.job.label)}**")
            W.status_line(W.run_summary(tr), status=js.status, elapsed_s=b.elapsed(i),
                          error_msg=js.error)
            MS.waiting(b.ticket(i))
            MS.generating(js.partial)
            MS.crash_notice(js.error if not b.running else None, key=f"{K}__{i}")
            W.draw_graph(tr, key=f"{K}__g{i}", height=340, triage=tri)
            W.answer_box(tr, js.verdict)
            TV.banner(tri)
        table.append(W.summary_row(tr, f"{i + 1}. {js.job.label}", js.verdict,
                                   b.elapsed(i) if js.started else 0.0))
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={"correct": st.column_config.CheckboxColumn()})
    if any(r["llm_calls"] for r in table):
        st.plotly_chart(compare_bars(table), key=f"{K}__bars", config={"displayModeBar": False})
    st.subheader("Inspect a node")
    j = st.selectbox("Column", range(len(b.jobs)), format_func=lambda x: b.jobs[x].job.label,
                     key=f"{K}__icol")
    tr = b.view(j)
    nid = W.node_picker(tr, key=f"{K}__g{j}")
    W.inspector(tr, nid, key=f"{K}__g{j}", triage=tris[j])
    if not b.running and ss.get("cmp_was_running"):
        ss["cmp_was_running"] = False
        st.rerun(scope="app")


panel()
