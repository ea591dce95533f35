"""Typed knobs: dataclass fields that carry default, description and valid range.

Method configs are dataclasses whose fields are declared with :func:`knob`, so
the UI and the CLI can render, parse and validate them generically.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from dataclasses import dataclass, field
from typing import Any, Sequence


def knob(default: Any, description: str, *, min: float | None = None, max: float | None = None,
         choices: Sequence[Any] | None = None, group: str = "", ablation: bool = False) -> Any:
    meta = {"description": description, "min": min, "max": max,
            "choices": list(choices) if choices is not None else None,
            "group": group, "ablation": ablation}
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
        out.append(KnobSpec(f.name, _type_name(hints.get(f.name, str)), default,
                            m.get("description", ""), m.get("min"), m.get("max"),
                            m.get("choices"), m.get("group", ""), m.get("ablation", False)))
    return out


class ConfigError(ValueError):
    pass


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
    except (ValueError, TypeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{spec.name}: cannot read {value!r} as {spec.type}") from e
    if spec.min is not None and value < spec.min:
        raise ConfigError(f"{spec.name}={value} is below its minimum {spec.min}")
    if spec.max is not None and value > spec.max:
        raise ConfigError(f"{spec.name}={value} is above its maximum {spec.max}")
    if spec.choices is not None and value not in spec.choices:
        raise ConfigError(f"{spec.name}={value!r} is not one of {spec.choices}")
    return value


def build(cfg_cls: type, overrides: dict[str, Any] | None = None) -> Any:
    specs = {k.name: k for k in knobs(cfg_cls)}
    vals: dict[str, Any] = {}
    for key, raw in (overrides or {}).items():
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
