"""The what-if panel: move a declared threshold over a stored run's scores, see verdicts and
paths change with no LLM call (the logic is :mod:`workbench.viz.whatif`), and offer a re-run
at the new value."""
from __future__ import annotations

from typing import Any

import streamlit as st

from ..viz import whatif as wi


def whatif_panel(trace: Any, *, key: str, method_cls: Any = None) -> tuple[Any, dict | None]:
    """Threshold sliders over stored scores; returns (WhatIf or None, re-run overrides or None)."""
    from ..viz.figures import score_histogram
    specs = wi.threshold_specs(trace, method_cls)
    if not specs:
        st.caption("This method declares no threshold decisions on stored scores, so there is "
                   "nothing to re-threshold.")
        return None, None
    names = [s.score for s in specs]
    i = st.selectbox("Decision", range(len(specs)), key=f"{key}__wi_spec",
                     format_func=lambda j: f"{specs[j].score} via {specs[j].knob} "
                                           f"({specs[j].direction})"
                                           + (" — inferred" if specs[j].inferred else "")
                     ) if len(specs) > 1 else 0
    spec = specs[i]
    if spec.target == "none":
        st.caption(f"No stored values of '{names[i]}' in this run yet.")
        return None, None
    st.caption("Move the slider: nodes are re-coloured and paths recomputed from the stored "
               "scores, with no LLM call."
               + (f" ({spec.describe()}; not declared by the method, read from the stored "
                  f"paths)" if spec.inferred else ""))
    if spec.is_topk:
        hi = max(1, int(spec.hi))
        default = int(min(hi, spec.value if spec.value is not None else hi))
        t = st.slider(f"{spec.knob} (keep top-k by {spec.score})", 0, hi, default,
                      key=f"{key}__wi_t_{spec.score}_{trace.run_id}")
    else:
        lo, hi = float(spec.lo), float(spec.hi)
        default = float(spec.value) if spec.value is not None else (lo + hi) / 2
        default = min(max(default, lo), hi)
        step = max((hi - lo) / 200.0, 1e-6)
        t = st.slider(f"{spec.knob} ({spec.describe()})", lo, hi, default, step=step,
                      key=f"{key}__wi_t_{spec.score}_{trace.run_id}", format="%.4g")
    moved = spec.value is None or abs(float(t) - float(spec.value)) > 1e-12
    on = st.toggle("Colour by pass / fail at this threshold", key=f"{key}__wi_on", value=False,
                   help="On by itself once the slider moves away from the run's value.") or moved
    w = wi.apply(trace, spec, t)
    c1, c2, c3 = st.columns(3)
    c1.metric("pass / fail", f"{w.n_pass} / {w.n_fail}")
    c2.metric("verdicts changed", len(w.changed))
    c3.metric("surviving paths", f"{len(w.surviving)} / {len(w.paths)}")
    if w.total_hits:
        st.caption(f"Retrieved items kept at this threshold: {sum(w.kept_hits.values())} of "
                   f"{sum(w.total_hits.values())}")
    if w.changed:
        st.caption("Changed: " + ", ".join(w.changed[:20]) + (" …" if len(w.changed) > 20 else ""))
    if spec.values:
        st.plotly_chart(score_histogram(spec.values, None if spec.is_topk else t,
                                        name=spec.score, direction=spec.direction),
                        key=f"{key}__wi_hist", config={"displayModeBar": False})
    rerun = None
    if moved:
        if st.button(f"Re-run with {spec.knob} = {t:.4g}" if not spec.is_topk else
                     f"Re-run with {spec.knob} = {int(t)}", key=f"{key}__wi_rerun"):
            rerun = {spec.knob: int(t) if spec.is_topk else float(t)}
    return (w if on else None), rerun
