"""The declared event types: every type a run may hold, the payload keys it must carry, the
ones worth knowing that it may carry, and what it means in plain words.

``workbench/trace.py`` folds the core types below into a :class:`~workbench.trace.Trace`;
every other type is kept in the trace's log and attached to the node it names. Methods
declare their own types in their package's ``declarations.py`` (``workbench/methods/<name>/``),
the types several share in ``workbench/methods/events.py``; both are loaded on first use.

Strict mode (``WORKBENCH_STRICT_EVENTS=1``; the test suite turns it on in
``tests/conftest.py``) makes the reducer refuse an event that breaks its declaration: an
undeclared type, a required payload key missing, a node event without a node id, a node
state outside :data:`~workbench.trace.NODE_STATES` or a run status outside
:data:`~workbench.trace.RUN_STATUSES`. Without it (the default) the reducer tolerates all of
these, so a store written by a newer or older version still reads.

``python -m workbench events --markdown`` writes ``docs/events.md`` from these declarations.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

from . import trace as T

STRICT_ENV = "WORKBENCH_STRICT_EVENTS"


@dataclass(frozen=True)
class EventSpec:
    type: str
    meaning: str                         # one line, plain words
    required: tuple[str, ...] = ()       # payload keys every event of the type carries
    optional: tuple[str, ...] = ()       # payload keys worth naming that it may carry
    node: bool | None = None             # True: about one node (node_id set); False: the run
    source: str = "core"                 # "core", or the method (family) that emits it
    more: str = ""                       # where further, open-ended payload keys come from
    legacy: bool = False                 # no longer emitted; declared so stored runs read


class EventSchemaError(ValueError):
    """An event that breaks its declaration, raised in strict mode only."""


_DECLARED: dict[str, EventSpec] = {}
_methods_loaded = False


def declare(*specs: EventSpec) -> None:
    """Register event types. Declaring a type twice with a different spec is an error (two
    emitters would disagree on its payload)."""
    for s in specs:
        old = _DECLARED.get(s.type)
        if old is not None and old != s:
            raise ValueError(f"event type {s.type!r} is declared twice, differently "
                             f"({old.source} and {s.source})")
        _DECLARED[s.type] = s


@contextlib.contextmanager
def declared(*specs: EventSpec) -> Iterator[None]:
    """Declare ``specs`` for the duration of a block (toy methods of tests)."""
    new = [s for s in specs if s.type not in _DECLARED]
    declare(*specs)
    try:
        yield
    finally:
        for s in new:
            _DECLARED.pop(s.type, None)


def _load_methods() -> None:
    """Import the modules that declare event types besides the core ones."""
    global _methods_loaded
    if not _methods_loaded:
        _methods_loaded = True
        from .methods import events as _method_events  # noqa: F401  (declares on import)
        from .methods import all_methods
        all_methods()           # each method package's declarations.py declares on import
        from .analysis import whatif as _whatif  # noqa: F401  (intervention_applied)


def all_specs() -> dict[str, EventSpec]:
    """Every declared type in declaration order (core first, then each method's in the
    order it emits them)."""
    _load_methods()
    return dict(_DECLARED)


def spec(type_: str) -> EventSpec | None:
    _load_methods()
    return _DECLARED.get(type_)


def strict() -> bool:
    """Whether strict mode is on (``WORKBENCH_STRICT_EVENTS``)."""
    return T._strict()


def problems(ev: T.Event | dict[str, Any]) -> list[str]:
    """What is wrong with ``ev`` against its declaration ([] when nothing)."""
    if isinstance(ev, dict):
        ev = T.Event.from_dict(ev)
    s = spec(ev.type)
    if s is None:
        return [f"undeclared event type {ev.type!r} (declare it in workbench/events.py, "
                "workbench/methods/events.py or the method's declarations.py)"]
    d = ev.data if isinstance(ev.data, dict) else {}
    out = [f"{ev.type}: required payload key {k!r} is missing" for k in s.required
           if k not in d]
    if s.node and not ev.node_id:
        out.append(f"{ev.type}: names no node (node_id is empty)")
    if ev.type in (T.NODE_ADDED, T.NODE_UPDATED) and d.get("state") not in (None, *T.NODE_STATES):
        out.append(f"{ev.type}: node state {d.get('state')!r} is not one of NODE_STATES")
    if ev.type == T.RUN_FINISHED and d.get("status") not in T.RUN_STATUSES:
        out.append(f"run_finished: status {d.get('status')!r} is not one of RUN_STATUSES")
    return out


def check(ev: T.Event | dict[str, Any]) -> None:
    """Raise :class:`EventSchemaError` when ``ev`` breaks its declaration."""
    probs = problems(ev)
    if probs:
        raise EventSchemaError("; ".join(probs))


# --------------------------------------------------------------------------- core types
declare(
    EventSpec(T.RUN_STARTED, "A run began: its question, method and settings.",
              ("question",),
              ("method", "config", "seed", "dataset", "question_id", "gold", "model",
               "prompt_version", "view", "thresholds", "call_memo", "parent_run_id",
               "intervention"), node=False),
    EventSpec(T.PHASE, "The method entered a phase (a step of its paper).", ("name",),
              ("info",), node=False),
    EventSpec(T.NODE_ADDED, "A node was drawn in the run's graph.", ("kind", "text"),
              ("parents", "layer", "state", "attrs"), node=True,
              more="attrs: the method's own facts about the node"),
    EventSpec(T.NODE_UPDATED, "A node changed state or gained attributes.", (),
              ("state", "attrs"), node=True),
    EventSpec(T.EDGE_ADDED, "An edge was drawn between two nodes.", ("src", "dst"),
              ("kind", "attrs"), node=False),
    EventSpec(T.RETRIEVED, "A retriever returned passages, triples or paths for a query.",
              ("hits",), ("query", "retriever", "k", "latency_ms", "attributed", "epsilon")),
    EventSpec(T.LLM_CALL, "One model call: prompt, output, per-token log-probabilities, "
              "token counts and timing.", ("prompt", "output"),
              ("purpose", "phase", "call_id", "prompt_version", "tokens", "prompt_tokens",
               "completion_tokens", "latency_ms", "finish_reason", "model", "params",
               "logprobs_available", "prompt_eval_ms", "cached_prompt_tokens", "cache",
               "scores", "batch", "replayed_from", "reused_from")),
    EventSpec(T.LLM_SCORE, "One teacher-forced scoring of a given continuation (no text is "
              "generated).", ("tokens",),
              ("purpose", "phase", "score_id", "context_sha256", "continuation",
               "latency_ms", "batch", "replayed_from")),
    EventSpec(T.NODE_SCORED, "Scores (and the thresholds they are held against) for a node.",
              ("scores",), ("thresholds", "attrs", "call_id"), node=True),
    EventSpec(T.PATH, "A path through the graph and its state (selected, pruned, ...).",
              ("path_id",), ("nodes", "state", "info"), node=False),
    EventSpec(T.ANSWER, "The run's answer, or its refusal.", ("text",),
              ("refused", "reason", "confidence", "info")),
    EventSpec(T.ERROR, "Something went wrong; the run may still finish.", ("message",),
              ("traceback",), node=False),
    EventSpec(T.RUN_FINISHED, "The run ended: status, answer, totals and per-phase counts.",
              ("status",), ("error", "answer", "refused", "totals", "by_phase"), node=False),
    EventSpec("intervention_applied", "A what-if's intervention and where it applied (just "
              "before run_finished of the re-run).", ("parent_run_id", "intervention", "applied"),
              ("renamed",), node=True, source="what-if"),
)


def markdown() -> str:
    """docs/events.md: the declarations as tables."""
    from .viz.names import event_name
    specs = all_specs()
    by_source: dict[str, list[EventSpec]] = {}
    for s in specs.values():
        by_source.setdefault(s.source, []).append(s)
    lines = [
        "# Events",
        "",
        "<!-- generated by `python -m workbench events --markdown > docs/events.md`; "
        "do not edit -->",
        "",
        "A run is a list of events; the store keeps them, and every view (the live graph, "
        "Runs, Compare, export, evaluation) folds them into a trace with the pure reducer in "
        "`workbench/trace.py`. This page lists every declared event type "
        f"({len(specs)} in all): the payload keys it must carry, the ones it may carry, and "
        "what it means. The declarations live in `workbench/events.py` (core types) and "
        "each method's `declarations.py` in its package under `workbench/methods/` (the "
        "types several methods share in `workbench/methods/events.py`; the what-if declares "
        "its own in `workbench/analysis/whatif.py`). A core type requires only the keys its "
        "readers cannot do without; the workbench sends the optional ones too, but hand-made "
        "or older events may lack them.",
        "",
        "**Strict mode.** With `WORKBENCH_STRICT_EVENTS=1` (the test suite sets it in "
        "`tests/conftest.py`) the reducer refuses an event of an undeclared type, one missing "
        "a required key, a node event without a node id, a node state outside `NODE_STATES` "
        "or a run status outside `RUN_STATUSES`. Without it, the default, the reducer keeps "
        "unknown types in the trace's log, so a store written by another version still reads.",
        "",
        f"**Node states** (`NODE_STATES`): {', '.join(f'`{s}`' for s in T.NODE_STATES)}.",
        "",
        f"**Run statuses** (`RUN_STATUSES`): {', '.join(f'`{s}`' for s in T.RUN_STATUSES)}.",
        "",
        "Columns: *on* says whether the event names a node (`node`), the run (`run`) or "
        "either; *shown as* is the plain name the Runs page uses.",
    ]
    for source, items in by_source.items():
        title = "Core events (understood by the reducer)" if source == "core" else source
        lines += ["", f"## {title}", "",
                  "| type | shown as | on | meaning | required keys | optional keys |",
                  "|---|---|---|---|---|---|"]
        for s in items:
            on = {True: "node", False: "run", None: "either"}[s.node]
            meaning = s.meaning + (" *(no longer emitted; older runs hold it)*"
                                   if s.legacy else "")
            opt = ", ".join(f"`{k}`" for k in s.optional) or "–"
            if s.more:
                opt += f"; {s.more}"
            req = ", ".join(f"`{k}`" for k in s.required) or "–"
            lines.append(f"| `{s.type}` | {event_name(s.type)} | {on} | "
                         f"{meaning.replace('|', '/')} | {req} | {opt.replace('|', '/')} |")
    return "\n".join(lines) + "\n"
