"""A run's answer as a page shows it: the answer or the refusal, the long answer a span was
read from, the gold answers, and the run's caveats (steps whose output could not be parsed, a
threshold calibrated for another model or dataset). Every text is markdown-escaped."""
from __future__ import annotations

from typing import Any

import streamlit as st

from ..viz.safe import md_escape


def answer_box(trace: Any, verdict: dict[str, Any] | None = None) -> None:
    ans = trace.answer
    if not ans:
        return
    if ans.get("refused"):
        st.warning("The method refused to answer: " + md_escape(ans.get("reason") or ans.get("text") or ""))
    else:
        mark = ""
        if verdict is not None:
            mark = (" · :material/check_circle: correct" if verdict.get("correct")
                    else " · :material/cancel: incorrect")
        st.success("**Answer:** " + md_escape(ans.get("text") or "") + mark)
        info = ans.get("info") or {}
        if info.get("answer_span") and info.get("full_answer"):   # the span's source
            st.caption("Long answer: " + md_escape(info["full_answer"]))
    gold = (trace.meta or {}).get("gold") or {}
    if gold.get("answers"):
        st.caption("Gold: " + md_escape(" | ".join(map(str, gold["answers"]))))
    caveats(trace)


def caveats(trace: Any) -> None:
    """What a reader of this run's answer should know about how it was reached."""
    failed = [n.id for n in trace.nodes.values() if n.state == "parse_failed"]
    if failed:
        st.warning("Model output could not be parsed at: " + md_escape(", ".join(failed))
                   + " (see those nodes' raw output).")
    for e in trace.log:
        if e["type"] in ("tau_calibration_mismatch", "kg_partial"):
            st.warning(md_escape(e["data"]["note"]))
