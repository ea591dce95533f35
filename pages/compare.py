"""Compare: one question through 2–4 methods (or one method with different knobs), side
by side with live progress: at the same time when the model serves concurrent calls (a
server), else one after another with the queued ones' place in line; or stored runs of one
question. Each block (graph, answer, triage) is a row of its own, so the columns line up."""
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
GRAPH_H = 420
MIN_SCALE = 0.85        # labels at 13 px x 0.85 ≈ 11 px however wide the graph (pan for more)
ss = st.session_state


def row(n: int) -> list:
    """One row of n columns: every block (header, graph, answer, triage) gets its own row,
    so the same block starts at the same height in every column."""
    return st.columns(n, gap="medium")


def queued_note(b: live.LiveBatch, i: int) -> str | None:
    """A plain account of a column that has not started: its place in the model's line."""
    js = b.jobs[i]
    if js.status != "pending" or not b.running:
        return None
    before = [k for k in range(i) if b.jobs[k].status in ("pending", "starting", "waiting",
                                                         "running")]
    t = b.ticket(b.current)
    others = len(t.ahead()) if t is not None else 0
    pos = len(before) + others + 1
    cols = ", ".join(str(k + 1) for k in before)
    return (f"Waiting for the model: position {pos} in line"
            + (f", after column{'s' if len(before) > 1 else ''} {cols}" if before else "")
            + (f" and {others} run{'s' if others != 1 else ''} of other sessions" if others else "")
            + ". This model answers one call at a time, so the methods run one after another.")
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
    runs = [store.get_run(rid) or {} for rid, _ in traces]
    verdicts = [{"correct": r["correct"]} if r.get("correct") is not None else None
                for r in runs]
    tris = [TV.for_run(store, tr, rid) for rid, tr in traces]
    for col, (rid, tr) in zip(row(len(traces)), traces):
        col.markdown(f"**{W.md_escape(tr.method)}** · `{rid}`")
    for i, (col, (rid, tr)) in enumerate(zip(row(len(traces)), traces)):
        with col:
            W.draw_graph(tr, key=f"{K}__s_{rid}", height=GRAPH_H, triage=tris[i],
                         min_scale=MIN_SCALE)
    for i, (col, (_rid, tr)) in enumerate(zip(row(len(traces)), traces)):
        with col:
            W.answer_box(tr, verdicts[i])
    for col, tri in zip(row(len(traces)), tris):
        with col:
            TV.banner(tri)
    table = [W.summary_row(tr, f"{tr.method} {rid[-5:]}", verdicts[i],
                           (runs[i].get("wall_ms") or 0) / 1000.0)
             for i, (rid, tr) in enumerate(traces)]
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
                                         store=W.store_or_stop(), settings=settings,
                                         together=live.serves_calls_together(llm)).start()
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
                "**Run all**: they run at the same time when the model serves several calls "
                "at once (a server), otherwise one after another.")
        return
    st.markdown(f"**Question:** {W.md_escape(b.question)}")
    if b.running and b.ticket(b.current) is not None:
        if st.button("Cancel", key=f"{K}__cancel", disabled=b.stopping,
                     help="Leave the line for the model; the runs not yet started are not "
                          "run or stored."):
            b.stop()
    elif b.running and st.button("Stop", key=f"{K}__stop", disabled=b.stopping):
        b.stop()
    n_jobs = len(b.jobs)
    trs = [b.view(i) for i in range(n_jobs)]
    tris = []
    for i, js in enumerate(b.jobs):
        tris.append(TV.for_run(W.store_or_stop(), trs[i], js.run_id,
                               (js.verdict or {}).get("correct"))
                    if js.run_id and js.status not in ("running", "pending", "starting",
                                                        "waiting") else None)
    for i, col in enumerate(row(n_jobs)):
        js = b.jobs[i]
        with col:
            st.markdown(f"**{i + 1}. {W.md_escape(js.job.label)}**")
            note = queued_note(b, i)
            if note:
                st.info(note, icon=":material/hourglass_top:")
            else:
                W.status_line(W.run_summary(trs[i]), status=js.status, elapsed_s=b.elapsed(i),
                              error_msg=js.error)
            MS.waiting(b.ticket(i))
            MS.crash_notice(js.error if not b.running else None, key=f"{K}__{i}")
    for i, col in enumerate(row(n_jobs)):
        with col:
            W.draw_graph(trs[i], key=f"{K}__g{i}", height=GRAPH_H, triage=tris[i],
                         min_scale=MIN_SCALE,
                         empty="Waiting for the model." if b.jobs[i].status in
                         ("pending", "waiting") else "The graph appears here as the method runs.")
            MS.generating(b.jobs[i].partial)
    for i, col in enumerate(row(n_jobs)):
        with col:
            W.answer_box(trs[i], b.jobs[i].verdict)
    for i, col in enumerate(row(n_jobs)):
        with col:
            TV.banner(tris[i])
    table = [W.summary_row(trs[i], f"{i + 1}. {js.job.label}", js.verdict,
                           b.elapsed(i) if js.started else 0.0) for i, js in enumerate(b.jobs)]
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={"correct": st.column_config.CheckboxColumn()})
    if any(r["llm_calls"] for r in table):
        st.plotly_chart(compare_bars(table), key=f"{K}__bars", config={"displayModeBar": False})
    if not b.running and len(trs) >= 2 and st.toggle(
            "Where do these runs part ways? (columns 1 and 2)", key=f"{K}__livediffon"):
        from workbench.ui.diff_view import render_diff
        render_diff(trs[0], trs[1], key=f"{K}__livediff")
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
