"""Counterfactual runs on the Runs page: pick a node of a stored run, change it (drop some of
its evidence, add a passage, replace its step text, force its verdict), re-run behind the
run's own stored calls (:func:`workbench.analysis.whatif.whatif`), and see the original and
the counterfactual side by side.

* :func:`form` draws the intervention form for one run and starts a
  :class:`CounterfactualJob` on the app's model: the job waits for its turn in the model's
  line like an Ask run (every visitor may run one; it writes a new run and deletes nothing)
  and re-runs the method in a background thread.
* :func:`result` is the side-by-side view of a run that has a parent (a counterfactual):
  the merged graph of both runs aligned by node id with the changed nodes and the
  intervened node marked, both answers with their correctness, the intervention in words,
  and the calls that ran on the model against those replayed from the original.

Every text that comes from a document, a model or a user is escaped where it is drawn
(:func:`md_escape` for markdown, :func:`label_esc` for graph labels; tables are plain text).
"""
from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable

import numpy as np
import streamlit as st

from .. import trace as T
from ..analysis import diff as D
from ..analysis.whatif import (INTERVENTION_APPLIED, WhatIfError, WhatIfResult, call_kind,
                               check, default_build, node_evidence_ids, node_hits, whatif)
from ..methods.intervene import VERDICT_WORDS, Intervention
from ..trace import Trace
from ..viz.safe import label_esc, md_escape, shorten
from . import data as uidata

# Which nodes take which intervention is each method's declaration: ``whatif_nodes`` (in its
# package's declarations.py), node-id patterns where the method consults the what-if hooks
# (methods/intervene.py). "sufficiency" and "review" are the two kinds of verdict.
CHANGED_BORDER = "#7c3aed"      # a node the counterfactual changed (red stays the divergence)
INTERVENED_FILL = "#ede9fe"
KEEP = "(as it was)"


# ------------------------------------------------------------------ what a node can take


def node_options(method: str, method_cls: Any, node: T.Node) -> dict[str, Any]:
    """What node ``node`` of a ``method`` run can take: ``evidence`` (bool), ``step`` (bool),
    ``verdicts`` (the words it takes), ``known`` (False: the method declares nothing, so
    every part is offered and the re-run says whether it applied)."""
    if method_cls is None:
        from ..methods import all_methods
        method_cls = all_methods().get(method)
    table = getattr(method_cls, "whatif_nodes", None)
    nid = node.id.rstrip("'")           # a re-labelled node ("r11'") is still an r node
    if table is None:
        return {"evidence": bool(node_evidence_ids(node)), "step": True,
                "verdicts": ["sufficient", "insufficient", "pass", "fail"], "known": False}

    def takes(part: str) -> bool:
        pat = table.get(part)
        return bool(pat) and re.fullmatch(pat, nid) is not None
    verdicts = [w for kind in ("sufficiency", "review") if takes(kind)
                for w in VERDICT_WORDS[kind].split("/")]
    return {"evidence": takes("evidence"), "step": takes("step"), "verdicts": verdicts,
            "known": True}


def takers(method: str, method_cls: Any, tr: Trace) -> list[str]:
    """The nodes of ``tr`` that take some intervention."""
    out = []
    for n in tr.nodes.values():
        o = node_options(method, method_cls, n)
        if o["evidence"] or o["step"] or o["verdicts"]:
            out.append(n.id)
    return out


def evidence_items(node: T.Node) -> list[dict[str, Any]]:
    """The node's evidence items, one per id (its last retrieval record wins)."""
    return list(node_hits(node).values())


# ------------------------------------------------------------------ the job


def make_build() -> Callable[[dict[str, Any], Any, Trace], tuple[Any, Any]]:
    """The method and context of a stored run (whatif's builder); a plug-in dataset
    registered with the UI is handed over as its object."""
    def build(run: dict[str, Any], llm: Any, parent: Trace) -> tuple[Any, Any]:
        name = run.get("dataset") or ""
        return default_build(run, llm, parent,
                             dataset=uidata.get_dataset(name) if uidata.is_extra(name) else None)
    return build


def passage_lookup(dataset: str | None) -> Callable[[str], Any] | None:
    """``pid -> Passage | None`` for a plug-in dataset (None: whatif's default)."""
    if not dataset or not uidata.is_extra(dataset):
        return None
    ds = uidata.get_dataset(dataset)
    fn = getattr(ds, "passage", None)
    if callable(fn):
        def look(pid: str) -> Any:
            try:
                return fn(pid)
            except (KeyError, LookupError):
                return None
        return look
    by_id = {str(p.id): p for p in uidata.passages(ds)}
    return by_id.get


JOB_WORDS = {"whatif": "counterfactual", "attribute": "attribution",
             "answer_path": "attribution of the answer's path"}


class CounterfactualJob:
    """One what-if in a background thread: its turn in the model's line, then the re-run."""

    def __init__(self, store: Any, run_id: str, iv: Intervention, llm: Any, settings: Any,
                 kind: str = "whatif"):
        self.store, self.run_id, self.iv, self.llm, self.settings = \
            store, run_id, iv, llm, settings
        # whatif | attribute (leave-one-out over iv.node) | answer_path (one node at a time)
        self.kind = kind
        self.status = "pending"        # pending | waiting | running | done | failed | cancelled
        self.error: str | None = None
        self.result: WhatIfResult | None = None
        self.ticket: Any = None
        self.started = time.monotonic()
        self.opened = False
        self.live: list[Any] = []      # the re-run's events as it makes them (list.append is atomic)
        self.thread = threading.Thread(target=self._run, name="workbench-whatif", daemon=True)

    def start(self) -> "CounterfactualJob":
        self.thread.start()
        return self

    def join(self, timeout: float | None = None) -> bool:
        self.thread.join(timeout)
        return not self.thread.is_alive()

    @property
    def running(self) -> bool:
        return self.thread.is_alive()

    def cancel(self) -> None:
        t = self.ticket
        if t is not None:
            t.cancel()

    def _run(self) -> None:
        from ..llm.locked import WaitCancelled
        queue = getattr(self.llm, "queue", None)
        if queue is not None:
            t = queue.join("run", f"{JOB_WORDS[self.kind]} of {self.run_id}")
            if t.granted is None:
                self.ticket, self.status = t, "waiting"
                try:
                    queue.wait(t)
                except WaitCancelled:
                    self.status = "cancelled"
                    self.error = "Cancelled while waiting for the model; nothing was run or stored."
                    return
                finally:
                    self.ticket = None
        self.status = "running"
        try:
            run = self.store.get_run(self.run_id) or {}
            if self.kind == "answer_path":
                from ..analysis.attribute import attribute_path
                self.result = attribute_path(self.store, self.run_id, llm=self.llm,
                                             build=make_build())
                self.status = "done"
                return
            if self.kind == "attribute":
                from ..analysis.attribute import attribute
                self.result = attribute(self.store, self.run_id, self.iv.node, llm=self.llm,
                                        build=make_build(), write=False)
                self.status = "done"
                return
            self.result = whatif(self.store, self.run_id, self.iv, llm=self.llm,
                                 build=make_build(),
                                 passage=passage_lookup(run.get("dataset")), live=self.live)
            self.status = "done"
        except WhatIfError as e:
            self.status, self.error = "failed", str(e)
        except Exception as e:          # noqa: BLE001 - shown as a readable message
            self.status, self.error = "failed", f"{type(e).__name__}: {e}"
        finally:
            if queue is not None:
                queue.release()


# ------------------------------------------------------------------ the form


def _job_key(key: str) -> str:
    return f"{key}__cf_job"


def open_run(key: str, run_id: str, node: str | None = None) -> None:
    """Ask the Runs page (key ``key``) to open ``run_id`` on its next run."""
    st.session_state[f"{key}__open"] = run_id
    if node:
        st.session_state[f"{key}__open_node"] = node


def table_key(key: str) -> str:
    """The Runs table's widget key. A run opened by a button (:func:`open_run`) takes the
    place of the table's row selection, which a fresh key clears."""
    ss = st.session_state
    opened = ss.pop(f"{key}__open", None)
    if opened:
        st.query_params["run"] = opened
        ss[f"{key}__tgen"] = ss.get(f"{key}__tgen", 0) + 1
        node = ss.pop(f"{key}__open_node", None)
        if node:
            ss[f"{key}__cf_want_{opened}"] = node
            ss[f"{key}__cf_tab_{opened}"] = True
    gen = ss.get(f"{key}__tgen", 0)
    return f"{key}__table" if not gen else f"{key}__table_{gen}"


def tab_default(key: str, run_id: str) -> str | None:
    """"Counterfactual" for a run opened to make one (from Ask, or after a counterfactual),
    so its tab is in front; the same answer on every redraw of that run."""
    return "Counterfactual" if st.session_state.get(f"{key}__cf_tab_{run_id}") else None


def ask_entry(run_id: str | None, status: str | None, node: str | None, *, key: str) -> None:
    """The Ask inspector's way into a counterfactual of the run just made: opens Runs on
    that run, with ``node`` picked in its Counterfactual tab."""
    if not run_id or status not in ("finished", "refused") or not node:
        return
    if st.button("Counterfactual from this node", key=f"{key}__cf_open",
                 help="Opens this run on Runs with this node picked: drop or add evidence, "
                      "replace its text or force its verdict, and re-run behind the stored "
                      "calls."):
        open_run("runs", run_id, node)
        st.switch_page("pages/runs.py", query_params={"run": run_id})


def _fmt_node(tr: Trace) -> Callable[[str], str]:
    def fmt(nid: str) -> str:
        n = tr.nodes[nid]
        return f"{nid} · {n.kind} · {shorten(n.text, 56)}"
    return fmt


def form(store: Any, run: dict[str, Any], tr: Trace, *, key: str, method_cls: Any = None,
         default_node: str | None = None) -> None:
    """The Counterfactual tab of run ``run`` (folded as ``tr``)."""
    ss = st.session_state
    run_id = run["run_id"]
    job: CounterfactualJob | None = ss.get(_job_key(key))
    busy = job is not None and job.running     # one at a time; the form stays (its choices too)
    if job is not None and (busy or job.run_id == run_id):
        _job_panel(job, key=key)
    if run.get("status") not in ("finished", "refused"):
        st.info(f"This run is {md_escape(run.get('status'))}: its stored calls are incomplete, "
                "so it cannot be re-run with a change. Counterfactuals start from a finished run.")
        return
    ids = list(tr.nodes)
    if not ids:
        st.caption("This run has no nodes.")
        return
    st.caption("Change one node and re-run the method behind this run's stored calls: every "
               "call the change does not reach is replayed, only the calls after it run on "
               "the model. The result is a new run; this one is kept.")
    path = ss.get(f"{key}__cf_path_{run_id}")
    if path is not None:
        path_overlay(path, tr, key=key)
    elif st.button("Which nodes does the answer depend on?", key=f"{key}__cf_path",
                   disabled=busy,
                   help="Drops all evidence of one node of the answer's path at a time, each "
                        "a re-run behind the stored calls; marks the nodes without whose "
                        "evidence the answer changes. Nothing is stored."):
        if not busy:
            start(store, run_id, Intervention((tr.answer or {}).get("node_id") or ids[-1]),
                  key=key, kind="answer_path")
    nkey = f"{key}__cf_node_{run_id}"
    want = ss.pop(f"{key}__cf_want_{run_id}", None)
    follow = f"{key}__cf_follow_{run_id}"
    if want in tr.nodes:
        ss[nkey] = want
    elif default_node in tr.nodes and (nkey not in ss or ss.get(nkey) == ss.get(follow)):
        ss[nkey] = default_node          # follows the inspector until picked here
    ss[follow] = default_node
    if ss.get(nkey) not in tr.nodes:
        ss.pop(nkey, None)
    nid = st.selectbox("Node to change", ids, key=nkey, format_func=_fmt_node(tr),
                       help="Defaults to the node selected in the inspector.")
    node = tr.nodes[nid]
    method = run.get("method") or tr.method
    opts = node_options(method, method_cls, node)
    if not (opts["evidence"] or opts["step"] or opts["verdicts"]):
        others = takers(method, method_cls, tr)
        st.info(f"Node {md_escape(nid)} ({md_escape(node.kind)}) takes no change in "
                f"{md_escape(method)}: the method produces no evidence, step text or verdict "
                f"there. Nodes that take one: "
                + (md_escape(", ".join(others[:12])) if others else "none") + ".")
        return
    if not opts["known"]:
        st.caption(f"{md_escape(method)} does not say which nodes take which change; the "
                   "re-run tells you if this node cannot take one.")
    k = f"{key}__cf_{run_id}_{nid}"
    drop: list[str] = []
    add: list[str] = []
    add_ids: list[str] = []
    step = verdict = None
    if opts["evidence"]:
        items = evidence_items(node)
        st.markdown("**Evidence** · tick an item to drop it")
        if not items:
            st.caption("This node kept no evidence items.")
        att = ss.get(f"{key}__cf_attr_{run_id}_{nid}")
        if att is not None:
            heat_strip(att)
        elif items and st.button(
                "Which of these does the answer depend on?", key=f"{k}__attr", disabled=busy,
                help="Leave-one-out: one re-run per item without it (and one without them "
                     "all), each behind the stored calls; nothing is stored."):
            if not busy:
                start(store, run_id, Intervention(nid), key=key, kind="attribute")
        for i, it in enumerate(items):
            label = md_escape(it["id"])
            if it["title"]:
                label += " · " + md_escape(shorten(it["title"], 60))
            if st.checkbox(label, key=f"{k}__drop_{i}",
                           help=shorten(it["text"], 400) or None):
                drop.append(it["id"])
            if it["text"]:
                st.caption(md_escape(shorten(it["text"], 160)))
        text = st.text_area("Add a passage (text)", key=f"{k}__add", height=80,
                            placeholder="A passage the node should have found")
        if text.strip():
            add.append(text.strip())
        pids = st.text_input("Add dataset passages by id", key=f"{k}__addid",
                             placeholder="e.g. p12, p40 (comma separated)")
        add_ids = [p.strip() for p in pids.split(",") if p.strip()]
    if opts["step"]:
        new = st.text_area("Replace the node's text (step or sub-question)", key=f"{k}__step",
                           height=80, placeholder=shorten(node.text, 200),
                           help="Leave empty to keep it.")
        step = new.strip() or None
    if opts["verdicts"]:
        choice = st.radio("Force the verdict", [KEEP] + opts["verdicts"], key=f"{k}__verdict",
                          horizontal=True)
        verdict = None if choice == KEEP else choice
    iv = Intervention(nid, drop=drop, add=add, add_ids=add_ids, step=step, verdict=verdict)
    clicked = st.button("Run counterfactual", key=f"{key}__cf_run", type="primary",
                        disabled=busy or not iv.parts(),
                        help="Re-runs the method with this change; the calls before the "
                             "change replay from the stored run.")
    if not iv.parts():
        st.caption("Choose a change above first.")
    if clicked and iv.parts() and not busy:
        start(store, run_id, iv, key=key)


def start(store: Any, run_id: str, iv: Intervention, *, key: str,
          kind: str = "whatif") -> CounterfactualJob | None:
    """Check the request, then start the job; a bad request is a clear message and writes
    nothing."""
    from ..llm.base import LLMError
    from . import access, backend
    from . import widgets as W
    settings = access.current()
    try:
        check(store, run_id, iv)                 # before loading a model for nothing
        with st.spinner("Loading the model (once per process)…"):
            llm = backend.get_llm(settings)
        check(store, run_id, iv, model=llm.info)
    except WhatIfError as e:
        W.error(md_escape(str(e)), "Nothing was run or stored.")
        return None
    except LLMError as e:
        W.error(f"The model could not be loaded: {md_escape(e)}", "Check the model in Settings.")
        return None
    job = CounterfactualJob(store, run_id, iv, llm, settings, kind).start()
    st.session_state[_job_key(key)] = job
    job.join(0.3)                  # a short what-if is done by the first redraw
    st.rerun()
    return job


def _job_panel(job: CounterfactualJob, *, key: str) -> None:
    from . import model_status as MS
    from . import widgets as W

    @st.fragment(run_every=0.5 if job.running else None)
    def panel() -> None:
        if job.running:
            if job.status == "waiting":
                MS.waiting(job.ticket)
                if st.button("Cancel", key=f"{key}__cf_cancel"):
                    job.cancel()
            else:
                where = "" if job.kind == "answer_path" else f" on node {md_escape(job.iv.node)}"
                st.info(f"Running the {JOB_WORDS[job.kind]}{where}… "
                        f"({time.monotonic() - job.started:.0f} s)",
                        icon=":material/progress_activity:")
                if job.kind == "whatif" and job.live:
                    _live_graph(job, key=key)
            return
        if not job.opened:         # it ended since the page was drawn: redraw all of it
            job.opened = True
            if job.status == "done" and job.result is not None:
                if job.kind == "attribute":
                    st.session_state[f"{key}__cf_attr_{job.run_id}_{job.iv.node}"] = job.result
                elif job.kind == "answer_path":
                    st.session_state[f"{key}__cf_path_{job.run_id}"] = job.result
                else:
                    open_run(key, job.result.run_id, job.iv.node)
            st.rerun(scope="app")
        if job.error:              # until the next attempt
            W.error(md_escape(job.error), "Nothing was stored.")
    panel()


def _live_graph(job: CounterfactualJob, *, key: str) -> None:
    """The counterfactual as it grows, drawn like a live run on Ask. Node ids are the
    re-run's own until it ends; the stored result carries the original run's ids."""
    from . import widgets as W
    tr = Trace.fold(list(job.live))
    n = call_costs(None, tr)
    st.caption(f"So far: {len(tr.nodes)} nodes; {n['replayed']} "
               f"call{'' if n['replayed'] == 1 else 's'} replayed from the stored run, "
               f"{n['fresh']} run on the model"
               + (f", {n['reused']} reused" if n["reused"] else "") + ".")
    W.draw_graph(tr, key=f"{key}__cf_live", height=360)


# ------------------------------------------------------------------ attribution

def path_rows(pa: Any) -> list[dict[str, Any]]:
    """One row per node of the answer's path, from
    :class:`workbench.analysis.attribute.PathAttribution`."""
    rows = []
    for n in pa.nodes:
        e = n.effect
        rows.append({"node": n.node, "kind": n.kind, "step": shorten(n.text, 60),
                     "evidence items": n.items,
                     "answer changes": "yes" if e.answer_changed else "no",
                     "correctness changes": "yes" if e.correctness_changed else "no",
                     "Δ log-prob": e.delta_logprob,
                     "answer without its evidence": shorten(e.answer, 80),
                     "fresh calls": e.fresh_calls})
    return rows


def path_overlay(pa: Any, tr: Trace, *, key: str) -> None:
    """The run's graph with the nodes the answer depends on marked, and the table behind
    it (every text escaped by the table and the graph component)."""
    from . import widgets as W
    dep = pa.depends_on()
    st.markdown("**Which nodes the answer depends on** (all evidence of one node of the "
                "answer's path dropped at a time)")
    W.draw_graph(tr, key=f"{key}__cf_pathgraph", height=360, depends=dep)
    st.dataframe(path_rows(pa), hide_index=True, width="stretch")
    st.caption((f"The answer changes without the evidence of {md_escape(', '.join(dep))}. "
                if dep else "No single node's evidence changes the answer on its own. ")
               + f"{pa.fresh_calls} fresh and {pa.replayed_calls} replayed calls over "
               f"{len(pa.nodes)} re-runs; none stored.")


HEAT = {"both": ("#fecaca", "#b91c1c", "answer and its correctness change without it"),
        "answer": ("#fed7aa", "#c2410c", "the answer changes without it"),
        "none": ("#f3f4f6", "#9ca3af", "no change without it")}


# a surrogate weight this large: keeping the item makes the original answer e^1 times as
# likely or more, as much as an answer change usually costs it
SURROGATE_HOT = 1.0


def attribution_rows(att: Any) -> list[dict[str, Any]]:
    """One row per evidence item (then "all dropped"), from
    :class:`workbench.analysis.attribute.Attribution`; a surrogate's rows carry the fitted
    weight instead of what one re-run without the item did."""
    from ..analysis.attribute import SURROGATE
    if getattr(att, "estimator", None) == SURROGATE:
        return [{"evidence": e.evidence_id, "title": e.title,
                 "heat": "answer" if (e.weight or 0.0) >= SURROGATE_HOT else "none",
                 "weight (Δ log-prob kept)": e.weight} for e in att.items]
    rows = []
    for e in list(att.items) + ([att.drop_all] if att.drop_all else []):
        level = "both" if e.correctness_changed else "answer" if e.answer_changed else "none"
        dlp = getattr(e, "delta_logprob", None)
        rows.append({"evidence": "(all dropped)" if e.evidence_id == "*" else e.evidence_id,
                     "title": e.title, "heat": level,
                     "answer changes": "yes" if e.answer_changed else "no",
                     "correctness changes": "yes" if e.correctness_changed else "no",
                     "Δ log-prob": None if dlp is None else round(float(dlp), 3),
                     "answer without it": shorten(e.answer, 80),
                     "fresh calls": e.fresh_calls})
    return rows


def heat_strip(att: Any) -> list[dict[str, Any]]:
    """A strip of one cell per evidence item, coloured by what dropping it alone does to the
    final answer (or by its surrogate weight), and the table behind it (every text escaped)."""
    from ..analysis.attribute import SURROGATE
    from ..viz.safe import esc
    from . import widgets as W
    rows = attribution_rows(att)
    surrogate = getattr(att, "estimator", None) == SURROGATE
    heat = ({"answer": (*HEAT["answer"][:2], f"the answer rests on it (weight ≥ {SURROGATE_HOT:g})"),
             "none": (*HEAT["none"][:2], f"weight below {SURROGATE_HOT:g}")}
            if surrogate else HEAT)
    cells = "".join(
        f'<span class="wb-attr-cell" title="{esc(r["title"] + " · " + heat[r["heat"]][2])}" '
        f'style="display:inline-block;min-width:44px;margin:0 3px 3px 0;padding:2px 6px;'
        f'font-size:12px;border-radius:3px;background:{heat[r["heat"]][0]};'
        f'border:2px solid {heat[r["heat"]][1]}">{esc(shorten(r["evidence"], 24))}</span>'
        for r in rows)
    st.markdown("**What the answer depends on** ("
                + (f"linear surrogate over {att.samples} random ablations of this node's "
                   f"{len(rows)} evidence items" if surrogate else
                   "leave-one-out over this node's evidence") + ")")
    st.html(f'<div class="wb-attr-strip">{cells}</div>')
    W.legend([(k, lab, fill, border, False) for k, (fill, border, lab) in heat.items()])
    st.dataframe([{k: v for k, v in r.items() if k != "heat"} for r in rows],
                 hide_index=True, width="stretch")
    if surrogate:
        st.caption(f"{att.fresh_calls} fresh and {att.replayed_calls} replayed calls over "
                   f"{att.samples} re-runs, each keeping every item with probability 1/2; none "
                   f"stored. Weight: the fitted change in the log-probability of the original "
                   f"answer (“{md_escape(shorten(att.scored_output or '', 60))}”, "
                   f"teacher-forced) from keeping the item, in nats; at {SURROGATE_HOT:g} or "
                   f"more it is coloured as an item the answer rests on"
                   + (f" (fit R² {att.fit_r2:.2f})." if att.fit_r2 is not None else "."))
        return rows
    measured = any(r["Δ log-prob"] is not None for r in rows)
    st.caption(f"{att.fresh_calls} fresh and {att.replayed_calls} replayed calls over "
               f"{len(rows)} re-runs; none stored."
               + (f" Δ log-prob: how much more (+) or less (−) likely the model finds the "
                  f"original answer (“{md_escape(shorten(att.scored_output or '', 60))}”, teacher-forced) "
                  f"without the item, in nats." if measured else
                  " This backend cannot score text, so the change in the original answer's "
                  "log-probability is not shown."))
    return rows


# ------------------------------------------------------------------ the result


def _exact_embed(texts: list[str]) -> np.ndarray:
    """One vector per distinct text: two nodes' texts are alike (1) or not (0). Nodes that
    carry over a what-if are matched by id; only a changed text should count."""
    idx: dict[str, int] = {}
    rows = [idx.setdefault(" ".join(str(t).split()), len(idx)) for t in texts]
    return np.eye(max(len(idx), 1))[rows] if rows else np.zeros((0, 1))


def intervention_words(iv: dict[str, Any] | None, applied: list[dict[str, Any]],
                       parent: Trace | None) -> list[str]:
    """The intervention as plain sentences (unescaped: escape where drawn)."""
    if not iv:
        return ["(no intervention recorded)"]
    nid = iv.get("node", "?")
    node = parent.nodes.get(nid) if parent is not None else None
    where = f"node {nid}" + (f" ({node.kind})" if node is not None else "")
    out = []
    if iv.get("drop"):
        out.append(f"Dropped evidence {', '.join(map(str, iv['drop']))} from {where}.")
    for t in iv.get("add") or []:
        out.append(f"Added a passage to {where}: “{shorten(t, 160)}”.")
    if iv.get("add_ids"):
        out.append(f"Added dataset passage(s) {', '.join(map(str, iv['add_ids']))} to {where}.")
    if iv.get("step") is not None:
        before = next((a.get("before") for a in applied if a.get("part") == "step"),
                      node.text if node is not None else None)
        out.append(f"Replaced the text of {where}: “{shorten(before, 120)}” → "
                   f"“{shorten(iv['step'], 120)}”.")
    if iv.get("verdict"):
        was = next((a.get("before") for a in applied if a.get("part") == "verdict"), None)
        kind = next((a.get("kind") for a in applied if a.get("part") == "verdict"), None)
        words = VERDICT_WORDS.get(kind or "", "").split("/")
        was_w = (words[0] if was else words[1]) if was is not None and len(words) == 2 else None
        out.append(f"Forced the verdict of {where} to {iv['verdict']}"
                   + (f" (it was {was_w})." if was_w else "."))
    return out or ["No change (every call replays)."]


def call_costs(parent: Trace | None, child: Trace) -> dict[str, Any]:
    """The counterfactual's calls: fresh (ran on the model), replayed (from the original),
    reused (the run's own memo); tokens and model seconds of each, the fresh ones listed."""
    by: dict[str, list] = {"fresh": [], "replayed": [], "reused": []}
    for cid, c in child.llm_calls.items():
        by[call_kind(c)].append((cid, c))
    fresh, replayed, reused = by["fresh"], by["replayed"], by["reused"]

    def toks(c: dict[str, Any]) -> int:
        return int(c.get("prompt_tokens") or 0) + int(c.get("completion_tokens") or 0)
    pcalls = parent.llm_calls if parent is not None else {}
    saved_ms = sum(float((pcalls.get(c.get("replayed_from")) or {}).get("latency_ms") or 0.0)
                   for _, c in replayed)
    ptot = parent.totals() if parent is not None else {}
    return {
        "fresh": len(fresh), "replayed": len(replayed), "reused": len(reused),
        "fresh_tokens": sum(toks(c) for _, c in fresh),
        "replayed_tokens": sum(toks(c) for _, c in replayed),
        "fresh_s": sum(float(c.get("latency_ms") or 0.0) for _, c in fresh) / 1000.0,
        "saved_s": saved_ms / 1000.0,
        "parent_calls": int(ptot.get("llm_calls", 0)),
        "parent_s": float(ptot.get("llm_ms", 0.0)) / 1000.0,
        "fresh_rows": [{"call": cid, "node": c.get("node_id") or "", "purpose": c.get("purpose")
                        or "", "tokens": toks(c),
                        "seconds": round(float(c.get("latency_ms") or 0.0) / 1000.0, 2)}
                       for cid, c in fresh],
        "fresh_nodes": list(dict.fromkeys(c.get("node_id") for _, c in fresh
                                          if c.get("node_id"))),
    }


def changed_evidence(d: D.RunDiff, parent: Trace, child: Trace) -> list[dict[str, Any]]:
    """Per node in both runs, the evidence only the original or only the counterfactual had."""
    def look(tr: Trace, nid: str, key: str) -> dict[str, Any]:
        return next((it for it in evidence_items(tr.nodes[nid]) if it["id"] == key), {})
    rows = []
    for p in d.pairs:
        for side, keys, tr, nid in (("dropped (original only)", p.only_a, parent, p.a),
                                    ("added (counterfactual only)", p.only_b, child, p.b)):
            for key in keys:
                it = look(tr, nid, key)
                rows.append({"node": p.b, "change": side, "evidence": key,
                             "title": it.get("title", ""),
                             "text": shorten(it.get("text", ""), 120)})
    return rows


def result_graph(d: D.RunDiff, parent: Trace, child: Trace, node: str | None) -> dict[str, Any]:
    """The merged graph (diff_view.diff_graph), the changed nodes and the intervened node
    marked on top of the sides."""
    from .diff_view import diff_graph
    data = diff_graph(d, parent, child)
    changed = {D.merged_id(d, "a", p.a): p for p in d.pairs if p.differs}
    target = D.merged_id(d, "a", node) if node and node in parent.nodes else None
    for n in data["nodes"]:
        p = changed.get(n["id"])
        if n["id"] == target:
            n["color"] = {**n.get("color", {}), "background": INTERVENED_FILL,
                          "border": CHANGED_BORDER}
            n["borderWidth"] = max(n.get("borderWidth", 2), 5)
            n["label"] += "\n" + label_esc("✎ intervened")
        elif p is not None:
            if n.get("color", {}).get("border") != "#dc2626":     # keep the divergence red
                n["color"] = {**n.get("color", {}), "border": CHANGED_BORDER}
            n["borderWidth"] = max(n.get("borderWidth", 2), 4)
            n["label"] += "\n" + label_esc("Δ " + ", ".join(p.differs))
        if p is not None or n["id"] == target:
            n["cf_changed"] = True
    data["legend"] = list(data.get("legend", [])) + [
        ("cf_node", "✎ intervened", INTERVENED_FILL, CHANGED_BORDER, False),
        ("cf_changed", "Δ changed by it", "#e5e7eb", CHANGED_BORDER, False)]
    return data


def _code(text: Any) -> str:
    """An id as inline code (escapes do not work inside a code span: backticks go)."""
    return "`" + str(text).replace("`", "") + "`"


def _verdict(correct: Any) -> str:
    if correct is None:
        return "not judged (no gold answer)"
    return ":green[**correct**]" if correct else ":red[**incorrect**]"


def result(store: Any, run: dict[str, Any], tr: Trace, *, key: str, height: int = 440) -> None:
    """The side-by-side view of counterfactual run ``run`` (folded as ``tr``) and its parent."""
    from . import widgets as W
    from .component import graph as graph_component
    pid = run.get("parent_run_id") or (tr.meta or {}).get("parent_run_id")
    if not pid:
        return
    note = next((e["data"] for e in tr.log if e["type"] == INTERVENTION_APPLIED), {})
    iv = (tr.meta or {}).get("intervention") or note.get("intervention") or {}
    applied = note.get("applied") or []
    prow = store.get_run(pid)
    st.markdown(f"##### Counterfactual of run {_code(pid)}")
    if prow is None:
        st.info("The original run is no longer stored; only the counterfactual is shown.")
        for line in intervention_words(iv, applied, None):
            st.markdown("- " + md_escape(line))
        return
    parent = Trace.fold(store.events(pid))
    c = st.columns([3, 1], vertical_alignment="center")
    with c[0]:
        for line in intervention_words(iv, applied, parent):
            st.markdown("- " + md_escape(line))
    if c[1].button("Open the original run", key=f"{key}__cf_parent", width="stretch"):
        open_run(key, pid, iv.get("node"))
        st.rerun()
    a = st.columns(2)
    for col, title, t, row in ((a[0], "Original", parent, prow), (a[1], "Counterfactual", tr, run)):
        ans = t.answer or {}
        text = ans.get("text")
        col.markdown(f"**{title}** ({_code(t.run_id)}) · {_verdict(row.get('correct'))}")
        col.markdown(md_escape(text) if text else "_(no answer)_")
    if (parent.answer or {}).get("text") == (tr.answer or {}).get("text"):
        st.caption("The answer did not change.")
    cost = call_costs(parent, tr)
    m = st.columns(4)
    m[0].metric("Fresh calls", cost["fresh"],
                help="Calls whose prompt changed, so they ran on the model.")
    m[1].metric("Replayed calls", cost["replayed"],
                help="Calls answered from the original run's stored calls.")
    m[2].metric("Fresh tokens", cost["fresh_tokens"],
                help=f"{cost['replayed_tokens']} tokens replayed.")
    m[3].metric("Model time (fresh)", f"{cost['fresh_s']:.2f} s",
                help=f"The replayed calls took {cost['saved_s']:.2f} s in the original run.")
    st.caption(f"{cost['fresh']} fresh · {cost['replayed']} replayed · {cost['reused']} reused "
               f"calls; the original run made {cost['parent_calls']} calls in "
               f"{cost['parent_s']:.2f} s of model time."
               + (" Fresh at nodes: " + md_escape(", ".join(cost["fresh_nodes"])) + "."
                  if cost["fresh_nodes"] else ""))
    if cost["fresh_rows"]:
        st.dataframe(cost["fresh_rows"], hide_index=True, width="stretch",
                     key=f"{key}__cf_fresh")
    try:
        d = D.diff_runs(parent, tr, embed=_exact_embed, by_id=True)
    except ValueError as e:
        st.warning(md_escape(str(e)))
        return
    data = result_graph(d, parent, tr, iv.get("node"))
    st.session_state[f"{key}__cf_view"] = data          # tests and exports read this
    fd = d.first_divergence
    st.markdown("**Original and counterfactual, merged** · "
                + (f"first divergence: {md_escape(fd.reason)}" if fd else
                   "the runs agree on every node"))
    graph_component(data, key=f"{key}__cf_graph", height=height,
                    empty="Neither run has nodes.")
    W.legend(data["legend"])
    ev = changed_evidence(d, parent, tr)
    if ev:
        st.markdown("**Changed evidence**")
        st.dataframe(ev, hide_index=True, width="stretch", key=f"{key}__cf_ev")
