"""Per-token heatmap of a generation, coloured by token probability (escaped HTML)."""
from __future__ import annotations

import math
from typing import Any, Sequence

from .safe import esc
from .style import prob_colour


def token_rows(tokens: Sequence[Any]) -> list[dict[str, Any]]:
    """Normalise stored tokens ([id, piece, logprob, entropy] or dicts) to dicts with prob."""
    out = []
    for t in tokens:
        if isinstance(t, dict):
            piece, lp, ent = t.get("piece", ""), t.get("logprob"), t.get("entropy")
        else:
            piece = t[1] if len(t) > 1 else ""
            lp = t[2] if len(t) > 2 else None
            ent = t[3] if len(t) > 3 else None
        prob = math.exp(lp) if isinstance(lp, (int, float)) and math.isfinite(lp) else None
        out.append({"piece": piece, "logprob": lp, "prob": prob, "entropy": ent})
    return out


def token_heatmap_html(tokens: Sequence[Any], *, max_tokens: int = 2000) -> str:
    """Inline spans, one per token, background by probability; every piece is escaped."""
    rows = token_rows(tokens)[:max_tokens]
    if not rows:
        return '<div class="wb-heat wb-empty">no tokens recorded</div>'
    spans = []
    for i, r in enumerate(rows):
        p = r["prob"]
        tip = (f"#{i} p={p:.3f} logprob={r['logprob']:.3f}" if p is not None else f"#{i} no logprob")
        if isinstance(r["entropy"], (int, float)):
            tip += f" entropy={r['entropy']:.3f}"
        spans.append(f'<span class="wb-tok" style="background:{prob_colour(p)}" '
                     f'title="{esc(tip)}">{esc(r["piece"])}</span>')
    legend = ('<div class="wb-heat-legend">'
              + "".join(f'<span style="background:{prob_colour(v)}">p={v:g}</span>'
                        for v in (0.0, 0.25, 0.5, 0.75, 1.0)) + "</div>")
    return ('<div class="wb-heat" style="font-family:ui-monospace,Menlo,monospace;font-size:13px;'
            'line-height:1.9;white-space:pre-wrap;word-break:break-word">'
            + "".join(spans) + "</div>" + legend + _CSS)


_CSS = """<style>
.wb-tok { border-radius: 3px; padding: 1px 0; box-shadow: inset -1px 0 0 rgba(0,0,0,.08); }
.wb-heat-legend { margin-top: 4px; font-size: 11px; font-family: sans-serif; }
.wb-heat-legend span { display: inline-block; padding: 0 6px; margin-right: 2px; border-radius: 3px; }
</style>"""
