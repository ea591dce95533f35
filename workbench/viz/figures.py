"""Plotly figures: compare bars, score histograms with a threshold line, what-if sweeps."""
from __future__ import annotations

from typing import Any, Sequence


def compare_bars(rows: Sequence[dict[str, Any]]) -> Any:
    """Small multiples: one panel per measure (LLM calls, tokens, wall time), each on its
    own scale, one bar per column/method in the same colour in every panel. (One axis for
    calls, tokens and seconds needed tokens ÷ 100 to fit and still misled.)"""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    metrics = [("llm_calls", "LLM calls", "{:,.0f}"), ("tokens", "tokens", "{:,.0f}"),
               ("wall_s", "wall time (s)", "{:,.1f}")]
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[m[1] for m in metrics],
                        horizontal_spacing=0.08)
    palette = ["#2563eb", "#ea580c", "#16a34a", "#9333ea"]
    labels = [str(r.get("label", "")) for r in rows]
    for c, (key, _title, fmt) in enumerate(metrics, 1):
        vals = [float(r.get(key) or 0) for r in rows]
        fig.add_bar(x=labels, y=vals, marker_color=[palette[i % len(palette)]
                                                    for i in range(len(rows))],
                    text=[fmt.format(v) for v in vals], textposition="outside",
                    cliponaxis=False, showlegend=False,
                    hovertemplate="%{x}: %{text}<extra></extra>",
                    row=1, col=c)
        fig.update_yaxes(range=[0, max(vals + [1e-9]) * 1.25], row=1, col=c)
    fig.update_xaxes(showticklabels=False)
    for i, lab in enumerate(labels):      # one legend for all panels: the colours
        fig.add_scatter(x=[None], y=[None], mode="markers", name=lab,
                        marker=dict(color=palette[i % len(palette)], symbol="square", size=12))
    fig.update_layout(height=280, margin=dict(l=10, r=10, t=36, b=10),
                      legend=dict(orientation="h", y=-0.08), plot_bgcolor="#ffffff")
    return fig


def score_histogram(values: Sequence[float], threshold: float | None, *, name: str = "score",
                    direction: str = "lower") -> Any:
    import plotly.graph_objects as go
    fig = go.Figure()
    fig.add_histogram(x=list(values), nbinsx=min(30, max(5, len(values))), name=name,
                      marker_color="#93c5fd")
    if threshold is not None and direction != "top":
        fig.add_vline(x=threshold, line_color="#dc2626", line_dash="dash",
                      annotation_text=f"threshold {threshold:.3g}")
    fig.update_layout(height=200, margin=dict(l=10, r=10, t=20, b=10), showlegend=False,
                      xaxis_title=name, yaxis_title="count")
    return fig


def sweep_lines(rows: Sequence[dict[str, Any]], *, name: str = "threshold") -> Any:
    import plotly.graph_objects as go
    fig = go.Figure()
    xs = [r["threshold"] for r in rows]
    for key, label in (("nodes_pass", "nodes passing"), ("paths_surviving", "paths surviving")):
        fig.add_scatter(x=xs, y=[r[key] for r in rows], mode="lines", name=label)
    fig.update_layout(height=200, margin=dict(l=10, r=10, t=10, b=10), xaxis_title=name,
                      legend=dict(orientation="h", y=-0.35))
    return fig
