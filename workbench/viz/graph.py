"""Reasoning graph / mind map as vis-network data (built with pyvis), and its HTML.

:func:`build_view` turns a :class:`~workbench.trace.Trace` (plus an optional what-if
result, annotation badges and the selected node) into plain node/edge dicts with
colours by state, fixed positions (layered DAG or tidy tree) and escaped labels and
tooltips. :func:`to_pyvis` wraps that in a :class:`pyvis.network.Network`;
:func:`graph_html` renders a standalone page with vis-network inlined (no CDN: the
workbench runs offline), used by the HTML export and as a fallback view.

Untrusted text: labels go through :func:`~workbench.viz.safe.label_esc` (vis draws
them on a canvas with markup off; angle brackets are neutralised anyway); the pyvis
``title`` is escaped HTML; the workbench's own templates never use the title as
HTML at all — they build tooltips from the structured ``tip`` with ``textContent``.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from . import layout
from .inspect import fmt_score, main_score, node_call_ids
from .names import KIND_PREFIX, badge_legend, kind_name
from .safe import esc, json_for_script, label_esc, shorten, wrap
from .style import (ANNOTATION_BORDER, BREAK_BORDER, DEPENDS_BORDER, GOLD_BORDER,
                    SELECTED_BORDER, WHATIF_FAIL, WHATIF_PASS, legend_items, shape_for,
                    style_for)
from .whatif import PRUNED_PATH_STATES, SELECTED_PATH_STATES, WhatIf

MAX_NODES = 300


def _main_score(trace: Any, node: Any) -> str:
    """The node's main score, the same number as the inspector's first headline."""
    m = main_score(trace, node)
    return f"{m['score']} {m['text']}" if m else ""


def node_tip(trace: Any, node: Any, badges: list[str] | None = None,
             triage: dict[str, Any] | None = None) -> dict[str, Any]:
    """Structured tooltip (raw strings; renderers escape or use textContent)."""
    rows: list[list[str]] = [["kind", kind_name(node.kind)], ["state", node.state]]
    if node.layer:
        rows.append(["layer", str(node.layer)])
    for k, v in list(node.scores.items())[:6]:
        thr = node.thresholds.get(k)
        rows.append([k, fmt_score(v) + (f"  (threshold {fmt_score(thr)})" if thr is not None
                                         else "")])
    n_hits = sum(len(ev.get("hits", [])) for ev in node.evidence)
    if node.evidence:
        rows.append(["retrieved", f"{n_hits} item(s) in {len(node.evidence)} retrieval(s)"])
    calls = node_call_ids(trace, node)
    if calls:
        lat = sum(float(trace.llm_calls.get(c, {}).get("latency_ms") or 0) for c in calls)
        rows.append(["LLM calls", f"{len(calls)} ({lat / 1000:.2f} s)"])
    if badges:
        from ..annotations import label
        rows.append(["annotations", ", ".join(label(t) for t in badges)])
    if triage:
        for line in (triage.get("gold") or {}).get(node.id, []):
            rows.append(["gold evidence", line])
        if triage.get("break") == node.id:
            rows.append(["chain breaks here", triage.get("why") or ""])
    return {"head": node.id, "text": shorten(node.text, 400), "rows": rows}


def tip_html(tip: dict[str, Any]) -> str:
    """The tooltip as escaped HTML (for pyvis' own template, which uses innerHTML)."""
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in tip["rows"])
    return (f"<div><b>{esc(tip['head'])}</b><p>{esc(tip['text'])}</p>"
            f"<table>{rows}</table></div>")


def _path_class(state: str) -> str:
    s = str(state).lower()
    return "selected" if s in SELECTED_PATH_STATES else "pruned" if s in PRUNED_PATH_STATES else ""


def build_view(trace: Any, *, view: str = "graph", whatif: WhatIf | None = None,
               badges: dict[str, list[str]] | None = None, selected: str | None = None,
               max_nodes: int = MAX_NODES, label_width: int = 22,
               triage: dict[str, Any] | None = None,
               depends: list[str] | None = None) -> dict[str, Any]:
    """vis-network nodes/edges for a trace; see the module docstring. ``triage`` is
    :meth:`workbench.triage.Triage.overlay`: gold markers and the breaking node;
    ``depends``: the nodes without whose evidence the answer changes (answer-path
    attribution), marked ⇐."""
    depends_on = set(depends or ())
    badges = badges or {}
    gold = (triage or {}).get("gold") or {}
    breaking = (triage or {}).get("break")
    order = list(trace.nodes)
    hidden = 0
    if len(order) > max_nodes:
        hidden = len(order) - max_nodes
        order = order[:max_nodes]
    shown = set(order)
    parents = {nid: [p for p in trace.nodes[nid].parents if p in shown] for nid in order}
    pos = (layout.tree_layout(order, parents) if view == "mindmap"
           else layout.layered_layout(order, parents))

    # path membership -> edge emphasis
    path_state: dict[str, str] = {}
    path_nodes: dict[str, list[str]] = {pid: list(p.get("nodes", [])) for pid, p in trace.paths.items()}
    for pid, p in trace.paths.items():
        path_state[pid] = _path_class(p.get("state", ""))
    if whatif is not None and whatif.paths:
        path_nodes = whatif.path_nodes
        path_state = dict(whatif.paths)
    sel_edges: set[tuple[str, str]] = set()
    pruned_edges: set[tuple[str, str]] = set()
    for pid, nodes in path_nodes.items():
        pairs = set(zip(nodes, nodes[1:]))
        if path_state.get(pid) == "selected":
            sel_edges |= pairs
        elif path_state.get(pid) == "pruned":
            pruned_edges |= pairs
    pruned_edges -= sel_edges

    states_present: list[str] = []
    vis_nodes = []
    for nid in order:
        n = trace.nodes[nid]
        st = style_for(n.state)
        if n.state not in states_present:
            states_present.append(n.state)
        if whatif is not None and nid in whatif.node_pass:
            st = WHATIF_PASS if whatif.node_pass[nid] else WHATIF_FAIL
        text = n.text or kind_name(n.kind)
        label = wrap(shorten(text, 90), label_width)
        if n.kind in KIND_PREFIX:      # two "London" nodes: the extraction, then the answer
            label = KIND_PREFIX[n.kind] + ":\n" + label
        extra = []
        sc = _main_score(trace, n)
        if sc:
            extra.append(sc)
        members = n.attrs.get("merged_from") or n.attrs.get("members")
        if isinstance(members, (list, tuple)) and len(members) > 1:
            extra.append(f"⊕{len(members)} merged")
        if nid in badges:
            extra.append(f"⚑{len(badges[nid])}")
        if gold.get(nid):
            extra.append(f"★ gold {len(gold[nid])}/{triage.get('n_hops') or '?'}")
        if nid == breaking:
            extra.append("✖ breaks here")
        if whatif is not None and nid in whatif.changed:
            extra.append("Δ")
        if nid in depends_on:
            extra.append("⇐ answer depends")
        full_label = label_esc(label) + ("\n" + label_esc(" · ".join(extra)) if extra else "")
        border = st.border
        width = st.border_width
        if nid in badges:
            border, width = ANNOTATION_BORDER, max(width, 3)
        if gold.get(nid):
            border, width = GOLD_BORDER, max(width, 4)
        if nid == breaking:
            border, width = BREAK_BORDER, 6
        if nid in depends_on:
            border, width = DEPENDS_BORDER, max(width, 5)
        if nid == selected:
            border, width = SELECTED_BORDER, 5
        tip = node_tip(trace, n, badges.get(nid), triage)
        x, y = pos.get(nid, (0.0, 0.0))
        vis_nodes.append({
            "id": nid, "label": full_label, "title": tip_html(tip), "tip": tip,
            "shape": shape_for(n.kind), "x": round(x, 1), "y": round(y, 1),
            "kindName": kind_name(n.kind),
            "color": {"background": st.fill, "border": border,
                      "highlight": {"background": st.fill, "border": SELECTED_BORDER},
                      "hover": {"background": st.fill, "border": SELECTED_BORDER}},
            "borderWidth": width,
            "shapeProperties": {"borderDashes": [5, 4] if st.dashes else False},
            "font": {"color": st.font},
            "state": n.state, "kind": n.kind, "plain": shorten(text, 120),
        })
    vis_edges = []
    crossing = _edges_through_nodes(trace.edges, pos, shown)
    for e in trace.edges:
        s, d = e["src"], e["dst"]
        if s not in shown or d not in shown:
            continue
        kind = e.get("kind", "next")
        on_sel, on_pruned = (s, d) in sel_edges, (s, d) in pruned_edges
        colour = "#111827" if on_sel else "#e5e7eb" if on_pruned else "#9ca3af"
        label = e.get("attrs", {}).get("label") or (kind if kind not in ("next", "child") else "")
        vis_edges.append({
            "id": f"{s}->{d}:{kind}", "from": s, "to": d,
            "width": 3.5 if on_sel else 1.2, "color": {"color": colour, "opacity": 1.0},
            "dashes": kind in ("merge", "refers", "reference", "refine", "feedback", "retry"),
            "label": label_esc(shorten(label, 24)) if label else "",
            "title": esc(kind), "tip": {"head": f"{s} → {d}", "text": kind, "rows": []},
            # vis' cubic curve would run straight through the node drawn between the ends
            **({"smooth": {"enabled": True, "type": "curvedCW", "roundness": 0.35}}
               if (s, d) in crossing else {}),
        })
    if hidden:
        vis_nodes.append({"id": "__more__", "label": f"+{hidden} more nodes",
                          "title": esc(f"{hidden} nodes not drawn (cap {max_nodes})"),
                          "tip": {"head": "capped", "text": f"{hidden} nodes not drawn", "rows": []},
                          "shape": "text", "x": 0, "y": -90, "color": {"background": "#fff",
                                                                       "border": "#fff"},
                          "font": {"color": "#6b7280"}, "state": "capped", "kind": "more",
                          "plain": f"+{hidden} more"})
    legend = [(s, st.label, st.fill, st.border, st.dashes)
              for s, st in legend_items(states_present, whatif=whatif is not None)]
    if any(gold.get(nid) for nid in order):
        legend.append(("gold", "★ holds gold evidence", "#ffffff", GOLD_BORDER, False))
    if breaking in shown:
        legend.append(("break", "✖ chain breaks here", "#ffffff", BREAK_BORDER, False))
    if depends_on & shown:
        legend.append(("depends", "⇐ the answer changes without this node's evidence",
                       "#ffffff", DEPENDS_BORDER, False))
    # the badges after the labels (⊕2, ⚑1, Δ), in words; ★, ✖ and ⇐ are listed above
    for badge, meaning in badge_legend([n["label"] for n in vis_nodes]):
        if badge not in ("★", "✖", "⇐"):
            legend.append((f"badge{badge}", f"{badge} {meaning}", "#ffffff", "#e5e7eb", False))
    return {"nodes": vis_nodes, "edges": vis_edges, "view": view, "legend": legend,
            "hidden": hidden, "selected": selected}


def _edges_through_nodes(edges: list[dict[str, Any]], pos: dict[str, tuple[float, float]],
                         shown: set[str], clearance: float = 70.0) -> set[tuple[str, str]]:
    """Edges whose straight line passes within ``clearance`` px (half a node box) of a
    node other than its ends, between them: a step skipped by an edge from its parent to
    its child sits right on that edge, label and all."""
    import bisect
    out: set[tuple[str, str]] = set()
    # by height: an edge only meets the nodes drawn between its ends' rows (none, for the
    # usual edge between adjacent layers), so a 300-node redraw stays cheap
    pts = sorted((pos[nid][1], pos[nid][0], nid) for nid in shown if nid in pos)
    ys = [p[0] for p in pts]
    for e in edges:
        s, d = e["src"], e["dst"]
        if s not in pos or d not in pos or s not in shown or d not in shown:
            continue
        (x1, y1), (x2, y2) = pos[s], pos[d]
        dx, dy = x2 - x1, y2 - y1
        length2 = dx * dx + dy * dy
        if length2 == 0:
            continue
        lo, hi = sorted((y1, y2))
        for y, x, nid in pts[bisect.bisect_left(ys, lo): bisect.bisect_right(ys, hi)]:
            if nid in (s, d):
                continue
            t = ((x - x1) * dx + (y - y1) * dy) / length2
            if 0.05 < t < 0.95:
                px, py = x1 + t * dx, y1 + t * dy
                if (px - x) ** 2 + (py - y) ** 2 < clearance ** 2:
                    out.add((s, d))
                    break
    return out


def vis_options(view: str = "graph") -> dict[str, Any]:
    return {
        "autoResize": True,
        "physics": {"enabled": False},
        "layout": {"improvedLayout": False},
        "interaction": {"hover": True, "tooltipDelay": 150, "multiselect": False,
                        "navigationButtons": False, "keyboard": False, "zoomView": True},
        "nodes": {"font": {"multi": False, "size": 13, "face": "Inter, Arial, sans-serif"},
                  "margin": 8, "widthConstraint": {"maximum": 180}, "size": 14},
        "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.55}},
                  "smooth": {"enabled": True, "type": "cubicBezier",
                             "forceDirection": "vertical" if view == "mindmap" else "vertical",
                             "roundness": 0.45},
                  "font": {"size": 10, "color": "#6b7280", "strokeWidth": 2}},
    }


def to_pyvis(data: dict[str, Any], height: str = "600px") -> Any:
    """A pyvis Network holding the view (titles are escaped HTML)."""
    from pyvis.network import Network
    net = Network(height=height, width="100%", directed=True, cdn_resources="in_line")
    for n in data["nodes"]:
        opts = {k: v for k, v in n.items() if k not in ("id", "label", "tip", "plain", "state",
                                                         "kind", "shape", "color")}
        net.add_node(n["id"], label=n["label"], shape=n.get("shape", "box"),
                     color=n.get("color"), **opts)
    for e in data["edges"]:
        opts = {k: v for k, v in e.items() if k not in ("from", "to", "tip")}
        net.add_edge(e["from"], e["to"], **opts)
    net.options = vis_options(data.get("view", "graph"))
    return net


@functools.lru_cache(maxsize=1)
def vis_js_path() -> Path:
    import pyvis
    return Path(pyvis.__file__).parent / "templates" / "lib" / "vis-9.1.2" / "vis-network.min.js"


@functools.lru_cache(maxsize=1)
def vis_js() -> str:
    return vis_js_path().read_text(encoding="utf-8")


# JavaScript shared by the Streamlit component and the exported pages. It never sets
# innerHTML from data: tooltips and panels are built with textContent.
GRAPH_JS = r"""
function wbTip(tip) {
  const d = document.createElement('div'); d.className = 'wb-tip';
  if (!tip) return d;
  const h = document.createElement('b'); h.textContent = tip.head || ''; d.appendChild(h);
  if (tip.text) { const p = document.createElement('p'); p.textContent = tip.text; d.appendChild(p); }
  if (tip.rows && tip.rows.length) {
    const t = document.createElement('table');
    for (const r of tip.rows) {
      const tr = document.createElement('tr');
      const th = document.createElement('th'); th.textContent = r[0];
      const td = document.createElement('td'); td.textContent = r[1];
      tr.appendChild(th); tr.appendChild(td); t.appendChild(tr);
    }
    d.appendChild(t);
  }
  return d;
}
function wbPrep(items) {
  return items.map(function (o) { const c = Object.assign({}, o); c.title = wbTip(o.tip); delete c.tip; return c; });
}
function wbLabels(listEl, nodes) {
  if (!listEl) return;
  while (listEl.firstChild) listEl.removeChild(listEl.firstChild);
  for (const n of nodes) {
    const li = document.createElement('li'); li.textContent = n.plain || n.id;
    li.setAttribute('data-node-id', n.id); li.setAttribute('data-state', n.state || '');
    listEl.appendChild(li);
  }
}
function WbGraph(container, listEl, options, onSelect) {
  this.nodes = new vis.DataSet([]); this.edges = new vis.DataSet([]);
  this.listEl = listEl; this.userMoved = false;
  this.network = new vis.Network(container, {nodes: this.nodes, edges: this.edges}, options);
  const self = this;
  this.network.on('click', function (p) {
    if (p.nodes && p.nodes.length && onSelect) onSelect(p.nodes[0]);
  });
  this.network.on('dragEnd', function () { self.userMoved = true; });
  this.network.on('zoom', function () { self.userMoved = true; });
}
WbGraph.prototype.update = function (data) {
  // Only nodes and edges whose data changed are handed to vis (a redraw of a 100-node
  // graph while a method runs then touches a handful of items, not all of them).
  const self = this;
  if (!this.sig) { this.sig = new Map(); }
  function changed(items, prefix) {
    return items.filter(function (o) {
      const k = prefix + o.id, s = JSON.stringify(o);
      if (self.sig.get(k) === s) return false;
      self.sig.set(k, s); return true;
    });
  }
  const nid = new Set(data.nodes.map(function (x) { return x.id; }));
  const eid = new Set(data.edges.map(function (x) { return x.id; }));
  const before = this.nodes.length;
  const goneN = this.nodes.getIds().filter(function (i) { return !nid.has(i); });
  const goneE = this.edges.getIds().filter(function (i) { return !eid.has(i); });
  goneN.forEach(function (i) { self.sig.delete('n' + i); });
  goneE.forEach(function (i) { self.sig.delete('e' + i); });
  this.nodes.remove(goneN); this.edges.remove(goneE);
  const n = changed(data.nodes, 'n'), e = changed(data.edges, 'e');
  if (n.length) this.nodes.update(wbPrep(n));
  if (e.length) this.edges.update(wbPrep(e));
  if (data.selected && nid.has(data.selected)) this.network.selectNodes([data.selected]);
  else this.network.unselectAll();
  if (!this.userMoved && (before !== this.nodes.length || data.fit)) {
    this.network.fit({animation: false});
    // A wide graph fitted into a narrow column shrinks its labels below reading size:
    // keep them at min_scale, showing the top of the graph, and let the user pan.
    if (data.min_scale && this.network.getScale() < data.min_scale) {
      const p = Object.values(this.network.getPositions());
      const xs = p.map(function (q) { return q.x; }), ys = p.map(function (q) { return q.y; });
      const h = this.network.body.container.clientHeight || 400, s = data.min_scale;
      this.network.moveTo({scale: s, position: {x: (Math.min.apply(null, xs) + Math.max.apply(null, xs)) / 2,
                                                y: Math.min.apply(null, ys) - 40 / s + h / 2 / s}});
    }
  }
  if (n.length || goneN.length) wbLabels(this.listEl, data.nodes);
  window.wbNodeCount = this.nodes.length;
};
"""

GRAPH_CSS = """
html, body { margin: 0; padding: 0; font-family: Inter, Arial, sans-serif; background: #fff; }
#wb-graph { width: 100%; border: 1px solid #e5e7eb; border-radius: 6px; box-sizing: border-box; }
div.vis-tooltip { position: absolute; visibility: hidden; padding: 6px 8px; max-width: 380px;
  white-space: normal; font-size: 12px; color: #111827; background: #fffbeb;
  border: 1px solid #d1d5db; border-radius: 4px; box-shadow: 2px 2px 8px rgba(0,0,0,.15);
  pointer-events: none; z-index: 10; }
.wb-tip p { margin: 4px 0; } .wb-tip table { border-collapse: collapse; }
.wb-tip th { text-align: left; padding-right: 8px; color: #4b5563; font-weight: 600; }
.wb-sr { position: absolute; left: -10000px; width: 1px; height: 1px; overflow: hidden; }
"""


def graph_html(data: dict[str, Any], *, height: int = 600, title: str = "Reasoning graph") -> str:
    """A self-contained page with the graph (vis-network inlined; no network access)."""
    net = to_pyvis(data, height=f"{height}px")
    nodes = [{**pn, "tip": n["tip"], "plain": n.get("plain"), "state": n.get("state")}
             for pn, n in zip(net.nodes, data["nodes"])]
    edges = [{**pe, "tip": e["tip"]} for pe, e in zip(net.edges, data["edges"])]
    payload = {"nodes": nodes, "edges": edges, "options": net.options}
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{esc(title)}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<style>{GRAPH_CSS}</style></head>
<body><div id="wb-graph" style="height:{int(height)}px"></div><ul id="wb-labels" class="wb-sr"></ul>
<script>{vis_js()}</script>
<script id="wb-data" type="application/json">{json_for_script(payload)}</script>
<script>{GRAPH_JS}
const D = JSON.parse(document.getElementById('wb-data').textContent);
const G = new WbGraph(document.getElementById('wb-graph'), document.getElementById('wb-labels'), D.options, null);
G.update({{nodes: D.nodes, edges: D.edges, fit: true}});
window.wbNetwork = G.network;
</script></body></html>"""
