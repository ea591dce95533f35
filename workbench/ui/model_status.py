"""What the pages show about the model itself: which one, how well it answers, the call in
flight, and a crashed worker.

A run whose model worker died is stored as failed with the cause ("model process
crashed: SIGSEGV"); the next call starts a fresh worker anyway, and the button here lets
a person do that at once (loading takes seconds with a large model).
"""
from __future__ import annotations

import streamlit as st

from ..llm.isolated import is_crash
from ..llm.base import LLMError
from ..viz.safe import md_escape
from . import access, backend


QUALITY_HELP = ("Measured on the demo questions (standard RAG, contains-gold accuracy); "
                "the README's model table has the figures.")


def model_panel(card: dict, *, hint: str | None = None) -> None:
    """The configured model: name, size, quality tier, quantisation, offload, context."""
    # The name gets the room it needs: in a sixth of the width it was cut to "qwen2.5-…".
    c = st.columns([max(2.0, len(str(card["name"])) / 11), 1, 1, 1, 1, 1])
    c[0].metric("Model", card["name"], help=card.get("title"))
    c[1].metric("Size", f"{card['size_mb']:,.0f} MB" if card.get("size_mb") else "-")
    c[2].metric("Answer quality", card.get("quality", "unknown"), help=QUALITY_HELP)
    c[3].metric("Quantisation", card["quantization"])
    c[4].metric("GPU layers", card["n_gpu_layers"], help="0 = CPU only, -1 = all layers")
    c[5].metric("Loaded", "yes" if card["loaded"] else "not yet",
                help="The model loads once per process, on the first run.")
    if card.get("error"):
        st.error(card["error"] + (f" {hint}" if hint else ""), icon=":material/error:")
    elif card.get("quality") == "poor":
        st.warning(f"{card['name']} answers questions poorly ({card.get('quality_note')}): "
                   f"method comparisons on it say little about the methods. Choose a better "
                   f"model in Settings.", icon=":material/warning:")


def generating(text: str, tail: int = 240) -> None:
    """The current LLM call's output so far (model text: escaped)."""
    if text:
        shown = text[-tail:]
        st.caption(("Generating: …" if len(text) > tail else "Generating: ") + md_escape(shown))


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def place_in_line(ahead: list) -> str:
    """"Waiting for the model: 2nd in line, 1 run ahead." for the tickets ahead of a run.

    Only counts: what others run (their questions, methods) is not this session's business.
    """
    if not ahead:
        return "Waiting for the model: next in line."
    runs = sum(1 for t in ahead if getattr(t, "kind", "") == "run")
    others = len(ahead) - runs
    parts = ([f"{runs} run" + ("s" if runs != 1 else "")] if runs else []) + \
        ([f"{others} other model call" + ("s" if others != 1 else "")] if others else [])
    return f"Waiting for the model: {_ordinal(len(ahead) + 1)} in line, {' and '.join(parts)} ahead."


def waiting(ticket: object | None) -> None:
    """A run's place in the shared model's line, while it waits (nothing otherwise)."""
    if ticket is None:
        return
    st.info(place_in_line(ticket.ahead()), icon=":material/hourglass_top:")   # type: ignore[attr-defined]
    st.caption("Everyone using this app shares one model, which runs one question at a time; "
               "this run starts when the runs ahead have finished. Cancel leaves the line "
               "(nothing is run or stored).")


def crash_notice(error: str | None, *, key: str) -> None:
    """Offer to restart the model when a run failed because its model process died."""
    if not is_crash(error):
        return
    c1, c2 = st.columns([4, 1], vertical_alignment="center")
    c1.warning("The model process crashed during this run. Events up to the crash are stored "
               "with the run; the run itself is marked failed. The next run starts the model "
               "afresh.")
    # The worker is everyone's: a restart reloads the model under every session's runs.
    with c1:
        may_restart = access.host_only("Restarting the model now")
    if c2.button("Restart the model", key=f"{key}__restart_model", width="stretch",
                 disabled=not may_restart) and may_restart:
        try:
            with st.spinner("Restarting the model…"):
                ok = backend.restart_model()
        except LLMError as e:
            st.error(f"The model could not be restarted: {e}")
            return
        (st.success if ok else st.info)(
            "The model was restarted." if ok else "No model worker is loaded; the next run "
            "loads the model afresh.")
