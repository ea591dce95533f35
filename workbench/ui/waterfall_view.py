"""The call waterfall on a page (figure: :mod:`workbench.viz.waterfall`).

Clicking a bar selects its node in the graph and the inspector: it sets the same session
keys a click on the graph sets (``{key}__node``/``{key}__sel``), so the waterfall must be
drawn before the page's node picker. A selection event is acted on once, when it changes:
a live page reruns every few tenths of a second and the chart keeps reporting the last one.
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from ..viz.safe import md_escape
from ..viz.waterfall import busy_text, call_rows, running_text, summary_text, waterfall_figure


def _picked(event: Any) -> tuple[str | None, str | None]:
    """(node id, bar id) of the clicked bar in a plotly selection event."""
    try:
        pts = event.selection.points if event and event.selection else []
    except AttributeError:
        pts = []
    for p in pts or []:
        cd = p.get("customdata") or []
        if len(cd) >= 2:
            return (cd[0] or None), cd[1]
    return None, None


def waterfall(trace: Any, *, key: str, running: dict[str, Any] | None = None,
              busy: dict[str, Any] | None = None) -> None:
    """Draw the run's call waterfall (with the call in flight when ``running``, and what the
    run does between calls when ``busy``, a search). A click on a bar selects its node and
    reruns (the graph above it then shows the selection)."""
    ss = st.session_state
    now = running_text(trace, running) or busy_text(busy)
    if now:
        st.caption(md_escape(now))
    rows = call_rows(trace)
    if not rows and not running:
        st.caption("No LLM call yet." if trace.status == "running" else
                   "This run made no LLM call.")
        return
    st.caption(md_escape(summary_text(trace)) + "  \nOne bar per call, coloured by phase; "
               "hatched bars took no model time (replayed or reused). Click a bar to "
               "inspect its node.")
    fig = waterfall_figure(trace, running=running, selected=ss.get(f"{key}__node"))
    event = st.plotly_chart(fig, key=f"{key}__waterfall", on_select="rerun",
                            selection_mode="points", width="stretch",
                            config={"displayModeBar": False})
    node, bar = _picked(event)
    if bar is None or bar == ss.get(f"{key}__wf_bar"):
        return
    ss[f"{key}__wf_bar"] = bar
    if node and node in trace.nodes:
        ss[f"{key}__node"] = node
        ss[f"{key}__sel"] = node
        ss[f"{key}__auto"] = None      # the user chose: the picker stops following the run
        # the graph above was drawn with the old selection: draw again with the new one
        from .inspector import _in_fragment
        st.rerun(scope="fragment") if _in_fragment() else st.rerun()
    return None
