"""The call waterfall of a run: one bar per LLM call (and per teacher-forced scoring) on the
run's time axis, as Phoenix and LangSmith draw traces.

Events are stamped when a call *returns* (``t_ms`` of its ``llm_call`` event), with its
latency; a bar ends there and starts ``latency_ms`` earlier. The calls of one
``generate_many`` batch are all emitted after the whole batch, so their start comes from the
batch record instead: its groups ran one after another and ended when the first of its events
was stamped (see :mod:`workbench.llm.batching`). Traces without times (folded from a stored
trace rather than from events) are laid end to end in call order.

:func:`call_rows` is plain data (tested without plotly); :func:`waterfall_figure` draws it.
All run text in the figure is HTML-escaped: plotly renders hover text as HTML.
"""
from __future__ import annotations

from typing import Any

from .inspect import node_call_ids
from .names import call_name, kind_name, phase_name
from .safe import esc, shorten

# colours of the phases in order of first appearance (one palette for every method)
PHASE_COLOURS = ("#2563eb", "#16a34a", "#ea580c", "#9333ea", "#0891b2", "#ca8a04",
                 "#db2777", "#4b5563", "#65a30d", "#7c3aed")
RUNNING_COLOUR = "#f59e0b"
STATUS_WORDS = {
    "fresh": "run by the model",
    "replayed": "replayed from the store (an earlier run's identical call; no model time)",
    "reused": "reused (an identical earlier call of this run; no model time)",
    "running": "running now",
}
# sequences run side by side in one model step; the others run one after another
_PARALLEL_MODES = ("llama_cpp", "concurrent")


def _status(rec: dict[str, Any]) -> str:
    if rec.get("replayed_from"):
        return "replayed"
    if rec.get("reused_from"):
        return "reused"
    return "fresh"


def _records(trace: Any) -> list[dict[str, Any]]:
    """Every call and scoring of the run as one list of uniform records, in event order."""
    out = []
    for cid, c in trace.llm_calls.items():
        out.append({"id": cid, "type": "call", "rec": c, "node_id": c.get("node_id"),
                    "seq": c.get("seq", 0), "t_ms": c.get("t_ms")})
    for e in trace.log:
        if e.get("type") == "llm_score":
            d = e.get("data") or {}
            out.append({"id": d.get("score_id") or f"score{e.get('seq')}", "type": "score",
                        "rec": d, "node_id": e.get("node_id"), "seq": e.get("seq", 0),
                        "t_ms": e.get("t_ms")})
    return sorted(out, key=lambda r: r["seq"])


def _latency(rec: dict[str, Any]) -> float:
    try:
        return max(0.0, float(rec.get("latency_ms") or 0.0))
    except (TypeError, ValueError):
        return 0.0


def _place(items: list[dict[str, Any]]) -> None:
    """Set ``start``/``end`` (ms since the run started) on every item; see the module doc."""
    if any(it["t_ms"] is None for it in items):
        t = 0.0
        for it in items:                   # no times: end to end in call order
            it["start"], it["end"] = t, t + _latency(it["rec"])
            t = it["end"]
        return
    batches: dict[str, list[dict[str, Any]]] = {}
    for it in items:
        b = it["rec"].get("batch")
        if isinstance(b, dict) and b.get("call") and not b.get("across_items"):
            batches.setdefault(f"{it['type']}:{b['call']}", []).append(it)
        else:
            it["end"] = float(it["t_ms"])
            it["start"] = max(0.0, it["end"] - _latency(it["rec"]))
    for members in batches.values():
        groups: dict[int, list[dict[str, Any]]] = {}
        for it in members:
            groups.setdefault(int(it["rec"]["batch"].get("group") or 0), []).append(it)

        def parallel(g: list[dict[str, Any]]) -> bool:
            return str(g[0]["rec"]["batch"].get("mode")) in _PARALLEL_MODES

        def span(g: list[dict[str, Any]]) -> float:
            lat = [_latency(x["rec"]) for x in g]
            return max(lat) if parallel(g) else sum(lat)
        end = min(float(it["t_ms"]) for it in members)
        for gi in sorted(groups, reverse=True):       # the last group ended last
            g = sorted(groups[gi], key=lambda x: int(x["rec"]["batch"].get("slot") or 0))
            g_start = max(0.0, end - span(g))
            t = g_start
            for it in g:
                it["start"] = t if not parallel(g) else g_start
                it["end"] = it["start"] + _latency(it["rec"])
                if not parallel(g):
                    t = it["end"]
            end = g_start


def _batch_text(b: Any) -> str:
    if not isinstance(b, dict) or not b.get("size"):
        return ""
    mode = {"llama_cpp": "one llama.cpp batch", "concurrent": "in flight together",
            "sequential": "one after another", "single": "alone"}.get(str(b.get("mode")),
                                                                     str(b.get("mode") or ""))
    txt = f"batch of {b['size']} ({mode})"
    if int(b.get("groups") or 1) > 1:
        txt += f", group {int(b.get('group') or 0) + 1} of {b['groups']}"
    if b.get("shared_prefix_tokens"):
        txt += f", {b['shared_prefix_tokens']} shared prefix tokens"
    return txt


def _call_words(purpose: str, type_: str) -> str:
    name = call_name(purpose)
    return name if type_ != "score" or "scoring" in name else f"{name} (scoring)"


def call_rows(trace: Any) -> list[dict[str, Any]]:
    """One row per LLM call and teacher-forced scoring, in start order, with everything the
    bar and its hover say. A call listed by a node's ``call_ids`` (made for it under another
    node id) is the node's for clicking, too."""
    owner: dict[str, str] = {}
    for nid, n in trace.nodes.items():
        for cid in node_call_ids(trace, n):
            owner.setdefault(cid, nid)
    items = _records(trace)
    _place(items)
    rows = []
    for it in items:
        rec = it["rec"]
        nid = it["node_id"] or owner.get(it["id"])
        node = trace.nodes.get(nid) if nid else None
        pt = rec.get("prompt_tokens")
        ct = rec.get("completion_tokens")
        if it["type"] == "score":
            ct = len(rec.get("tokens") or [])     # the continuation it scored
        cached = rec.get("cached_prompt_tokens")
        share = (float(cached) / float(pt)) if cached and pt else (0.0 if pt else None)
        purpose = rec.get("purpose") or ("score" if it["type"] == "score" else "")
        rows.append({
            "id": it["id"], "type": it["type"], "node_id": nid if node is not None else None,
            "node_label": nid or "(no node)", "node_kind": kind_name(node.kind) if node else "",
            "node_text": node.text if node else "",
            "phase": rec.get("phase") or "", "phase_name": phase_name(rec.get("phase")) or
            "(no phase)", "purpose": purpose,
            "call": _call_words(purpose, it["type"]),
            "start_ms": round(it["start"], 3), "end_ms": round(it["end"], 3),
            "latency_ms": _latency(rec),
            "prompt_tokens": pt, "completion_tokens": ct, "cached_prompt_tokens": cached,
            "cached_share": share, "status": _status(rec), "batch": _batch_text(rec.get("batch")),
            "finish_reason": rec.get("finish_reason"),
            "perplexity": (rec.get("scores") or {}).get("perplexity"),
            "seq": it["seq"],
        })
    rows.sort(key=lambda r: (r["start_ms"], r["seq"]))
    return rows


def running_row(trace: Any, running: dict[str, Any] | None) -> dict[str, Any] | None:
    """The call in flight as a row: ``running`` is ``{"start_ms", "elapsed_ms", "what"}``
    (what the live runner knows: when it began on the run's clock, and what kind of call)."""
    if not running:
        return None
    start = float(running.get("start_ms") or 0.0)
    el = max(0.0, float(running.get("elapsed_ms") or 0.0))
    return {"id": "__running__", "type": "running", "node_id": None,
            "node_label": "now", "node_kind": "", "node_text": running.get("partial") or "",
            "phase": trace.phase or "", "phase_name": phase_name(trace.phase) or "(no phase)",
            "purpose": "", "call": running.get("what") or "LLM call",
            "start_ms": start, "end_ms": start + el, "latency_ms": el, "prompt_tokens": None,
            "completion_tokens": running.get("tokens"), "cached_prompt_tokens": None,
            "cached_share": None, "status": "running", "batch": "", "finish_reason": None,
            "perplexity": None, "seq": 1 << 30}


def running_text(trace: Any, running: dict[str, Any] | None) -> str:
    """"Running now: an LLM call (knowledge retrieval and aggregation) for 12.3 s" (raw)."""
    r = running_row(trace, running)
    if r is None:
        return ""
    ph = f" ({r['phase_name']})" if trace.phase else ""
    tok = f", {r['completion_tokens']} tokens so far" if r["completion_tokens"] else ""
    return f"Running now: {r['call']}{ph} for {r['latency_ms'] / 1000:.1f} s{tok}"


def busy_text(busy: dict[str, Any] | None) -> str:
    """"Running now: retrieval (dense) for 12.3 s, no LLM call in flight" (raw), for a run
    between calls; a long dense search says why (its index is built on first use)."""
    if not busy:
        return ""
    secs = max(0.0, float(busy.get("elapsed_ms") or 0.0)) / 1000
    what = busy.get("what") or "work between LLM calls"
    txt = f"Running now: {what} for {secs:.1f} s, no LLM call in flight"
    if secs >= 3 and ("dense" in what or "hybrid" in what):
        txt += (" (a dense index is built over the whole corpus on its first use, which "
                "can take minutes; later runs read it from disk)")
    return txt


def _secs(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def bar_text(r: dict[str, Any]) -> str:
    """What a bar says beside itself: latency and tokens (raw numbers only), the cached
    share when it is a tenth of the prompt or more; the hover has every figure. Kept short:
    the waterfall sits in a narrow column and a long text ran past the chart's edge."""
    ms = r["latency_ms"]
    parts = [_secs(ms) if ms < 10_000 else f"{ms / 1000:.0f} s"]
    if r["prompt_tokens"] is not None or r["completion_tokens"] is not None:
        parts.append(f"{r['prompt_tokens'] if r['prompt_tokens'] is not None else '?'}+"
                     f"{r['completion_tokens'] if r['completion_tokens'] is not None else '?'} tok")
    if r["cached_share"] and r["cached_share"] >= 0.1:
        parts.append(f"{r['cached_share']:.0%} cached")
    if r["status"] != "fresh":
        parts.append({"replayed": "replayed", "reused": "reused",
                      "running": "running"}[r["status"]])
    return " · ".join(parts)


def hover_html(r: dict[str, Any]) -> str:
    """The hover box of a bar: every value escaped (node text is model or question text)."""
    lines = [f"<b>{esc(r['call'])}</b> · {esc(r['phase_name'])}"]
    if r["node_id"]:
        lines.append(f"node {esc(r['node_id'])} ({esc(r['node_kind'])}): "
                     f"{esc(shorten(r['node_text'], 70))}")
    elif r["status"] == "running" and r["node_text"]:
        lines.append("so far: " + esc(shorten(r["node_text"], 70)))
    lines.append(f"start {r['start_ms'] / 1000:.2f} s · latency {_secs(r['latency_ms'])}")
    if r["prompt_tokens"] is not None:
        cache = ""
        if r["cached_prompt_tokens"] is not None:
            cache = f" ({r['cached_prompt_tokens']} cached"
            cache += f", {r['cached_share']:.0%})" if r["cached_share"] is not None else ")"
        lines.append(f"prompt {r['prompt_tokens']} tokens{cache}")
    if r["completion_tokens"] is not None:
        lines.append(f"{'scored' if r['type'] == 'score' else 'completion'} "
                     f"{r['completion_tokens']} tokens"
                     + (f" · finish {esc(r['finish_reason'])}" if r["finish_reason"] else ""))
    if r["batch"]:
        lines.append(esc(r["batch"]))
    lines.append(esc(STATUS_WORDS[r["status"]]))
    return "<br>".join(lines)


def phase_order(rows: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for r in rows:
        if r["phase_name"] not in out:
            out.append(r["phase_name"])
    return out


def waterfall_figure(trace: Any, *, running: dict[str, Any] | None = None,
                     selected: str | None = None, min_width_frac: float = 0.012) -> Any:
    """A plotly horizontal bar chart: a row per call in start order, coloured by phase (the
    legend spells the phases out), replayed calls hatched, the call in flight amber and
    hatched; the bars of the selected node outlined. ``customdata`` holds the node id, which
    a click hands back (Streamlit ``on_select``)."""
    import plotly.graph_objects as go
    rows = call_rows(trace)
    rr = running_row(trace, running)
    if rr is not None:
        rows.append(rr)
    span = max([r["end_ms"] for r in rows] + [trace.last_t_ms or 0.0, 1.0])
    min_w = span * min_width_frac        # a replayed call takes no time but is still a bar
    ylabels = [f"{i + 1}. {r['node_label']} · {r['call']}" for i, r in enumerate(rows)]
    fig = go.Figure()
    colours = {p: PHASE_COLOURS[i % len(PHASE_COLOURS)] for i, p in enumerate(phase_order(rows))}
    for ph in colours:
        idx = [i for i, r in enumerate(rows) if r["phase_name"] == ph and r["status"] != "running"]
        if not idx:
            continue
        sub = [rows[i] for i in idx]
        fig.add_trace(go.Bar(
            name=esc(ph), orientation="h", y=[ylabels[i] for i in idx],
            x=[max(r["end_ms"] - r["start_ms"], min_w) / 1000 for r in sub],
            base=[r["start_ms"] / 1000 for r in sub],
            text=[esc(bar_text(r)) for r in sub], textposition="outside",
            textfont={"size": 11}, cliponaxis=False,
            customdata=[[r["node_id"] or "", r["id"]] for r in sub],
            hovertext=[hover_html(r) for r in sub], hoverinfo="text",
            marker={"color": colours[ph],
                    "pattern": {"shape": ["/" if r["status"] != "fresh" else "" for r in sub],
                                "fillmode": "overlay", "fgcolor": "#ffffff"},
                    "line": {"color": ["#111827" if selected and r["node_id"] == selected
                                       else colours[ph] for r in sub],
                             "width": [2.5 if selected and r["node_id"] == selected else 0.5
                                       for r in sub]}}))
    if rr is not None:
        fig.add_trace(go.Bar(
            name="running now", orientation="h", y=[ylabels[-1]],
            x=[max(rr["end_ms"] - rr["start_ms"], min_w) / 1000], base=[rr["start_ms"] / 1000],
            text=[esc(bar_text(rr))], textposition="outside", textfont={"size": 11},
            cliponaxis=False, customdata=[["", rr["id"]]], hovertext=[hover_html(rr)],
            hoverinfo="text",
            marker={"color": RUNNING_COLOUR, "pattern": {"shape": "x", "fillmode": "overlay",
                                                         "fgcolor": "#ffffff"}}))
    if any(r["status"] in ("replayed", "reused") for r in rows):
        fig.add_trace(go.Bar(name="hatched: replayed or reused (no model time)",
                             orientation="h", y=[None], x=[None], showlegend=True,
                             marker={"color": "#9ca3af", "pattern": {"shape": "/"}},
                             hoverinfo="skip"))
    # the legend sits above the bars; in the page's narrow column its entries stack one
    # per line, and a fixed top margin let them cover the first bars
    n_legend = sum(1 for t in fig.data if t.showlegend is not False)
    top = 30 + 20 * n_legend
    height = top + 70 + 30 * max(1, len(rows))
    fig.update_layout(
        barmode="overlay", height=height, margin={"l": 8, "r": 120, "t": top, "b": 40},
        xaxis={"title": {"text": "seconds since the run started"}, "rangemode": "tozero",
               "range": [0, span / 1000 * 1.08], "automargin": True},
        yaxis={"autorange": "reversed", "automargin": True, "tickfont": {"size": 11},
               "categoryorder": "array", "categoryarray": ylabels},
        legend={"title": {"text": "phase"}, "orientation": "h", "y": 1.0, "yanchor": "bottom",
                "x": 0, "font": {"size": 11}},
        showlegend=True, plot_bgcolor="#ffffff", clickmode="event+select",
        hoverlabel={"align": "left"})
    fig.update_xaxes(showgrid=True, gridcolor="#f3f4f6")
    return fig


def summary_text(trace: Any) -> str:
    """One line under the waterfall: calls, model time, share of prompt tokens cached."""
    rows = call_rows(trace)
    if not rows:
        return ""
    calls = [r for r in rows if r["type"] == "call"]
    scored = len(rows) - len(calls)
    pt = sum(int(r["prompt_tokens"] or 0) for r in calls)
    cached = sum(int(r["cached_prompt_tokens"] or 0) for r in calls)
    replayed = sum(1 for r in rows if r["status"] != "fresh")
    model_ms = sum(r["latency_ms"] for r in rows)
    parts = [f"{len(calls)} LLM call(s)"]
    if scored:
        parts.append(f"{scored} teacher-forced scoring(s)")
    parts.append(f"{_secs(model_ms)} of model time")
    if pt:
        parts.append(f"{cached / pt:.0%} of prompt tokens from the prefix cache")
    if replayed:
        parts.append(f"{replayed} replayed or reused")
    return " · ".join(parts)
