"""The Evaluate page's Results tab: a stored eval's charts and tables, redrawn as items
land while it runs and once more when it ends (see :mod:`.eval_live`).

Each section draws only what the eval's items hold; an empty one says why (no item
finished yet, no log-probabilities from this backend, no CRAG questions, ...), read from
the store (:func:`workbench.ui.queries.eval_facts`), never assumed.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import streamlit as st

from ..eval import presets
from ..eval import queries as Q
from ..store import Store
from ..viz import eval_charts as C
from ..viz.safe import md_escape
from . import queries as UQ
from .eval_live import fmt_s, items_table, live_eval_ids, metric_note, results_every

SELECT_KEY = "ev_eval"


def results_panel(store: Store, pages_dir: Path) -> None:
    """The Results tab. While an eval runs it redraws every few seconds
    (:func:`.eval_live.results_every`); when the last one ends, one full rerun draws the
    page as a finished eval's."""
    every = results_every(store)

    @st.fragment(run_every=every)
    def _results() -> None:
        if every is not None and results_every(store) is None:
            st.rerun()
        _render(store, pages_dir, every)

    _results()


def _pick_eval(evals: list[dict[str, Any]]) -> str:
    ids = [r["eval_id"] for r in evals]
    want = st.session_state.get("eval_results_id")
    # the eval this session launched is shown once, then the person's own pick stands
    if want in ids and st.session_state.get("_ev_shown") != want:
        st.session_state[SELECT_KEY] = want
        st.session_state["_ev_shown"] = want
    if st.session_state.get(SELECT_KEY) not in ids:
        st.session_state.pop(SELECT_KEY, None)
    # Labels hold nothing that changes while an eval runs: a kept selection shows the text
    # of the run that chose it, so a count or status here went stale ("0/3 · running" on a
    # finished eval). Progress and status are in the line below the box.
    return st.selectbox(
        "Eval", ids, key=SELECT_KEY,
        format_func=lambda e: next(f"{e} · {r['dataset']} · {r['methods']} · "
                                   f"{r['n_planned']} items · started "
                                   f"{dt.datetime.fromtimestamp(r['created_at']):%Y-%m-%d %H:%M}"
                                   + (f" · {r['preset']}" if r["preset"] else "")
                                   for r in evals if r["eval_id"] == e))


def _status(ev: dict[str, Any], facts: dict[str, Any], live: bool,
            every: float | None) -> None:
    n, planned = facts["n_items"], ev.get("n_planned") or 0
    failed = f" ({facts['n_failed']} failed)" if facts["n_failed"] else ""
    if live:
        again = f" (redrawn every {every:g} s)" if every else " (rerun the page to redraw)"
        st.info(f"Running: {n} of {planned} items stored{failed}. The results below grow as "
                f"items land{again}.", icon=":material/sync:")
    elif ev["status"] == "finished":
        took = (ev["finished_at"] - ev["created_at"]) if ev.get("finished_at") else None
        st.success(f"Finished: {n} of {planned} items{failed}"
                   + (f" in {fmt_s(took)}." if took is not None else "."),
                   icon=":material/check_circle:")
    elif ev["status"] == "failed":
        st.error(f"Failed after {n} of {planned} items: {ev.get('error') or 'no error stored'}. "
                 f"Resume it in the first tab.")
    elif ev["status"] == "running":
        st.warning(f"Marked running, but no process is running it (it stopped after {n} of "
                   f"{planned} items): resume it in the first tab.")
    else:
        st.warning(f"{str(ev['status']).capitalize()} after {n} of {planned} items{failed}: "
                   f"resume it in the first tab.")


def calibration_reason(facts: dict[str, Any], metric_label: str, model: str | None) -> str:
    """Why the reliability diagram has no point."""
    if not facts["n_items"]:
        return "No calibration yet: no item finished yet."
    if facts["n_confidence"]:
        return (f"No calibration for {metric_label}: no item has both an answer confidence "
                f"and a value of this metric (choose another metric).")
    if not facts["n_calls"]:
        return "No answer confidences: these runs made no LLM call."
    if not facts["n_calls_scored"]:
        return (f"No answer confidences: this backend{f' ({model})' if model else ''} returns "
                f"no log-probabilities ({facts['n_calls']} LLM calls, none with them).")
    return (f"No answer confidences: the calls that produced the answers returned no "
            f"log-probabilities ({facts['n_calls_scored']} of {facts['n_calls']} calls had "
            f"them).")


def _render(store: Store, pages_dir: Path, every: float | None) -> None:
    live_ids = live_eval_ids(store)     # first: the reads below are then never older
    evals = Q.list_evals(store)
    if not evals:
        st.info("No evals stored yet. Launch one in the first tab or run "
                "`python -m workbench eval --dataset NAME --methods a,b`.")
        return
    eval_id = _pick_eval(evals)
    from ..eval.runner import get_eval
    ev = get_eval(store, eval_id)
    ev_spec = ev.get("spec")
    live = eval_id in live_ids
    facts = UQ.eval_facts(store, eval_id)
    st.caption(f"judge: {ev['judge']} · model: {ev['model_name']} · "
               + metric_note(ev_spec, ev["primary_metric"]))
    _status(ev, facts, live, every)
    if not facts["n_items"]:
        st.caption("No item finished yet: the charts appear as items land."
                   if live else "This eval stored no items.")
        return
    from ..eval.leakage import marked as _leaked
    leaked = _leaked(ev_spec)
    from ..llm.replay import reuse_note as _reuse_note
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
    spec_knobs = UQ.swept_knobs(store, eval_id)
    c1, c3 = st.columns(2)
    metric = c1.selectbox("Metric", list(Q.METRICS), format_func=lambda m: Q.METRICS[m][1])
    knob = None
    if spec_knobs:
        default_knob = presets.PRESETS[ev["preset"]].knob \
            if ev.get("preset") in presets.PRESETS else spec_knobs[0]
        knob = c3.selectbox("Knob", spec_knobs, index=spec_knobs.index(default_knob)
                            if default_knob in spec_knobs else 0)
    mlabel = Q.METRICS[metric][1]
    note = metric_note(ev_spec, ev["primary_metric"])
    calib_metric = metric if metric in ("em", "contains", "acc_lm", "hits1", "rouge_f1",
                                        "fever") else "correct"
    # CRAG outcomes mean something for CRAG questions, or where a CRAG study or metric
    # asks for them; elsewhere they would be charts of a label nobody chose
    crag_wanted = bool(facts["n_crag"]) or bool(ev.get("preset")) or metric.startswith("crag")
    with Q.session(store) as db:       # one connection for all of the page's aggregates
        data = {
            "summary": Q.summary(db, eval_id, metric),
            "hops": Q.by_group(db, eval_id, metric, "hops") if facts["n_hops"] else [],
            "qtype": Q.by_group(db, eval_id, metric, "qtype") if facts["n_qtype"] else [],
            "eff": Q.efficiency(db, eval_id),
            "warm": Q.warm_up_notes(db, eval_id),
            "calib": Q.calibration(db, eval_id, metric=calib_metric),
            "crag": Q.crag(db, eval_id) if crag_wanted else [],
            "knob": Q.knob_response(db, eval_id, knob, metric) if knob else [],
            "modes": Q.error_modes(db, eval_id),
            "paired": Q.paired(db, eval_id, metric),
        }
    selections: list[tuple] = []

    def _chart(fig: Any, key: str, group: str | None = None) -> None:
        ev_ = st.plotly_chart(fig, on_select="rerun", key=key, width="stretch",
                              config=C.PLOTLY_CONFIG)
        for k in C.selected_keys(ev_):
            selections.append((*k, group))

    st.subheader(f"{mlabel} per method (95% CI)")
    st.caption(note)
    if any(r["n"] for r in data["summary"]):
        _chart(C.metric_bars(data["summary"], mlabel), "ev_summary")
    else:
        st.caption(f"No item has a value of {mlabel} (choose another metric).")

    if data["paired"]:
        st.subheader("Paired differences (same questions)")
        st.caption("a − b on the questions both answered; 95% paired-bootstrap CI"
                   + ("; McNemar's exact p on right/wrong" if Q.METRICS[metric][2] else "")
                   + f" · {md_escape(mlabel)} · {note}")
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

    def _groups(rows: list[dict[str, Any]], key: str, label: str, what: str) -> None:
        if not any(r["grp"] not in ("-", "") for r in rows):
            st.caption(f"These questions carry no {what}.")
        elif not any(r["n"] for r in rows):
            st.caption(f"No item has a value of {mlabel} (choose another metric).")
        else:
            _chart(C.group_bars(rows, mlabel, label), f"ev_{key}", key)

    c1, c2 = st.columns(2)
    with c1:
        st.subheader("By hop count")
        _groups(data["hops"], "hops", "hops", "hop counts")
    with c2:
        st.subheader("By question type")
        _groups(data["qtype"], "qtype", "type", "question types")

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
        st.caption(calibration_reason(facts, Q.METRICS[calib_metric][1], ev.get("model_name")))

    st.subheader("CRAG outcomes (accurate / missing / hallucinated)")
    if crag_wanted:
        if not facts["n_crag"]:
            st.caption("These are not CRAG questions: the labels come from the CRAG rules "
                       "applied to this dataset's gold answers.")
        crag_group = st.selectbox("CRAG breakdown by", ["domain", "question_type",
                                                         "static_or_dynamic", "hops", "qtype"])
        _chart(C.crag_outcomes(data["crag"]), "ev_crag")
        _chart(C.crag_breakdown(Q.crag(store, eval_id, crag_group), crag_group), "ev_crag_by",
               crag_group)
    else:
        st.caption("Drawn for CRAG questions (with a domain and question type), a CRAG study "
                   "preset or a CRAG metric; this eval has none of them.")

    if knob and data["knob"]:
        st.subheader("Score against a knob")
        _chart(C.knob_response(data["knob"], knob, None if crag_wanted else mlabel), "ev_knob",
               f"knob:{knob}")

    from .triage_view import evaluate_section
    evaluate_section(store, eval_id, note)
    from .repair_view import repair_section
    repair_section(store, eval_id)

    st.subheader("Error modes (annotations)")
    if data["modes"]:
        try:
            from ..annotations import TAXONOMY
            labels = {t.id: t.label for t in TAXONOMY}
        except Exception:  # noqa: BLE001
            labels = {}
        _chart(C.error_mode_bars(data["modes"], labels), "ev_modes")
    else:
        st.caption("No annotations on these runs yet; tag failures on the Runs page.")

    st.subheader("Items")
    items_table(store, eval_id, ev_spec, ev["primary_metric"])

    _runs_behind(store, eval_id, selections, note, pages_dir)


def _runs_behind(store: Store, eval_id: str, selections: list[tuple], note: str,
                 pages_dir: Path) -> None:
    st.subheader("Runs behind the selection")
    if not selections:
        st.caption("Click a bar or point above to list its runs.")
        return
    method, variant, grp, group = selections[-1]
    g = group if group and grp is not None and group != "ev_modes" else None
    rows = Q.runs_behind(store, eval_id, method=method, variant=variant,
                         group=g, value=grp if g else None)
    st.write(f"{len(rows)} run(s): method **{md_escape(str(method))}**"
             + (f", variant {md_escape(str(variant))}" if variant else "")
             + (f", {g} = {md_escape(str(grp))}" if g else ""))
    st.dataframe(rows, hide_index=True, width="stretch")
    st.caption(note)
    if rows:
        rid = st.selectbox("Run", [r["run_id"] for r in rows],
                           format_func=lambda x: next(f"{x} · {r['question'] or ''}"[:100]
                                                      for r in rows if r["run_id"] == x))
        runs_pages = sorted(p for p in pages_dir.glob("*.py") if "runs" in p.stem.lower())
        if st.button("Open in the Runs page", disabled=not runs_pages):
            st.session_state["open_run_id"] = rid
            st.switch_page(str(runs_pages[0].relative_to(pages_dir.parent)))
        if not runs_pages:
            st.caption("The Runs page is not installed; `python -m workbench runs show "
                       f"{rid}` prints this run.")
