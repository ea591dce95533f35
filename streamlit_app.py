"""Entry point: `streamlit run streamlit_app.py` — navigation and the home page."""
from __future__ import annotations

import faulthandler
import re
import signal
from pathlib import Path

import streamlit as st

# A run that seems stuck: `kill -USR1 <server pid>` writes every thread's stack to the
# server's stderr, which says where each run waits (docs/setup.md). Registering again on
# each script run changes nothing.
if hasattr(signal, "SIGUSR1"):
    faulthandler.register(signal.SIGUSR1, all_threads=True)

st.set_page_config(page_title="RAG Reasoning Workbench", layout="wide",
                   initial_sidebar_state="expanded")


def home() -> None:
    from workbench.ui import backend
    from workbench.ui import data as D
    from workbench.ui import model_status as MS
    from workbench.ui import queries as Q
    from workbench.ui import widgets as W

    settings = W.setup_page(warm_up=True)
    st.title("RAG Reasoning Workbench")
    st.markdown(
        "A research workbench for graph- and plan-based retrieval-augmented generation. Pose a "
        "question, watch a method's **reasoning graph** or **mind map** grow node by node, open "
        "any node to see the knowledge retrieved for it with its **perplexity and confidence**, "
        "move thresholds to see what-if outcomes without re-running, **compare** methods side "
        "by side and **annotate** failure cases. Everything runs on a local GGUF model.")

    st.subheader("Model and data")
    MS.model_panel(backend.model_card(settings),
                   hint="Open Settings to choose a bundled model or a .gguf file.")

    ds, n_q, n_p = None, 0, 0
    try:
        ds = D.get_dataset(settings.dataset)
        n_q, n_p = len(D.questions(ds)), len(D.passages(ds))
    except D.DatasetError as e:
        st.warning(str(e))
    except Exception as e:      # noqa: BLE001 - readable, never a traceback
        st.warning(f"Dataset {settings.dataset!r} could not be read: {W.friendly(e)}")
    d = st.columns(4)
    d[0].metric("Active dataset", settings.dataset)
    d[1].metric("Questions", n_q)
    d[2].metric("Passages", n_p)
    methods = D.method_classes()
    d[3].metric("Methods", len(methods))

    st.subheader("Try a demo question")
    if not methods:
        st.info("No method is registered yet; they appear as they land in workbench/methods/.")
    elif ds is None or not n_q:
        st.info("The active dataset has no questions; type your own on the Ask page.")
    else:
        default = W.default_method(list(methods))
        mname = st.selectbox("Method for the one-click starts", list(methods),
                             index=list(methods).index(default), key="home_method")
        for q in D.demo_questions(ds, 8):
            cols = st.columns([8, 1], vertical_alignment="center")
            cols[0].markdown(W.md_escape(q.question))
            if cols[1].button("Ask", key=f"home_q_{q.id}", width="stretch"):
                st.session_state["ask_prefill"] = {"question": q.question, "question_id": q.id,
                                                   "method": mname, "autorun": True}
                st.switch_page("pages/ask.py")

    with st.expander("Methods in this workbench", expanded=False):
        st.dataframe([{"method": n, "title": getattr(m, "title", ""), "kind": m.kind,
                       "view": m.view,
                       "what-if thresholds": ", ".join(getattr(m, "thresholds", {}) or {})}
                      for n, m in methods.items()], hide_index=True, width="stretch")
        for msg in D.method_load_errors():
            st.caption(f":material/warning: {msg}")
    try:
        recent = Q.runs(W.store(), limit=5)
    except Exception as e:      # noqa: BLE001
        recent = []
        st.caption(f"Run history unavailable: {W.friendly(e)}")
    if recent:
        st.subheader("Recent runs")
        st.session_state["home_recent_ids"] = [r["run_id"] for r in recent]
        event = st.dataframe([{"method": r["method"], "status": r["status"],
                               "question": r["question"], "answer": r["answer"],
                               "correct": r["correct"], "LLM calls": r["llm_calls"]}
                              for r in recent], hide_index=True, width="stretch",
                             on_select="rerun", selection_mode="single-row", key="home_recent")
        st.caption("Select a run to open it on the Runs page.")
        rows = event.selection.rows if event and event.selection else []
        if rows:
            st.switch_page("pages/runs.py", query_params={"run": recent[rows[0]]["run_id"]})


ROOT = Path(__file__).resolve().parent
CORE = {"ask.py": ("Ask", ":material/psychology_alt:"),
        "compare.py": ("Compare", ":material/compare:"),
        "runs.py": ("Runs", ":material/history:"),
        "annotate.py": ("Annotate", ":material/label:"),
        "knowledge.py": ("Knowledge", ":material/library_books:"),
        "settings.py": ("Settings", ":material/settings:")}
# Pages other engineers add to pages/ (e.g. 7_Evaluate.py) join the navigation by name.
extra = [st.Page(f"pages/{p.name}", title=re.sub(r"^\d+[_ ]*", "", p.stem).replace("_", " ").title(),
                 icon=":material/insights:" if "eval" in p.stem.lower() else ":material/article:")
         for p in sorted((ROOT / "pages").glob("*.py"))
         if p.name not in CORE and not p.name.startswith("_")]
core = [st.Page(f"pages/{f}", title=t, icon=i) for f, (t, i) in CORE.items()]
pages = ([st.Page(home, title="Home", icon=":material/home:", default=True, url_path="home")]
         + core[:2] + extra + core[2:])
page = st.navigation(pages)
try:
    page.run()
except Exception as e:      # noqa: BLE001 - st.stop/st.rerun are BaseExceptions and pass through
    # Anything a page did not handle (a locked store, a vanished model file, a broken
    # importer) is shown as one readable message, never as a traceback.
    from workbench.ui import widgets as W
    W.error(f"This page stopped: {W.friendly(e)}",
            "If it persists, check Settings (model, dataset) and that no other process holds "
            "the store.")
