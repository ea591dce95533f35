"""Run/event schema and the pure reducer that folds events into a Trace.

A run is a list of events. Everything downstream (live UI, store, replay,
comparison, export) consumes that list, so this module is the contract: the
core event types below are understood by the reducer; any other event type
(method-specific ones such as ``proposal_generated``) is kept in the trace's
log and attached to the node it names. Every type, core or not, is declared with its
payload keys in ``workbench/events.py`` (``docs/events.md``); strict mode, on in the tests,
refuses an event that breaks its declaration.
"""
from __future__ import annotations

import copy
import json
import os
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

SCHEMA_VERSION = 1

# Core event types the reducer interprets.
RUN_STARTED = "run_started"
PHASE = "phase"
NODE_ADDED = "node_added"
NODE_UPDATED = "node_updated"
EDGE_ADDED = "edge_added"
RETRIEVED = "retrieved"
LLM_CALL = "llm_call"
LLM_SCORE = "llm_score"          # one teacher-forced scoring (not a call: no text is generated)
NODE_SCORED = "node_scored"
PATH = "path"
ANSWER = "answer"
ERROR = "error"
RUN_FINISHED = "run_finished"

CORE_TYPES = frozenset(
    {RUN_STARTED, PHASE, NODE_ADDED, NODE_UPDATED, EDGE_ADDED, RETRIEVED, LLM_CALL,
     NODE_SCORED, PATH, ANSWER, ERROR, RUN_FINISHED}
)

# Node states shared by every method so colours and legends are uniform.
NODE_STATES = (
    "proposed", "created", "retrieved", "aggregated", "sufficient", "insufficient",
    "verified", "failed_verification", "pruned", "selected", "parse_failed", "answered",
    "unknown", "capped", "refused", "done",
)

RUN_STATUSES = ("running", "finished", "refused", "failed", "interrupted")


def _strict() -> bool:
    """Strict mode (``WORKBENCH_STRICT_EVENTS=1``, on in the test suite): the reducer refuses
    an event that breaks its declaration. Off, unknown types are kept in the log, so a store
    written by another version still reads."""
    return os.environ.get("WORKBENCH_STRICT_EVENTS", "").strip().lower() in ("1", "true",
                                                                              "yes", "on")


def new_id(prefix: str = "") -> str:
    return prefix + uuid.uuid4().hex[:12]


@dataclass
class Event:
    type: str
    data: dict[str, Any] = field(default_factory=dict)
    run_id: str = ""
    seq: int = -1
    t_ms: float = 0.0          # milliseconds since the run started
    ts: float = 0.0            # wall-clock epoch seconds
    node_id: str | None = None
    llm_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Event":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


class EventClock:
    """Stamps events of one run with run id, sequence number and times."""

    def __init__(self, run_id: str | None = None):
        self.run_id = run_id or new_id("run_")
        self.seq = 0
        self._t0 = time.perf_counter()

    def stamp(self, ev: Event) -> Event:
        ev.run_id = self.run_id
        ev.seq = self.seq
        ev.t_ms = round((time.perf_counter() - self._t0) * 1000.0, 3)
        ev.ts = time.time()
        self.seq += 1
        return ev


# --- event constructors: methods call these so payload shapes stay uniform ---

def node_added(node_id: str, kind: str, text: str, *, parents: Iterable[str] = (),
               layer: int = 0, state: str = "created", **attrs: Any) -> Event:
    return Event(NODE_ADDED, {"kind": kind, "text": text, "parents": list(parents),
                              "layer": layer, "state": state, "attrs": attrs}, node_id=node_id)


def node_updated(node_id: str, state: str | None = None, **attrs: Any) -> Event:
    return Event(NODE_UPDATED, {"state": state, "attrs": attrs}, node_id=node_id)


def edge_added(src: str, dst: str, kind: str = "next", **attrs: Any) -> Event:
    return Event(EDGE_ADDED, {"src": src, "dst": dst, "kind": kind, "attrs": attrs})


def node_scored(node_id: str, scores: dict[str, float],
                thresholds: dict[str, float] | None = None, *, call_id: str | None = None,
                **attrs: Any) -> Event:
    """``call_id``: the LLM call whose tokens these scores were read from, so that the
    inspector can say which call of the node a number belongs to (None: the method
    computed them itself, or an older run that did not say)."""
    data = {"scores": scores, "thresholds": thresholds or {}, "attrs": attrs}
    if call_id:
        data["call_id"] = call_id
    return Event(NODE_SCORED, data, node_id=node_id)


def path_event(path_id: str, nodes: list[str], state: str, **info: Any) -> Event:
    return Event(PATH, {"path_id": path_id, "nodes": list(nodes), "state": state, "info": info})


def phase(name: str, **info: Any) -> Event:
    return Event(PHASE, {"name": name, "info": info})


def answer(text: str, *, refused: bool = False, reason: str = "", node_id: str | None = None,
           confidence: float | None = None, **info: Any) -> Event:
    return Event(ANSWER, {"text": text, "refused": refused, "reason": reason,
                          "confidence": confidence, "info": info}, node_id=node_id)


def custom(type_: str, node_id: str | None = None, **data: Any) -> Event:
    return Event(type_, data, node_id=node_id)


# --- the trace ---

@dataclass
class Node:
    id: str
    kind: str
    text: str
    state: str = "created"
    layer: int = 0
    parents: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)
    score_calls: dict[str, str] = field(default_factory=dict)     # score -> call it came from
    evidence: list[dict[str, Any]] = field(default_factory=list)   # retrieval records
    llm_calls: list[str] = field(default_factory=list)
    history: list[int] = field(default_factory=list)               # seqs of events about it

    def inputs(self) -> list[str]:
        """The nodes this node's output was made from: its parents, and the nodes a method
        names in ``reasoned_from`` (CogGRAG's mind map grows down from the question but
        answers up: a question is answered from its sub-questions' answers)."""
        more = self.attrs.get("reasoned_from")
        return self.parents + [x for x in more if x not in self.parents] \
            if isinstance(more, list) else list(self.parents)


def retrieval_label(names: Iterable[Any]) -> str:
    """One label for the retrievers a run, or a series of runs, used ("dense", "bm25+dense",
    "kg"), or "none": two methods compared on it should share it, or the comparison
    measures their retrievers too."""
    return "+".join(sorted({str(n) for n in names if n})) or "none"


def retrieval_confound(a: str, b: str) -> bool:
    """Two series that both searched passages, with different retrievers: their difference
    mixes the retrievers with the methods, and a retriever knob can make them equal. (A
    method that retrieves nothing, or reads a KG, differs from a passage method by design.)"""
    def passages(label: str) -> bool:
        return label not in ("", "none") and not any(n.startswith("kg")
                                                     for n in label.split("+"))
    return a != b and passages(a) and passages(b)


@dataclass
class Trace:
    run_id: str = ""
    question: str = ""
    method: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    status: str = "running"
    phase: str = ""
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[dict[str, Any]] = field(default_factory=list)
    llm_calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    paths: dict[str, dict[str, Any]] = field(default_factory=dict)
    answer: dict[str, Any] | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)        # non-core events
    summary: dict[str, Any] = field(default_factory=dict)
    n_events: int = 0
    last_t_ms: float = 0.0

    def retrievers(self) -> set[str]:
        """The retrievers this run searched with (see :func:`retrieval_label`)."""
        return {e["retriever"] for n in self.nodes.values() for e in n.evidence
                if e.get("retriever")}

    # -- folding --
    @classmethod
    def fold(cls, events: Iterable[Event | dict[str, Any]]) -> "Trace":
        tr = cls()
        for ev in events:
            tr.apply(ev)
        return tr

    def apply(self, ev: Event | dict[str, Any]) -> "Trace":
        if isinstance(ev, dict):
            ev = Event.from_dict(ev)
        if _strict():      # tests: every event must match its declaration (workbench/events.py)
            from .events import check
            check(ev)
        d = ev.data
        self.n_events += 1
        self.last_t_ms = max(self.last_t_ms, ev.t_ms)
        if ev.run_id:
            self.run_id = ev.run_id
        t = ev.type
        if t == RUN_STARTED:
            self.question = d.get("question", "")
            self.method = d.get("method", "")
            self.config = copy.deepcopy(d.get("config", {}))
            self.meta = {k: copy.deepcopy(v) for k, v in d.items()
                         if k not in ("question", "method", "config")}
            self.status = "running"
        elif t == PHASE:
            self.phase = d.get("name", "")
        elif t == NODE_ADDED:
            nid = ev.node_id or ""
            node = Node(id=nid, kind=d.get("kind", "step"), text=d.get("text", ""),
                        state=d.get("state", "created"), layer=int(d.get("layer", 0)),
                        attrs=copy.deepcopy(d.get("attrs", {})))
            self.nodes[nid] = node
            # calls made for a node before it was drawn (e.g. the answer call) still belong to it
            node.llm_calls = [cid for cid, c in self.llm_calls.items() if c.get("node_id") == nid]
            for p in d.get("parents", []):
                self._link(p, nid, "next", {})
        elif t == NODE_UPDATED:
            node = self._node(ev.node_id)
            if node is not None:
                if d.get("state"):
                    node.state = d["state"]
                node.attrs.update(copy.deepcopy(d.get("attrs", {})))
        elif t == EDGE_ADDED:
            self._link(d["src"], d["dst"], d.get("kind", "next"), d.get("attrs", {}))
        elif t == RETRIEVED:
            node = self._node(ev.node_id)
            if node is not None:
                node.evidence.append(copy.deepcopy(d))
        elif t == LLM_CALL:
            cid = ev.llm_call_id or d.get("call_id") or f"call{ev.seq}"
            rec = copy.deepcopy(d)
            rec["node_id"] = ev.node_id
            rec["seq"] = ev.seq
            rec["t_ms"] = ev.t_ms      # when it returned: the call waterfall's time axis
            self.llm_calls[cid] = rec
            node = self._node(ev.node_id)
            if node is not None:
                node.llm_calls.append(cid)
        elif t == NODE_SCORED:
            node = self._node(ev.node_id)
            if node is not None:
                node.scores.update(d.get("scores", {}))
                node.thresholds.update(d.get("thresholds", {}))
                for k in d.get("scores", {}):
                    # a later scoring without a call id must not keep a stale source
                    if d.get("call_id"):
                        node.score_calls[k] = d["call_id"]
                    else:
                        node.score_calls.pop(k, None)
                node.attrs.update(copy.deepcopy(d.get("attrs", {})))
        elif t == PATH:
            self.paths[d["path_id"]] = {"nodes": list(d.get("nodes", [])),
                                        "state": d.get("state", ""),
                                        "info": copy.deepcopy(d.get("info", {}))}
        elif t == ANSWER:
            self.answer = copy.deepcopy(d)
            self.answer["node_id"] = ev.node_id
        elif t == ERROR:
            self.errors.append(copy.deepcopy(d))
        elif t == RUN_FINISHED:
            self.status = d.get("status", "finished")
            self.summary = copy.deepcopy(d)
        else:
            self.log.append({"type": t, "seq": ev.seq, "node_id": ev.node_id, "t_ms": ev.t_ms,
                             "data": copy.deepcopy(d)})
        if ev.node_id and ev.node_id in self.nodes:
            self.nodes[ev.node_id].history.append(ev.seq)
        return self

    def _node(self, nid: str | None) -> Node | None:
        return self.nodes.get(nid) if nid else None

    def _link(self, src: str, dst: str, kind: str, attrs: dict[str, Any]) -> None:
        if any(e["src"] == src and e["dst"] == dst and e["kind"] == kind for e in self.edges):
            return
        self.edges.append({"src": src, "dst": dst, "kind": kind, "attrs": copy.deepcopy(attrs)})
        if src in self.nodes and dst not in self.nodes[src].children:
            self.nodes[src].children.append(dst)
        if dst in self.nodes and src not in self.nodes[dst].parents:
            self.nodes[dst].parents.append(src)

    # -- derived views --
    def roots(self) -> list[str]:
        return [n.id for n in self.nodes.values() if not n.parents]

    def unreachable(self) -> set[str]:
        """Nodes not connected to the first node, edges taken in either direction."""
        if not self.nodes:
            return set()
        adj: dict[str, set[str]] = {n: set() for n in self.nodes}
        for e in self.edges:
            if e["src"] in adj and e["dst"] in adj:
                adj[e["src"]].add(e["dst"])
                adj[e["dst"]].add(e["src"])
        start = next(iter(self.nodes))
        seen, stack = {start}, [start]
        while stack:
            for b in adj[stack.pop()]:
                if b not in seen:
                    seen.add(b)
                    stack.append(b)
        return set(self.nodes) - seen

    def answer_path(self) -> list[str]:
        """The nodes the answer rests on, in the order the run made them: the answer node
        and its ancestors, plus the ``closest_path`` the answer node names, less nodes that
        lie only on answer paths the method did not select. Empty when the answer names no
        node. Failure triage looks for the breaking node here, and attribution of the
        answer's path drops these nodes' evidence."""
        aid = (self.answer or {}).get("node_id")
        if aid not in self.nodes:
            return []
        keep, stack = {aid}, [aid]
        while stack:
            for p in self.nodes[stack.pop()].inputs():
                if p in self.nodes and p not in keep:
                    keep.add(p)
                    stack.append(p)
        closest = self.nodes[aid].attrs.get("closest_path")
        if isinstance(closest, list):
            keep |= {x for x in closest if x in self.nodes}
        if any(str(p.get("state")) == "selected" for p in self.paths.values()):
            on_sel = {x for p in self.paths.values() if str(p.get("state")) == "selected"
                      for x in p.get("nodes", [])}
            keep -= {x for p in self.paths.values() for x in p.get("nodes", [])} - on_sel
        return [nid for nid in self.nodes if nid in keep]

    def totals(self) -> dict[str, float]:
        calls = list(self.llm_calls.values())
        # a call answered by an earlier identical one of the run (llm/memo.py) cost nothing
        reused = sum(1 for c in calls if c.get("reused_from"))
        return {
            "llm_calls": len(calls) - reused,
            "reused_calls": reused,
            "prompt_tokens": sum(int(c.get("prompt_tokens", 0)) for c in calls),
            "completion_tokens": sum(int(c.get("completion_tokens", 0)) for c in calls),
            # served by the prefix cache: a run after one with a like prompt is faster for it
            "cached_prompt_tokens": sum(int(c.get("cached_prompt_tokens") or 0) for c in calls),
            "llm_ms": sum(float(c.get("latency_ms", 0.0)) for c in calls),
            "nodes": len(self.nodes),
            "edges": len(self.edges),
            "elapsed_ms": self.last_t_ms,
        }

    # -- serialisation --
    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["schema_version"] = SCHEMA_VERSION
        return d

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Trace":
        d = dict(d)
        d.pop("schema_version", None)
        nodes = {k: Node(**v) for k, v in d.pop("nodes", {}).items()}
        tr = cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})
        tr.nodes = nodes
        return tr

    @classmethod
    def from_json(cls, s: str) -> "Trace":
        return cls.from_dict(json.loads(s))
