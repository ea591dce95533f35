"""Generation parameters of the methods' calls and the per-call score dict."""
from __future__ import annotations

import hashlib
from typing import Any

from ..llm.base import Completion, GenParams


def greedy(max_tokens: int, **kw: Any) -> GenParams:
    """Greedy decoding (temperature 0): every non-sampling call of the text methods."""
    return GenParams(max_tokens=max_tokens, temperature=0.0, **kw)


def sampled(max_tokens: int, temperature: float, top_p: float, seed: int, **kw: Any) -> GenParams:
    return GenParams(max_tokens=max_tokens, temperature=temperature, top_p=top_p, seed=seed, **kw)


def derive_seed(*parts: Any) -> int:
    """A stable 31-bit seed from any parts (run seed, iteration, node, sample)."""
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:4], "big") & 0x7FFFFFFF


def score_dict(comp: Completion) -> dict[str, float]:
    """perplexity / confidence (= 1/PPL) / mean NLL of a completion's own tokens."""
    sc = comp.scores()
    out = {}
    if sc.perplexity is not None:
        out["perplexity"] = round(sc.perplexity, 4)
        out["confidence"] = round(sc.confidence, 4)
        out["mean_nll"] = round(sc.mean_nll, 4)
    return out
