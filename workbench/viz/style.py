"""Colours and shapes shared by every view, so legends are uniform across methods.

The palette follows the specs: CRP-RAG's grey dashed proposals, white created,
blue-outlined retrieved, green sufficient, red insufficient; CogGRAG's verified /
re-thought / unknown; a distinct colour for parse failures.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StateStyle:
    label: str
    fill: str
    border: str
    dashes: bool = False
    font: str = "#111827"
    border_width: int = 2


STATE_STYLES: dict[str, StateStyle] = {
    "proposed": StateStyle("proposal", "#f3f4f6", "#9ca3af", dashes=True, font="#6b7280"),
    "created": StateStyle("created", "#ffffff", "#6b7280"),
    "retrieved": StateStyle("retrieved", "#ffffff", "#2563eb", border_width=3),
    "aggregated": StateStyle("aggregated", "#dbeafe", "#2563eb"),
    "sufficient": StateStyle("sufficient", "#bbf7d0", "#16a34a"),
    "insufficient": StateStyle("insufficient", "#fecaca", "#dc2626"),
    "verified": StateStyle("verified", "#86efac", "#15803d", border_width=3),
    "failed_verification": StateStyle("failed verification", "#fed7aa", "#ea580c"),
    "pruned": StateStyle("pruned", "#f9fafb", "#d1d5db", dashes=True, font="#9ca3af"),
    "selected": StateStyle("selected", "#fef08a", "#ca8a04", border_width=3),
    "parse_failed": StateStyle("parse failed", "#f5d0fe", "#a21caf", dashes=True),
    "answered": StateStyle("answered", "#bfdbfe", "#1d4ed8"),
    "unknown": StateStyle("unknown", "#fef9c3", "#a16207"),
    "capped": StateStyle("capped", "#e5e7eb", "#6b7280", dashes=True, font="#6b7280"),
    "refused": StateStyle("refused", "#fecdd3", "#9f1239", border_width=3),
    "done": StateStyle("done", "#d1fae5", "#047857"),
}
UNKNOWN_STATE = StateStyle("other", "#ffffff", "#374151")

# What-if overlays: a node passes / fails a threshold the user moved.
WHATIF_PASS = StateStyle("passes threshold (what-if)", "#bbf7d0", "#16a34a", border_width=4)
WHATIF_FAIL = StateStyle("fails threshold (what-if)", "#fecaca", "#dc2626", border_width=4)

ANNOTATION_BORDER = "#7c3aed"
SELECTED_BORDER = "#f59e0b"
GOLD_BORDER = "#b45309"        # a node whose retrievals hold gold evidence (triage)
BREAK_BORDER = "#e11d48"       # the node where the chain broke (triage)
DEPENDS_BORDER = "#c2410c"     # the answer changes without this node's evidence (attribution)

# Node shapes by kind (vis-network shapes); unknown kinds are boxes. Only shapes that draw
# their label inside: vis draws a diamond's, dot's, star's or triangle's label below the
# shape, where the edges leaving it downwards run through the text.
KIND_SHAPES = {
    "question": "ellipse", "root": "ellipse", "answer": "ellipse", "final": "ellipse",
    "refusal": "ellipse", "retrieval": "database", "passage": "database",
    "document": "database", "entity": "ellipse", "triple": "ellipse",
}


def style_for(state: str) -> StateStyle:
    return STATE_STYLES.get(state, UNKNOWN_STATE)


def shape_for(kind: str) -> str:
    return KIND_SHAPES.get(kind, "box")


def score_colour(value: float | None, threshold: float | None, good: str = "lower") -> str:
    """Green when a score is on the good side of its threshold, red otherwise, grey if unknown."""
    if value is None or threshold is None:
        return "#9ca3af"
    ok = value < threshold if good == "lower" else value >= threshold
    return "#16a34a" if ok else "#dc2626"


def prob_colour(p: float | None) -> str:
    """Token heatmap colour: red (p -> 0) through amber to green (p -> 1); grey if unknown."""
    if p is None:
        return "#e5e7eb"
    p = min(1.0, max(0.0, float(p)))
    # interpolate red (239,68,68) -> amber (245,158,11) -> green (34,197,94), light tints
    if p < 0.5:
        a, b, t = (254, 202, 202), (253, 230, 138), p / 0.5
    else:
        a, b, t = (253, 230, 138), (187, 247, 208), (p - 0.5) / 0.5
    r, g, bl = (round(a[i] + (b[i] - a[i]) * t) for i in range(3))
    return f"#{r:02x}{g:02x}{bl:02x}"


def legend_items(states: list[str] | None = None, *, whatif: bool = False) -> list[tuple[str, StateStyle]]:
    """(state, style) pairs for a legend; only the states present when given."""
    keys = [s for s in STATE_STYLES if states is None or s in states]
    extra = [s for s in (states or []) if s not in STATE_STYLES]
    items = [(k, STATE_STYLES[k]) for k in keys] + [(k, UNKNOWN_STATE) for k in extra]
    if whatif:
        items += [("whatif_pass", WHATIF_PASS), ("whatif_fail", WHATIF_FAIL)]
    return items
