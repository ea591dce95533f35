"""Widgets for a method's typed config: one input per knob, grouped as the config groups
them, returning only the values that differ from the defaults (or a preset's).

Experimental knobs (status ``experimental``: untested, or measured not to help) are hidden
behind a "show experimental knobs" toggle; one whose value is not its default (a stored
run's, a preset's, or set before the toggle went off) is shown anyway, so a form never
hides a value that the run will use."""
from __future__ import annotations

import json
from typing import Any

import streamlit as st

from .. import config as cfgmod


def knob_inputs(cfg_cls: type, key: str, initial: dict[str, Any] | None = None,
                base: dict[str, Any] | None = None) -> dict[str, Any]:
    """Widgets for a typed config; returns the overrides that differ from the defaults, or
    from ``base`` (a preset's values) where it has the knob. The ``preset`` knob itself is
    the preset picker's (ui.method_docs)."""
    initial = initial or {}
    base = base or {}
    specs = [sp for sp in cfgmod.knobs(cfg_cls) if sp.name != "preset"]
    specs = _visible(specs, key, initial, base)
    out: dict[str, Any] = {}
    groups: dict[str, list[cfgmod.KnobSpec]] = {}
    for sp in specs:
        groups.setdefault("Ablations" if sp.ablation else (sp.group or "Settings"), []).append(sp)
    cols_per_row = 2
    for gname, items in groups.items():
        if len(groups) > 1:
            st.caption(gname)
        cols = st.columns(cols_per_row)
        for i, sp in enumerate(items):
            with cols[i % cols_per_row]:
                val = _knob_widget(sp, f"{key}__{sp.name}", initial.get(sp.name, sp.default))
            if val is _INVALID:
                continue
            if val != base.get(sp.name, sp.default):
                out[sp.name] = val
    return out


_INVALID = object()


def _visible(specs: list[cfgmod.KnobSpec], key: str, initial: dict[str, Any],
             base: dict[str, Any]) -> list[cfgmod.KnobSpec]:
    """The knobs to draw: all but the experimental ones at their default, unless the
    "show experimental knobs" toggle under ``key`` is on."""
    hidden = [sp for sp in specs if sp.experimental]
    if not hidden:
        return specs
    ss = st.session_state
    show = st.toggle(f"show experimental knobs ({len(hidden)})", key=f"{key}__show_experimental",
                     help="Knobs that are untested or were measured not to help; the method "
                          "page says what was measured. A knob set to another value is always "
                          "shown.")
    if show:
        return specs

    def changed(sp: cfgmod.KnobSpec) -> bool:
        wkey = f"{key}__{sp.name}"
        value = ss[wkey] if wkey in ss else initial.get(sp.name, sp.default)
        if sp.type in ("list", "dict") and isinstance(value, str):
            try:
                value = cfgmod.coerce(sp, value)
            except cfgmod.ConfigError:
                return True
        return value != sp.default or value != base.get(sp.name, sp.default)

    return [sp for sp in specs if not sp.experimental or changed(sp)]


def _knob_widget(sp: cfgmod.KnobSpec, key: str, value: Any) -> Any:
    """One widget; its initial value goes through session state (never both ways)."""
    help_ = (f"{sp.description}  \nstatus: {sp.status}" if sp.description else None)
    label = sp.name
    ss = st.session_state
    if sp.choices:
        opts = list(sp.choices)
        if ss.get(key) not in opts:
            ss[key] = value if value in opts else opts[0]
        return st.selectbox(label, opts, key=key, help=help_)
    if sp.type == "bool":
        if key not in ss:
            ss[key] = bool(value)
        return st.toggle(label, key=key, help=help_)
    if sp.type == "int":
        if key not in ss:
            ss[key] = int(value)
        return int(st.number_input(label, step=1, key=key, help=help_,
                                   min_value=int(sp.min) if sp.min is not None else None,
                                   max_value=int(sp.max) if sp.max is not None else None))
    if sp.type == "float":
        if key not in ss:
            ss[key] = float(value)
        step = 0.01 if abs(float(ss[key])) < 1 else 0.1
        return float(st.number_input(label, step=step, format="%.4g", key=key, help=help_,
                                     min_value=float(sp.min) if sp.min is not None else None,
                                     max_value=float(sp.max) if sp.max is not None else None))
    if sp.type in ("list", "dict"):
        if key not in ss:
            ss[key] = json.dumps(value)
        elif not isinstance(ss[key], str):
            ss[key] = json.dumps(ss[key])
        raw = st.text_area(label, key=key, help=help_, height=68)
        try:
            return cfgmod.coerce(sp, raw)
        except cfgmod.ConfigError as e:
            st.caption(f":material/warning: {e}")
            return _INVALID
    if key not in ss:
        ss[key] = str(value)
    return st.text_input(label, key=key, help=help_)
