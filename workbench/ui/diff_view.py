"""Where two runs of one question part ways: the merged graph of both runs coloured by
side (in both, only in A, only in B), the first divergence marked and said in one
sentence, and the matched pairs as a table (the logic is :mod:`workbench.analysis.diff`)."""
from __future__ import annotations

from typing import Any

from ..analysis import diff as D
from ..viz.graph import build_view, tip_html
from ..viz.safe import label_esc, md_escape, shorten

# fill, border, legend label per side; red is kept for the divergence alone
SIDES = {"both": ("#e5e7eb", "#6b7280", "in both runs"),
         "a": ("#bfdbfe", "#1d4ed8", "only in A"),
         "b": ("#fed7aa", "#c2410c", "only in B")}
# a matched pair that disagrees (another answer, other evidence, ...): grey would read as
# agreement, and two runs' answer nodes always correspond, whatever they say
DIFFERING = ("#fef08a", "#a16207", "in both runs, differing")
DIVERGENCE_BORDER = "#dc2626"


def diff_graph(d: D.RunDiff, a: Any, b: Any) -> dict[str, Any]:
    """vis-network data of the merged graph (see :func:`workbench.viz.graph.build_view`),
    each node carrying ``diff_side``; labels and tooltips escaped as build_view does."""
    merged, side = D.merged_trace(d, a, b)
    data = build_view(merged, view="graph")
    fd = d.first_divergence
    fd_id = None
    if fd is not None:
        fd_id = D.merged_id(d, "a", fd.node_a) if fd.node_a else D.merged_id(d, "b", fd.node_b)
    pair_at = {D.merged_id(d, "a", p.a): p for p in d.pairs}
    for n in data["nodes"]:
        s = side.get(n["id"])
        if s is None:
            continue
        p = pair_at.get(n["id"]) if s == "both" else None
        fill, border, label = DIFFERING if p and p.differs else SIDES[s]
        n["diff_side"] = s
        n["color"] = {"background": fill, "border": border,
                      "highlight": {"background": fill, "border": border},
                      "hover": {"background": fill, "border": border}}
        n["borderWidth"] = 2
        rows = [["diff", label]]
        node = merged.nodes[n["id"]]
        if p is not None:
            rows += [["A · B", f"{p.a} · {p.b} (matched by {p.by})"],
                     ["similarity", f"{p.similarity:.2f}"]]
            if node.attrs.get("text_b"):
                rows.append(["text in B", shorten(node.attrs["text_b"], 200)])
            if p.evidence_overlap is not None:
                rows.append(["evidence", f"{len(p.shared)} shared, {len(p.only_a)} only in A, "
                                         f"{len(p.only_b)} only in B"])
            if p.answer_a is not None or p.answer_b is not None:
                rows.append(["answers", f"{shorten(p.answer_a, 60)!r} · "
                                        f"{shorten(p.answer_b, 60)!r}"])
            if p.differs:
                rows.append(["differs in", ", ".join(p.differs)])
        if n["id"] == fd_id:
            n["color"]["border"] = DIVERGENCE_BORDER
            n["borderWidth"] = 6
            n["label"] += "\n" + label_esc("◆ first divergence")
            rows.append(["first divergence", fd.reason])
        n["tip"] = {**n["tip"], "rows": rows + n["tip"]["rows"]}
        n["title"] = tip_html(n["tip"])
    data["legend"] = [(s, label, fill, border, False) for s, (fill, border, label) in SIDES.items()]
    if any(p.differs for p in d.pairs):
        fill, border, label = DIFFERING
        data["legend"].append(("differs", label, fill, border, False))
    if fd_id is not None:
        data["legend"].append(("divergence", "◆ first divergence", "#ffffff", DIVERGENCE_BORDER,
                               False))
    return data


def pair_rows(d: D.RunDiff, a: Any, b: Any) -> list[dict[str, Any]]:
    """The matched pairs, then each run's own nodes, in the order of the walk."""
    rows = []
    for s, na, nb in d.order:
        p = d.pair_of("a", na) if s == "both" else None
        rows.append({
            "side": DIFFERING[2] if p and p.differs else SIDES[s][2],
            "A": na or "", "B": nb or "",
            "text": shorten((a.nodes[na] if na else b.nodes[nb]).text, 90),
            "similarity": p.similarity if p else None,
            "shared evidence": len(p.shared) if p and p.evidence_overlap is not None else None,
            "only A": len(p.only_a) if p and p.evidence_overlap is not None else None,
            "only B": len(p.only_b) if p and p.evidence_overlap is not None else None,
            "differs in": ", ".join(p.differs) if p else "",
        })
    return rows


def render_diff(trace_a: Any, trace_b: Any, *, key: str, height: int = 460) -> D.RunDiff | None:
    """Draw the diff of two traces; a note instead when they cannot be diffed."""
    import streamlit as st

    from . import widgets as W
    from .component import graph as graph_component
    thr = st.slider("Match threshold (text similarity)", 0.3, 0.95, D.DEFAULT_THRESHOLD, 0.05,
                    key=f"{key}__thr",
                    help="How alike two nodes' texts (or retrieved items) must be to count as "
                         "the same node. Runs re-run from one parent are matched by node id.")
    try:
        d = D.diff_runs(trace_a, trace_b, threshold=thr)
    except ValueError as e:
        st.warning(str(e))
        return None
    fd = d.first_divergence
    st.markdown(f"**A** {md_escape(d.label('a'))} · **B** {md_escape(d.label('b'))} · aligned "
                f"by {md_escape(d.aligned_by)}: {len(d.pairs)} matched, {len(d.only_a)} only "
                f"in A, {len(d.only_b)} only in B")
    if fd is None:
        st.success("The runs agree on every node.")
    else:
        st.markdown(f"**First divergence:** {md_escape(fd.reason)}")
    data = diff_graph(d, trace_a, trace_b)
    st.session_state[f"{key}__view"] = data          # tests and exports read this
    graph_component(data, key=f"{key}__graph", height=height, empty="Neither run has nodes.")
    W.legend(data["legend"])
    st.dataframe(pair_rows(d, trace_a, trace_b), hide_index=True, width="stretch")
    return d
