"""The worker side of an eval: run one item through the runner and score it, returning
what the parent writes (the run's recorded writes and the item row).

Workers never touch the store: DuckDB allows one writing process, and only the eval's
parent writes (:mod:`.writer`). A worker is a thread with its own executor; with llama.cpp
each worker also has its own model, in a worker process of its own
(:class:`~workbench.llm.isolated.IsolatedBackend`), so a model that crashes fails one item.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Iterable

from .. import config as cfgmod
from .. import cpu_share
from .. import trace as T
from ..llm.base import LLMError, ModelInfo
from . import knobs as K
from . import metrics as M
from .plan import Item


class RecordingStore:
    """Stands in for the Store inside a worker: records the runner's writes."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, tuple, dict]] = []

    def start_run(self, run: dict[str, Any]) -> None:
        self.ops.append(("start_run", (dict(run),), {}))

    def update_run(self, run_id: str, **fields: Any) -> None:
        self.ops.append(("update_run", (run_id,), fields))

    def add_events(self, events: Iterable[T.Event]) -> int:
        evs = list(events)
        self.ops.append(("add_events", (evs,), {}))
        return len(evs)


@dataclass
class ItemResult:
    key: str
    ops: list[tuple[str, tuple, dict]]
    row: dict[str, Any]


@dataclass
class WorkerSetup:
    """Everything a worker needs to build its executor (plain data: it also crosses
    process boundaries)."""
    eval_id: str
    dataset: str
    backend: dict[str, Any]           # {"kind": "settings", "overrides": {...}} | {"kind": "scripted", ...}
    judge: str = "same"
    scoring: dict[str, Any] = field(default_factory=dict)
    factories: dict[str, str] = field(default_factory=dict)   # "context"/"dataset"/"methods" -> "module:func"
    replay: dict[str, Any] | None = None   # {"source", "calls", "model_sha256"}: llm/replay.py
    # items this process runs at once (threads of --workers and --items-together): above 1,
    # an item's wall time is its latency while others shared the model and the cores
    items_at_once: int = 1


def _import(path: str) -> Any:
    mod, _, fn = path.partition(":")
    return getattr(importlib.import_module(mod), fn)


def make_backend(spec: dict[str, Any], shared: bool = True) -> Any:
    kind = spec.get("kind", "settings")
    if kind == "scripted":
        from ..llm.scripted import ScriptedBackend
        table = spec.get("table") or []
        be = ScriptedBackend.from_table(table, default=spec.get("default"))
        if spec.get("delay_ms"):
            return _Delayed(be, float(spec["delay_ms"]) / 1000.0)
        return be
    if kind == "factory":
        return _import(spec["factory"])()
    from ..llm.registry import load_backend
    return load_backend(None, shared=shared, **(spec.get("overrides") or {}))


class _Delayed:
    """A backend whose calls take at least ``delay`` seconds (tests of interruption)."""

    def __init__(self, inner: Any, delay: float):
        self.inner, self.delay, self.info = inner, delay, inner.info

    def generate(self, messages: Any, params: Any = None) -> Any:
        time.sleep(self.delay)
        return self.inner.generate(messages, params)

    def score(self, context: Any, continuation: str) -> Any:
        return self.inner.score(context, continuation)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


def make_judge(judge: str, backend: Any) -> M.LLMJudge | None:
    if not judge or judge == "off":
        return None
    if judge == "same":
        return M.LLMJudge(backend)
    from ..llm.registry import load_backend
    jb = load_backend(None, model=judge)
    return M.LLMJudge(jb)


def default_context(method_cls: type, variant: dict[str, Any], seed: int, llm: Any,
                    dataset: Any) -> tuple[Any, Any]:
    """The method and a question-free run context for one variant: the whole stored config,
    not the overrides, so a resumed eval keeps the values it started with."""
    from ..methods import all_methods
    from ..workspace import build_context
    name = variant["method"]
    # a method class handed in directly (tests, benchmarks) runs as an instance of its own
    method = name if all_methods().get(name) is method_cls else method_cls()
    return build_context(method, llm=llm, dataset=dataset, overrides=variant["config"],
                         seed=seed)


def _question_obj(d: dict[str, Any]) -> Any:
    from ..datasets.base import Question
    return Question.from_dict(d)


class ItemExecutor:
    """Runs items in one worker (thread or process) and scores them."""

    JUDGE_CACHE_MAX = 2048

    def __init__(self, setup: WorkerSetup, *, backend: Any = None, dataset: Any = None,
                 method_classes: dict[str, type] | None = None,
                 context_factory: Callable | None = None, judge: Any = "setup"):
        self.setup = setup
        self.backend = backend if backend is not None else make_backend(setup.backend)
        self.judge = make_judge(setup.judge, self.backend) if judge == "setup" else judge
        if setup.replay:      # after the judge: its verdicts are not the methods' calls
            from ..llm.replay import CallReplay
            self.backend = CallReplay(self.backend, setup.replay["calls"],
                                      setup.replay.get("model_sha256"),
                                      source=setup.replay.get("source", ""))
        if dataset is None:
            dataset = _import(setup.factories["dataset"])() if "dataset" in setup.factories \
                else _load_dataset(setup.dataset)
        self.dataset = dataset
        if method_classes is None:
            method_classes = _import(setup.factories["methods"])() if "methods" in setup.factories \
                else _all_methods()
        self.method_classes = method_classes
        if context_factory is None and "context" in setup.factories:
            context_factory = _import(setup.factories["context"])
        self.context_factory = context_factory or default_context
        self._ctx: dict[tuple, tuple[Any, Any]] = {}
        # what a first run would load inside its timed wall is loaded before it (real models
        # only: the scripted and fake backends of control-flow tests time nothing that matters)
        self.warm_up = getattr(self.backend.info, "backend", "") in ("llama_cpp", "openai_compat")
        # what the warm-up of a context loaded, until the first item run on it reports it
        self._warmed: dict[tuple, dict[str, Any]] = {}

    def _base(self, variant: dict[str, Any], seed: int, query: str) -> tuple[Any, Any]:
        key = (variant["hash"], seed)
        got = self._ctx.get(key)
        if got is None:
            cls = self.method_classes[variant["method"]]
            got = self._ctx[key] = self.context_factory(cls, variant, seed, self.backend,
                                                        self.dataset)
            if self.warm_up:
                from ..workspace import warm_context
                self._warmed[key] = warm_context(got[1], query)
        return got

    def run(self, item: Item) -> ItemResult:
        from ..execution import execute
        q = item.question
        v = item.variant
        method, base = self._base(v, item.seed, q["question"])
        ctx = dataclasses.replace(base, gold=_question_obj(q), seed=item.seed, phase="", _n=0,
                                  extra=dict(base.extra))
        if v["eval_knobs"]:
            ctx = K.apply_to_context(ctx, v["eval_knobs"],
                                     passages=getattr(self.dataset, "passages", []) or [],
                                     question_id=q["id"])
        rec = RecordingStore()
        tr = T.Trace()
        cpu0 = cpu_share.sample() if self.warm_up else None
        t0 = time.perf_counter()
        for _ in execute(method, ctx, q["question"], store=rec, question_id=q["id"],
                         eval_id=self.setup.eval_id, trace_out=tr):
            pass
        if tr.status == "interrupted":
            raise KeyboardInterrupt
        run_ms = (time.perf_counter() - t0) * 1000.0
        cpu_others = cpu_share.others_share(cpu0, cpu_share.sample()) if cpu0 is not None else None
        row = self.score(item, tr, run_ms, cpu_others)
        warmed = self._warmed.pop((v["hash"], item.seed), None)
        if warmed is not None and warmed["seconds"]:
            row["_metrics"]["warm_up"] = warmed     # the loading its wall time leaves out
        self._trim()
        return ItemResult(item.key, rec.ops, row)

    def score(self, item: Item, tr: T.Trace, run_ms: float,
              cpu_others: float | None = None) -> dict[str, Any]:
        return score_item(self.setup, item, tr, run_ms, self.judge,
                          getattr(self.backend.info, "sha256", ""), cpu_others)

    def _trim(self) -> None:
        """Keep long evals flat in memory: the scripted backend logs every call, and the
        judge caches verdicts."""
        calls = getattr(self.backend, "calls", None)
        if isinstance(calls, list) and len(calls) > 200:
            del calls[:-100]
        if self.judge is not None and len(self.judge.cache) > self.JUDGE_CACHE_MAX:
            for k in list(self.judge.cache)[: len(self.judge.cache) // 2]:
                self.judge.cache.pop(k, None)


def score_item(setup: WorkerSetup, item: Item, tr: T.Trace, run_ms: float, judge: Any,
               model_sha256: str, cpu_others: float | None = None) -> dict[str, Any]:
    """The ``eval_items`` row of one run (plus ``_metrics`` for ``runs.metrics``)."""
    # triage.classify imports eval.metrics, whose package imports this module
    from ..triage.store import eval_metrics as eval_triage
    q, v = item.question, item.variant
    sc = setup.scoring
    ans = tr.answer or {}
    refused = bool(ans.get("refused")) or tr.status == "refused"
    pred = ans.get("text") or ""
    meta = q.get("meta") or {}
    s = M.score_answer(q["question"], pred, q.get("answers") or [], q.get("aliases") or [],
                       refused=refused, qtype=q.get("type") or "", meta=meta, judge=judge,
                       primary=sc.get("primary"), tau_f1=sc.get("tau_f1", M.DEFAULT_TAU_F1),
                       crag_mode=sc.get("crag_mode"),
                       crag_profile=sc.get("crag_profile", "ragx"),
                       metric_profile=sc.get("metric_profile", M.LEGACY_PROFILE),
                       answer_entities=q.get("answer_entities") or [])
    if tr.status == "failed":
        s.correct = False
    struct = M.structure_scores(tr, q.get("decomposition") or [], q.get("gold_path") or [])
    totals = tr.totals()
    return {
        "eval_id": setup.eval_id, "item_key": item.key, "run_id": tr.run_id,
        "question_id": q["id"], "method": v["method"], "variant": v["label"],
        "knobs": json.dumps(v["overrides"] | v.get("knob_values", {}) | v["eval_knobs"],
                            sort_keys=True, default=str),
        "config_hash": v["hash"], "model_sha256": model_sha256,
        "seed": item.seed, "status": tr.status, "correct": s.correct, "refused": refused,
        "em": s.em, "f1": s.f1, "contains": s.contains, "rouge_l": s.rouge_l,
        "rouge_f1": s.rouge_f1, "hits1": s.hits1, "acc_lm": s.acc_lm, "fever": s.fever,
        "crag_label": s.crag_label, "crag_points": s.crag_points,
        "crag_decided_by": s.crag_decided_by, "confidence": M.answer_confidence(tr),
        "hops": q.get("hops"), "qtype": q.get("type") or "",
        "domain": meta.get("domain"), "question_type": meta.get("question_type"),
        "static_or_dynamic": meta.get("static_or_dynamic"),
        "llm_calls": totals["llm_calls"], "prompt_tokens": totals["prompt_tokens"],
        "completion_tokens": totals["completion_tokens"], "wall_ms": round(run_ms, 3),
        "judge": s.judge, "judge_ms": round(s.judge_ms, 3),
        "structure": json.dumps(struct) if struct else None, "created_at": time.time(),
        "cpu_others": cpu_others, "items_at_once": setup.items_at_once,
        # not columns: go to runs.metrics
        "_metrics": {**{k: getattr(s, k) for k in (
            "em", "f1", "contains", "rouge_l", "rouge_f1", "hits1", "acc_lm", "fever",
            "crag_label", "crag_points", "crag_decided_by", "primary", "judge",
            "judge_raw", "judge_error")}, **struct, **eval_triage(tr, q, s.correct)},
    }


class WorkerLostError(LLMError):
    """The worker running an item died (its process was killed, or crashed natively)."""


def lost_item(setup: WorkerSetup, item: Item, cause: str, method_cls: type,
              model: ModelInfo) -> ItemResult:
    """An item whose worker died on every try, stored as a failed run that names the cause:
    the eval still holds each item once, and ``--resume --retry-failed`` runs it again."""
    from ..methods.base import RunContext
    from ..execution import execute

    class Lost(method_cls):       # the method's name, prompt version and view, no run
        def run(self, ctx: Any, question: str) -> Any:
            raise WorkerLostError(cause)
            yield

    q = item.question
    cfg = cfgmod.build(method_cls.Config, item.variant["config"])
    ctx = RunContext(llm=SimpleNamespace(info=model), config=cfg, seed=item.seed,
                     gold=_question_obj(q), dataset=setup.dataset)
    rec, tr = RecordingStore(), T.Trace()
    for _ in execute(Lost(), ctx, q["question"], store=rec, question_id=q["id"],
                     eval_id=setup.eval_id, trace_out=tr):
        pass
    return ItemResult(item.key, rec.ops, score_item(setup, item, tr, 0.0, None, model.sha256))


def _load_dataset(name: str) -> Any:
    from ..datasets import load_dataset
    return load_dataset(name)


def _all_methods() -> dict[str, type]:
    from ..methods import all_methods
    return all_methods()
