"""Typed knobs: dataclass fields that carry default, description and valid range.

Method configs are dataclasses whose fields are declared with :func:`knob`, so
the UI and the CLI can render, parse and validate them generically. A knob also says
what the method's paper uses (``paper=``), so pages can list "paper" against "this
default"; a config that derives from :class:`PresetConfig` has named presets (groups of
knobs, e.g. ``small-model``) that :func:`build` expands, recording the preset's name.

Each knob also has a one-line help (at most :data:`HELP_MAX` characters), a ``status``
(:data:`STATUSES`) and an ``evidence`` link: the docs/ heading where the measurement behind
its status and default is written. A config names its method page in ``DOCS``; an evidence
of ``"#anchor"`` is a heading of that page, and no evidence means the page's ``#knobs`` table.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import typing
from dataclasses import dataclass, field
from typing import Any, Sequence


NOT_IN_PAPER = "not in the paper"

# What a knob is, for a reader choosing what to change:
STATUSES = {
    "paper": "the paper's setting (or the paper's own variant of the method)",
    "extension": "this project's addition or departure: on by default, or measured to help",
    "ablation": "switches a part of the method off, or reproduces a departure, to compare",
    "experimental": "untested, or measured not to help; kept for study (hidden in the UI "
                    "unless asked for)",
}
HELP_MAX = 160          # a knob's help is one line of at most this many characters
KNOBS_ANCHOR = "#knobs"


def knob(default: Any, description: str, *, min: float | None = None, max: float | None = None,
         choices: Sequence[Any] | None = None, group: str = "", ablation: bool = False,
         paper: Any = NOT_IN_PAPER, status: str = "", evidence: str = "") -> Any:
    """A config field. ``paper``: the paper's value (or a short phrase saying what the paper
    does) when it differs from ``default`` or is worth stating; omitted = not in the paper.
    ``status``: one of :data:`STATUSES` ("" = ablation for an ``ablation`` knob, else paper
    where ``paper`` equals the default, else extension). ``evidence``: ``"#anchor"`` on the
    config's ``DOCS`` page or ``"docs/PAGE.md#anchor"``; "" = the page's knob table."""
    if status and status not in STATUSES:
        raise ValueError(f"knob status {status!r} is not one of {', '.join(STATUSES)}")
    meta = {"description": description, "min": min, "max": max,
            "choices": list(choices) if choices is not None else None,
            "group": group, "ablation": ablation or status == "ablation", "paper": paper,
            "status": status, "evidence": evidence}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda d=default: json.loads(json.dumps(d)), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class KnobSpec:
    name: str
    type: str           # "bool" | "int" | "float" | "str" | "list" | "dict"
    default: Any
    description: str
    min: float | None
    max: float | None
    choices: list[Any] | None
    group: str
    ablation: bool
    paper: Any = NOT_IN_PAPER
    status: str = "extension"
    evidence: str = ""

    @property
    def paper_differs(self) -> bool:
        return self.paper != NOT_IN_PAPER and self.paper != self.default

    @property
    def experimental(self) -> bool:
        return self.status == "experimental"


def knob_status(status: str, ablation: bool, paper: Any, default: Any) -> str:
    """A knob's status: the declared one, else derived (see :func:`knob`)."""
    if status:
        return status
    if ablation:
        return "ablation"
    return "paper" if paper != NOT_IN_PAPER and paper == default else "extension"


def evidence_link(cfg_cls: type, evidence: str) -> str:
    """``docs/PAGE.md#anchor`` for a knob's evidence: "#anchor" and "" resolve against the
    config's ``DOCS`` page ("" = its knob table); "" where the config names no page."""
    page = getattr(cfg_cls, "DOCS", "")
    if evidence and not evidence.startswith("#"):
        return evidence
    return f"{page}{evidence or KNOBS_ANCHOR}" if page else ""


@dataclass(frozen=True)
class Preset:
    """A named group of knob values, with why it exists (and the figures behind it)."""
    name: str
    description: str
    knobs: dict[str, Any] = field(default_factory=dict)


PAPER = "paper"


@dataclass
class PresetConfig:
    """Base of the configs that have presets; subclasses list them in ``PRESETS``
    (``"paper"``, the defaults, is always there)."""
    preset: str = knob(PAPER, "Named group of knobs applied before the explicit ones: paper = "
                       "the defaults (the paper's settings); see `methods NAME` for the "
                       "others.", group="preset", status="extension")

    PRESETS: typing.ClassVar[dict[str, Preset]] = {}


def presets_of(cfg_cls: type) -> dict[str, Preset]:
    """``{"paper": defaults, **cfg_cls.PRESETS}``; empty for a config without presets."""
    if not any(f.name == "preset" for f in dataclasses.fields(cfg_cls)):
        return {}
    return {PAPER: Preset(PAPER, "The paper's settings (the defaults)."),
            **getattr(cfg_cls, "PRESETS", {})}


def _type_name(tp: Any) -> str:
    if isinstance(tp, str):
        tp = {"bool": bool, "int": int, "float": float, "str": str}.get(tp.split("|")[0].strip(), str)
    origin = typing.get_origin(tp)
    if origin in (list, tuple):
        return "list"
    if origin is dict:
        return "dict"
    if origin is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _type_name(args[0]) if args else "str"
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}.get(tp, "str")


def knobs(cfg_cls: type) -> list[KnobSpec]:
    hints = typing.get_type_hints(cfg_cls)
    out = []
    for f in dataclasses.fields(cfg_cls):
        m = f.metadata
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        choices = m.get("choices")
        if f.name == "preset":
            choices = list(presets_of(cfg_cls)) or None
        paper, ablation = m.get("paper", NOT_IN_PAPER), m.get("ablation", False)
        out.append(KnobSpec(f.name, _type_name(hints.get(f.name, str)), default,
                            m.get("description", ""), m.get("min"), m.get("max"),
                            choices, m.get("group", ""), ablation, paper,
                            knob_status(m.get("status", ""), ablation, paper, default),
                            evidence_link(cfg_cls, m.get("evidence", ""))))
    return out


class ConfigError(ValueError):
    pass


def range_text(lo: float | None, hi: float | None) -> str:
    """``[lo, hi]`` for a message; an open side is shown as -inf / inf."""
    return f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"


def coerce(spec: KnobSpec, value: Any) -> Any:
    """Parse a CLI/UI value for a knob and check it against its range."""
    try:
        if spec.type == "bool":
            if isinstance(value, str):
                low = value.strip().lower()
                if low not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(value)
                value = low in ("1", "true", "yes", "on")
            value = bool(value)
        elif spec.type == "int":
            value = int(value)
        elif spec.type == "float":
            value = float(value)
        elif spec.type in ("list", "dict"):
            if isinstance(value, str):
                value = json.loads(value)
        else:
            value = str(value)
    except (ValueError, TypeError, OverflowError, json.JSONDecodeError) as e:
        raise ConfigError(f"{spec.name}: cannot read {value!r} as {spec.type}") from e
    # NaN compares false with every bound, so it would pass the range check below
    if spec.type == "float" and not math.isfinite(value):
        raise ConfigError(f"{spec.name}={value} is not a finite number; give one in "
                          f"{range_text(spec.min, spec.max)}")
    if spec.min is not None and value < spec.min:
        raise ConfigError(f"{spec.name}={value} is below its minimum {spec.min}")
    if spec.max is not None and value > spec.max:
        raise ConfigError(f"{spec.name}={value} is above its maximum {spec.max}")
    if spec.choices is not None and value not in spec.choices:
        raise ConfigError(f"{spec.name}={value!r} is not one of {spec.choices}")
    return value


def build(cfg_cls: type, overrides: dict[str, Any] | None = None) -> Any:
    """The config with ``overrides``; a ``preset`` among them is expanded first (explicit
    overrides win over the preset's values)."""
    specs = {k.name: k for k in knobs(cfg_cls)}
    overrides = dict(overrides or {})
    if overrides.get("preset") not in (None, "") and "preset" in specs:
        name = str(overrides["preset"])
        got = presets_of(cfg_cls).get(name)
        if got is None:
            raise ConfigError(f"no preset {name!r} for this method; presets: "
                              f"{', '.join(presets_of(cfg_cls))}")
        overrides = {**got.knobs, **overrides}
    vals: dict[str, Any] = {}
    for key, raw in overrides.items():
        if key not in specs:
            raise ConfigError(f"unknown knob {key!r}; known: {', '.join(sorted(specs))}")
        vals[key] = coerce(specs[key], raw)
    return cfg_cls(**vals)


def parse_sets(items: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` from ``--set`` flags."""
    out = {}
    for it in items:
        if "=" not in it:
            raise ConfigError(f"--set expects key=value, got {it!r}")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def config_hash(d: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]
