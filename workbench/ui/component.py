"""The interactive graph: a bidirectional Streamlit component around vis-network.

Why a component rather than ``components.html``: the iframe stays mounted across
reruns, so each redraw while a method runs sends only the node/edge data (the
vis-network script is loaded once, from a file the browser caches) and the graph is
updated in place (no flicker, zoom kept); and clicking a node sends its id back to
Python, which selects it in the inspector.

The component folder (index.html + the vis-network build that ships with pyvis) is
written once into a temporary folder keyed by its content hash.
"""
from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..viz.graph import GRAPH_CSS, GRAPH_JS, vis_js_path

_INDEX = """<!DOCTYPE html>
<html><head><meta charset="utf-8">
<style>%(css)s
#wb-wrap { position: relative; }
#wb-msg { position: absolute; top: 8px; left: 10px; color: #6b7280; font-size: 13px; }
</style>
<script src="vis-network.min.js"></script>
</head><body>
<div id="wb-wrap"><div id="wb-graph" style="height:560px"></div><div id="wb-msg"></div></div>
<ul id="wb-labels" class="wb-sr" aria-label="graph nodes"></ul>
<script>
%(js)s
let G = null, lastHeight = 0;
function send(type, extra) {
  window.parent.postMessage(Object.assign({isStreamlitMessage: true, type: type}, extra || {}), '*');
}
window.addEventListener('message', function (ev) {
  const m = ev.data;
  if (!m || m.type !== 'streamlit:render') return;
  const a = m.args || {}; const data = a.data || {nodes: [], edges: []};
  const h = a.height || 560;
  const box = document.getElementById('wb-graph');
  if (h !== lastHeight) { box.style.height = h + 'px'; lastHeight = h; send('streamlit:setFrameHeight', {height: h + 4}); }
  if (!G) {
    G = new WbGraph(box, document.getElementById('wb-labels'), a.options || {}, function (id) {
      if (id === '__more__') return;
      send('streamlit:setComponentValue', {value: {node: id, t: Date.now()}, dataType: 'json'});
    });
    window.wbNetwork = G.network;
  }
  if (a.reset) G.userMoved = false;
  G.update(data);
  document.getElementById('wb-msg').textContent = data.nodes.length ? '' : (a.empty || 'No nodes yet.');
});
send('streamlit:componentReady', {apiVersion: 1});
</script></body></html>
"""

_COMPONENT = None


def component_dir() -> Path:
    html = _INDEX % {"css": GRAPH_CSS, "js": GRAPH_JS}
    src = vis_js_path()
    digest = hashlib.sha256(html.encode() + str(src.stat().st_size).encode()).hexdigest()[:12]
    d = Path(tempfile.gettempdir()) / f"workbench-graph-component-{digest}"
    if not (d / "index.html").exists() or not (d / "vis-network.min.js").exists():
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, d / "vis-network.min.js")
        tmp = d / "index.html.tmp"
        tmp.write_text(html, encoding="utf-8")
        tmp.replace(d / "index.html")
    return d


def _component() -> Any:
    global _COMPONENT
    d = component_dir()
    if _COMPONENT is None or not (d / "index.html").exists():
        import streamlit.components.v1 as components
        _COMPONENT = components.declare_component("wb_graph", path=str(d))
    return _COMPONENT


def graph(data: dict[str, Any], *, key: str, height: int = 560, options: dict[str, Any] | None = None,
          empty: str = "No nodes yet.", reset: bool = False) -> tuple[str | None, Any]:
    """Draw (or update in place) a graph; returns (last clicked node id, click stamp)."""
    from ..viz.graph import vis_options
    # The escaped-HTML "title" is for pyvis' own template; the component builds tooltips
    # from "tip" with textContent, so the title is not sent (it would double the payload).
    strip = ("title",)
    payload = {"nodes": [{k: v for k, v in n.items() if k not in strip} for n in data.get("nodes", [])],
               "edges": [{k: v for k, v in e.items() if k not in strip} for e in data.get("edges", [])],
               "selected": data.get("selected")}
    value = _component()(data=payload, options=options or vis_options(data.get("view", "graph")),
                         height=height, empty=empty, reset=reset, key=key, default=None)
    if isinstance(value, dict):
        return value.get("node"), value.get("t")
    return None, None
