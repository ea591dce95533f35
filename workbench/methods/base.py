"""The method contract: a method is a generator of events over a run context.

Methods never import Streamlit, DuckDB or pyvis. They call the LLM and the
retrievers through :class:`RunContext`, whose helpers are generators that
yield the ``llm_call`` / ``retrieved`` events and *return* the result, so a
method writes ``comp = yield from ctx.generate(...)`` and every call is
recorded and linked to the node it serves. The same code runs its calls together with
other pieces' when ``batched.together`` drives it.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar, Generator, Iterator, Sequence

from .. import trace as T
from ..datasets.base import Question
from ..knowledge.types import Hit
from ..llm import batching
from ..llm.base import Completion, GenParams, GenRequest, LLMBackend, Message, ScoreRequest
from .batched import Call, InOrder
from .intervene import Interventions

Events = Generator[T.Event, None, Any]


@dataclass
class RunContext:
    llm: LLMBackend
    config: Any
    seed: int = 0
    retrievers: dict[str, Any] = field(default_factory=dict)   # name -> Retriever
    kg: Any = None                                            # knowledge.kg.KnowledgeGraph
    embedder: Any = None                                      # knowledge.dense.Embedder
    gold: Question | None = None
    dataset: str = "demo"
    extra: dict[str, Any] = field(default_factory=dict)
    phase: str = ""
    _n: int = 0
    max_batch: int | None = None        # requests per generate_many group; None: the backend's
    # plans recorded by an earlier run (batching.plans_from_records), one per generate_many
    # call in call order, so that a re-run groups its requests exactly as that run did
    batch_plans: list[list[list[int]]] | None = None
    _together: bool = False     # set while batched.together drives the calls (see there)
    # what-if hooks (methods/intervene.py): a normal run's hand back what they are given
    whatif: Interventions = field(default_factory=Interventions)

    def node_id(self, prefix: str = "n") -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def set_phase(self, name: str, **info: Any) -> T.Event:
        self.phase = name
        return T.phase(name, **info)

    @property
    def n_ctx(self) -> int | None:
        """The model's context in tokens: the smaller of what its info and the backend say,
        or None when neither does (a server that names none)."""
        known = [n for n in (getattr(self.llm.info, "n_ctx", None),
                             getattr(self.llm, "n_ctx", None)) if isinstance(n, int) and n > 0]
        return min(known) if known else None

    def room(self, messages: list[Message] | str, margin: int = 64) -> int | None:
        """New tokens the model's context has left after ``messages`` (counted without the
        chat template, which ``margin`` covers), or None when the backend names no n_ctx.
        A budget made from knobs (per item times items, a retry's extra room) can exceed it,
        and a call asking for more than fits fails instead of writing less."""
        n_ctx = self.n_ctx
        return None if n_ctx is None else n_ctx - self.prompt_tokens(messages) - margin

    def prompt_tokens(self, messages: list[Message] | str) -> int:
        """Tokens of the messages' text, without the chat template (a quarter of the
        characters when the backend cannot count)."""
        text = messages if isinstance(messages, str) else "\n".join(
            m["content"] for m in messages)
        try:
            return int(self.llm.count_tokens(text))
        except Exception:           # noqa: BLE001 - a server without a tokenizer endpoint
            return len(text) // 4

    def _retry_tokens(self, messages: list[Message] | str, max_tokens: int) -> int:
        """A JSON retry's budget: half as much again (truncation is the usual cause), within
        what the context has left, and never less than the first try had."""
        room = self.room(messages)
        more = int(max_tokens * 1.5) + 16
        return more if room is None else max(max_tokens, min(more, room))

    def _call_event(self, comp: Completion, purpose: str, node_id: str | None,
                    prompt_version: str) -> T.Event:
        """The ``llm_call`` event of one completion, in this context's phase."""
        call_id = comp.call_id or T.new_id("call_")    # llm/memo.py names it beforehand
        rec = comp.to_record()
        rec.update(purpose=purpose, phase=self.phase, call_id=call_id,
                   prompt_version=prompt_version)
        return T.Event(T.LLM_CALL, rec, node_id=node_id, llm_call_id=call_id)

    def _run_params(self, p: GenParams) -> GenParams:
        """``p`` with what the run sets on every generation (the Settings' loop stop), so
        each call records it and the memo and replay keys include it."""
        stop = self.extra.get("loop_stop")
        return p if stop is None or stop == p.loop_stop else replace(p, loop_stop=int(stop))

    def generate(self, purpose: str, messages: list[Message] | str,
                 params: GenParams | None = None, *, node_id: str | None = None,
                 prompt_version: str = "") -> Events:
        p = self._run_params(params or GenParams())
        if self._together:      # batched.together runs it with the other items' calls
            comp = yield Call(generate=GenRequest(messages, p))
        else:
            comp = self.llm.generate(messages, p)
        yield self._call_event(comp, purpose, node_id, prompt_version)
        return comp

    def score_many(self, requests: Sequence[ScoreRequest], *, purpose: str = "score",
                   node_id: str | None = None) -> Events:
        """Teacher-forced scores of several continuations (``llm.score`` each; one
        ``score_many`` batch with the other items' scorings inside batched.together).
        Yields an ``llm_score`` event per scoring, which ``eval --reuse-calls`` replays;
        the caller records what the scores mean."""
        if self._together:
            got = yield Call(score=list(requests))
        else:
            got = [self.llm.score(r.context, r.continuation) for r in requests]
        for sc in got:
            yield T.Event(T.LLM_SCORE, {**sc.to_record(), "purpose": purpose, "phase": self.phase,
                                        "score_id": T.new_id("score_")}, node_id=node_id)
        return got

    def generate_json(self, purpose: str, messages: list[Message] | str, schema: dict[str, Any],
                      params: GenParams | None = None, *, node_id: str | None = None,
                      prompt_version: str = "",
                      validate: Callable[[Any], Any] | None = None) -> Events:
        """Schema-constrained call, parsed; one constrained retry; then a parse_failed node.

        Returns the parsed (and validated) object, or None after the visible failure.
        """
        p = params or GenParams()
        p = GenParams(**{**p.to_dict(), "json_schema": schema})
        errors = []
        for attempt in range(2):
            if attempt:
                p = GenParams(**{**p.to_dict(), "temperature": 0.0,
                                 "max_tokens": self._retry_tokens(messages, p.max_tokens)})
            comp: Completion = yield from self.generate(
                purpose + ("" if attempt == 0 else ":retry"), messages, p, node_id=node_id,
                prompt_version=prompt_version)
            try:
                obj = json.loads(comp.text)
                return validate(obj) if validate else obj
            except (ValueError, TypeError, KeyError) as e:
                errors.append(f"{type(e).__name__}: {e}")
        failed = self._parse_failed(purpose, node_id, errors, comp.text)
        # running together, the node id is taken when the trace reaches the node
        if self._together:
            yield InOrder(failed)
        else:
            yield from failed
        return None

    def _parse_failed(self, purpose: str, node_id: str | None, errors: list[str],
                      raw: str) -> Iterator[T.Event]:
        fid = self.node_id("fail")
        yield T.node_added(fid, "parse_failed", f"Could not parse model output for {purpose}",
                           parents=[node_id] if node_id else [], state="parse_failed",
                           purpose=purpose, errors=errors, raw_output=raw)

    def generate_many(self, purpose: str | Sequence[str], requests: Sequence[GenRequest], *,
                      node_ids: Sequence[str | None] | None = None,
                      prompt_version: str = "") -> Events:
        """Independent calls run together (one backend batch where it can); yields one
        ``llm_call`` event per request in request order, each linked to its node, with the
        group it ran in under ``batch``; returns the completions in request order."""
        n = len(requests)
        purposes = [purpose] * n if isinstance(purpose, str) else list(purpose)
        nodes = list(node_ids) if node_ids is not None else [None] * n
        if len(purposes) != n or len(nodes) != n:
            raise ValueError(f"generate_many got {n} requests but {len(purposes)} purposes "
                             f"and {len(nodes)} node ids; give one of each per request")
        if not n:
            return []
        plan = self.batch_plans.pop(0) if self.batch_plans else None
        requests = [GenRequest(r.messages, self._run_params(r.params)) for r in requests]
        comps = batching.generate_many(self.llm, requests, max_batch=self.max_batch, plan=plan)
        for comp, what, nid in zip(comps, purposes, nodes):
            yield self._call_event(comp, what, nid, prompt_version)
        return comps

    def generate_json_many(self, purpose: str | Sequence[str], requests: Sequence[GenRequest],
                           schema: dict[str, Any] | Sequence[dict[str, Any]], *,
                           node_ids: Sequence[str | None] | None = None,
                           prompt_version: str = "",
                           validate: Callable[[Any], Any] | None = None) -> Events:
        """:meth:`generate_json` for several requests run together: the failures of the
        first round are retried together (greedy, more room), and each one that still
        fails becomes a ``parse_failed`` node. Returns one object (or None) per request."""
        n = len(requests)
        schemas = [schema] * n if isinstance(schema, dict) else list(schema)
        purposes = [purpose] * n if isinstance(purpose, str) else list(purpose)
        nodes = list(node_ids) if node_ids is not None else [None] * n
        reqs = [GenRequest(r.messages, GenParams(**{**r.params.to_dict(), "json_schema": s}))
                for r, s in zip(requests, schemas)]
        results: list[Any] = [None] * n
        errors: list[list[str]] = [[] for _ in range(n)]
        raw = [""] * n
        todo = list(range(n))
        for attempt in range(2):
            if not todo:
                break
            if attempt:
                # as generate_json: the retry is greedy with more room
                reqs = [GenRequest(r.messages, GenParams(**{
                    **r.params.to_dict(), "temperature": 0.0,
                    "max_tokens": self._retry_tokens(r.messages, r.params.max_tokens)}))
                    for r in reqs]
            comps = yield from self.generate_many(
                [purposes[i] + ("" if attempt == 0 else ":retry") for i in todo],
                [reqs[i] for i in todo], node_ids=[nodes[i] for i in todo],
                prompt_version=prompt_version)
            failed = []
            for i, comp in zip(todo, comps):
                raw[i] = comp.text
                try:
                    obj = json.loads(comp.text)
                    results[i] = validate(obj) if validate else obj
                except (ValueError, TypeError, KeyError) as e:
                    errors[i].append(f"{type(e).__name__}: {e}")
                    failed.append(i)
            todo = failed
        for i in todo:
            fid = self.node_id("fail")
            yield T.node_added(fid, "parse_failed",
                               f"Could not parse model output for {purposes[i]}",
                               parents=[nodes[i]] if nodes[i] else [], state="parse_failed",
                               purpose=purposes[i], errors=errors[i], raw_output=raw[i])
        return results

    def retrieve(self, node_id: str | None, query: str, k: int, retriever: str = "") -> Events:
        name = retriever or next(iter(self.retrievers), "")
        if name not in self.retrievers:
            raise LookupError(
                f"no retriever {name!r} for dataset {self.dataset!r}; available: "
                f"{sorted(self.retrievers) or 'none (the dataset has no passages)'}")
        t0 = time.perf_counter()
        hits: list[Hit] = self.whatif.hits(node_id, self.retrievers[name].search(query, k))
        yield T.Event(T.RETRIEVED, {"query": query, "retriever": name, "k": k,
                                    "hits": [h.to_dict() for h in hits],
                                    "latency_ms": round((time.perf_counter() - t0) * 1000, 3)},
                      node_id=node_id)
        return hits


class Method:
    """Base class: subclasses set the class attributes and implement :meth:`run`."""
    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    kind: ClassVar[str] = "text"          # "text" (passages) | "kg" (knowledge graph) | "none"
    view: ClassVar[str] = "graph"         # "graph" | "mindmap"
    Config: ClassVar[type]
    prompt_version: ClassVar[str] = "1"
    description: ClassVar[str] = ""
    # score name -> (threshold knob, "lower"|"higher" is good) for what-if sliders
    thresholds: ClassVar[dict[str, tuple[str, str]]] = {}
    # The method's facts that central modules read (set from the package's declarations.py):
    node_kinds: ClassVar[tuple[str, ...]] = ()     # the node kinds its traces hold
    failure_tags: ClassVar[tuple[str, ...]] = ()   # annotation tags that apply to it
    # node kinds that judge their parent (a review): they hang off the answer's path whatever
    # they decide, so calibration labels them by the node they judge
    check_kinds: ClassVar[tuple[str, ...]] = ()
    # what-if: part ("evidence", "step", "sufficiency", "review") -> node-id pattern of the
    # nodes that take it; None: not declared (every part is offered, the re-run tells)
    whatif_nodes: ClassVar[dict[str, str] | None] = None
    preferred: ClassVar[bool] = False      # put first by the pages' method pickers
    eval_default: ClassVar[bool] = False   # preselected on the Evaluate page
    reference: ClassVar[bool] = False      # plain retrieve-then-answer: `ask` and presets default

    def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
        raise NotImplementedError
