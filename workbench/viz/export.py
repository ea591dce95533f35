"""Export a stored run: JSON, and a standalone HTML page (graph + inspector, no server).

The HTML page inlines vis-network and all run data; it loads nothing from the
network and has a Content-Security-Policy that forbids it. Every piece of run text
is put into the page as JSON inside a ``<script type="application/json">`` element
(with ``<``, ``>`` and ``&`` escaped) and rendered by the page with ``textContent``,
so passages and model output can never become markup.
"""
from __future__ import annotations

import json
import time
from typing import Any

from ..trace import Trace
from .graph import GRAPH_CSS, GRAPH_JS, build_view, to_pyvis, vis_js
from .inspect import node_details, run_summary
from .safe import esc, json_for_script


def run_json(export: dict[str, Any]) -> str:
    return json.dumps(export, indent=2, default=str)


def _trace_of(export: dict[str, Any]) -> Trace:
    if export.get("events"):
        return Trace.fold(export["events"])
    return Trace.from_dict(export["trace"])


def standalone_html(export: dict[str, Any], *, view: str | None = None) -> str:
    from ..annotations import label, node_badges
    tr = _trace_of(export)
    run = export.get("run") or {}
    anns = export.get("annotations") or []
    badges = node_badges(anns, tr)
    v = view or (tr.meta or {}).get("view") or "graph"
    data = build_view(tr, view=v, badges=badges)
    net = to_pyvis(data)
    nodes = [{**pn, "tip": n["tip"], "plain": n.get("plain"), "state": n.get("state")}
             for pn, n in zip(net.nodes, data["nodes"])]
    edges = [{**pe, "tip": e["tip"]} for pe, e in zip(net.edges, data["edges"])]
    details = {nid: node_details(tr, nid) for nid in tr.nodes}
    summary = run_summary(tr)
    payload = {
        "nodes": nodes, "edges": edges, "options": net.options, "details": details,
        "legend": data["legend"], "summary": summary,
        "run": {k: run.get(k) for k in ("run_id", "method", "dataset", "question_id",
                                         "question", "status", "answer", "correct",
                                         "model_name", "wall_ms", "llm_calls")},
        "question": tr.question, "gold": (tr.meta or {}).get("gold"),
        "config": tr.config,
        "annotations": [{"target_kind": a.get("target_kind"), "target_id": a.get("target_id"),
                         "tags": [label(t) for t in a.get("tags") or []],
                         "note": a.get("note") or "", "author": a.get("author") or ""}
                        for a in anns],
        "exported_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    title = f"{tr.method} run {tr.run_id}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<style>{GRAPH_CSS}{_PAGE_CSS}</style></head>
<body>
<header><h1 id="wb-title"></h1><div id="wb-meta"></div></header>
<main>
  <section id="wb-left"><div id="wb-graph" style="height:620px"></div>
    <div id="wb-legend"></div><ul id="wb-labels" class="wb-sr"></ul></section>
  <aside id="wb-panel"><h2>Node inspector</h2><p class="hint">Click a node in the graph.</p>
    <div id="wb-inspector"></div></aside>
</main>
<section id="wb-annotations"></section>
<script>{vis_js()}</script>
<script id="wb-data" type="application/json">{json_for_script(payload)}</script>
<script>{GRAPH_JS}{_PAGE_JS}</script>
</body></html>"""


_PAGE_CSS = """
body { color: #1f2937; margin: 0 16px 24px; }
header h1 { font-size: 20px; margin: 14px 0 4px; }
#wb-meta { font-size: 13px; color: #4b5563; } #wb-meta b { color: #111827; }
main { display: flex; gap: 16px; margin-top: 12px; }
#wb-left { flex: 3; min-width: 0; } #wb-panel { flex: 2; min-width: 0; max-height: 760px; overflow: auto;
  border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 12px; }
#wb-panel h2, #wb-annotations h2 { font-size: 16px; margin: 4px 0; } .hint { color: #6b7280; font-size: 12px; }
#wb-legend span { display: inline-block; font-size: 11px; padding: 1px 6px; margin: 4px 4px 0 0;
  border: 2px solid; border-radius: 4px; }
.sec { margin-top: 10px; } .sec h3 { font-size: 13px; margin: 6px 0 3px; color: #374151; }
pre { white-space: pre-wrap; word-break: break-word; background: #f9fafb; padding: 6px; border-radius: 4px;
  font-size: 12px; max-height: 260px; overflow: auto; }
table.grid { border-collapse: collapse; font-size: 12px; width: 100%; }
table.grid th, table.grid td { border: 1px solid #e5e7eb; padding: 2px 4px; text-align: left; vertical-align: top; }
.tok { border-radius: 3px; font-family: ui-monospace, monospace; font-size: 12px; white-space: pre-wrap; }
"""

_PAGE_JS = r"""
const D = JSON.parse(document.getElementById('wb-data').textContent);
function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined && text !== null) e.textContent = String(text); if (cls) e.className = cls; return e; }
function fmt(v) { return (typeof v === 'number') ? (Number.isInteger(v) ? String(v) : (Math.abs(v) < 1000 ? v.toPrecision(4) : v.toFixed(0))) : (v === null || v === undefined ? '–' : String(v)); }
function probColour(p) {
  if (p === null || p === undefined) return '#e5e7eb';
  p = Math.max(0, Math.min(1, p)); let a, b, t;
  if (p < 0.5) { a = [254,202,202]; b = [253,230,138]; t = p / 0.5; } else { a = [253,230,138]; b = [187,247,208]; t = (p - 0.5) / 0.5; }
  return 'rgb(' + [0,1,2].map(function (i) { return Math.round(a[i] + (b[i] - a[i]) * t); }).join(',') + ')';
}
function fmtScore(v) { return (typeof v === 'number' && isFinite(v)) ? v.toFixed(3) : fmt(v); }  // = inspect.fmt_score
function table(rows, cols, f) {
  const t = el('table', null, 'grid'); const h = el('tr');
  for (const c of cols) h.appendChild(el('th', c)); t.appendChild(h);
  for (const r of rows) { const tr = el('tr'); for (const c of cols) tr.appendChild(el('td', (f || fmt)(r[c]))); t.appendChild(tr); }
  return t;
}
function section(parent, title) { const s = el('div', null, 'sec'); s.appendChild(el('h3', title)); parent.appendChild(s); return s; }
function showNode(id) {
  const box = document.getElementById('wb-inspector'); while (box.firstChild) box.removeChild(box.firstChild);
  const d = D.details[id]; if (!d) return;
  box.appendChild(el('h3', d.id + ' · ' + (d.kind_name || d.kind) + ' · ' + d.state));
  box.appendChild(el('pre', d.text));
  if (d.parents.length || d.children.length) {
    const s = section(box, 'Parents / children');
    s.appendChild(el('div', 'parents: ' + (d.parents.map(function (p) { return p.id; }).join(', ') || '–')));
    s.appendChild(el('div', 'children: ' + (d.children.map(function (p) { return p.id; }).join(', ') || '–')));
  }
  if (d.scores.length) section(box, 'Scores and thresholds').appendChild(table(d.scores, ['label', 'value', 'threshold', 'margin', 'passes', 'source'], fmtScore));
  if (d.queries.length) { const s = section(box, 'Retrieval'); for (const q of d.queries) s.appendChild(el('div', 'query: ' + q)); s.appendChild(table(d.evidence, ['rank', 'retriever', 'score', 'title', 'text'].concat(d.evidence.some(r => r.passage) ? ['passage'] : []))); }
  for (const k in d.knowledge) section(box, 'Knowledge (' + k + ')').appendChild(el('pre', typeof d.knowledge[k] === 'string' ? d.knowledge[k] : JSON.stringify(d.knowledge[k], null, 1)));
  for (const k in d.answers) section(box, 'Answer (' + k + ')').appendChild(el('pre', typeof d.answers[k] === 'string' ? d.answers[k] : JSON.stringify(d.answers[k], null, 1)));
  d.llm_calls.forEach(function (c, i) {
    const s = section(box, 'LLM call ' + (i + 1) + ': ' + (c.call || c.purpose) + (c.phase_name ? ', ' + c.phase_name : '') + (c.replayed_from ? ', replayed from the store' : '') + ' (' + fmt(c.latency_ms) + ' ms, ' + fmt(c.prompt_tokens) + '+' + fmt(c.completion_tokens) + ' tokens, perplexity ' + fmt(c.perplexity) + ', confidence ' + fmt(c.confidence) + ')');
    const det = el('details'); det.appendChild(el('summary', 'prompt')); det.appendChild(el('pre', c.prompt)); s.appendChild(det);
    const heat = el('div');
    for (const t of c.tokens) { const sp = el('span', t.piece, 'tok'); sp.style.background = probColour(t.prob); sp.title = 'p=' + fmt(t.prob) + ' logprob=' + fmt(t.logprob); heat.appendChild(sp); }
    if (!c.tokens.length) heat.appendChild(el('pre', c.output));
    s.appendChild(heat);
  });
  if (Object.keys(d.attrs).length) section(box, 'Attributes').appendChild(el('pre', JSON.stringify(d.attrs, null, 1)));
}
(function () {
  const r = D.run || {}, s = D.summary || {};
  document.getElementById('wb-title').textContent = (r.method || s.method || '') + ': ' + (D.question || r.question || '');
  const meta = document.getElementById('wb-meta');
  const parts = [['run', r.run_id || s.run_id], ['status', r.status || s.status], ['answer', s.answer], ['correct', r.correct],
                 ['gold', D.gold ? (D.gold.answers || []).join(' | ') : null], ['LLM calls', s.llm_calls], ['tokens', s.tokens],
                 ['wall ms', r.wall_ms || s.elapsed_ms], ['mean perplexity', s.mean_perplexity], ['model', r.model_name], ['exported', D.exported_at]];
  for (const p of parts) { if (p[1] === null || p[1] === undefined) continue; const sp = el('span'); sp.appendChild(el('b', p[0] + ': ')); sp.appendChild(document.createTextNode(fmt(p[1]) + '   ')); meta.appendChild(sp); }
  const lg = document.getElementById('wb-legend');
  for (const l of D.legend) { const sp = el('span', l[1]); sp.style.background = l[2]; sp.style.borderColor = l[3]; if (l[4]) sp.style.borderStyle = 'dashed'; lg.appendChild(sp); }
  const an = document.getElementById('wb-annotations');
  if (D.annotations.length) { an.appendChild(el('h2', 'Annotations')); an.appendChild(table(D.annotations.map(function (a) { return {target: a.target_kind + ' ' + a.target_id, tags: a.tags.join(', '), note: a.note, author: a.author}; }), ['target', 'tags', 'note', 'author'])); }
  const G = new WbGraph(document.getElementById('wb-graph'), document.getElementById('wb-labels'), D.options, showNode);
  G.update({nodes: D.nodes, edges: D.edges, fit: true});
  window.wbNetwork = G.network;
  const first = (D.summary && D.details) ? Object.keys(D.details)[0] : null; if (first) showNode(first);
})();
"""
