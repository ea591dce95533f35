"""What an eval runs: its spec (from the command line or a sweep file), the method
variants it expands to, and the items (question x variant x seed) with their stable keys.

Items are keyed ``method:config_hash:seed:question_id``; a resumed eval skips the keys
already stored, so a key is written once.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import config as cfgmod
from ..methods.batched import has_batching
from . import knobs as K
from . import metrics as M

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
    split: str | None = None            # train | dev | test (None: every question)
    allow_leakage: bool = False         # score fitted state on questions it saw (marked)
    leakage: list[dict[str, Any]] = field(default_factory=list)   # what leaked (eval.leakage)
    primary: str | None = None          # metric that sets runs.correct (None: by dataset kind)
    judge: str = "same"                 # "off" | "same" (the methods' model) | model name/path
    crag_mode: str | None = None        # exact_then_llm | normalised | exact_only (None: by judge)
    crag_profile: str = "ragx"          # ragx | crag_official
    tau_f1: float = M.DEFAULT_TAU_F1
    metric_profile: str = M.DEFAULT_PROFILE   # official | lenient | crp-paper (eval.metrics)
    preset: str | None = None
    label: str = ""
    reuse_calls: str | None = None      # an eval whose stored calls answer matching calls

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def check(self) -> None:
        """ValueError for values a sweep file or a caller passed unchecked (the CLI's options
        refuse them earlier): a negative limit or offset would act as a slice index, and a
        NaN cut-off passes every comparison."""
        if self.offset < 0 or (self.limit is not None and self.limit < 1):
            raise ValueError(f"limit {self.limit} / offset {self.offset}: give a limit of at "
                             f"least 1 and an offset of at least 0")
        if self.tau_f1 is not None and not 0 <= self.tau_f1 <= 1:
            raise ValueError(f"tau_f1={self.tau_f1}: give a number in [0, 1]")
        M.check_profile(self.metric_profile)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalSpec":
        """A spec stored before metric profiles existed reads as ``lenient``, the profile
        it was scored with, so a resume scores its new items the same way."""
        kw = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        kw.setdefault("metric_profile", M.profile_of(d))
        return cls(**kw)


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
                           "crag_profile", "tau_f1", "metric_profile", "split",
                           "allow_leakage"}
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
              "crag_profile", "tau_f1", "metric_profile", "split", "allow_leakage"):
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


def batch_sets(n: int, methods: list[str], classes: dict[str, type]) -> dict[str, int]:
    """``{"METHOD.batch_size": n}`` (``eval --batch N``) for each chosen method with
    independent LLM calls to run together; the others have none to batch."""
    if n < 1:
        raise cfgmod.ConfigError(f"--batch {n}: give 1 (one call at a time) or more")
    return {f"{m}.batch_size": n for m in methods if m in classes and has_batching(classes[m])}


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


def _named(values: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The knobs of ``values`` that ``keys`` name, bare (``k``) or method-scoped (``m.k``)."""
    keys = list(keys)
    return {k: v for k, v in values.items() if any(k == x or x.endswith("." + k) for x in keys)}


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
                values = {**{k: cfg[k] for k in mo}, **given}
                shown = _named(values, set(combo) | set(ex.get("set") or {}))
                # a named variant crossed with a grid is several configs: name each one
                swept = ",".join(f"{k}={_fmt(v)}" for k, v in _named(shown, combo).items())
                # a config set for every variant is named only where nothing varies, so
                # that a lone `--set` run never reads as the method's defaults
                label = (f"{ex['label']},{swept}" if swept else ex["label"]) if ex.get("label") \
                    else ",".join(f"{k}={_fmt(v)}" for k, v in
                                  (shown or _named(values, spec.sets)).items()) or "default"
                out.append(Variant(m, {k: cfg[k] for k in mo}, ek, label, cfg, h, values))
    unused = all_keys - used_keys
    if unused:
        raise cfgmod.ConfigError(
            f"knob(s) {sorted(unused)} belong to none of {spec.methods} and are not eval knobs "
            f"({', '.join(K.EVAL_KNOBS)})")
    return out


def stored_variants(planned: list[dict[str, Any]], method_classes: dict[str, type],
                    eval_id: str) -> list[Variant]:
    """The variants an eval was planned with, as stored; each config must still build."""
    out = []
    for d in planned:
        cls = method_classes.get(d["method"])
        if cls is None:
            raise KeyError(f"eval {eval_id} ran method {d['method']!r}, which no longer exists; "
                           f"start a new eval")
        try:
            cfgmod.build(cls.Config, d["config"])
        except cfgmod.ConfigError as e:
            raise cfgmod.ConfigError(f"eval {eval_id} cannot resume: its {d['method']} config no "
                                     f"longer builds ({e}); start a new eval") from e
        out.append(Variant(**{k: v for k, v in d.items() if k in Variant.__dataclass_fields__}))
    return out


def config_drift(resumed: list[Variant], today: list[Variant]) -> list[str]:
    """Knobs whose value today's planning would set differently from the resumed configs,
    as ``method knob: stored -> today`` (the resume keeps the stored values)."""
    now = {(v.method, v.label): v for v in today}
    out = []
    for old in resumed:
        new = now.get((old.method, old.label))
        if new is None:
            continue
        for k in sorted(set(old.config) | set(new.config)):
            if old.config.get(k) != new.config.get(k):
                out.append(f"{old.method} {k}: {_fmt(old.config.get(k))} -> "
                           f"{_fmt(new.config.get(k))}")
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
