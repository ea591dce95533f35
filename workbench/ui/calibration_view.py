"""Which confidence signals of an eval deserve trust (the numbers are
:mod:`workbench.analysis.calibration`): the final answer's risk-coverage curve with a
what-if coverage slider, node signals ranked by AUROC per method and label (counts and no
number where too few nodes are labelled), a signal's reliability diagram and its
recalibration fitted on the train split, before and after."""
from __future__ import annotations

from typing import Any

from ..analysis import calibration as C
from ..viz.eval_charts import PALETTE

_METRIC_COLS = ("auroc", "auroc_lo", "auroc_hi", "ece", "brier")


def _r(v: Any) -> float | None:
    return None if v is None else round(float(v), 3)


def risk_coverage_figure(answers: list[dict[str, Any]], coverage: float) -> Any:
    import plotly.graph_objects as go
    fig = go.Figure()
    for i, a in enumerate(x for x in answers if x.get("curve")):
        name = series_label(a)
        cur = a["curve"]
        fig.add_scatter(x=[p["coverage"] for p in cur], y=[p["accuracy"] for p in cur],
                        mode="lines+markers", name=name, line=dict(color=PALETTE[i % 10],
                                                                   shape="hv"),
                        customdata=[p["threshold"] for p in cur],
                        hovertemplate=name + "<br>coverage %{x:.0%}<br>"
                        "accuracy %{y:.2f}<br>confidence ≥ %{customdata:.3f}<extra></extra>")
    fig.add_vline(x=coverage, line=dict(dash="dot", color="#6b7280"))
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis_title="share answered (abstain below a confidence threshold)",
                      yaxis_title="accuracy of the answered", xaxis_range=[0, 1.02],
                      yaxis_range=[0, 1.02], legend=dict(orientation="h", y=-0.25))
    return fig


def reliability_figure(bins: list[dict[str, float]], title: str) -> Any:
    import plotly.graph_objects as go
    fig = go.Figure()
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(dash="dash", color="#9ca3af"),
                    name="perfect calibration", hoverinfo="skip")
    total = sum(b["n"] for b in bins) or 1
    fig.add_scatter(x=[b["conf"] for b in bins], y=[b["acc"] for b in bins],
                    mode="lines+markers", name="equal-mass bins",
                    marker=dict(size=[6 + 24 * b["n"] / total for b in bins], color=PALETTE[0]),
                    text=[b["n"] for b in bins],
                    hovertemplate="confidence %{x:.2f}<br>fraction positive %{y:.2f}<br>"
                                  "n=%{text}<extra></extra>")
    fig.update_layout(height=320, margin=dict(l=10, r=10, t=30, b=10), title=title,
                      xaxis_title="signal as a probability", yaxis_title="fraction positive",
                      xaxis_range=[0, 1], yaxis_range=[0, 1.02], showlegend=False)
    return fig


def series_label(a: dict[str, Any]) -> str:
    from ..analysis.calibration_data import series_name
    return series_name(a["method"], a.get("variant"))


def signal_rows(cells: list[dict[str, Any]], method: str, label: str, kind: str
                ) -> list[dict[str, Any]]:
    """The signals of one method, node kind and label, best AUROC first; too few: counts."""
    rows = [c for c in cells if c["method"] == method and c["label"] == label
            and c["kind"] == kind]
    rows.sort(key=lambda c: (c["rank"] is None, c["rank"] or 0, c["signal"]))
    return [{"rank": c["rank"], "signal": c["signal"], "labelled": c["n"],
             "positive": c["n_pos"],
             **{k: (None if c["too_few"] else _r(c[k])) for k in _METRIC_COLS},
             "note": "too few labelled nodes" if c["too_few"] else ""} for c in rows]


def calibration_panel(store: Any, eval_id: str | None, *, key: str) -> None:
    import streamlit as st

    from ..commands._calibration import report
    from ..viz.safe import md_escape
    if not eval_id or not st.toggle("Node-level calibration: which confidence signals "
                                    "predict anything?", key=f"{key}__on"):
        return
    cache = st.session_state.setdefault(f"{key}__cache", {})
    n_items = store.query("SELECT count(*) AS n FROM eval_items WHERE eval_id = ?",
                          [eval_id])[0]["n"]
    rep = cache.get((eval_id, n_items))
    if rep is None:
        with st.spinner("Triaging the eval's runs…"):
            rep = cache[(eval_id, n_items)] = report(store, eval_id)
    st.caption(f"{rep['n_runs']} runs, {rep['n_nodes']} nodes. A number needs "
               f"{rep['min_n']} labelled items and {rep['min_class']} of each class; fewer "
               f"show their counts only. Intervals: 95% bootstrap over questions.")

    st.markdown("**Final answer: abstain below a confidence threshold**")
    answers = rep["answers"]
    cov = st.slider("Coverage (share of questions answered)", 0.05, 1.0, 0.5, 0.05,
                    key=f"{key}__cov")
    table = []
    for a in answers:
        point = C.at_coverage(a.get("curve") or [], cov)
        recal = a.get("recal") or {}
        table.append({"series": series_label(a), "n": a["n"], "correct": a["n_correct"],
                      "AUROC": _r(a.get("auroc")), "ECE": _r(a.get("ece")),
                      "Brier": _r(a.get("brier")),
                      "accuracy at coverage": _r(point["accuracy"]) if point else None,
                      "answers": point["n"] if point else None,
                      "threshold": _r(point["threshold"]) if point else None,
                      "held-out ECE after Platt": _r((recal.get("platt") or {}).get("ece")),
                      "after isotonic": _r((recal.get("isotonic") or {}).get("ece")),
                      "note": "too few answers with a confidence" if a["too_few"] else ""})
    if table:
        st.dataframe(table, hide_index=True, width="stretch")
    if any(a.get("curve") for a in answers):
        st.plotly_chart(risk_coverage_figure(answers, cov), key=f"{key}__rc",
                        config={"displayModeBar": False})

    cells = rep["nodes"]
    if not cells:
        st.info("No node of this eval carries a signal and a label (the runs were not "
                "triaged: no gold evidence, or they did not finish).")
        return
    st.markdown("**Node signals against node labels**")
    c1, c2, c3 = st.columns(3)
    methods = sorted({c["method"] for c in cells})
    method = c1.selectbox("Method", methods, key=f"{key}__m")
    labels = sorted({c["label"] for c in cells if c["method"] == method})
    label = c2.selectbox("Label", labels, format_func=lambda x: C.LABELS.get(x, x),
                         key=f"{key}__l")
    kinds = sorted({c["kind"] for c in cells if c["method"] == method and c["label"] == label})
    kind = c3.selectbox("Node kind", kinds, format_func=lambda k: "every kind" if k == "*"
                        else k, key=f"{key}__k")
    rows = signal_rows(cells, method, label, kind)
    st.dataframe(rows, hide_index=True, width="stretch")
    ok = [r["signal"] for r in rows if r["auroc"] is not None]
    if not ok:
        return
    sig = st.selectbox("Signal", ok, key=f"{key}__s")
    cell = next(c for c in cells if (c["method"], c["label"], c["kind"], c["signal"])
                == (method, label, kind, sig))
    left, right = st.columns(2)
    with left:
        if cell.get("bins"):
            st.plotly_chart(reliability_figure(cell["bins"], f"{sig}: reliability"),
                            key=f"{key}__rel", config={"displayModeBar": False})
        else:
            st.caption(f"{md_escape(sig)} is not a probability: its ECE and Brier are shown "
                       f"after recalibration only.")
    with right:
        recal = cell.get("recal")
        if recal:
            st.markdown(f"Recalibrated on {recal['n_train']} train nodes, measured on "
                        f"{recal['n_test']} others")
            st.dataframe([{"": name, "ECE": _r(recal[k]["ece"]), "Brier": _r(recal[k]["brier"])}
                          for name, k in (("before", "before"), ("Platt", "platt"),
                                          ("isotonic", "isotonic")) if recal.get(k)],
                         hide_index=True)
        else:
            st.caption("No recalibration: it needs labelled nodes of train questions and of "
                       "the other splits.")
