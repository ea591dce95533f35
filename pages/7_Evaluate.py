"""Evaluate: launch batch evals, watch progress, read the results as charts.

Thin page: the eval runs in workbench.eval (jobs/runner); its progress and the Results
tab, which follow a running eval and redraw when it ends, are workbench.ui.eval_live and
workbench.ui.eval_results (aggregates from workbench.eval.queries, figures from
workbench.viz.eval_charts).
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from workbench import settings as settings_mod
from workbench.eval import jobs, presets
from workbench.eval import queries as Q
from workbench.eval.metrics import PRIMARY_METRICS
from workbench.store import Store
from workbench.ui import access

try:
    from workbench.ui import widgets as _W
    _session_settings = _W.setup_page()    # navigation, styling, plug-ins; this session's settings
except ImportError:          # pragma: no cover - the UI helpers are part of the project
    _W = None
    _session_settings = None
st.title("Evaluate")
st.caption("Run methods over a dataset's questions, then compare accuracy, cost and "
           "calibration. Every number links back to the runs behind it.")


@st.cache_resource(show_spinner=False)
def _store(path: str) -> Store:
    return Store(path)


def _methods() -> dict[str, type]:
    try:
        from workbench.ui.data import method_classes
        return method_classes()
    except Exception:  # noqa: BLE001 - the UI helpers may be missing in a minimal install
        from workbench.methods import all_methods
        return all_methods()


def _datasets(active: str) -> list[str]:
    try:
        from workbench.ui.data import dataset_names
        return dataset_names(active)
    except Exception:  # noqa: BLE001
        from workbench.datasets import list_datasets
        return [d["name"] for d in list_datasets()] or [active]


store = _W.store() if _W is not None else _store(str(settings_mod.store_path()))
settings = _session_settings or settings_mod.load()
methods_all = _methods()

tab_run, tab_results = st.tabs(["Run an eval", "Results"])

# ----------------------------------------------------------------------------- launch
with tab_run:
    names = _datasets(settings.dataset)
    c1, c2 = st.columns([1, 2])
    dataset = c1.selectbox("Dataset", names, index=names.index(settings.dataset)
                           if settings.dataset in names else 0)
    default_methods = [m for m, cls in methods_all.items() if getattr(cls, "eval_default", False)]
    chosen = c2.multiselect("Methods", list(methods_all), default=default_methods)
    c0, c1, c2, c3, c4 = st.columns(5)
    split = c0.selectbox("Split", ["test", "dev", "train", "all"],
                         help="Evaluate one split. Anything a method fitted (FRAG's router, "
                              "PAR-RAG's exemplars, CRP-RAG's tau) comes from train, so test "
                              "is the honest one.")
    limit = c1.number_input("Questions (limit)", min_value=1, value=10, step=1)
    seed = c2.number_input("Seed", min_value=0, value=int(settings.seed), step=1)
    judge = c3.selectbox("LLM judge", ["same", "off"], help="'same' = the loaded model judges "
                         "Acc-LM and CRAG answers (labelled on every chart); 'off' = string rules only.")
    primary = c4.selectbox("Primary metric", ["auto", *PRIMARY_METRICS],
                           help="Sets runs.correct. auto: CRAG label on CRAG data, FEVER label on "
                                "FEVER, else 'contains gold' (CRP-RAG's EM).")
    preset_name = st.selectbox("CRAG study preset", ["(none)", *presets.PRESETS],
                               format_func=lambda n: n if n == "(none)" else
                               f"{n}: {presets.PRESETS[n].title}")
    if preset_name != "(none)":
        d = presets.describe(preset_name, methods_all, chosen or None)
        st.info(f"Sweeps **{d['knob']}** over {list(d['values'])} with base {d['base']} "
                f"({d['paper']}). {d['note']}")
        st.table([{"method": m, **sup} for m, sup in d["support"].items()])
    with st.expander("Knobs and sweeps"):
        sets_text = st.text_area("Knobs for every config (key=value per line; METHOD.key for one "
                                 "method; eval knobs: top_k, retriever, chunk_size, noise_k, "
                                 "noise_position, idk_prompt ...)", "", key="eval_sets")
        grid_text = st.text_area("Sweep (key=v1,v2,... per line; the grid is the cartesian product)",
                                 "", key="eval_grid")
        workers = st.number_input("Workers", min_value=1, max_value=16, value=1,
                                  help="Parallel workers. With llama.cpp each loads its own "
                                       "model in its own process and gets a share of the cores.")
        together = st.number_input("Items at once per model", min_value=1, max_value=8, value=1,
                                   help="Each worker runs this many items at once; their LLM "
                                        "calls are decoded together as one llama.cpp batch "
                                        "(answers can differ in near-ties; see README).")
        earlier = [r for r in Q.list_evals(store) if r["dataset"] == dataset]
        reuse = st.multiselect(
            "Reuse LLM calls of earlier evals", [r["eval_id"] for r in earlier],
            format_func=lambda e: next(f"{e} · {r['methods']} · {r['model_name']}"
                                       for r in earlier if r["eval_id"] == e),
            help="A call whose prompt and parameters match a stored call of these evals is "
                 "answered from the store, tokens and log-probabilities included: a change "
                 "to a late stage of a method re-runs only the calls it changes. Wall times "
                 "then do not measure the model (the results say so).")
        allow_leakage = st.checkbox("Allow leakage", help="Score methods on questions their "
                                    "fitted state saw (in-sample numbers); such rows are "
                                    "marked. Off: the eval is refused.")
    running = jobs.active()
    # An eval is the machine's for its whole length (workers, model loads): the host's.
    may_run = access.host_only("Starting or resuming evals")
    if st.button("Launch eval", type="primary", disabled=bool(running) or not chosen
                 or not may_run) and may_run:
        try:
            spec = jobs.build_spec(dataset=dataset, methods=chosen, limit=int(limit),
                                   seed=int(seed), sets_text=sets_text, grid_text=grid_text,
                                   preset=None if preset_name == "(none)" else preset_name,
                                   judge=judge, primary=None if primary == "auto" else primary,
                                   method_classes=methods_all,
                                   split=None if split == "all" else split,
                                   allow_leakage=allow_leakage, reuse_calls=reuse)
            from workbench.ui.backend import get_llm
            kw = {"workers": int(workers), "items_together": int(together)}
            if int(workers) <= 1:
                with st.spinner("Loading the model before the first item…"):
                    kw["backend"] = get_llm()
            job = jobs.start(spec, store=store, **kw)
            st.session_state["eval_job"] = job.id
        except Exception as e:  # noqa: BLE001 - a readable line, never a traceback
            st.error(f"Cannot start the eval: {e}")
    unfinished = [r for r in Q.list_evals(store) if r["status"] != "finished"]
    if unfinished:
        c1, c2 = st.columns([3, 1])
        pick = c1.selectbox("Resume an unfinished eval", [r["eval_id"] for r in unfinished],
                            format_func=lambda e: next(f"{e} · {r['dataset']} · {r['n_done']}/"
                                                       f"{r['n_planned']} · {r['status']}"
                                                       for r in unfinished if r["eval_id"] == e))
        if c2.button("Resume", disabled=bool(running) or not may_run) and may_run:
            from workbench.ui.backend import get_llm
            with st.spinner("Loading the model before the first item…"):
                backend = get_llm()
            job = jobs.start(None, store=store, resume=pick, backend=backend)
            st.session_state["eval_job"] = job.id

    from workbench.ui.eval_live import progress_panel
    progress_panel(store)

# ----------------------------------------------------------------------------- results
with tab_results:
    from workbench.ui.eval_results import results_panel
    results_panel(store, Path(__file__).parent)
    from workbench.ui.calibration_view import calibration_panel
    calibration_panel(store, st.session_state.get("ev_eval"), key="ev_nodecal")
