"""Ask: pick a question and a method, run it, watch the graph grow, inspect nodes."""
from __future__ import annotations

import streamlit as st

from workbench.llm.base import LLMError
from workbench.trace import Trace
from workbench.ui import backend, live
from workbench.ui import data as D
from workbench.ui import model_status as MS
from workbench.ui import triage_view as TV
from workbench.ui import whatif_view as WV
from workbench.ui import widgets as W
from workbench.ui.method_docs import preset_picker
from workbench.ui.waterfall_view import waterfall
from workbench.viz.inspect import run_summary

K = "ask"
ss = st.session_state
settings = W.setup_page(warm_up=True)
st.title("Ask")

methods = W.methods_or_stop()

# A start requested by Home, a what-if re-run or Runs: fill the widgets, maybe run at once.
prefill = ss.pop("ask_prefill", None)
if prefill:
    if prefill.get("question_id"):
        ss[f"{K}__q"] = prefill["question_id"]
    elif prefill.get("question"):
        ss[f"{K}__q"] = W.OWN
        ss[f"{K}__own"] = prefill["question"]
    if prefill.get("method") in methods:
        ss[f"{K}__m"] = prefill["method"]
    for knob, val in (prefill.get("overrides") or {}).items():
        ss[f"{K}__knobs__{prefill.get('method')}__{knob}"] = val

batch: live.LiveBatch | None = ss.get("ask_batch")
running = batch is not None and batch.running

top = st.columns([6, 3, 1.2, 1], vertical_alignment="bottom")
with top[0]:
    question, qid, qobj = W.question_picker(settings.dataset, key=K)
with top[1]:
    mname = W.method_picker(methods, key=K)
mcls = methods[mname]
with top[2]:
    with st.popover("Knobs", width="stretch", help="The method's typed configuration"):
        W.method_help(mcls)
        preset, base = preset_picker(mcls.Config, f"{K}__knobs__{mname}")
        overrides = W.knob_inputs(mcls.Config, f"{K}__knobs__{mname}", base=base)
        if preset:
            overrides = {"preset": preset, **overrides}
with top[3]:
    run_clicked = st.button("Run", type="primary", disabled=running, width="stretch", key="ask_run",
                            help="Run the method on the question; the graph grows below.")
# Messages go into one fixed container so the live panel below keeps its place in the
# page: the graph's iframe then stays mounted from before Run to the end of the run.
notes = st.container()
with notes:
    W.warm_status(settings)
    if overrides:
        st.caption("Knobs changed: "
                   + W.md_escape(", ".join(f"{k}={v}" for k, v in overrides.items())))


def start_run() -> None:
    if not question.strip():
        with notes:
            W.error("Type a question or pick one from the dataset first.")
        return
    try:
        with notes, st.spinner("Loading the model (once per process)…"):
            llm = backend.get_llm(settings)
    except LLMError as e:
        with notes:
            W.error(f"The model could not be loaded: {e}", "Check the model in Settings.")
        return
    ss["ask_batch"] = live.LiveBatch([live.Job(mname, overrides, mname)], question,
                                     question_id=qid, dataset=settings.dataset, llm=llm,
                                     store=W.store_or_stop(), settings=settings).start()
    for k in (f"{K}__node", f"{K}__sel"):
        ss.pop(k, None)
    ss["ask_was_running"] = True
    ss["ask_batch"].wait_first_node(0.6)      # the first draw then already shows a node


if run_clicked or (prefill and prefill.get("autorun")):
    start_run()
    batch = ss.get("ask_batch")
    running = batch is not None and batch.running


# A run waiting for the shared model changes only its place in line: its page redraws
# slowly, leaving the CPU to the model, and at the live rate once its turn comes.
waiting = running and batch.ticket(0) is not None


@st.fragment(run_every=(1.0 if waiting else 0.4) if running else None)
def live_panel() -> None:
    b: live.LiveBatch | None = ss.get("ask_batch")
    js = b.jobs[0] if b is not None else None
    tr = b.view(0) if b is not None else Trace()
    tri = TV.for_run(W.store_or_stop(), tr, js.run_id, (js.verdict or {}).get("correct")) \
        if js is not None and not b.running else None
    head = st.columns([6, 1], vertical_alignment="center")
    with head[0]:
        if js is None:
            st.markdown("Pick a question and a method, then press **Run**. The reasoning graph "
                        "grows below node by node; click a node to inspect it.")
        else:
            W.status_line(run_summary(tr), status=js.status, elapsed_s=b.elapsed(0),
                          error_msg=js.error)
            MS.waiting(b.ticket(0))
            MS.generating(js.partial)
            MS.crash_notice(js.error if not b.running else None, key=K)
            TV.banner(tri)
    with head[1]:
        if b is not None and b.running and b.ticket(0) is not None:
            if st.button("Cancel", key="ask_cancel", width="stretch", disabled=b.stopping,
                         help="Leave the line for the model; the run is not started or "
                              "stored."):
                b.stop()
                st.rerun(scope="fragment")
        elif b is not None and b.running:
            if st.button("Stop", key="ask_stop", width="stretch", disabled=b.stopping,
                         help="Stop after the current step; the run is stored as interrupted."):
                b.stop()
                st.rerun(scope="fragment")
    if js is not None:                # the final answer first, not in a tab
        W.answer_box(tr, js.verdict)
    left, right = st.columns([3, 2])
    with right:
        t_ins, t_wi, t_ans = st.tabs(["Inspector", "What-if", "Run"])
    with t_wi:
        w, rerun = W.whatif_panel(tr, key=K, method_cls=D.method_classes().get(
            js.job.method if js else mname))
        if rerun and b is not None:
            ss["ask_prefill"] = {"question": b.question, "question_id": b.question_id,
                                 "method": js.job.method,
                                 "overrides": {**js.job.overrides, **rerun}, "autorun": True}
            st.rerun(scope="app")
    with left:
        W.draw_graph(tr, key=K, whatif=w, height=520, triage=tri)
        if b is not None:
            with st.expander("LLM calls on a time line", expanded=True):
                waterfall(tr, key=K, running=b.in_flight(0) if b.running else None,
                          busy=b.busy(0) if b.running else None)
        with st.expander("All nodes"):
            W.nodes_table(tr)
    if b is None:
        with t_ins:
            st.caption("Click a node in the graph, or pick it from the list, to inspect it.")
        return
    with t_ins:
        nid = W.node_picker(tr, key=K)
        W.inspector(tr, nid, key=K, triage=tri)
        if not b.running:
            WV.ask_entry(js.run_id, js.status, nid, key=K)
    with t_ans:
        if js.run_id:
            st.caption(f"Run `{js.run_id}` · stored in the run history (Runs page).")
        if js.first_node_s is not None:
            st.caption(f"First node after {js.first_node_s:.2f} s.")
    if not b.running and ss.get("ask_was_running"):
        ss["ask_was_running"] = False
        st.rerun(scope="app")        # re-enable Run, stop polling
    if waiting and b.running and b.ticket(0) is None:
        st.rerun(scope="app")        # its turn came: redraw at the live rate


live_panel()
