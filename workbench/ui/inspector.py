"""The node inspector: text, scores and thresholds, evidence (with the gold evidence the
node holds, when the run was triaged), every LLM call with its token heatmap, links and
details.

Untrusted text goes through ``st.code`` / dataframes or :func:`~workbench.viz.safe.md_escape`;
the heatmap escapes every token.
"""
from __future__ import annotations

import json
from typing import Any

import streamlit as st

from ..viz.heatmap import token_heatmap_html
from ..viz.inspect import SCORE_FORMAT, fmt_score, node_details
from ..viz.safe import md_escape, shorten


def _score_table(rows: list[dict[str, Any]]) -> None:
    """Every score of the node, with the call it was read from. Each column holds one type
    (numbers with None for missing, formatted by the column config): a column mixing
    floats and "–" strings made Arrow fail and log a traceback on every redraw."""
    has_thr = any(r["threshold"] is not None for r in rows)
    cols = ("score", "value") + (("threshold", "margin", "verdict") if has_thr else ()) + ("source",)
    verdict = {True: "passes", False: "fails", None: None}
    data = [{c: (verdict[r["passes"]] if c == "verdict" else r[c]) for c in cols} for r in rows]
    num = st.column_config.NumberColumn
    st.dataframe(data, hide_index=True, width="stretch", column_config={
        "value": num(format=SCORE_FORMAT), "threshold": num(format=SCORE_FORMAT),
        "margin": num(format=SCORE_FORMAT),
        "source": st.column_config.TextColumn("from", width="large")})


# what a what-if did to a KG method's item (its re-run lists dropped items, unkept)
WHATIF_MARKS = {"dropped": " · dropped by the what-if", "added": " · added by the what-if"}


def found(r: dict[str, Any], many: bool) -> str:
    """How an evidence row was found (markdown): query, rank, retriever, score, and what a
    what-if did to it."""
    score = f" · {r['score']}" if r["score"] not in (None, "") else ""
    query = f"q{r['retrieval']} " if many else ""
    change = WHATIF_MARKS.get((r.get("meta") or {}).get("whatif"), "")
    return f"{query}#{r['rank']} · {md_escape(r['retriever'])}{score}{change}"


def _evidence_table(rows: list[dict[str, Any]], with_source: bool) -> None:
    """Retrieved passages with their whole text, wrapped in a wide column: one narrow
    column says how each was found (retrieval, rank, retriever, score), the other holds the
    title and text (a dataframe cut every passage at the column's width, and a table with a
    column per field left the text a sliver of the inspector). ``st.table`` renders
    markdown, so every text cell is escaped."""
    many = len({r["retrieval"] for r in rows}) > 1

    def text(r: dict[str, Any]) -> str:
        title = f"**{md_escape(r['title'])}**: " if r["title"] else ""
        src = f" (from passage {md_escape(r['passage'])})" if with_source and r["passage"] else ""
        return title + md_escape(r["text"]) + src
    st.table({"retrieved": [found(r, many) for r in rows],
              "passage": [text(r) for r in rows]})
    st.caption("retrieved: " + ("query (q1, q2, …), " if many else "") +
               "rank · retriever · retrieval score")


def headline_text(heads: list[dict[str, Any]]) -> str:
    """The headline scores with the call each was read from, in one line (raw): "Perplexity
    1.129 and confidence 0.886 of the sufficiency evaluation call (over its 5 generated
    tokens)"."""
    def whence(h: dict[str, Any]) -> str:
        if h["label"] == h["score"]:            # not a token score of a call
            return f": {h['source']}"
        return " of " + (h["source"] if h["source"].startswith("the ") else f"the {h['source']}")
    if len({h["source"] for h in heads}) == 1:
        txt = " and ".join(f"{h['score']} {h['text']}" for h in heads) + whence(heads[0])
    else:
        txt = "; ".join(f"{h['score']} {h['text']}{whence(h)}" for h in heads)
    return txt[:1].upper() + txt[1:]


def _secs(ms: Any) -> str:
    if ms is None:
        return "–"
    ms = float(ms)
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def inspector(trace: Any, node_id: str | None, *, key: str, triage: Any = None) -> None:
    if not node_id or node_id not in trace.nodes:
        st.caption("Select a node to inspect it.")
        return
    d = node_details(trace, node_id)
    st.markdown(f"**{md_escape(d['id'])}** · {md_escape(d['kind_name'])} · "
                f"state **{md_escape(d['state'])}**" + (f" · layer {d['layer']}" if d["layer"] else "")
                + (" · :material/flag: answer node" if d["is_answer_node"] else ""))
    st.code(d["text"] or "(no text)", language=None, wrap_lines=True)
    # the headline is the node's stored score (the graph label's number), named by the
    # call it was read from; a node without calls of its own says so instead of "0 calls"
    # (a short metric label, as a long one is cut off in the inspector's column; the call
    # it names is spelled out in full beneath)
    cols = st.columns(3)
    for col, h in zip(cols, d["headline"]):
        col.metric(h["score"].capitalize(), h["text"], help=h["label"] + ": " + h["source"])
    if d["headline"]:
        st.caption(md_escape(headline_text(d["headline"])))
    if d["llm_calls"]:
        cols[2].metric("LLM calls", f"{len(d['llm_calls'])}",
                       help=f"{_secs(d['latency_ms'])} in total")
    elif d["headline"]:
        st.caption(f"No LLM call of its own; its scores are from "
                   f"{md_escape('; '.join(sorted({h['source'] for h in d['headline']})))}")
    else:
        st.caption("No LLM call of its own, and no score.")
    if d["scores"]:
        _score_table(d["scores"])
    tabs = st.tabs(["Evidence", "LLM calls", "Links", "Details"])
    with tabs[0]:
        if triage is not None:
            from .triage_view import node_gold
            node_gold(triage, node_id)
        if d["queries"]:
            for i, q in enumerate(d["queries"]):
                st.markdown(f"**Query {i + 1}:** {md_escape(q)}")
            _evidence_table(d["evidence"], any(r["passage"] for r in d["evidence"]))
        else:
            st.caption("Nothing was retrieved for this node.")
        _cut_passages(trace.nodes[node_id].attrs.get("context"))
        for k, v in d["knowledge"].items():
            st.markdown(f"**Aggregated knowledge** ({md_escape(k)})")
            st.code(v if isinstance(v, str) else json.dumps(v, indent=1, default=str),
                    language=None, wrap_lines=True)
        for k, v in d["answers"].items():
            st.markdown(f"**{md_escape(k)}**")
            st.code(v if isinstance(v, str) else json.dumps(v, indent=1, default=str),
                    language=None, wrap_lines=True)
    with tabs[1]:
        calls = d["llm_calls"]
        if not calls:
            st.caption("No LLM call is attached to this node.")
        else:
            labels = [f"{i + 1}. {c['call']} · {_secs(c['latency_ms'])} · "
                      f"{c['completion_tokens']} tok · PPL {fmt_score(c['perplexity'])}"
                      for i, c in enumerate(calls)]
            i = st.selectbox("Call", range(len(calls)), format_func=lambda j: labels[j],
                             key=f"{key}__call_{node_id}") if len(calls) > 1 else 0
            c = calls[i]
            m1, m2 = st.columns(2)
            # this call's own token scores (a node's stored score names its call)
            m1.metric(f"Perplexity of this {c['call']} call", fmt_score(c["perplexity"]))
            m2.metric("Confidence of this call", fmt_score(c["confidence"]))
            m3, m4 = st.columns(2)
            m3.metric("Latency", _secs(c["latency_ms"]))
            m4.metric("Tokens", f"{c['prompt_tokens']}+{c['completion_tokens']}",
                      help="prompt + completion")
            st.caption("Output, coloured by token probability (hover a token for its logprob):")
            if c["tokens"]:
                st.html(token_heatmap_html(c["tokens"]))
            else:
                st.code(c["output"], language=None, wrap_lines=True)
                st.caption("No per-token logprobs were recorded for this call.")
            with st.expander("Prompt sent"):
                st.code(c["prompt"], language=None, wrap_lines=True)
            if c["finish_reason"] == "loop":
                st.caption("The output began repeating itself, so generation stopped; the "
                           "first turn of the cycle is kept (`loop_stop`, "
                           "docs/performance.md#outputs-caught-in-a-loop).")
            st.caption(f"finish: {c['finish_reason']} · cached prompt tokens: "
                       f"{c['cached_prompt_tokens']} · phase: {c['phase_name'] or '-'}"
                       + (" · replayed from the store (no model time)"
                          if c["replayed_from"] else ""))
    with tabs[2]:
        for title, items in (("Parents", d["parents"]), ("Children", d["children"])):
            st.markdown(f"**{title}**")
            if not items:
                st.caption("none")
            for it in items:
                if st.button(f"{it['id']} · {shorten(it['text'], 60)}",
                             key=f"{key}__go_{node_id}_{title}_{it['id']}"):
                    st.session_state[f"{key}__node"] = it["id"]
                    st.session_state[f"{key}__sel"] = it["id"]
                    st.rerun(scope="fragment") if _in_fragment() else st.rerun()
        if d["paths"]:
            st.markdown("**Paths through this node**")
            st.dataframe([{"path": p["path_id"], "state": p["state"], "nodes": " → ".join(p["nodes"])}
                          for p in d["paths"]], hide_index=True, width="stretch")
    with tabs[3]:
        if d["attrs"]:
            st.json(d["attrs"], expanded=False)
        if d["events"]:
            st.caption("Method events about this node")
            st.dataframe([{"seq": e["seq"], "type": e["type"],
                           "data": shorten(json.dumps(e["data"], default=str), 200)}
                          for e in d["events"]], hide_index=True, width="stretch")
        if not d["attrs"] and not d["events"]:
            st.caption("No further attributes.")


def _cut_passages(rec: Any) -> None:
    """The passage text the prompt kept within its budget, the cut text greyed."""
    from ..methods.context_select import cut_html
    body = cut_html(rec if isinstance(rec, dict) else None)
    if body:
        st.markdown(f"**Passages as the prompt read them** ({md_escape(rec.get('mode'))}, "
                    f"{rec.get('budget')} characters each; {rec.get('cut_chars')} cut, greyed)")
        st.html(body)


def _in_fragment() -> bool:
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
        ctx = get_script_run_ctx(suppress_warning=True)
        return bool(ctx and ctx.current_fragment_id)
    except Exception:      # noqa: BLE001
        return False
