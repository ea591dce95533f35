"""The interactive graph: a bidirectional Streamlit component around vis-network.

Why a component rather than ``components.html``: the iframe stays mounted across
reruns, so each redraw while a method runs sends only the node/edge data (the
vis-network script is loaded once, from a file the browser caches) and the graph is
updated in place (no flicker, zoom kept); and clicking a node sends its id back to
Python, which selects it in the inspector.

The component folder (index.html + the vis-network build that ships with pyvis) is
served to every visitor's browser as same-origin script, so no one else may be able to
write it: it is a fresh private folder per process (``tempfile.mkdtemp``: created
atomically, mode 0700, an unpredictable name), its files are created exclusively, and
before each use the folder's owner, mode and file list and the files' SHA-256 are checked
against what was written; anything else makes a new folder. (It used to be a fixed name
in the shared temp folder, reused if present: a file planted there ran in every page.)
"""
from __future__ import annotations

import atexit
import base64
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

from ..viz.graph import GRAPH_CSS, GRAPH_JS, vis_js_path

_INDEX = """<!DOCTYPE html>
<html><head><meta charset="utf-8">
%(csp)s
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
_COMPONENT_DIR: Path | None = None
_DIR: Path | None = None
_FILES: dict[str, bytes] | None = None
_VERIFIED: dict[str, tuple] = {}        # file name -> (inode, size, mtime) when last hashed


def index_html() -> str:
    """The component page, with a Content-Security-Policy: Streamlit gives every component
    iframe the same fixed sandbox (scripts and same-origin allowed; not settable from
    Python in 1.67), so the page itself allows only its own two scripts (the vis-network
    file and the inline script, by hash), no network requests, no forms, no plugins."""
    inline = (_INDEX % {"csp": "", "css": GRAPH_CSS, "js": GRAPH_JS}).rsplit("<script>", 1)[1]
    inline = inline.split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(inline.encode("utf-8")).digest()).decode()
    csp = ("default-src 'none'; script-src 'self' 'sha256-%s'; style-src 'self' "
           "'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "
           "connect-src 'none'; base-uri 'none'; form-action 'none'; object-src 'none'" % digest)
    return _INDEX % {"csp": f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
                     "css": GRAPH_CSS, "js": GRAPH_JS}


def _files() -> dict[str, bytes]:
    global _FILES
    if _FILES is None:
        _FILES = {"index.html": index_html().encode("utf-8"),
                  "vis-network.min.js": vis_js_path().read_bytes()}
    return _FILES


def _private(st: os.stat_result, *, folder: bool) -> bool:
    kind = stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)
    return kind and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _intact(d: Path) -> bool:
    """Whether ``d`` is still ours alone and holds exactly the files we wrote."""
    files = _files()
    try:
        if not _private(os.lstat(d), folder=True) or set(os.listdir(d)) != set(files):
            return False                   # an extra file would be served as well
        for name, data in files.items():
            st = os.lstat(d / name)        # lstat: a symbolic link is not our file
            if not _private(st, folder=False):
                return False
            sig = (st.st_ino, st.st_size, st.st_mtime_ns)
            if _VERIFIED.get(name) != sig:
                if (d / name).read_bytes() != data:
                    return False
                _VERIFIED[name] = sig
    except OSError:
        return False
    return True


def _write_private_dir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="workbench-graph-"))
    for name, data in _files().items():
        fd = os.open(d / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def component_dir() -> Path:
    """The folder the component is served from: this process's private copy, checked."""
    global _DIR
    if _DIR is None or not _intact(_DIR):
        _VERIFIED.clear()
        _DIR = _write_private_dir()
        if not _intact(_DIR):              # e.g. a umask or file system that ignores modes
            raise RuntimeError(f"The graph component folder {_DIR} is not private to this "
                               f"user; set TMPDIR to a folder only you can write.")
    return _DIR


def _component() -> Any:
    global _COMPONENT, _COMPONENT_DIR
    d = component_dir()
    if _COMPONENT is None or d != _COMPONENT_DIR:
        import streamlit.components.v1 as components
        _COMPONENT = components.declare_component("wb_graph", path=str(d))
        _COMPONENT_DIR = d
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
               "selected": data.get("selected"), "min_scale": data.get("min_scale")}
    value = _component()(data=payload, options=options or vis_options(data.get("view", "graph")),
                         height=height, empty=empty, reset=reset, key=key, default=None)
    if isinstance(value, dict):
        return value.get("node"), value.get("t")
    return None, None
