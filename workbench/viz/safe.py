"""Escaping for untrusted text (passages, HTML-derived text, model output).

Every string that reaches HTML (pyvis/vis-network tooltips and labels, the token
heatmap, exported HTML) or Streamlit markdown goes through one of these.
"""
from __future__ import annotations

import html
import json
import re
from typing import Any

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~<&$:])")


def esc(text: Any) -> str:
    """HTML-escape any value (quotes included, so it is safe inside attributes too)."""
    return html.escape("" if text is None else str(text), quote=True)


def label_esc(text: Any) -> str:
    """Neutralise text for a vis-network label.

    vis-network draws labels on a canvas, never as DOM, and the workbench turns its
    "multi" (markup) mode off, so a label cannot become markup. As a second line of
    defence (and because vis-network 9.1.2's entity decoding in "html" mode is broken,
    so ``&lt;`` would show literally) angle brackets become the look-alikes ‹ and ›.
    """
    return ("" if text is None else str(text)).replace("<", "\u2039").replace(">", "\u203a")


def md_escape(text: Any) -> str:
    """Escape text for ``st.markdown`` so it shows literally (no links, images, HTML)."""
    s = "" if text is None else str(text)
    return _MD_SPECIAL.sub(r"\\\1", s).replace("\n", "  \n")


def json_for_script(obj: Any) -> str:
    """JSON that is safe to embed inside a <script> element (no </script> breakout)."""
    s = json.dumps(obj, default=str, ensure_ascii=False)
    return (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def shorten(text: Any, n: int) -> str:
    s = " ".join(("" if text is None else str(text)).split())
    return s if len(s) <= n else s[: max(0, n - 1)].rstrip() + "…"


def wrap(text: str, width: int = 22, max_lines: int = 3) -> str:
    """Greedy word wrap for node labels (plain text in, plain text out)."""
    words, lines, cur = text.split(), [], ""
    for w in words:
        if len(w) > width:
            w = w[: width - 1] + "…"
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
        if len(lines) == max_lines:
            break
    if cur and len(lines) < max_lines:
        lines.append(cur)
    out = "\n".join(lines[:max_lines])
    if len(lines) >= max_lines and len(" ".join(words)) > len(out.replace("\n", " ")):
        out = out.rstrip("…") + "…"
    return out
