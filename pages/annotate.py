"""Annotate: tag a run, a node or a path with failure modes; notes; export as CSV/JSON."""
from __future__ import annotations

import getpass
import time

import streamlit as st

from workbench import annotations as A
from workbench.ui import access
from workbench.ui import queries as Q
from workbench.ui import triage_view as TV
from workbench.ui import widgets as W
from workbench.triage import store as TS

K = "ann"
ss = st.session_state
W.setup_page()
st.title("Annotate")
store = W.store_or_stop()

recent = Q.runs(store, limit=300)
tab_one, tab_all = st.tabs(["Annotate a run", "All annotations"])

with tab_all:
    anns = store.annotations()
    counts = Q.tag_counts(store)
    if counts:
        agg: dict[str, int] = {}
        for r in counts:
            agg[r["tag"]] = agg.get(r["tag"], 0) + r["n"]
        st.markdown("**Failure modes by frequency** (all runs)")
        st.dataframe([{"group": A.GROUPS.get(A.TAGS[t].group, "") if t in A.TAGS else "",
                       "failure mode": A.label(t), "count": n}
                      for t, n in sorted(agg.items(), key=lambda kv: -kv[1])],
                     hide_index=True, width="stretch")
        par = {t: agg.get(t, 0) for t in ("planning_error", "retrieval_error", "inference_error",
                                           "generation_error")}
        if sum(par.values()):
            tot = sum(par.values())
            st.caption("PAR-RAG categories here vs the paper (27 / 13 / 43 / 17 %): " + " / ".join(
                f"{A.label(t)} {100 * v / tot:.0f} %" for t, v in par.items()))
    c1, c2 = st.columns(2)
    c1.download_button("Export annotations (CSV)", A.to_csv(anns), file_name="annotations.csv",
                       mime="text/csv", key=f"{K}__csv", disabled=not anns)
    c2.download_button("Export annotations (JSON)", A.to_json(anns),
                       file_name="annotations.json", mime="application/json",
                       key=f"{K}__jsonall", disabled=not anns)
    if anns:
        st.dataframe([{"run": a["run_id"], "target": f"{a['target_kind']} {a['target_id']}",
                       "tags": W.tag_text(a["tags"]), "note": a["note"], "author": a["author"],
                       "when": time.strftime("%Y-%m-%d %H:%M", time.localtime(a["created_at"] or 0))}
                      for a in anns], hide_index=True, width="stretch")
    else:
        st.caption("No annotations yet.")
    TV.agreement_caption(store)

with tab_one:
    if not recent:
        st.info("No stored runs yet. Run a method on the Ask page first.")
        st.stop()
    ids = [r["run_id"] for r in recent]
    want = ss.pop("annotate_run", None) or st.query_params.get("run")
    if want in ids:
        ss[f"{K}__run"] = want
    if ss.get(f"{K}__run") not in ids:
        ss[f"{K}__run"] = ids[0]
    info = {r["run_id"]: r for r in recent}
    run_id = st.selectbox(
        "Run", ids, key=f"{K}__run",
        format_func=lambda rid: f"{info[rid]['method']} · {info[rid]['status']} · "
                                f"{W.shorten(info[rid]['question'], 80)} · {rid}")
    st.query_params["run"] = run_id
    tr = store.trace(run_id)
    anns = store.annotations(run_id)
    badges = A.node_badges(anns, tr)
    tri = TV.for_run(store, tr, run_id)
    left, right = st.columns([3, 2])
    with left:
        W.draw_graph(tr, key=K, badges=badges, height=460, triage=tri)
        W.answer_box(tr, {"correct": info[run_id]["correct"]}
                     if info[run_id]["correct"] is not None else None)
        TV.banner(tri)
    with right:
        if tri is not None and tri.failure_class == "correct" and not TS.get_label(store, run_id):
            # nothing failed, so there is no suggestion to confirm
            st.markdown("**Failure class** (knowledge-centric triage)")
            st.caption("Correct by the stored verdict: no failure class to label.")
        else:
            TV.label_panel(store, tr, run_id, tri, key=K)
        target_kind = st.segmented_control("Target", list(A.TARGET_KINDS), default="run",
                                           key=f"{K}__kind") or "run"
        if target_kind == "node":
            target_id = W.node_picker(tr, key=K)
            if target_id is None:
                st.caption("This run has no nodes.")
        elif target_kind == "path":
            pids = list(tr.paths)
            target_id = st.selectbox(
                "Path", pids, key=f"{K}__path",
                format_func=lambda p: f"{p} · {tr.paths[p].get('state')} · "
                                      + " → ".join(tr.paths[p].get("nodes", []))) if pids else None
            if not pids:
                st.caption("This run stored no paths.")
        else:
            target_id = run_id
        groups = A.tags_by_group()
        options = [t.id for g in groups.values() for t in g]
        tags = st.multiselect("Failure modes", options, key=f"{K}__tags", select_all=False,
                              format_func=lambda t: f"{A.GROUPS[A.TAGS[t].group]}: {A.TAGS[t].label}",
                              placeholder="Choose one or more failure modes",
                              help="Merged from the method specs' categories.")
        for t in tags:
            st.caption(f"{A.TAGS[t].label}: {A.TAGS[t].description}")
        note = st.text_area("Note", key=f"{K}__note", height=80,
                            placeholder="e.g. answer lost at aggregation of n4")
        if f"{K}__author" not in ss:
            try:
                ss[f"{K}__author"] = getpass.getuser()
            except Exception:      # noqa: BLE001
                ss[f"{K}__author"] = ""
        st.text_input("Author", key=f"{K}__author")

        def save(kind: str, target: str) -> None:
            # A callback runs before the widgets are drawn again, so clearing their values
            # here reaches the browser too (popping the keys after the click left the form
            # filled on screen with Save disabled).
            try:
                store.add_annotation(run_id, kind, target,
                                     A.validate(ss.get(f"{K}__tags") or [], kind),
                                     (ss.get(f"{K}__note") or "").strip(),
                                     (ss.get(f"{K}__author") or "").strip())
            except ValueError as e:
                ss[f"{K}__save_error"] = str(e)
                return
            ss[f"{K}__tags"], ss[f"{K}__note"] = [], ""
            ss[f"{K}__saved"] = True

        st.button("Save annotation", type="primary", key=f"{K}__save",
                  disabled=target_id is None or not (tags or note.strip()),
                  on_click=save, args=(target_kind, str(target_id)))
        if ss.pop(f"{K}__saved", False):
            st.toast("Annotation saved.")
        if ss.get(f"{K}__save_error"):
            W.error(ss.pop(f"{K}__save_error"))
        sugg = TV.taxonomy_suggestions(tri) + A.suggest(tr)
        if sugg:
            st.markdown("**Suggested** (heuristics; confirm before saving)")
            for i, s in enumerate(sugg):
                c1, c2 = st.columns([4, 1], vertical_alignment="center")
                c1.caption(f"{s['target_kind']} {s['target_id']}: {A.label(s['tag'])} — {s['why']}")
                if c2.button("Accept", key=f"{K}__acc_{i}"):
                    store.add_annotation(run_id, s["target_kind"], str(s["target_id"]), [s["tag"]],
                                         "suggested: " + s["why"], ss.get(f"{K}__author", ""))
                    st.rerun()
    st.markdown("**Annotations on this run**")
    if not anns:
        st.caption("None yet.")
    may_delete = access.host_only("Deleting annotations") if anns else False
    for a in anns:
        c1, c2 = st.columns([6, 1], vertical_alignment="center")
        # Escaped text outside code spans: inside backticks the escapes showed (run\\_09…).
        target = "the run" if a["target_kind"] == "run" else \
            f"{W.md_escape(a['target_kind'])} **{W.md_escape(a['target_id'])}**"
        c1.markdown(f"{target} · **{W.md_escape(W.tag_text(a['tags'])) or 'no tags'}**"
                    + (f" · {W.md_escape(a['note'])}" if a["note"] else "")
                    + f" — *{W.md_escape(a['author'] or 'anonymous')}*")
        if c2.button("Delete", key=f"{K}__del_{a['id']}", disabled=not may_delete) \
                and may_delete:
            store.delete_annotation(a["id"])
            st.rerun()
    d1, d2 = st.columns(2)
    d1.download_button("This run's annotations (CSV)", A.to_csv(anns),
                       file_name=f"{run_id}-annotations.csv", mime="text/csv", key=f"{K}__csv1",
                       disabled=not anns)
    d2.download_button("This run's annotations (JSON)", A.to_json(anns),
                       file_name=f"{run_id}-annotations.json", mime="application/json",
                       key=f"{K}__json1", disabled=not anns)
