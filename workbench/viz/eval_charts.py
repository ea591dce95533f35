"""Plotly figures for the Evaluate page, built from the short aggregate rows of
:mod:`workbench.eval.queries` (never from per-item data).

Every bar or point carries ``customdata = [method, variant, group]`` so a click
(``st.plotly_chart(on_select="rerun")``) can list the runs behind it with
:func:`workbench.eval.queries.runs_behind`; :func:`selected_keys` reads a selection back.
"""
from __future__ import annotations

from typing import Any, Sequence

PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04",
           "#db2777", "#4b5563", "#65a30d"]
CRAG_COLOURS = {"accuracy": "#16a34a", "missing": "#9ca3af", "hallucination": "#dc2626",
                "score": "#111827"}


def _go():
    import plotly.graph_objects as go
    return go


# The toolbar shows on hover only, and every figure keeps a top margin it can sit in,
# so it never covers a title or a subplot title.
PLOTLY_CONFIG = {"displayModeBar": "hover", "displaylogo": False}
TOP = 34            # px above the plot: the hover toolbar's height
TOP_TITLED = 64     # subplot titles sit above the plot, under the toolbar


def _layout(fig: Any, *, height: int = 340, title: str | None = None, top: int | None = None,
            **kw: Any) -> Any:
    fig.update_layout(height=height,
                      margin=dict(l=10, r=10, t=top if top is not None else
                                  (TOP_TITLED if title else TOP), b=10),
                      title=title, legend=dict(orientation="h", y=-0.2), clickmode="event+select",
                      **kw)
    return fig


def _value_range(lows: Sequence[float], highs: Sequence[float], room: float = 0.22
                 ) -> list[float]:
    """A y range holding every bar, whisker and the value label above it: ``room`` of the
    span is kept above the highest (and below the lowest negative) for the labels."""
    lo, hi = min([0.0, *lows]), max([0.0, *highs])
    if hi - lo <= 0:
        hi = 1.0
    if 0 <= min(lows, default=0) and max(highs, default=0) <= 1.0:
        hi = 1.0                  # a 0-1 metric keeps its whole scale
    span = hi - lo
    return [lo - (room * span if lo < 0 else 0.0), hi + room * span]


def _err(rows: Sequence[dict[str, Any]], key: str = "mean", lo: str = "lo", hi: str = "hi"
         ) -> dict[str, Any]:
    return dict(type="data", symmetric=False,
                array=[max(0.0, (r.get(hi) or 0) - (r.get(key) or 0)) for r in rows],
                arrayminus=[max(0.0, (r.get(key) or 0) - (r.get(lo) or 0)) for r in rows])


def _series_order(rows: Sequence[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["series"] for r in rows))


def metric_bars(rows: Sequence[dict[str, Any]], metric_label: str) -> Any:
    """One bar per method/variant with its 95% CI (Wilson for 0/1 metrics)."""
    go = _go()
    fig = go.Figure()
    fig.add_bar(x=[r["series"] for r in rows], y=[r["mean"] for r in rows],
                error_y=_err(rows), marker_color=[PALETTE[i % len(PALETTE)] for i in range(len(rows))],
                customdata=[[r["method"], r["variant"], None] for r in rows], showlegend=False,
                hovertemplate="%{x}<br>" + metric_label + " %{y:.3f}<extra></extra>")
    # each value above its whisker, where neither the bar nor the interval covers it
    fig.add_scatter(x=[r["series"] for r in rows],
                    y=[max(v for v in (r.get("mean"), r.get("hi"), 0.0) if v is not None)
                       for r in rows], mode="text", textposition="top center",
                    text=[f"{(r['mean'] or 0):.2f} (n={r['n']})" for r in rows],
                    cliponaxis=False, showlegend=False, hoverinfo="skip")
    vals = [v for r in rows for v in (r.get("mean"), r.get("lo"), r.get("hi")) if v is not None]
    return _layout(fig, yaxis_title=metric_label, yaxis_range=_value_range(vals, vals))


def group_bars(rows: Sequence[dict[str, Any]], metric_label: str, group_label: str) -> Any:
    """Grouped bars: x = group value (hop count, question type, ...), one colour per series."""
    go = _go()
    fig = go.Figure()
    for i, s in enumerate(_series_order(rows)):
        rs = [r for r in rows if r["series"] == s]
        fig.add_bar(name=s, x=[str(r["grp"]) for r in rs], y=[r["mean"] for r in rs],
                    error_y=_err(rs), marker_color=PALETTE[i % len(PALETTE)],
                    customdata=[[r["method"], r["variant"], r["grp"]] for r in rs],
                    hovertemplate=s + "<br>" + group_label + " %{x}<br>" + metric_label +
                    " %{y:.3f}<br>n=%{text}<extra></extra>", text=[r["n"] for r in rs],
                    textposition="none")
    fig.update_xaxes(type="category")
    return _layout(fig, barmode="group", xaxis_title=group_label, yaxis_title=metric_label)


def efficiency_bars(rows: Sequence[dict[str, Any]]) -> Any:
    """LLM calls, tokens and wall time per question, per method (the papers' efficiency tables)."""
    from plotly.subplots import make_subplots
    fig = make_subplots(rows=1, cols=3, subplot_titles=("LLM calls / question",
                                                        "tokens / question (prompt + completion)",
                                                        "wall time / question (s)"))
    xs = [r["series"] for r in rows]
    cd = [[r["method"], r["variant"], None] for r in rows]
    colours = [PALETTE[i % len(PALETTE)] for i in range(len(rows))]
    fig.add_bar(x=xs, y=[r["llm_calls"] for r in rows], marker_color=colours, customdata=cd,
                row=1, col=1, showlegend=False)
    fig.add_bar(x=xs, y=[r["prompt_tokens"] for r in rows], name="prompt", marker_color="#93c5fd",
                customdata=cd, row=1, col=2)
    fig.add_bar(x=xs, y=[r["completion_tokens"] for r in rows], name="completion",
                marker_color="#2563eb", customdata=cd, row=1, col=2)
    fig.add_bar(x=xs, y=[(r["wall_ms"] or 0) / 1000.0 for r in rows], marker_color=colours,
                customdata=cd, row=1, col=3, showlegend=False,
                error_y=dict(type="data", symmetric=False,
                             array=[max(0.0, ((r.get("wall_ms_p90") or 0) - (r["wall_ms"] or 0)) / 1000)
                                    for r in rows], arrayminus=[0] * len(rows)))
    fig.update_layout(barmode="stack")
    return _layout(fig, height=340, top=TOP_TITLED)


def reliability_diagram(bins: Sequence[dict[str, Any]], ece: Sequence[dict[str, Any]]) -> Any:
    """Accuracy against answer confidence per bin (marker size ~ count), with the diagonal
    of perfect calibration; the legend carries each series' expected calibration error."""
    go = _go()
    fig = go.Figure()
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(dash="dash", color="#9ca3af"),
                    name="perfect calibration", hoverinfo="skip")
    e = {r["series"]: r for r in ece}
    for i, s in enumerate(_series_order(bins)):
        rs = [r for r in bins if r["series"] == s]
        total = sum(r["n"] for r in rs) or 1
        er = e.get(s, {})
        fig.add_scatter(
            x=[r["conf"] for r in rs], y=[r["acc"] for r in rs], mode="lines+markers",
            name=f"{s} (ECE {er.get('ece', 0):.3f})",
            marker=dict(size=[6 + 24 * r["n"] / total for r in rs], color=PALETTE[i % len(PALETTE)]),
            line=dict(color=PALETTE[i % len(PALETTE)]),
            customdata=[[r["method"], r["variant"], r["bin"]] for r in rs],
            text=[r["n"] for r in rs],
            hovertemplate=s + "<br>confidence %{x:.2f}<br>accuracy %{y:.2f}<br>n=%{text}<extra></extra>")
    return _layout(fig, height=380, xaxis_title="answer confidence (geometric-mean token probability)",
                   yaxis_title="fraction correct", xaxis_range=[0, 1], yaxis_range=[0, 1.02])


def crag_outcomes(rows: Sequence[dict[str, Any]]) -> Any:
    """Stacked 100% bars of accurate / missing / hallucinated per series, score as text
    (the shape of every table of the knowledge-centric study)."""
    go = _go()
    fig = go.Figure()
    ys = [r["series"] for r in rows]
    cd = [[r["method"], r["variant"], r.get("grp")] for r in rows]
    for key, label in (("accuracy", "accurate"), ("missing", "missing"),
                       ("hallucination", "hallucinated")):
        fig.add_bar(y=ys, x=[(r[key] or 0) * 100 for r in rows], name=label, orientation="h",
                    marker_color=CRAG_COLOURS[key], customdata=cd,
                    hovertemplate="%{y}<br>" + label + " %{x:.1f}%<extra></extra>")
    # the score beside each bar, inside the plot: the axis runs on to 130 for it
    fig.add_scatter(y=ys, x=[102] * len(rows), mode="text", showlegend=False, hoverinfo="skip",
                    text=[f"score {(r['score'] or 0) * 100:+.1f}" for r in rows],
                    textposition="middle right", cliponaxis=False)
    fig.update_xaxes(tickvals=[0, 25, 50, 75, 100])
    return _layout(fig, height=max(220, 90 + 40 * len(rows)), barmode="stack",
                   xaxis_title="% of questions", xaxis_range=[0, 130])


def crag_breakdown(rows: Sequence[dict[str, Any]], group_label: str) -> Any:
    """Score (accuracy − hallucination) by group value, one bar colour per series, with CIs."""
    go = _go()
    fig = go.Figure()
    for i, s in enumerate(_series_order(rows)):
        rs = [r for r in rows if r["series"] == s]
        fig.add_bar(name=s, x=[str(r["grp"]) for r in rs], y=[r["score"] for r in rs],
                    error_y=_err(rs, "score", "score_lo", "score_hi"),
                    marker_color=PALETTE[i % len(PALETTE)],
                    customdata=[[r["method"], r["variant"], r["grp"]] for r in rs],
                    text=[f"acc {r['accuracy']:.2f} / hall {r['hallucination']:.2f} / miss "
                          f"{r['missing']:.2f} (n={r['n']})" for r in rs], textposition="none",
                    hovertemplate=s + "<br>%{x}: score %{y:.2f}<br>%{text}<extra></extra>")
    fig.add_hline(y=0, line_color="#9ca3af")
    fig.update_xaxes(type="category")
    return _layout(fig, barmode="group", xaxis_title=group_label,
                   yaxis_title="CRAG score (acc − halluc)", yaxis_range=[-1.05, 1.05])


def knob_response(rows: Sequence[dict[str, Any]], knob: str, metric_label: str | None = None
                  ) -> Any:
    """Against a swept knob (one panel per method): CRAG's accuracy, hallucination, missing
    and score with a 95% band on the score; or, given ``metric_label`` (data without CRAG
    labels), that metric's mean with its 95% band."""
    from plotly.subplots import make_subplots
    methods = list(dict.fromkeys(r["method"] for r in rows)) or ["-"]
    fig = make_subplots(rows=1, cols=len(methods), subplot_titles=methods, shared_yaxes=True)
    mean, lo, hi = ("mean", "lo", "hi") if metric_label else ("score", "score_lo", "score_hi")
    for c, m in enumerate(methods, 1):
        rs = [r for r in rows if r["method"] == m]
        xs = [str(r["value"]) for r in rs]
        cd = [[m, None, r["value"]] for r in rs]
        for key in (() if metric_label else ("accuracy", "hallucination", "missing")):
            fig.add_scatter(x=xs, y=[r[key] for r in rs], mode="lines+markers", name=key,
                            line=dict(color=CRAG_COLOURS[key]), customdata=cd,
                            legendgroup=key, showlegend=c == 1, row=1, col=c)
        fig.add_scatter(x=xs + xs[::-1], y=[r[hi] for r in rs] + [r[lo] for r in rs][::-1],
                        fill="toself", fillcolor="rgba(17,24,39,0.12)", line=dict(width=0),
                        hoverinfo="skip", showlegend=False, row=1, col=c)
        fig.add_scatter(x=xs, y=[r[mean] for r in rs], mode="lines+markers",
                        name=metric_label or "score",
                        line=dict(color=CRAG_COLOURS["score"], width=3), customdata=cd,
                        legendgroup="score", showlegend=c == 1, row=1, col=c)
        fig.update_xaxes(title_text=knob, type="category", row=1, col=c)
    if metric_label:
        vals = [v for r in rows for v in (r.get(mean), r.get(lo), r.get(hi)) if v is not None]
        return _layout(fig, height=380, top=TOP_TITLED, yaxis_title=metric_label,
                       yaxis_range=_value_range(vals, vals, room=0.05))
    fig.add_hline(y=0, line_color="#d1d5db")
    return _layout(fig, height=380, top=TOP_TITLED, yaxis_range=[-1.05, 1.05])


def tradeoff_scatter(rows: Sequence[dict[str, Any]]) -> Any:
    """Accuracy against hallucination, one point per series, with iso-score lines."""
    go = _go()
    fig = go.Figure()
    for s in (-0.5, 0.0, 0.5):
        fig.add_scatter(x=[0, 1], y=[s, 1 + s], mode="lines", line=dict(dash="dot", color="#d1d5db"),
                        showlegend=False, hoverinfo="skip")
    fig.add_scatter(x=[r["hallucination"] for r in rows], y=[r["accuracy"] for r in rows],
                    mode="markers+text", text=[r["series"] for r in rows], textposition="top center",
                    marker=dict(size=12, color=[PALETTE[i % len(PALETTE)] for i in range(len(rows))]),
                    customdata=[[r["method"], r["variant"], None] for r in rows], showlegend=False)
    return _layout(fig, xaxis_title="hallucination", yaxis_title="accuracy",
                   xaxis_range=[0, 1], yaxis_range=[0, 1])


def error_mode_bars(rows: Sequence[dict[str, Any]], labels: dict[str, str] | None = None) -> Any:
    """Annotation tags per method (from the Runs page's failure-mode taxonomy)."""
    go = _go()
    fig = go.Figure()
    labels = labels or {}
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for i, m in enumerate(methods):
        rs = [r for r in rows if r["method"] == m]
        fig.add_bar(name=m, y=[labels.get(r["tag"], r["tag"]) for r in rs], x=[r["n"] for r in rs],
                    orientation="h", marker_color=PALETTE[i % len(PALETTE)],
                    customdata=[[m, None, r["tag"]] for r in rs])
    return _layout(fig, height=max(220, 60 + 26 * len({r["tag"] for r in rows})), barmode="group",
                   xaxis_title="annotations")


FAILURE_COLOURS = {"correct": "#16a34a", "answer_format": "#86efac",
                   "reasoning_error": "#7c3aed", "wrong_refusal": "#f97316",
                   "partial_retrieval": "#facc15", "retrieval_miss": "#9ca3af",
                   "hallucination": "#dc2626"}


def failure_class_bars(rows: Sequence[dict[str, Any]], labels: dict[str, str]) -> Any:
    """Stacked 100% bars of the triage failure classes per series (``rows`` from
    :func:`workbench.triage.store.class_counts`); a click carries the class."""
    go = _go()
    fig = go.Figure()
    series = _series_order(rows)
    by = {(r["series"], r["cls"]): r for r in rows}
    first = {r["series"]: r for r in rows}
    for cls, colour in FAILURE_COLOURS.items():
        rs = [by.get((s, cls)) for s in series]
        if not any(rs):
            continue
        fig.add_bar(y=series, x=[(r["share"] * 100 if r else 0) for r in rs], orientation="h",
                    name=labels.get(cls, cls), marker_color=colour,
                    text=[(str(r["n"]) if r else "") for r in rs], textposition="inside",
                    customdata=[[first[s]["method"], first[s]["variant"], cls] for s in series],
                    hovertemplate="%{y}<br>" + labels.get(cls, cls)
                    + " %{x:.0f}% (%{text} runs)<extra></extra>")
    fig = _layout(fig, height=max(220, 100 + 44 * len(series)), barmode="stack",
                  top=TOP_TITLED, xaxis_title="% of triaged runs", xaxis_range=[0, 100])
    # above the bars: in a chart this short a legend below covers the axis title
    fig.update_layout(legend=dict(orientation="h", y=1.02, yanchor="bottom",
                                  traceorder="normal"))
    return fig


def selected_keys(event: Any) -> list[tuple[Any, Any, Any]]:
    """``(method, variant, group)`` of the points in a ``st.plotly_chart`` selection event."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        points = getattr(getattr(event, "selection", None), "points", None) or []
    out = []
    for p in points:
        cd = p.get("customdata") if isinstance(p, dict) else None
        if cd and isinstance(cd, (list, tuple)) and len(cd) >= 1:
            out.append(tuple(list(cd) + [None] * (3 - len(cd)))[:3])
    return list(dict.fromkeys(out))
