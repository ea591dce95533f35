"""The Evaluate page's gold-repair table, beside the failure-triage classes: per method the
share of wrong runs that the gold passages repaired when replayed (a retrieval failure by
intervention) and its agreement with the triage class (workbench/analysis/repair.py).
Text reaches the page through dataframes and ``md_escape`` only."""
from __future__ import annotations

from typing import Any

import streamlit as st

from ..store import Store
from ..viz.safe import md_escape

SCOPE_LABELS = {"breaking": "gold added to the breaking node",
                "all": "gold added to every retrieving node"}


def rows(summ: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per scope and method: the table the page draws."""
    from ..analysis.repair import SKIPS
    out = []
    for scope, per in summ.items():
        for series, f in per.items():
            tab = f["table"]
            out.append({
                "scope": SCOPE_LABELS.get(scope, scope), "method": series,
                "wrong runs": f["wrong"], "tested": f["tested"], "repaired": f["repaired"],
                "repaired share": f["repaired_share"],
                "agreement with triage": f["agreement"],
                "triage retrieval → repaired / not": f"{tab['retrieval']['retrieval']} / "
                                                     f"{tab['retrieval']['reasoning']}",
                "triage reasoning → repaired / not": f"{tab['reasoning']['retrieval']} / "
                                                     f"{tab['reasoning']['reasoning']}",
                "skipped": ", ".join(f"{SKIPS.get(k, k)}: {n}" for k, n in
                                     f["skipped"].items()) or "0",
                "pending": f["pending"]})
    return out


def repair_section(store: Store, eval_id: str) -> None:
    from ..analysis.repair import summary
    st.markdown("**Gold repair** (wrong runs replayed with the gold passages they lacked)")
    try:
        summ = summary(store, eval_id)
    except Exception as e:      # noqa: BLE001 - a readable line, never a traceback
        st.error(f"Gold repair unavailable: {type(e).__name__}: {md_escape(str(e))}")
        return
    table = rows(summ)
    if not table:
        st.caption("Not run for this eval: `python -m workbench eval repair "
                   f"{md_escape(eval_id)}` replays each wrong run with the gold passages its "
                   "breaking node lacked (`--scope all`: every retrieving node).")
        return
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        c: st.column_config.NumberColumn(format="percent")
        for c in ("repaired share", "agreement with triage")})
    st.caption("Repaired: the replayed answer is correct by the eval's primary metric, a "
               "retrieval failure by intervention; not repaired: a reasoning failure. Triage "
               "retrieval side: retrieval miss, partial retrieval, hallucination; reasoning "
               "side: reasoning error, wrong refusal, answer format. Agreement: the share of "
               "tested runs where the two verdicts match.")
