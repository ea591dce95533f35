"""A method's knobs against its paper, and its presets, on the pages.

:func:`paper_rows` is pure (what the table shows); :func:`paper_table` and
:func:`preset_picker` render it with Streamlit. Picking a preset writes its values into the
knob widgets' session state, and the run gets ``preset`` plus whatever the user changed
after that (config.build applies the preset, then those).
"""
from __future__ import annotations

from typing import Any

from .. import config as cfgmod


def _fmt(v: Any) -> str:
    return v if isinstance(v, str) else repr(v)


def paper_rows(cfg_cls: type) -> list[dict[str, Any]]:
    """One row per knob: its name, the paper's value, this default, whether they differ
    (``"not in the paper"`` where the paper has no such setting) and its status."""
    rows = []
    for k in cfgmod.knobs(cfg_cls):
        if k.name == "preset":
            continue
        rows.append({"knob": k.name, "paper": _fmt(k.paper), "this default": _fmt(k.default),
                     "differs": k.paper_differs, "status": k.status, "group": k.group})
    return rows


def paper_table(cfg_cls: type) -> None:
    import streamlit as st
    rows = paper_rows(cfg_cls)
    n = sum(r["differs"] for r in rows)
    with st.expander(f"Paper vs this default ({n} knob{'s' if n != 1 else ''} differ)"):
        st.dataframe([{k: v for k, v in r.items() if k != "group"} for r in rows],
                     hide_index=True, width="stretch")


def preset_picker(cfg_cls: type, key: str) -> tuple[str, dict[str, Any]]:
    """A preset selectbox for a method's knob widgets under ``key``; returns the chosen
    preset and the knob values it stands for (the baseline the widgets are compared to)."""
    import streamlit as st
    presets = cfgmod.presets_of(cfg_cls)
    if len(presets) <= 1:
        return "", {}
    ss = st.session_state
    pkey = f"{key}__preset"
    specs = {k.name: k for k in cfgmod.knobs(cfg_cls) if k.name != "preset"}

    def apply() -> None:
        chosen = presets[ss[pkey]].knobs
        for name, sp in specs.items():
            ss[f"{key}__{name}"] = cfgmod.coerce(sp, chosen.get(name, sp.default))

    name = st.selectbox("Preset", list(presets), key=pkey, on_change=apply,
                        help="A named group of knobs; paper = the defaults. The knobs below "
                             "start from it and can still be changed.")
    pre = presets[name]
    if pre.knobs:
        st.caption(pre.description)
    return (name if name != cfgmod.PAPER else ""), dict(pre.knobs)
