"""Batch evaluation: (question × method × config × seed) items, stored, scored, resumable.

One *eval* (``eval_batches`` row) plans its items up front: the questions (ids frozen at
the start, so a resume sees the same set), the method variants (a sweep's grid of knobs,
each with its config hash) and the seeds. Each item runs through
:func:`workbench.runner.execute`, so the run, its events and LLM calls are stored exactly as
an interactive run; the item's metrics go to ``eval_items`` and ``runs.correct`` /
``runs.metrics`` in the same transaction. An interrupted eval resumes where it stopped:
items are keyed ``method:config_hash:seed:question_id`` and a key is written once.

Workers: DuckDB allows one writing process, so workers (threads for an HTTP server or the
scripted backend, processes for llama.cpp, each loading its own model) *run* items and
return what the runner would have written; the parent replays it onto the store in
batches. A progress callback gets items done, rate and ETA after every item; raising
KeyboardInterrupt from it stops the eval cleanly (the page's Stop button does this).
"""
from __future__ import annotations

import dataclasses
import importlib
import itertools
import json
import os
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from .. import config as cfgmod
from .. import trace as T
from ..store import Store, StoreError, bulk_insert, event_rows
from . import knobs as K
from . import metrics as M

EVAL_PREFIX = "ev_"


# ---------------------------------------------------------------------------
# spec and planning
# ---------------------------------------------------------------------------

@dataclass
class EvalSpec:
    """What to evaluate. Serialised into ``eval_batches.spec`` so a resume needs nothing else."""
    dataset: str
    methods: list[str]
    limit: int | None = None
    offset: int = 0
    seeds: list[int] = field(default_factory=lambda: [0])
    sets: dict[str, Any] = field(default_factory=dict)        # applied to every variant
    grid: dict[str, list[Any]] = field(default_factory=dict)  # cartesian sweep
    variants: list[dict[str, Any]] = field(default_factory=list)  # [{"label", "set", "methods"}]
    question_ids: list[str] | None = None
    primary: str | None = None          # metric that sets runs.correct (None: by dataset kind)
    judge: str = "same"                 # "off" | "same" (the methods' model) | model name/path
    crag_mode: str | None = None        # exact_then_llm | normalised | exact_only (None: by judge)
    crag_profile: str = "ragx"          # ragx | crag_official
    tau_f1: float = M.DEFAULT_TAU_F1
    preset: str | None = None
    label: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalSpec":
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def load_sweep(path: str) -> dict[str, Any]:
    """Read a YAML or TOML sweep file.

    Keys (all optional): ``dataset``, ``methods`` (list), ``limit``, ``seed`` / ``seeds``,
    ``set`` (knobs for every variant), ``grid`` (knob -> list of values; the cartesian
    product is run), ``variants`` (list of ``{label, set, methods}``), ``primary``,
    ``judge``, ``preset``, ``label``. Knob names are a method's Config fields, eval-level
    knobs (:data:`workbench.eval.knobs.EVAL_KNOBS`), or ``METHOD.knob`` for one method.
    """
    text = open(path, encoding="utf-8").read()
    if path.endswith(".toml"):
        import tomllib
        data = tomllib.loads(text)
    else:
        import yaml
        data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a sweep file must hold a mapping, not {type(data).__name__}")
    unknown = set(data) - {"dataset", "methods", "limit", "offset", "seed", "seeds", "set", "grid",
                           "variants", "primary", "judge", "preset", "label", "crag_mode",
                           "crag_profile", "tau_f1"}
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {sorted(unknown)}")
    for k in ("grid",):
        for knob, vals in (data.get(k) or {}).items():
            if not isinstance(vals, list):
                raise ValueError(f"{path}: grid.{knob} must be a list of values")
    return data


def apply_sweep(spec: EvalSpec, sweep: dict[str, Any]) -> EvalSpec:
    d = spec.to_dict()
    for k in ("dataset", "limit", "offset", "primary", "judge", "preset", "label", "crag_mode",
              "crag_profile", "tau_f1"):
        if sweep.get(k) is not None:
            d[k] = sweep[k]
    if sweep.get("methods"):
        d["methods"] = list(sweep["methods"])
    if sweep.get("seeds") is not None:
        d["seeds"] = [int(s) for s in sweep["seeds"]]
    elif sweep.get("seed") is not None:
        d["seeds"] = [int(sweep["seed"])]
    d["sets"] = {**(sweep.get("set") or {}), **d["sets"]}      # the command line wins
    d["grid"] = {**d["grid"], **(sweep.get("grid") or {})}
    d["variants"] = list(d["variants"]) + list(sweep.get("variants") or [])
    return EvalSpec.from_dict(d)


@dataclass
class Variant:
    method: str
    overrides: dict[str, Any]       # method knobs, as given
    eval_knobs: dict[str, Any]      # active evaluation-level knobs
    label: str
    config: dict[str, Any]          # the resolved method config
    hash: str
    knob_values: dict[str, Any] = field(default_factory=dict)   # every knob as set (for charts)

    @property
    def knobs(self) -> dict[str, Any]:
        return {**self.overrides, **self.knob_values}

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_RETRIEVAL_KNOBS = {"top_k", "retriever", "chunk_size", "chunk_overlap", "noise_k",
                    "noise_position", "noise_pool", "noise_seed"}


def _fmt(v: Any) -> str:
    return json.dumps(v) if isinstance(v, (list, dict)) else str(v)


def plan_variants(spec: EvalSpec, method_classes: dict[str, type]) -> list[Variant]:
    """Expand methods × explicit variants × grid into distinct, validated configs."""
    if not spec.methods:
        raise ValueError("no methods to evaluate; pass --methods a,b")
    missing = [m for m in spec.methods if m not in method_classes]
    if missing:
        raise KeyError(f"unknown method(s) {missing}; available: {', '.join(sorted(method_classes))}")
    keys = list(spec.grid)
    combos = [dict(zip(keys, vals)) for vals in itertools.product(*(spec.grid[k] for k in keys))] \
        if keys else [{}]
    explicit = spec.variants or [{"label": "", "set": {}}]
    used_keys: set[str] = set()
    all_keys: set[str] = set(spec.sets) | set(keys)
    for ex in explicit:
        all_keys |= set(ex.get("set") or {})
    out: list[Variant] = []
    seen: set[str] = set()
    for m in spec.methods:
        cls = method_classes[m]
        fields = {k.name for k in cfgmod.knobs(cls.Config)}
        retrieves = getattr(cls, "kind", "text") == "text"
        for ex in explicit:
            if ex.get("methods") and m not in ex["methods"]:
                continue
            for combo in combos:
                merged = {**spec.sets, **(ex.get("set") or {}), **combo}
                mo: dict[str, Any] = {}
                eo: dict[str, Any] = {}
                for key, val in merged.items():
                    if "." in key:
                        prefix, name = key.split(".", 1)
                        if prefix == "eval":
                            if name not in K.EVAL_KNOBS:
                                raise cfgmod.ConfigError(f"unknown eval knob {name!r}; known: "
                                                         f"{', '.join(K.EVAL_KNOBS)}")
                            eo[name] = val
                        elif prefix == m:
                            mo[name] = val
                        elif prefix not in method_classes:
                            raise cfgmod.ConfigError(f"--set {key}: no method {prefix!r}")
                        used_keys.add(key)
                    elif key in fields:
                        mo[key] = val
                        used_keys.add(key)
                    elif key in K.EVAL_KNOBS:
                        used_keys.add(key)
                        if key in _RETRIEVAL_KNOBS and not retrieves:
                            continue          # a KG / no-retrieval method: the knob is moot
                        eo[key] = val
                cfg = cfgmod.to_dict(cfgmod.build(cls.Config, mo))
                given = {k: K.coerce_eval_knob(k, v) for k, v in eo.items()}
                ek = K.active(given)
                h = cfgmod.config_hash({"method": m, **cfg, **({"_eval": ek} if ek else {})})
                if h in seen:
                    continue
                seen.add(h)
                varied = set(combo) | set(ex.get("set") or {})
                shown = {k: v for k, v in {**{k: cfg[k] for k in mo}, **given}.items()
                         if any(k == x or x.endswith("." + k) for x in varied)}
                label = ex.get("label") or ",".join(f"{k}={_fmt(v)}" for k, v in shown.items()) \
                    or "default"
                out.append(Variant(m, {k: cfg[k] for k in mo}, ek, label, cfg, h,
                                   {**{k: cfg[k] for k in mo}, **given}))
    unused = all_keys - used_keys
    if unused:
        raise cfgmod.ConfigError(
            f"knob(s) {sorted(unused)} belong to none of {spec.methods} and are not eval knobs "
            f"({', '.join(K.EVAL_KNOBS)})")
    return out


@dataclass
class Item:
    key: str
    question: dict[str, Any]
    variant: dict[str, Any]
    seed: int


def item_key(v: Variant | dict[str, Any], seed: int, qid: str) -> str:
    method = v.method if isinstance(v, Variant) else v["method"]
    h = v.hash if isinstance(v, Variant) else v["hash"]
    return f"{method}:{h}:{seed}:{qid}"


# ---------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------

@dataclass
class Progress:
    eval_id: str
    done: int            # items stored in total (including earlier sessions)
    total: int
    session_done: int
    elapsed_s: float
    failed: int = 0
    last: dict[str, Any] | None = None

    @property
    def rate(self) -> float:
        """Items per second in this session."""
        return self.session_done / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        r = self.rate
        return (self.total - self.done) / r if r > 0 else None

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


ProgressFn = Callable[[Progress], None]


# ---------------------------------------------------------------------------
# worker side: run one item, return what to write
# ---------------------------------------------------------------------------

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
    """Everything a worker needs to build its executor; picklable for process pools."""
    eval_id: str
    dataset: str
    backend: dict[str, Any]           # {"kind": "settings", "overrides": {...}} | {"kind": "scripted", ...}
    judge: str = "same"
    scoring: dict[str, Any] = field(default_factory=dict)
    factories: dict[str, str] = field(default_factory=dict)   # "context"/"dataset"/"methods" -> "module:func"


def _import(path: str) -> Any:
    mod, _, fn = path.partition(":")
    return getattr(importlib.import_module(mod), fn)


def make_backend(spec: dict[str, Any]) -> Any:
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
    return load_backend(None, **(spec.get("overrides") or {}))


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
    """The method and a question-free run context for one variant."""
    from ..methods import all_methods
    name = variant["method"]
    try:
        from ..datasets import Dataset as _RegistryDataset
    except ImportError:  # pragma: no cover - the knowledge layer is part of the project
        _RegistryDataset = None
    if _RegistryDataset is not None and isinstance(dataset, _RegistryDataset) \
            and all_methods().get(name) is method_cls:
        from ..workspace import build_context
        return build_context(name, llm=llm, dataset=dataset.name,
                             overrides=variant["overrides"], seed=seed)
    # a method class or dataset object handed in directly (tests, benchmarks)
    from ..methods.base import RunContext
    m = method_cls()
    cfg = cfgmod.build(m.Config, variant["overrides"])
    retrievers = {}
    if getattr(m, "kind", "text") == "text" and getattr(dataset, "passages", None):
        for kind in ("bm25", "dense", "hybrid"):
            if hasattr(dataset, "retriever"):
                retrievers[kind] = _LazyRetriever(dataset, kind)
    kg = dataset.kg() if getattr(m, "kind", "") == "kg" and hasattr(dataset, "kg") else None
    return m, RunContext(llm=llm, config=cfg, seed=seed, retrievers=retrievers, kg=kg,
                         dataset=getattr(dataset, "name", "dataset"))


class _LazyRetriever:
    def __init__(self, ds: Any, kind: str):
        self.ds, self.kind, self.name, self._r = ds, kind, kind, None

    def search(self, query: str, k: int = 5):
        if self._r is None:
            self._r = self.ds.retriever(self.kind)
        return self._r.search(query, k)


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

    def _base(self, variant: dict[str, Any], seed: int) -> tuple[Any, Any]:
        key = (variant["hash"], seed)
        got = self._ctx.get(key)
        if got is None:
            cls = self.method_classes[variant["method"]]
            got = self._ctx[key] = self.context_factory(cls, variant, seed, self.backend,
                                                        self.dataset)
        return got

    def run(self, item: Item) -> ItemResult:
        from ..runner import execute
        q = item.question
        v = item.variant
        method, base = self._base(v, item.seed)
        ctx = dataclasses.replace(base, gold=_question_obj(q), seed=item.seed, phase="", _n=0,
                                  extra=dict(base.extra))
        if v["eval_knobs"]:
            ctx = K.apply_to_context(ctx, v["eval_knobs"],
                                     passages=getattr(self.dataset, "passages", []) or [],
                                     question_id=q["id"])
        rec = RecordingStore()
        tr = T.Trace()
        t0 = time.perf_counter()
        for _ in execute(method, ctx, q["question"], store=rec, question_id=q["id"],
                         eval_id=self.setup.eval_id, trace_out=tr):
            pass
        if tr.status == "interrupted":
            raise KeyboardInterrupt
        run_ms = (time.perf_counter() - t0) * 1000.0
        row = self.score(item, tr, run_ms)
        self._trim()
        return ItemResult(item.key, rec.ops, row)

    def score(self, item: Item, tr: T.Trace, run_ms: float) -> dict[str, Any]:
        q, v = item.question, item.variant
        sc = self.setup.scoring
        ans = tr.answer or {}
        refused = bool(ans.get("refused")) or tr.status == "refused"
        pred = ans.get("text") or ""
        meta = q.get("meta") or {}
        s = M.score_answer(q["question"], pred, q.get("answers") or [], q.get("aliases") or [],
                           refused=refused, qtype=q.get("type") or "", meta=meta, judge=self.judge,
                           primary=sc.get("primary"), tau_f1=sc.get("tau_f1", M.DEFAULT_TAU_F1),
                           crag_mode=sc.get("crag_mode"),
                           crag_profile=sc.get("crag_profile", "ragx"),
                           answer_entities=q.get("answer_entities") or [])
        if tr.status == "failed":
            s.correct = False
        struct = M.structure_scores(tr, q.get("decomposition") or [], q.get("gold_path") or [])
        totals = tr.totals()
        return {
            "eval_id": self.setup.eval_id, "item_key": item.key, "run_id": tr.run_id,
            "question_id": q["id"], "method": v["method"], "variant": v["label"],
            "knobs": json.dumps(v["overrides"] | v.get("knob_values", {}) | v["eval_knobs"],
                                sort_keys=True, default=str),
            "config_hash": v["hash"], "model_sha256": getattr(self.backend.info, "sha256", ""),
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
            # not columns: go to runs.metrics
            "_metrics": {**{k: getattr(s, k) for k in (
                "em", "f1", "contains", "rouge_l", "rouge_f1", "hits1", "acc_lm", "fever",
                "crag_label", "crag_points", "crag_decided_by", "primary", "judge",
                "judge_raw", "judge_error")}, **struct},
        }

    def _trim(self) -> None:
        """Keep long evals flat in memory: the scripted backend logs every call, and the
        judge caches verdicts."""
        calls = getattr(self.backend, "calls", None)
        if isinstance(calls, list) and len(calls) > 200:
            del calls[:-100]
        if self.judge is not None and len(self.judge.cache) > self.JUDGE_CACHE_MAX:
            for k in list(self.judge.cache)[: len(self.judge.cache) // 2]:
                self.judge.cache.pop(k, None)


def _load_dataset(name: str) -> Any:
    from ..datasets import load_dataset
    return load_dataset(name)


def _all_methods() -> dict[str, type]:
    from ..methods import all_methods
    return all_methods()


# process-pool plumbing ------------------------------------------------------

_WORKER: ItemExecutor | None = None


def _proc_init(setup: WorkerSetup) -> None:
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the parent handles Ctrl-C
    _WORKER = ItemExecutor(setup)


def _proc_run(item: Item) -> ItemResult | tuple[str, str]:
    assert _WORKER is not None
    try:
        return _WORKER.run(item)
    except KeyboardInterrupt:
        return (item.key, "interrupted")


# ---------------------------------------------------------------------------
# parent side: write results
# ---------------------------------------------------------------------------

ITEM_COLUMNS = ("eval_id", "item_key", "run_id", "question_id", "method", "variant", "knobs",
                "config_hash", "model_sha256", "seed", "status", "correct", "refused", "em", "f1",
                "contains", "rouge_l", "rouge_f1", "hits1", "acc_lm", "fever", "crag_label",
                "crag_points", "crag_decided_by", "confidence", "hops", "qtype", "domain",
                "question_type", "static_or_dynamic", "llm_calls", "prompt_tokens",
                "completion_tokens", "wall_ms", "judge", "judge_ms", "structure", "created_at")

# Arrow types of the rows the writer inserts (DuckDB casts VARCHAR to JSON on insert).
class ResultWriter:
    """Buffers item results and writes each batch in one transaction, in bulk.

    A result's recorded runner writes (start_run, add_events, update_run) are folded into
    one ``runs`` row plus its ``events`` / ``llm_calls`` rows — the same rows the Store
    would write — and inserted together with the ``eval_items`` rows."""

    def __init__(self, store: Store, eval_id: str, variants: dict[str, dict[str, Any]],
                 every_n: int = 64, every_s: float = 1.0, judge_version: str | None = None):
        self.store, self.eval_id, self.variants = store, eval_id, variants
        self.every_n, self.every_s = every_n, every_s
        self.judge_version = judge_version
        self.buf: list[ItemResult] = []
        self.last = time.monotonic()
        self.written = 0
        self.model: tuple[str, str] | None = None

    def add(self, r: ItemResult) -> None:
        self.buf.append(r)
        if len(self.buf) >= self.every_n or time.monotonic() - self.last >= self.every_s:
            self.flush()

    def _run_row(self, r: ItemResult) -> tuple[dict[str, Any], list[T.Event]]:
        from ..store import _JSON_COLUMNS, _RUN_COLUMNS
        v = self.variants[r.row["config_hash"]]
        run: dict[str, Any] = {}
        events: list[T.Event] = []
        for name, args, kw in r.ops:
            if name == "start_run":
                run = {c: args[0].get(c) for c in _RUN_COLUMNS}
                run["status"] = run["status"] or "running"
                run["created_at"] = run["created_at"] or time.time()
            elif name == "update_run":
                run.update(kw)
            elif name == "add_events":
                events.extend(args[0])
        if v["eval_knobs"]:
            run["config"] = {**(run.get("config") or {}), "_eval": v["eval_knobs"]}
            run["config_hash"] = v["hash"]
        pv = dict(run.get("prompt_versions") or {})
        if r.row.get("judge") and self.judge_version:
            pv["judge"] = self.judge_version
        if v["eval_knobs"].get("idk_prompt"):
            pv["idk_prompt"] = K.IDK_PROMPT_VERSION
        run["prompt_versions"] = pv
        run["correct"] = r.row["correct"]
        run["metrics"] = r.row.get("_metrics") or {}
        for c in _JSON_COLUMNS:
            if run.get(c) is not None:
                run[c] = json.dumps(run[c])
        if self.model is None:
            self.model = (run.get("model_name") or "", run.get("model_sha256") or "")
        return run, events

    def flush(self) -> None:
        if not self.buf:
            self.last = time.monotonic()
            return
        from ..store import _RUN_COLUMNS
        batch, self.buf = self.buf, []
        runs, evs, calls, items = [], [], [], []
        for r in batch:
            run, events = self._run_row(r)
            runs.append(tuple(run.get(c) for c in _RUN_COLUMNS))
            e, c = event_rows(events)
            evs += e
            calls += c
            items.append(tuple(r.row.get(c) for c in ITEM_COLUMNS))
        with self.store._tx() as con:
            bulk_insert(con, "runs", runs)
            bulk_insert(con, "events", evs, replace=True)
            bulk_insert(con, "llm_calls", calls, replace=True)
            bulk_insert(con, "eval_items", items)
            con.execute("UPDATE eval_batches SET n_done = n_done + ? WHERE eval_id = ?",
                        [len(items), self.eval_id])
        self.written += len(items)
        self.last = time.monotonic()


# ---------------------------------------------------------------------------
# the eval
# ---------------------------------------------------------------------------

class EvalInterrupted(KeyboardInterrupt):
    def __init__(self, eval_id: str, done: int, total: int):
        super().__init__(f"eval {eval_id} interrupted after {done}/{total} items")
        self.eval_id, self.done, self.total = eval_id, done, total


@dataclass
class EvalResult:
    eval_id: str
    status: str
    n_planned: int
    n_done: int
    n_new: int
    seconds: float


def _new_eval_id() -> str:
    return T.new_id(EVAL_PREFIX)


def latest_eval(store: Store, unfinished: bool = True) -> str | None:
    rows = store.query("SELECT eval_id FROM eval_batches "
                       + ("WHERE status <> 'finished' " if unfinished else "")
                       + "ORDER BY created_at DESC LIMIT 1")
    return rows[0]["eval_id"] if rows else None


def get_eval(store: Store, eval_id: str) -> dict[str, Any]:
    rows = store.query("SELECT * FROM eval_batches WHERE eval_id = ?", [eval_id])
    if not rows:
        raise LookupError(f"no eval {eval_id!r}; `python -m workbench eval list` shows them")
    r = rows[0]
    for c in ("spec", "methods"):
        if isinstance(r.get(c), str):
            r[c] = json.loads(r[c])
    return r


class EvalRunner:
    """Plans, runs and resumes one eval. Construct with :meth:`new` or :meth:`resume`."""

    def __init__(self, store: Store, eval_id: str, spec: EvalSpec, *, backend: Any = None,
                 backend_spec: dict[str, Any] | None = None, dataset: Any = None,
                 method_classes: dict[str, type] | None = None,
                 context_factory: Callable | None = None, factories: dict[str, str] | None = None,
                 workers: int = 1, parallel: str = "auto", judge_backend: Any = "setup"):
        self.store, self.eval_id, self.spec = store, eval_id, spec
        self.backend, self.backend_spec = backend, backend_spec or {"kind": "settings"}
        self.factories = factories or {}
        if dataset is None:
            dataset = _import(self.factories["dataset"])() if "dataset" in self.factories \
                else _load_dataset(spec.dataset)
        self.dataset = dataset
        if method_classes is None:
            method_classes = _import(self.factories["methods"])() if "methods" in self.factories \
                else _all_methods()
        self.method_classes = method_classes
        self.context_factory = context_factory
        self.workers = max(1, int(workers))
        self.parallel = parallel
        self.judge_backend = judge_backend
        self.variants = plan_variants(spec, method_classes)
        self.questions = self._questions()

    # -- construction --
    @classmethod
    def new(cls, store: Store, spec: EvalSpec, **kw: Any) -> "EvalRunner":
        r = cls(store, _new_eval_id(), spec, **kw)
        if r.spec.question_ids is None:
            r.spec.question_ids = [q.id for q in r.questions]
        r._create_batch()
        return r

    @classmethod
    def resume(cls, store: Store, eval_id: str | None = None, **kw: Any) -> "EvalRunner":
        eval_id = eval_id or latest_eval(store)
        if not eval_id:
            raise LookupError("no unfinished eval to resume; `python -m workbench eval list` "
                              "shows the stored evals")
        row = get_eval(store, eval_id)
        from ..store import _pid_alive
        if row["status"] == "running" and row.get("pid") != os.getpid() and _pid_alive(row.get("pid")):
            raise StoreError(f"eval {eval_id} is still running in process {row['pid']}; wait for "
                             f"it or stop it before resuming")
        spec = EvalSpec.from_dict(row["spec"])
        return cls(store, eval_id, spec, **kw)

    def _questions(self) -> list[Any]:
        qs = list(self.dataset.questions)
        if self.spec.question_ids is not None:
            index = {q.id: q for q in qs}
            missing = [i for i in self.spec.question_ids if i not in index]
            if missing:
                raise LookupError(f"dataset {self.spec.dataset!r} no longer has question(s) "
                                  f"{missing[:5]}{' ...' if len(missing) > 5 else ''}")
            return [index[i] for i in self.spec.question_ids]
        qs = qs[self.spec.offset:]
        if self.spec.limit is not None:
            qs = qs[: self.spec.limit]
        if not qs:
            raise ValueError(f"dataset {self.spec.dataset!r} has no questions to evaluate "
                             f"(offset {self.spec.offset}, limit {self.spec.limit})")
        return qs

    @property
    def n_planned(self) -> int:
        return len(self.questions) * len(self.variants) * len(self.spec.seeds)

    def _create_batch(self) -> None:
        info = getattr(self.backend, "info", None)
        self.store.execute(
            "INSERT INTO eval_batches (eval_id, created_at, status, dataset, methods, "
            "n_questions, n_planned, n_done, spec, primary_metric, judge, model_name, "
            "model_sha256, preset, label, pid) VALUES (?, ?, 'running', ?, ?, ?, ?, 0, ?, ?, ?, "
            "?, ?, ?, ?, ?)",
            [self.eval_id, time.time(), self.spec.dataset, json.dumps(self.spec.methods),
             len(self.questions), self.n_planned,
             json.dumps(self.spec.to_dict() | {"variants_planned": [v.to_dict() for v in self.variants]},
                        default=str),
             self.spec.primary or "auto", self.spec.judge, getattr(info, "name", None),
             getattr(info, "sha256", None), self.spec.preset, self.spec.label, os.getpid()])

    # -- items --
    def done_keys(self) -> set[str]:
        return {r["item_key"] for r in self.store.query(
            "SELECT item_key FROM eval_items WHERE eval_id = ?", [self.eval_id])}

    def pending(self, done: set[str]) -> Iterator[Item]:
        vds = [v.to_dict() for v in self.variants]
        for q in self.questions:
            qd = q.to_dict()
            for v in vds:
                for s in self.spec.seeds:
                    k = item_key(v, s, q.id)
                    if k not in done:
                        yield Item(k, qd, v, s)

    def _cleanup_orphans(self) -> None:
        """Runs of this eval without an item row (a crash between writes) are removed."""
        orphans = [r["run_id"] for r in self.store.query(
            "SELECT run_id FROM runs WHERE eval_id = ? AND run_id NOT IN "
            "(SELECT run_id FROM eval_items WHERE eval_id = ? AND run_id IS NOT NULL)",
            [self.eval_id, self.eval_id])]
        for rid in orphans:
            self.store.delete_run(rid)

    def retry_failed(self) -> int:
        rows = self.store.query("SELECT run_id FROM eval_items WHERE eval_id = ? AND status = 'failed'",
                                [self.eval_id])
        for r in rows:
            self.store.delete_run(r["run_id"])
        self.store.execute("DELETE FROM eval_items WHERE eval_id = ? AND status = 'failed'",
                           [self.eval_id])
        self._sync_done()
        return len(rows)

    def _sync_done(self) -> int:
        n = self.store.query("SELECT count(*) AS n FROM eval_items WHERE eval_id = ?",
                             [self.eval_id])[0]["n"]
        self.store.execute("UPDATE eval_batches SET n_done = ?, n_planned = ? WHERE eval_id = ?",
                           [n, self.n_planned, self.eval_id])
        return n

    def setup(self) -> WorkerSetup:
        return WorkerSetup(
            eval_id=self.eval_id, dataset=self.spec.dataset, backend=self.backend_spec,
            judge=self.spec.judge,
            scoring={"primary": self.spec.primary, "tau_f1": self.spec.tau_f1,
                     "crag_mode": self.spec.crag_mode, "crag_profile": self.spec.crag_profile},
            factories=self.factories)

    def _mode(self) -> str:
        if self.workers <= 1:
            return "serial"
        if self.parallel != "auto":
            return self.parallel
        kind = self.backend_spec.get("kind")
        backend_name = (self.backend_spec.get("overrides") or {}).get("backend")
        if kind in ("scripted", "factory") or backend_name == "openai_compat" or \
                getattr(getattr(self.backend, "info", None), "backend", "") in ("openai_compat", "scripted"):
            return "threads"
        return "processes"

    # -- running --
    def run(self, progress: ProgressFn | None = None) -> EvalResult:
        t0 = time.perf_counter()
        self._cleanup_orphans()
        done = self.done_keys()
        total = self.n_planned
        self.store.execute("UPDATE eval_batches SET status = 'running', pid = ?, n_planned = ?, "
                           "n_done = ?, error = NULL WHERE eval_id = ?",
                           [os.getpid(), total, len(done), self.eval_id])
        writer = ResultWriter(self.store, self.eval_id, {v.hash: v.to_dict() for v in self.variants},
                              judge_version=M.JUDGE_PROMPT_VERSION if self.spec.judge != "off" else None)
        state = {"done": len(done), "new": 0, "failed": 0}

        def on_result(r: ItemResult) -> None:
            writer.add(r)
            state["done"] += 1
            state["new"] += 1
            state["failed"] += int(r.row["status"] == "failed")
            if progress is not None:
                progress(Progress(self.eval_id, state["done"], total, state["new"],
                                  time.perf_counter() - t0, state["failed"],
                                  {"question_id": r.row["question_id"], "method": r.row["method"],
                                   "correct": r.row["correct"], "status": r.row["status"]}))

        items = self.pending(done)
        status, error = "finished", None
        flush_error: BaseException | None = None
        try:
            mode = self._mode()
            if mode == "serial":
                self._run_serial(items, on_result)
            elif mode == "threads":
                self._run_threads(items, on_result)
            else:
                self._run_processes(items, on_result)
        except KeyboardInterrupt:
            status = "interrupted"
        except BaseException as e:
            status, error = "failed", f"{type(e).__name__}: {e}"
            raise
        finally:
            try:
                writer.flush()
            except BaseException as e:  # noqa: keep the original error visible
                status, error = "failed", error or f"{type(e).__name__}: {e}"
                flush_error = e
            n = self._sync_done()
            model = writer.model
            if status == "interrupted" and n >= total:
                status = "finished"          # stopped after the last item: nothing is missing
            self.store.execute(
                "UPDATE eval_batches SET status = ?, finished_at = ?, error = ?, "
                "model_name = coalesce(model_name, ?), model_sha256 = coalesce(model_sha256, ?) "
                "WHERE eval_id = ?",
                [status, time.time(), error, model[0] if model else None,
                 model[1] if model else None, self.eval_id])
        if flush_error is not None:
            raise flush_error
        if status == "interrupted":
            raise EvalInterrupted(self.eval_id, state["done"], total)
        return EvalResult(self.eval_id, status, total, state["done"], state["new"],
                          time.perf_counter() - t0)

    def _executor(self) -> ItemExecutor:
        return ItemExecutor(self.setup(), backend=self.backend, dataset=self.dataset,
                            method_classes=self.method_classes,
                            context_factory=self.context_factory, judge=self.judge_backend)

    def _ensure_backend(self) -> None:
        if self.backend is None:
            self.backend = make_backend(self.backend_spec)

    def _run_serial(self, items: Iterator[Item], on_result: Callable[[ItemResult], None]) -> None:
        self._ensure_backend()
        ex = self._executor()
        for it in items:
            on_result(ex.run(it))

    def _run_threads(self, items: Iterator[Item], on_result: Callable[[ItemResult], None]) -> None:
        self._ensure_backend()
        local = threading.local()
        lock = threading.Lock()
        stop = threading.Event()

        def work(it: Item) -> ItemResult:
            if stop.is_set():
                raise KeyboardInterrupt
            ex = getattr(local, "ex", None)
            if ex is None:
                with lock:
                    ex = local.ex = self._executor()
            return ex.run(it)

        pool = ThreadPoolExecutor(self.workers, thread_name_prefix="eval")
        inflight: set = set()
        try:
            it = iter(items)
            exhausted = False
            while True:
                while not exhausted and len(inflight) < 2 * self.workers:
                    nxt = next(it, None)
                    if nxt is None:
                        exhausted = True
                        break
                    inflight.add(pool.submit(work, nxt))
                if not inflight:
                    break
                finished, inflight = wait(inflight, return_when=FIRST_COMPLETED)
                for f in finished:
                    on_result(f.result())
        except BaseException:
            stop.set()
            for f in inflight:
                f.cancel()
            # items that complete while stopping are stored too
            for f in inflight:
                if f.cancelled():
                    continue
                try:
                    r = f.result()
                except BaseException:
                    continue
                _keep(r, on_result)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _run_processes(self, items: Iterator[Item], on_result: Callable[[ItemResult], None]) -> None:
        import multiprocessing as mp
        setup = self.setup()
        ov = dict(setup.backend.get("overrides") or {})
        if setup.backend.get("kind", "settings") == "settings" and not ov.get("n_threads"):
            # N llama.cpp processes each using every core oversubscribe the CPU, and
            # llama.cpp's spinning threads then slow down by an order of magnitude.
            ov["n_threads"] = max(1, (os.cpu_count() or 1) // self.workers)
            setup.backend = {**setup.backend, "overrides": ov}
        ctx = mp.get_context("spawn")
        # A spawned worker re-runs the parent's __main__ file. Inside Streamlit (or AppTest)
        # that file can be a page script, which fails in the worker; the pool then respawns
        # workers forever. The workers need only this module, so hide the main file meanwhile.
        main = sys.modules.get("__main__")
        main_file = getattr(main, "__file__", None)
        if main_file is not None and not main_file.endswith(("__main__.py", "pytest")):
            del main.__file__
        else:
            main_file = None
        try:
            pool = ctx.Pool(self.workers, initializer=_proc_init, initargs=(setup,))
        finally:
            if main_file is not None:
                main.__file__ = main_file
        try:
            for r in pool.imap_unordered(_proc_run, items, chunksize=1):
                if isinstance(r, tuple):      # a worker saw an interrupt
                    raise KeyboardInterrupt
                on_result(r)
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()


def _keep(r: ItemResult, on_result: Callable[[ItemResult], None]) -> None:
    """Store a result that finished while stopping, without letting the progress callback
    (which may be what raised the interrupt) stop it again."""
    try:
        on_result(r)
    except KeyboardInterrupt:
        pass


# ---------------------------------------------------------------------------
# convenience
# ---------------------------------------------------------------------------

def run_eval(spec: EvalSpec, *, store: Store | None = None, resume: str | None = None,
             progress: ProgressFn | None = None, **kw: Any) -> EvalResult:
    """Start (or resume) an eval and run it to the end."""
    store = store or Store()
    runner = EvalRunner.resume(store, resume, **kw) if resume else EvalRunner.new(store, spec, **kw)
    return runner.run(progress)


def export_eval(store: Store, eval_id: str, path: str, fmt: str = "csv") -> int:
    """Write the eval's items joined with their runs to CSV or Parquet, in SQL."""
    import re
    if not re.fullmatch(r"[A-Za-z0-9_\-]+", eval_id):
        raise ValueError(f"bad eval id {eval_id!r}")
    get_eval(store, eval_id)
    if fmt not in ("csv", "parquet"):
        raise ValueError("format must be csv or parquet")
    cols = ", ".join(f"i.{c}" for c in ITEM_COLUMNS)
    sql = (f"SELECT {cols}, r.question, r.answer, r.status AS run_status, r.model_name, "
           f"r.prompt_versions, r.config, r.error FROM eval_items i LEFT JOIN runs r "
           f"ON r.run_id = i.run_id WHERE i.eval_id = '{eval_id}' ORDER BY i.created_at, i.item_key")
    opts = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER"
    target = str(path).replace("'", "''")
    store.execute(f"COPY ({sql}) TO '{target}' ({opts})")
    return store.query("SELECT count(*) AS n FROM eval_items WHERE eval_id = ?", [eval_id])[0]["n"]
