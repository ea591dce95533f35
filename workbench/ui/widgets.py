"""Reusable Streamlit widgets: page set-up, errors, graph, pickers (the node inspector,
the knob inputs and the what-if panel live in :mod:`.inspector`, :mod:`.knob_inputs` and
:mod:`.whatif_panel`).

Untrusted text (passages, model output, prompts, node text) is shown with
``st.code`` / ``st.text`` / dataframes, or through :func:`~workbench.viz.safe.md_escape`
in markdown; the only raw HTML is the token heatmap and the legend, whose text is
escaped (heatmap) or fixed by the workbench (legend). No ``unsafe_allow_html``.
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from .. import config as cfgmod
from .. import settings as settings_mod
from .. import trace as T
from ..annotations import label as tag_label
from ..store import Store, StoreError
from ..viz.graph import build_view
from ..viz.inspect import fmt_score, node_call_ids, run_summary
from ..viz.names import kind_name, phase_name
from ..viz.safe import esc, md_escape, shorten
from . import data as uidata
from .component import graph as graph_component
from .answer_view import answer_box  # noqa: F401  (pages call W.answer_box)
from .inspector import inspector  # noqa: F401  (pages call W.inspector)
from .knob_inputs import knob_inputs  # noqa: F401  (pages call W.knob_inputs)
from .whatif_panel import whatif_panel  # noqa: F401  (pages call W.whatif_panel)

# ---------------------------------------------------------------- set-up, errors, store


_CSS = """<style>
.block-container { padding-top: 2.2rem; padding-bottom: 1.5rem; }
h1 { font-size: 1.75rem !important; padding: 0 0 0.4rem 0 !important; }
[data-testid="stMetricValue"] { font-size: 1.35rem; }
[data-testid="stMetricLabel"] p { font-size: 0.8rem; }
</style>"""


def _ensure_navigation() -> None:
    """A first request straight to /ask (say) after a server start runs the page in
    Streamlit's legacy pages/-folder mode, bypassing streamlit_app.py's st.navigation (its
    page list, layout and titles). Leave that mode and rerun: the entry script then
    resolves the same URL through st.navigation."""
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:         # pragma: no cover - a Streamlit without this internals
        return
    if PagesManager.uses_pages_directory and _has_ctx() and not _under_apptest():
        PagesManager.uses_pages_directory = False
        st.rerun()


def _under_apptest() -> bool:
    """AppTest resets Streamlit's pages/-folder flag before every run and mocks the
    runtime; rerunning there would swallow the widget interaction being tested."""
    try:
        from streamlit.runtime import Runtime
        return type(Runtime._instance).__name__ in ("MagicMock", "Mock")
    except Exception:      # noqa: BLE001
        return False


def setup_page(*, warm_up: bool = False) -> Any:
    """Plug-ins, compact styling, settings; returns the Settings. Call at the top of every page.

    ``warm_up`` starts loading the model, embedder and default index in the background
    (pages that run methods), so the first run does not wait for them.
    """
    _ensure_navigation()
    st.html(_CSS)
    for err in uidata.load_plugins():
        st.warning(err)
    from . import access
    s = access.current()       # the host's settings, with this session's choices when shared
    if warm_up:
        from . import warm
        warm.start(s)
    return s


def warm_status(settings: Any) -> None:
    """A caption while the background warm-up is still loading things."""
    from . import warm
    stt = warm.status(settings)
    if stt and not stt.get("done"):
        st.caption(f":material/hourglass_top: Warming up ({stt.get('step')}): the model, the "
                   "embedder and the retrieval index load once per process; a run started now "
                   "waits for them.")


def error(message: str, hint: str | None = None, *, icon: str = ":material/error:") -> None:
    st.error(message + (f"\n\n{hint}" if hint else ""), icon=icon)


def friendly(e: BaseException) -> str:
    """A readable message for an exception (no traceback)."""
    from ..llm.base import ContextOverflowError, ModelFileError
    if isinstance(e, ModelFileError):
        return f"Model missing or unusable: {e} (Settings → model)."
    if isinstance(e, ContextOverflowError):
        return f"Context overflow: {e}"
    if isinstance(e, (StoreError, cfgmod.ConfigError, LookupError, FileNotFoundError)):
        return str(e)
    return f"{type(e).__name__}: {e}"


_STORES: dict[str, Store] = {}


def store() -> Store:
    """The run store for the current WORKBENCH_HOME (one object per path per process)."""
    p = str(settings_mod.store_path())
    if p not in _STORES:
        _STORES[p] = Store(p)
    return _STORES[p]


def store_or_stop() -> Store:
    try:
        return store()
    except StoreError as e:
        error(str(e))
        st.stop()
        raise


def methods_or_stop() -> dict[str, type]:
    """The registered methods; a page without any explains why and stops."""
    methods = uidata.method_classes()
    if not methods:
        error("No method is registered yet.",
              "Methods appear here as their modules land in workbench/methods/.")
        for msg in uidata.method_load_errors():
            st.caption(msg)
        st.stop()
    return methods


def _has_ctx() -> bool:
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
        return get_script_run_ctx(suppress_warning=True) is not None
    except Exception:      # noqa: BLE001
        return False


# ---------------------------------------------------------------- graph, legend, status


def legend(items: list[tuple]) -> None:
    """Colour chips for the states on screen (fixed workbench labels, no run text)."""
    chips = "".join(
        f'<span style="display:inline-block;margin:0 6px 4px 0;padding:1px 7px;font-size:12px;'
        f'border-radius:4px;background:{esc(fill)};border:2px {"dashed" if dashed else "solid"} '
        f'{esc(border)}">{esc(label)}</span>' for _, label, fill, border, dashed in items)
    st.html(f'<div class="wb-legend">{chips}</div>')


def status_line(summary: dict[str, Any], *, status: str, elapsed_s: float,
                error_msg: str | None = None) -> None:
    icon = {"running": ":material/progress_activity:", "starting": ":material/hourglass_top:",
            "waiting": ":material/hourglass_top:",
            "finished": ":green[:material/check_circle:]", "refused": ":orange[:material/block:]",
            "failed": ":red[:material/error:]", "interrupted": ":material/stop_circle:",
            "pending": ":material/schedule:"}.get(status, "•")
    phase = phase_name(summary.get("phase")) or "-"
    ppl = summary.get("mean_perplexity")
    parts = [f"{icon} **{md_escape(status)}**", f"phase **{md_escape(phase)}**",
             f"{summary.get('nodes', 0)} nodes", f"{summary.get('llm_calls', 0)} LLM calls",
             f"{summary.get('tokens', 0)} tokens", f"{elapsed_s:.1f} s"]
    if ppl is not None:
        parts.append(f"mean PPL {ppl:.2f}")
    st.markdown(" · ".join(parts))
    if status == "starting":
        st.caption("Preparing the run: dataset, retrievers and embedder (the first run after a "
                   "start also builds the retrieval index).")
    if error_msg and status in ("failed", "interrupted"):
        (st.error if status == "failed" else st.info)(error_msg)


def draw_graph(trace: Any, *, key: str, view: str | None = None, whatif: Any = None,
               badges: dict[str, list[str]] | None = None, height: int = 520,
               empty: str = "The graph appears here as the method runs.",
               triage: Any = None, min_scale: float | None = None,
               depends: list[str] | None = None) -> str | None:
    """Draw the trace (``triage``: a Triage whose gold markers and breaking node are
    drawn; ``min_scale``: the least zoom after fitting, so labels stay readable in a narrow
    column); returns a node id when the user clicked one since the last call."""
    # A click reaches session state before this rerun draws: take it first, or the graph
    # is drawn with the previous node still emphasised and the new one only vis-selected.
    pending = st.session_state.get(f"{key}__graph")
    pending = pending if isinstance(pending, dict) else {}
    clicked = _take_click(trace, key, pending.get("node"), pending.get("t"))
    sel = st.session_state.get(f"{key}__node")
    v = view or (trace.meta or {}).get("view") or "graph"
    data = build_view(trace, view=v, whatif=whatif, badges=badges, selected=sel,
                      triage=triage.overlay() if triage is not None else None,
                      depends=depends)
    if min_scale:
        data["min_scale"] = min_scale
    st.session_state[f"{key}__view"] = data          # tests and exports read this
    node, t = graph_component(data, key=f"{key}__graph", height=height, empty=empty)
    clicked = _take_click(trace, key, node, t) or clicked
    legend(data["legend"])
    if data.get("hidden"):
        st.caption(f"{data['hidden']} more nodes are not drawn (cap); use the node list.")
    return clicked


def _take_click(trace: Any, key: str, node: Any, t: Any) -> str | None:
    """Select a node clicked on the graph, once per click; returns it."""
    if not node or t == st.session_state.get(f"{key}__click_t"):
        return None
    st.session_state[f"{key}__click_t"] = t
    if node not in trace.nodes:
        return None
    st.session_state[f"{key}__node"] = node
    st.session_state[f"{key}__sel"] = node
    st.session_state[f"{key}__auto"] = None
    return node


def node_picker(trace: Any, *, key: str) -> str | None:
    """Select a node (kept in sync with clicks on the graph).

    Until the user picks a node, the selection follows the run: the newest node while
    it grows, then the answer node.
    """
    ids = list(trace.nodes)
    if not ids:
        return None
    ss = st.session_state
    ans = (trace.answer or {}).get("node_id")
    auto = ans if ans in trace.nodes else ids[-1]
    cur = ss.get(f"{key}__sel")
    if cur not in trace.nodes or cur == ss.get(f"{key}__auto"):
        ss[f"{key}__sel"] = auto           # the user has not chosen: follow the run
    ss[f"{key}__auto"] = auto

    def fmt(nid: str) -> str:          # stable while the node's state changes
        n = trace.nodes[nid]
        return f"{nid} · {n.kind} · {shorten(n.text, 56)}"

    nid = st.selectbox("Node", ids, key=f"{key}__sel", format_func=fmt,
                       help="Or click a node in the graph.")
    ss[f"{key}__node"] = nid
    return nid


def summary_row(trace: Any, label: str, verdict: dict[str, Any] | None, wall_s: float | None) -> dict:
    s = run_summary(trace)
    return {"label": label, "status": s["status"], "answer": s["answer"],
            "correct": None if verdict is None else bool(verdict.get("correct")),
            "llm_calls": s["llm_calls"], "tokens": s["tokens"],
            "wall_s": round(wall_s if wall_s is not None else s["elapsed_ms"] / 1000.0, 2),
            "mean_ppl": None if s["mean_perplexity"] is None else round(s["mean_perplexity"], 3),
            "nodes": s["nodes"], "paths": s["paths"],
            "retrieval": T.retrieval_label(trace.retrievers())}


def tag_text(tags: list[str]) -> str:
    return ", ".join(tag_label(t) for t in tags)


# ---------------------------------------------------------------- pickers

OWN = "__own__"


def question_picker(ds_name: str, *, key: str) -> tuple[str, str | None, Any]:
    """A dataset question or one typed by the user: (text, question id, Question)."""
    qs: list[Any] = []
    try:
        qs = uidata.questions(uidata.get_dataset(ds_name))
    except uidata.DatasetError as e:
        st.warning(str(e) + " You can still type a question if the method needs no corpus.")
    except Exception as e:   # noqa: BLE001 - a broken importer must not break the page
        st.warning(f"Dataset {ds_name!r} could not be read: {friendly(e)}")
    qmap = {q.id: q for q in qs}
    options = [OWN] + list(qmap)
    k = f"{key}__q"
    if st.session_state.get(k) not in options:
        st.session_state[k] = options[1] if len(options) > 1 else OWN
    if not qs:
        st.caption(f"Dataset {ds_name!r} has no questions; type your own.")

    def fmt(i: str) -> str:
        return "✎ Type your own question…" if i == OWN else f"{shorten(qmap[i].question, 110)}  [{i}]"

    pick = st.selectbox("Question", options, key=k, format_func=fmt)
    if pick == OWN:
        text = st.text_input("Your question", key=f"{key}__own",
                             placeholder="e.g. Who directed the film that won …?")
        return text.strip(), None, None
    q = qmap[pick]
    return q.question, q.id, q


def preferred_methods() -> list[str]:
    """The methods that declare ``preferred = True``, by name: put first by the pickers."""
    from ..methods import all_methods
    return [n for n, cls in all_methods().items() if getattr(cls, "preferred", False)]


def default_method(names: list[str], offset: int = 0) -> str:
    first = preferred_methods()
    pref = [m for m in first if m in names] + [m for m in names if m not in first]
    return pref[min(offset, len(pref) - 1)]


def method_picker(methods: dict[str, type], *, key: str, label: str = "Method",
                  offset: int = 0) -> str:
    names = list(methods)
    k = f"{key}__m"
    if st.session_state.get(k) not in names:
        st.session_state[k] = default_method(names, offset)

    def fmt(n: str) -> str:
        c = methods[n]
        t = getattr(c, "title", "") or n
        return f"{t} ({n})" if t != n else n

    return st.selectbox(label, names, key=k, format_func=fmt)


def method_help(cls: type) -> None:
    desc = getattr(cls, "description", "") or ""
    bits = [f"kind: {getattr(cls, 'kind', '?')}", f"view: {getattr(cls, 'view', 'graph')}"]
    thr = getattr(cls, "thresholds", {}) or {}
    if thr:
        bits.append("what-if: " + ", ".join(f"{k} via {v[0]}" for k, v in thr.items()))
    st.caption(md_escape(desc) + ("  \n" if desc else "") + " · ".join(bits))
    if getattr(cls, "Config", None) is not None:
        from .method_docs import paper_table
        paper_table(cls.Config)


def nodes_table(trace: Any) -> None:
    rows = []
    for n in trace.nodes.values():
        sc = ", ".join(f"{k}={fmt_score(v)}" for k, v in list(n.scores.items())[:4])
        rows.append({"id": n.id, "kind": kind_name(n.kind), "state": n.state, "layer": n.layer,
                     "scores": sc, "retrieved": sum(len(e.get("hits", [])) for e in n.evidence),
                     "llm calls": len(node_call_ids(trace, n)), "text": shorten(n.text, 160)})
    st.dataframe(rows, hide_index=True, width="stretch")
