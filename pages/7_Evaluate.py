"""Evaluate: launch batch evals, watch progress, read the results as charts.

Thin page: the eval runs in workbench.eval (jobs/runner), aggregates come from SQL
(workbench.eval.queries) and figures from workbench.viz.eval_charts.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import streamlit as st

from workbench import settings as settings_mod
from workbench.eval import jobs, presets
from workbench.eval import queries as Q
from workbench.eval.metrics import PRIMARY_METRICS
from workbench.store import Store
from workbench.ui import access
from workbench.viz import eval_charts as C
from workbench.viz.safe import md_escape

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


def _fmt_s(s: float | None) -> str:
    if s is None:
        return "?"
    return str(dt.timedelta(seconds=int(s)))


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
    default_methods = [m for m in ("vanilla", "standard-rag") if m in methods_all]
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
            job = jobs.start(None, store=store, resume=pick, backend=get_llm())
            st.session_state["eval_job"] = job.id

    @st.fragment(run_every=1.0)
    def _progress() -> None:
        job = jobs.get(st.session_state.get("eval_job"))
        if job is None:
            return
        s = job.snapshot()
        total = s["total"] or 0
        text = (f"{s['eval_id'] or '…'}: {s['done']}/{total or '?'} items · "
                f"{s['rate']:.2f} items/s · ETA {_fmt_s(s['eta_s'])} · {s['status']}")
        st.progress(min(1.0, s["fraction"]), text=text)
        if s["failed"]:
            st.warning(f"{s['failed']} item(s) failed (stored as failed runs).")
        if s["error"]:
            st.error(s["error"])
        if job.alive:
            if st.button("Stop", key=f"stop_{job.id}"):
                job.stop()
        elif s["eval_id"]:
            st.session_state["eval_results_id"] = s["eval_id"]
            st.success(f"Eval {s['eval_id']} {s['status']}; see the Results tab.")

    _progress()

# ----------------------------------------------------------------------------- results
with tab_results:
    evals = Q.list_evals(store)
    if not evals:
        st.info("No evals stored yet. Launch one in the first tab or run "
                "`python -m workbench eval --dataset NAME --methods a,b`.")
        st.stop()
    ids = [r["eval_id"] for r in evals]
    want = st.session_state.get("eval_results_id")
    eval_id = st.selectbox(
        "Eval", ids, index=ids.index(want) if want in ids else 0,
        format_func=lambda e: next(f"{e} · {r['dataset']} · {r['methods']} · {r['n_done']}/"
                                   f"{r['n_planned']} · {r['status']}"
                                   + (f" · {r['preset']}" if r["preset"] else "")
                                   for r in evals if r["eval_id"] == e))
    row = next(r for r in evals if r["eval_id"] == eval_id)
    st.caption(f"judge: {row['judge']} · model: {row['model_name']} · primary metric: "
               f"{row['primary_metric']}")
    from workbench.eval.leakage import marked as _leaked
    from workbench.eval.runner import get_eval as _get_eval
    ev_spec = _get_eval(store, eval_id).get("spec")
    leaked = _leaked(ev_spec)
    from workbench.llm.replay import reuse_note as _reuse_note
    reused = _reuse_note(store, eval_id, ev_spec)
    if reused:
        st.info(reused)
    if leaked:
        st.warning("In-sample rows (run with --allow-leakage): these configurations were "
                   "scored on questions their fitted state saw.")
        st.dataframe([{"method": m, "variant": v, "artefact": lk["artefact"],
                       "fitted on": lk["fitted_on"], "questions seen": f"{lk['n']} of "
                       f"{lk['n_evaluated']}"} for (m, v), lks in leaked.items() for lk in lks],
                     hide_index=True, width="stretch")
    spec_knobs = sorted({r["k"] for r in store.query(
        "SELECT DISTINCT unnest(json_keys(knobs)) AS k FROM eval_items WHERE eval_id = ?",
        [eval_id]) if r["k"]})
    c1, c2, c3 = st.columns(3)
    metric = c1.selectbox("Metric", list(Q.METRICS), format_func=lambda m: Q.METRICS[m][1])
    crag_group = c2.selectbox("CRAG breakdown by", ["domain", "question_type", "static_or_dynamic",
                                                    "hops", "qtype"])
    knob = None
    if spec_knobs:
        default_knob = presets.PRESETS[row["preset"]].knob \
            if row.get("preset") in presets.PRESETS else spec_knobs[0]
        knob = c3.selectbox("Knob", spec_knobs, index=spec_knobs.index(default_knob)
                            if default_knob in spec_knobs else 0)
    mlabel = Q.METRICS[metric][1]
    calib_metric = metric if metric in ("em", "contains", "acc_lm", "hits1", "rouge_f1",
                                        "fever") else "correct"
    with Q.session(store) as db:       # one connection for all of the page's aggregates
        data = {
            "summary": Q.summary(db, eval_id, metric),
            "hops": Q.by_group(db, eval_id, metric, "hops"),
            "qtype": Q.by_group(db, eval_id, metric, "qtype"),
            "eff": Q.efficiency(db, eval_id),
            "warm": Q.warm_up_notes(db, eval_id),
            "calib": Q.calibration(db, eval_id, metric=calib_metric),
            "crag": Q.crag(db, eval_id),
            "crag_by": Q.crag(db, eval_id, crag_group),
            "knob": Q.knob_response(db, eval_id, knob, metric) if knob else [],
            "modes": Q.error_modes(db, eval_id),
            "paired": Q.paired(db, eval_id, metric),
        }
    selections: list[tuple] = []

    def _chart(fig, key: str, group: str | None = None) -> None:
        ev = st.plotly_chart(fig, on_select="rerun", key=key, width="stretch")
        for k in C.selected_keys(ev):
            selections.append((*k, group))

    st.subheader(f"{mlabel} per method (95% CI)")
    from workbench.eval.metrics import profile_caption as _profile_caption
    st.caption(_profile_caption(ev_spec))
    _chart(C.metric_bars(data["summary"], mlabel), "ev_summary")

    if data["paired"]:
        st.subheader("Paired differences (same questions)")
        st.caption("a − b on the questions both answered; 95% paired-bootstrap CI"
                   + ("; McNemar's exact p on right/wrong." if Q.METRICS[metric][2] else "."))
        mixed = [md_escape(f"{r['a']} ({r['retrieval_a']}) − {r['b']} ({r['retrieval_b']})")
                 for r in data["paired"] if r["retriever_confound"]]
        if mixed:
            st.warning("These pairs searched the passages with different retrievers, so their "
                       "difference "
                       "measures the retrievers as well as the methods: "
                       + "; ".join(mixed) + ". To compare the methods alone, give them the "
                       "same retriever knob (Knobs and sweeps).")
        order = ["a", "b", "n_paired", "diff", "lo", "hi", "mcnemar_p", "significant", "mean_a",
                 "mean_b", "a_only", "b_only", "retrieval_a", "retrieval_b"]
        st.dataframe(data["paired"], hide_index=True, width="stretch",
                     column_order=[c for c in order if c in data["paired"][0]], column_config={
            c: st.column_config.NumberColumn(format="%.3f")
            for c in ("mean_a", "mean_b", "diff", "lo", "hi", "mcnemar_p")})

    c1, c2 = st.columns(2)
    with c1:
        st.subheader("By hop count")
        _chart(C.group_bars(data["hops"], mlabel, "hops"), "ev_hops", "hops")
    with c2:
        st.subheader("By question type")
        _chart(C.group_bars(data["qtype"], mlabel, "type"), "ev_qtype", "qtype")

    st.subheader("Cost per question")
    for line in Q.timing_notes(data["eff"]):
        st.warning(md_escape(line))
    for line in data["warm"]:
        st.caption(md_escape(line))
    _chart(C.efficiency_bars(data["eff"]), "ev_eff")

    st.subheader("Calibration")
    bins, ece = data["calib"]
    if bins:
        _chart(C.reliability_diagram(bins, ece), "ev_calib")
    else:
        st.caption("No answer confidences stored (the backend returned no logprobs).")

    st.subheader("CRAG outcomes (accurate / missing / hallucinated)")
    _chart(C.crag_outcomes(data["crag"]), "ev_crag")
    _chart(C.crag_breakdown(data["crag_by"], crag_group), "ev_crag_by", crag_group)

    if knob:
        st.subheader("Score against a knob")
        _chart(C.knob_response(data["knob"], knob), "ev_knob", f"knob:{knob}")

    from workbench.ui.triage_view import evaluate_section
    evaluate_section(store, eval_id)

    st.subheader("Error modes (annotations)")
    if data["modes"]:
        try:
            from workbench.annotations import TAXONOMY
            labels = {t.id: t.label for t in TAXONOMY}
        except Exception:  # noqa: BLE001
            labels = {}
        _chart(C.error_mode_bars(data["modes"], labels), "ev_modes")
    else:
        st.caption("No annotations on these runs yet; tag failures on the Runs page.")

    # -- the runs behind a clicked bar
    st.subheader("Runs behind the selection")
    if not selections:
        st.caption("Click a bar or point above to list its runs.")
    else:
        method, variant, grp, group = selections[-1]
        g = group if group and grp is not None and group != "ev_modes" else None
        rows = Q.runs_behind(store, eval_id, method=method, variant=variant,
                             group=g, value=grp if g else None)
        st.write(f"{len(rows)} run(s): method **{method}**"
                 + (f", variant {variant}" if variant else "") + (f", {g} = {grp}" if g else ""))
        st.dataframe(rows, hide_index=True, width="stretch")
        if rows:
            rid = st.selectbox("Run", [r["run_id"] for r in rows],
                               format_func=lambda x: next(f"{x} · {r['question'] or ''}"[:100]
                                                          for r in rows if r["run_id"] == x))
            runs_pages = sorted(p for p in Path(__file__).parent.glob("*.py")
                                if "runs" in p.stem.lower())
            if st.button("Open in the Runs page", disabled=not runs_pages):
                st.session_state["open_run_id"] = rid
                st.switch_page(str(runs_pages[0].relative_to(Path(__file__).parent.parent)))
            if not runs_pages:
                st.caption("The Runs page is not installed; `python -m workbench runs show "
                           f"{rid}` prints this run.")
