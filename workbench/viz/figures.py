"""Plotly figures: compare bars, score histograms with a threshold line, what-if sweeps."""
from __future__ import annotations

from typing import Any, Sequence


def compare_bars(rows: Sequence[dict[str, Any]]) -> Any:
    """One group per metric (LLM calls, tokens / 100, wall s), one bar per column/method."""
    import plotly.graph_objects as go
    fig = go.Figure()
    metrics = [("llm_calls", "LLM calls", 1.0), ("tokens", "tokens ÷ 100", 0.01),
               ("wall_s", "wall time (s)", 1.0)]
    for r in rows:
        fig.add_bar(name=str(r.get("label", "")), x=[m[1] for m in metrics],
                    y=[(r.get(k) or 0) * f for k, _, f in metrics])
    fig.update_layout(barmode="group", height=260, margin=dict(l=10, r=10, t=10, b=10),
                      legend=dict(orientation="h", y=-0.25))
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
