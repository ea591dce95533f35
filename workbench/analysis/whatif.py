"""What-if: re-run a stored run with one intervention on one node, behind the run's own
stored calls.

``whatif(store, run_id, Intervention(...), llm=backend)`` re-runs the run's method on the
same question with the same knobs and seed. The backend is wrapped in
:class:`~workbench.llm.replay.CallReplay` over the run's own ``llm_call`` / ``llm_score``
records, and the intervention (methods/intervene.py) is applied where the method produces
the node's evidence, step text or verdict. Every call upstream of the node, and every call
the change does not reach, has the prompt and parameters it had and is answered from the
store (``replayed_from``); only the calls downstream of the change run on the model.

The new run is stored with ``parent_run_id`` (run row and ``run_started``), the
intervention as data (``run_started.intervention``, and an ``intervention_applied`` event
saying where and how it applied), and each call marked replayed (``replayed_from``),
reused within the run (``reused_from``) or fresh (neither). Node ids carry over: ids are
made in creation order, so every node made before the change has its id; after a change
that adds or removes nodes, each later node takes the id of the stored node in the same
place (same kind, same parents, same rank among them), and a node with no counterpart gets
an id the stored run does not use.

Nothing is written unless the what-if ran and the intervention applied: an unknown run,
node or evidence id, a run of another model, a run whose calls are incomplete, or an
intervention the method never consults at that node is a :class:`WhatIfError` (one line).
"""
from __future__ import annotations

import dataclasses
import json
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

from .. import trace as T
from ..llm.replay import CallReplay
from ..methods.intervene import PART_WORDS, VERDICTS, Apply, Intervention, added_hits
from ..trace import Event, Trace

INTERVENTION_APPLIED = "intervention_applied"      # declared in workbench/events.py
OK_STATUSES = ("finished", "refused")



# why a what-if was refused, for scripts (``--json`` prints it): WhatIfError.code
REFUSALS = {
    "unknown_run": "no stored run has that id",
    "unfinished_run": "the run did not finish, so its stored calls are incomplete",
    "incomplete_calls": "some stored call lacks its prompt or output",
    "other_model": "the run was made with another model than the one loaded",
    "unknown_node": "the run has no such node",
    "unknown_verdict": "the verdict is not one the methods take",
    "blank_text": "a replacement step or added passage is blank",
    "no_evidence": "the node holds no evidence to drop or attribute",
    "unknown_evidence": "the node holds no such evidence item",
    "unknown_passage": "the run's dataset has no such passage",
    "not_applicable": "the method takes no such intervention on that node",
    "rerun_failed": "the re-run itself failed",
}


class WhatIfError(ValueError):
    """Bad input for a what-if; nothing was written. ``code``: a REFUSALS key."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


@dataclass
class WhatIfResult:
    run_id: str
    parent_run_id: str
    method: str
    node: str
    intervention: dict[str, Any]
    status: str
    answer: str | None
    parent_answer: str | None
    answer_changed: bool
    correct: bool | None             # against the stored gold (contains); None: no gold
    parent_correct: bool | None
    fresh_calls: int                 # ran on the model
    replayed_calls: int              # answered from the parent run's stored calls
    reused_calls: int                # repeats answered by the run's memo
    fresh_call_ids: list[str]
    fresh: list[dict[str, Any]]      # per fresh call: id, node, purpose
    fresh_scores: int
    replayed_scores: int
    parent_calls: int                # the parent run's model calls
    changed_nodes: list[str]         # in both runs: the node intervened on, and those whose
    #                                  text, state, evidence or answer differs
    rerun_nodes: list[str]           # nodes that made a fresh call
    added_nodes: list[str]
    removed_nodes: list[str]
    renamed: dict[str, str]          # counter id in the re-run -> id stored (carried over)
    applied: list[dict[str, Any]]
    wall_ms: float
    llm_ms: float                    # model time of the fresh calls
    parent_llm_ms: float
    # the counterfactual's call its answer was read from (prompt, output, call_id), for a
    # teacher-forced score of the original answer in its place (attribution)
    answer_call: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def summary(self) -> str:
        def ok(c: bool | None) -> str:
            return "" if c is None else (" (correct)" if c else " (incorrect)")
        lines = [f"what-if run {self.run_id} of run {self.parent_run_id} ({self.method}), "
                 f"intervention on node {self.node}: {describe(self.intervention)}",
                 f"answer: {self.answer!r}{ok(self.correct)}"
                 f"{'' if self.answer_changed else ' (unchanged)'}",
                 f"was:    {self.parent_answer!r}{ok(self.parent_correct)}",
                 f"calls: {self.fresh_calls} fresh, {self.replayed_calls} replayed, "
                 f"{self.reused_calls} reused (the original run made {self.parent_calls}); "
                 f"model time {self.llm_ms / 1000:.2f} s of the original "
                 f"{self.parent_llm_ms / 1000:.2f} s"]
        if self.fresh_scores or self.replayed_scores:
            lines.append(f"scorings: {self.fresh_scores} fresh, {self.replayed_scores} replayed")
        if self.rerun_nodes:
            lines.append("re-run at nodes: " + ", ".join(self.rerun_nodes))
        lines.append("changed nodes: " + (", ".join(self.changed_nodes) or "none")
                     + (f"; new: {', '.join(self.added_nodes)}" if self.added_nodes else "")
                     + (f"; gone: {', '.join(self.removed_nodes)}" if self.removed_nodes
                        else ""))
        return "\n".join(lines)

    def json_line(self) -> str:
        keys = ("run_id", "parent_run_id", "method", "node", "intervention", "status",
                "answer", "parent_answer", "answer_changed", "correct", "parent_correct",
                "fresh_calls", "replayed_calls", "reused_calls", "fresh_call_ids",
                "fresh_scores", "replayed_scores", "parent_calls", "changed_nodes", "rerun_nodes",
                "added_nodes", "removed_nodes", "wall_ms", "llm_ms", "parent_llm_ms")
        d = self.to_dict()
        return json.dumps({k: d[k] for k in keys}, default=str)


def describe(iv: dict[str, Any]) -> str:
    parts = []
    if iv.get("drop"):
        parts.append("drop " + ", ".join(iv["drop"]))
    if iv.get("add"):
        parts.append(f"add {len(iv['add'])} passage text(s)")
    if iv.get("add_ids"):
        parts.append("add " + ", ".join(iv["add_ids"]))
    if iv.get("step") is not None:
        parts.append(f"step -> {iv['step']!r}")
    if iv.get("verdict"):
        parts.append(f"verdict -> {iv['verdict']}")
    return "; ".join(parts) or "none (a no-op: every call replays)"


# ---------------------------------------------------------------- checks


def _short(ids: list[str], n: int = 12) -> str:
    return ", ".join(ids[:n]) + (f", … ({len(ids)} in all)" if len(ids) > n else "")


def node_hits(node: T.Node, kept_only: bool = False) -> dict[str, dict[str, Any]]:
    """The evidence a node retrieved (passage ids, KG triple or path ids), one record per id
    in the order first retrieved, from its last retrieval; ``kept_only`` leaves out the hits
    the method dropped (``meta.kept`` False)."""
    out: dict[str, dict[str, Any]] = {}
    for ev in node.evidence:
        for h in ev.get("hits") or []:
            if h.get("id") in (None, "") or \
                    (kept_only and (h.get("meta") or {}).get("kept") is False):
                continue
            out[str(h["id"])] = {"id": str(h["id"]), "title": h.get("title") or "",
                                 "text": h.get("text") or "",
                                 "retriever": h.get("retriever") or ev.get("retriever"),
                                 "score": h.get("score")}
    return out


def node_evidence_ids(node: T.Node) -> list[str]:
    """The evidence ids a node retrieved (passage ids, KG triple or path ids)."""
    return list(node_hits(node))


def call_kind(call: dict[str, Any]) -> str:
    """How a call of a re-run was answered: replayed (from the original run's stored
    calls), reused (the run's own memo) or fresh (on the model)."""
    if call.get("replayed_from"):
        return "replayed"
    return "reused" if call.get("reused_from") else "fresh"


def run_calls(events: list[Event]) -> list[dict[str, Any]]:
    """The run's ``llm_call`` and ``llm_score`` records in CallReplay's form (as
    replay.load_calls, for one run)."""
    calls = []
    for e in events:
        d = e.data
        if e.type == T.LLM_SCORE:
            if d.get("context_sha256") and d.get("tokens") is not None:
                calls.append({k: d.get(k) for k in ("context_sha256", "continuation", "tokens")}
                             | {"score_id": d.get("replayed_from") or d.get("score_id")})
        elif e.type == T.LLM_CALL:
            rec = {k: d.get(k) for k in ("prompt", "params", "output", "tokens",
                                         "prompt_tokens", "completion_tokens",
                                         "finish_reason", "model", "call_id",
                                         "logprobs_available")}
            rec["call_id"] = d.get("replayed_from") or rec["call_id"] or e.llm_call_id
            calls.append(rec)
    return calls


def check(store: Any, run_id: str, iv: Intervention | None, *, model: Any = None
          ) -> tuple[dict[str, Any], list[Event], Trace]:
    """The run, its events and trace, or a WhatIfError saying what is wrong with the
    request. ``model``: the loaded backend's ModelInfo (None: not checked yet); ``iv``
    None checks the run alone."""
    run = store.get_run(run_id)
    if run is None:
        raise WhatIfError(f"no run {run_id!r}; `python -m workbench runs list` shows the "
                          f"stored runs", "unknown_run")
    if run.get("status") not in OK_STATUSES:
        raise WhatIfError(
            f"run {run_id} is {run.get('status')!r}: its stored calls are incomplete "
            f"({run.get('error') or 'it did not finish'}); a what-if needs a finished run",
            "unfinished_run")
    events = store.events(run_id)
    if not events or events[-1].type != T.RUN_FINISHED:
        raise WhatIfError(f"run {run_id} has no run_finished event: its stored calls are "
                          f"incomplete; a what-if needs a finished run", "unfinished_run")
    bad = [e.llm_call_id or str(e.seq) for e in events if e.type == T.LLM_CALL
           and (e.data.get("prompt") is None or e.data.get("output") is None)]
    if bad:
        raise WhatIfError(f"run {run_id} has {len(bad)} stored call(s) without prompt or "
                          f"output ({_short(bad, 3)}): its calls are incomplete and cannot "
                          f"be replayed", "incomplete_calls")
    if model is not None:
        check_model(run, model)
    tr = Trace.fold(events)
    if iv is None:
        return run, events, tr
    if iv.node not in tr.nodes:
        raise WhatIfError(f"run {run_id} has no node {iv.node!r}; its nodes: "
                          f"{_short(list(tr.nodes))}", "unknown_node")
    node = tr.nodes[iv.node]
    if iv.verdict is not None and iv.verdict not in VERDICTS:
        raise WhatIfError(f"unknown verdict {iv.verdict!r}; give one of "
                          f"{', '.join(VERDICTS)}", "unknown_verdict")
    if iv.step is not None and not iv.step.strip():
        raise WhatIfError("the replacement step text is blank; give the new sub-question "
                          "or step text", "blank_text")
    if any(not t.strip() for t in iv.add):
        raise WhatIfError("an added passage text is blank; give its text", "blank_text")
    if iv.drop:
        have = node_evidence_ids(node)
        if not have:
            with_ev = [n.id for n in tr.nodes.values() if node_evidence_ids(n)]
            raise WhatIfError(f"node {iv.node} ({node.kind}) retrieved no evidence, so there "
                              f"is nothing to drop; nodes with evidence: "
                              f"{_short(with_ev) or 'none'}", "no_evidence")
        unknown = [d for d in iv.drop if d not in have]
        if unknown:
            raise WhatIfError(f"node {iv.node} has no evidence {_short(unknown, 3)}; its "
                              f"evidence ids: {_short(have)}", "unknown_evidence")
    return run, events, tr


def check_model(run: dict[str, Any], info: Any) -> None:
    sha, want = getattr(info, "sha256", "") or "", run.get("model_sha256") or ""
    if sha and want and sha != want:
        raise WhatIfError(
            f"run {run['run_id']} was made with model {run.get('model_name') or '?'} "
            f"(sha256 {want[:12]}…) but {getattr(info, 'name', '?')} (sha256 {sha[:12]}…) is "
            f"loaded; its calls replay only on the same model: load it with --model",
            "other_model")


# ---------------------------------------------------------------- node ids


def _added(events: list[Event]) -> list[tuple[str, str, list[str]]]:
    return [(e.node_id or "", str(e.data.get("kind", "")), list(e.data.get("parents") or []))
            for e in events if e.type == T.NODE_ADDED]


def align_ids(parent_events: list[Event], new_events: list[Event]) -> dict[str, str]:
    """Counter id in the re-run -> the id to store: the same id where the node sits where
    it sat (same kind, same parents), else the stored node in the same place (same kind,
    same carried-over parents, same rank among them), else an id the stored run lacks."""
    old = _added(parent_events)
    old_ids = {n for n, _, _ in old}
    old_key = {n: (k, tuple(sorted(p))) for n, k, p in old}
    by_key: dict[tuple, list[str]] = defaultdict(list)
    for n, k, p in old:
        by_key[(k, tuple(sorted(p)))].append(n)
    mapping: dict[str, str] = {}
    used: set[str] = set()
    rank: dict[tuple, int] = defaultdict(int)
    for nid, kind, parents in _added(new_events):
        key = (kind, tuple(sorted(mapping.get(p, p) for p in parents)))
        i = rank[key]
        rank[key] += 1
        target = None
        if old_key.get(nid) == key and nid not in used:
            target = nid
        elif i < len(by_key.get(key, ())) and by_key[key][i] not in used:
            target = by_key[key][i]
        if target is None:
            target = nid
            while target in old_ids or target in used:
                target += "'"
        mapping[nid] = target
        used.add(target)
    return mapping


def _rename(x: Any, m: dict[str, str]) -> Any:
    if isinstance(x, str):
        return m.get(x, x)
    if isinstance(x, list):
        return [_rename(v, m) for v in x]
    if isinstance(x, dict):
        return {k: _rename(v, m) for k, v in x.items()}
    return x


def rename_events(events: list[Event], mapping: dict[str, str]) -> list[Event]:
    m = {a: b for a, b in mapping.items() if a != b}
    if not m:
        return events
    return [dataclasses.replace(e, node_id=m.get(e.node_id, e.node_id) if e.node_id else None,
                                data=_rename(e.data, m)) for e in events]


# ---------------------------------------------------------------- the re-run


class _Buffer:
    """Stands in for the store while the re-run runs, so nothing is written before the
    intervention is known to have applied."""

    def __init__(self) -> None:
        self.run: dict[str, Any] = {}
        self.fields: dict[str, Any] = {}
        self.events: list[Event] = []

    def start_run(self, run: dict[str, Any]) -> None:
        self.run = dict(run)

    def add_events(self, events: list[Event]) -> int:
        self.events.extend(events)
        return len(events)

    def update_run(self, run_id: str, **fields: Any) -> None:
        self.fields.update(fields)


Build = Callable[[dict[str, Any], Any, Trace], tuple[Any, Any]]


def default_build(run: dict[str, Any], llm: Any, parent: Trace,
                  dataset: Any = None) -> tuple[Any, Any]:
    """The method and context of a stored run, from its method, dataset (by name, or the
    ``dataset`` object given: a plug-in's), knobs, seed and question id
    (workspace.build_context)."""
    from ..workspace import build_context
    cfg = {k: v for k, v in (run.get("config") or {}).items() if not str(k).startswith("_")}
    method, ctx = build_context(run["method"], llm=llm, dataset=dataset or run.get("dataset"),
                                overrides=cfg, seed=run.get("seed"),
                                question_id=run.get("question_id"))
    # a "default" retriever knob read the Settings: take the one the run searched with
    used = parent.retrievers() & {"bm25", "dense", "hybrid"}
    if len(used) == 1:
        ctx.extra["default_retriever"] = used.pop()
    return method, with_eval_knobs(run, ctx, getattr(dataset, "passages", None))


def with_eval_knobs(run: dict[str, Any], ctx: Any, passages: Any = None) -> Any:
    """``ctx`` with the evaluation-level knobs of a run of an eval (``config._eval``:
    chunking, noise passages, "I don't know" prompting) applied as the eval applied them, so
    its calls replay; ``passages``: the dataset's (default: loaded by name)."""
    eval_knobs = (run.get("config") or {}).get("_eval")
    if not eval_knobs:
        return ctx
    from ..eval import knobs as K
    if passages is None:
        from ..datasets import load_dataset
        passages = getattr(load_dataset(run.get("dataset") or "demo"), "passages", []) or []
    return K.apply_to_context(ctx, eval_knobs, passages=passages,
                              question_id=run.get("question_id") or "")


def default_passage(run: dict[str, Any]) -> Callable[[str], Any]:
    from ..datasets import load_dataset
    ds = load_dataset(run.get("dataset") or "demo")
    return ds.passage


def _correct(answer: str | None, refused: bool, gold: dict[str, Any] | None) -> bool | None:
    from ..datasets.base import Question
    from ..methods.answers import contains_gold
    if not gold:
        return None
    golds = Question.from_dict(gold).gold_answers
    if not golds:
        return None
    return bool(answer) and not refused and contains_gold(answer or "", golds)


def _node_sig(tr: Trace, n: T.Node) -> tuple:
    from .diff import evidence_keys, intermediate_answer
    return (n.kind, n.text, n.state, tuple(sorted(evidence_keys(n))),
            intermediate_answer(tr, n))


def whatif(store: Any, run_id: str, iv: Intervention, *, llm: Any,
           build: Build | None = None, passage: Callable[[str], Any] | None = None,
           write: bool = True,
           around: Callable[[Apply], Any] | None = None,
           live: list[Event] | None = None, add_first: bool = False) -> WhatIfResult:
    """Re-run stored run ``run_id`` with intervention ``iv`` (see the module docstring);
    stores the new run (unless ``write`` is False) and returns what changed.
    ``build(run_row, backend, parent_trace) -> (method, ctx)`` makes the run's method and
    context (default: from its dataset); ``passage(id)`` finds a dataset passage for
    ``iv.add_ids`` (default: the run's dataset); ``around(apply)`` gives the hooks the
    methods consult when more than ``iv`` applies (gold repair's every-node scope); what
    applied is still read from ``apply``. ``live`` receives each event as the re-run makes
    it (node ids not yet aligned with the parent's), for a view that draws it as it grows.
    ``add_first``: added passages go before the node's own hits instead of after them."""
    run, events, parent = check(store, run_id, iv, model=llm.info)
    found = []
    if iv.add_ids:
        look = passage or default_passage(run)
        missing = [pid for pid in iv.add_ids if look(pid) is None]
        if missing:
            raise WhatIfError(f"dataset {run.get('dataset')!r} has no passage "
                              f"{_short(missing, 3)}; give passage ids of that dataset",
                              "unknown_passage")
        found = [look(pid) for pid in iv.add_ids]
    replay = CallReplay(llm, run_calls(events), None, source=f"run {run_id}")
    method, ctx = (build or default_build)(run, replay, parent)
    hook = Apply(iv, added_hits(iv.add, found), first=add_first)
    ctx.whatif = around(hook) if around else hook
    buf = _Buffer()
    from ..execution import execute
    t0 = time.perf_counter()
    tr = T.Trace()
    for ev in execute(method, ctx, run["question"], store=buf, question_id=run.get("question_id"),
                      trace_out=tr, memo=bool(parent.meta.get("call_memo", True)),
                      parent_run_id=run_id, intervention=iv.to_dict()):
        if live is not None:
            live.append(ev)
    wall_ms = (time.perf_counter() - t0) * 1000.0
    if tr.status not in OK_STATUSES:
        raise WhatIfError(f"the what-if re-run of {run_id} {tr.status}: "
                          f"{tr.summary.get('error') or 'no answer'}; nothing was stored",
                          "rerun_failed")
    if hook.mismatch:
        raise WhatIfError(f"{method.name} cannot take verdict {iv.verdict!r}: "
                          f"{'; '.join(hook.mismatch)}; nothing was stored", "not_applicable")
    for part in iv.parts():
        if not any(a["part"] == part and a["node"] == iv.node for a in hook.applied):
            takers = sorted(hook.seen[part])
            raise WhatIfError(
                f"{method.name} cannot take {PART_WORDS[part]} on node {iv.node} "
                f"({parent.nodes[iv.node].kind}): the method produces no {part} for it "
                f"(nodes that take one: {_short(takers) or 'none'}); nothing was stored",
                "not_applicable")
    mapping = align_ids(events, buf.events)
    new_events = rename_events(buf.events, mapping)
    # the intervention, where it applied, just before run_finished
    fin = new_events[-1]
    note = Event(INTERVENTION_APPLIED, {"parent_run_id": run_id, "intervention": iv.to_dict(),
                                        "applied": _rename(hook.applied, mapping),
                                        "renamed": {a: b for a, b in mapping.items()
                                                    if a != b}},
                 run_id=fin.run_id, seq=fin.seq, t_ms=fin.t_ms, ts=fin.ts, node_id=iv.node)
    new_events = new_events[:-1] + [note, dataclasses.replace(fin, seq=fin.seq + 1)]
    new = Trace.fold(new_events)
    ans = new.answer or {}
    correct = _correct(ans.get("text"), bool(ans.get("refused")), new.meta.get("gold"))
    pans = parent.answer or {}
    parent_correct = run.get("correct")
    if parent_correct is None:
        parent_correct = _correct(pans.get("text"), bool(pans.get("refused")),
                                  parent.meta.get("gold"))
    if write:
        store.start_run({**buf.run, **buf.fields, "correct": correct})
        store.add_events(new_events)

    kinds = {cid: call_kind(c) for cid, c in new.llm_calls.items()}
    fresh = [(cid, c) for cid, c in new.llm_calls.items() if kinds[cid] == "fresh"]
    scores = [e for e in new_events if e.type == T.LLM_SCORE]
    common = [n for n in new.nodes if n in parent.nodes]
    return WhatIfResult(
        run_id=new.run_id, parent_run_id=run_id, method=method.name, node=iv.node,
        intervention=iv.to_dict(), status=new.status, answer=ans.get("text"),
        parent_answer=pans.get("text"),
        answer_changed=(ans.get("text"), bool(ans.get("refused"))) !=
        (pans.get("text"), bool(pans.get("refused"))),
        correct=correct, parent_correct=parent_correct,
        fresh_calls=len(fresh),
        replayed_calls=sum(1 for k in kinds.values() if k == "replayed"),
        reused_calls=sum(1 for k in kinds.values() if k == "reused"),
        fresh_call_ids=[cid for cid, _ in fresh],
        fresh=[{"call_id": cid, "node": c.get("node_id"), "purpose": c.get("purpose")}
               for cid, c in fresh],
        fresh_scores=sum(1 for e in scores if not e.data.get("replayed_from")),
        replayed_scores=sum(1 for e in scores if e.data.get("replayed_from")),
        parent_calls=int(parent.totals()["llm_calls"]),
        changed_nodes=[n for n in common if (n == iv.node and hook.applied) or
                       _node_sig(new, new.nodes[n]) != _node_sig(parent, parent.nodes[n])],
        rerun_nodes=list(dict.fromkeys(c.get("node_id") for _, c in fresh
                                       if c.get("node_id"))),
        added_nodes=[n for n in new.nodes if n not in parent.nodes],
        removed_nodes=[n for n in parent.nodes if n not in new.nodes],
        renamed={a: b for a, b in mapping.items() if a != b}, applied=hook.applied,
        wall_ms=round(wall_ms, 1),
        llm_ms=round(sum(float(c.get("latency_ms") or 0.0) for _, c in fresh), 1),
        parent_llm_ms=round(float(parent.totals()["llm_ms"]), 1),
        answer_call=answer_call(new))


def answer_call(tr: Trace) -> dict[str, Any] | None:
    """The call a run's answer was read from: the last call made at the answer's node (the
    answer or span-extraction call), else the run's last call; None when it made none."""
    nid = (tr.answer or {}).get("node_id")
    calls = sorted(tr.llm_calls.items(), key=lambda kv: kv[1].get("seq") or 0)
    mine = [kv for kv in calls if nid and kv[1].get("node_id") == nid]
    if not (mine or calls):
        return None
    cid, c = (mine or calls)[-1]
    if c.get("prompt") is None or c.get("output") is None:
        return None
    return {"call_id": cid, "prompt": c["prompt"], "output": c["output"]}
