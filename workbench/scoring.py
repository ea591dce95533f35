"""Scores derived from token log-probabilities (natural log).

Perplexity and confidence always come from the logprobs recorded with a
generation, never from a second generation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, asdict
from typing import Iterable, Sequence


@dataclass
class TokenScores:
    n_tokens: int
    mean_nll: float | None
    perplexity: float | None
    mean_prob: float | None
    min_prob: float | None
    mean_entropy: float | None
    confidence: float | None

    def to_dict(self) -> dict:
        return asdict(self)


def perplexity(logprobs: Sequence[float]) -> float | None:
    """exp(mean negative log-likelihood); None for an empty sequence."""
    if not logprobs:
        return None
    return math.exp(-sum(logprobs) / len(logprobs))


def confidence(logprobs: Sequence[float]) -> float | None:
    """Geometric-mean token probability = 1 / perplexity, in (0, 1]."""
    ppl = perplexity(logprobs)
    return None if ppl is None else 1.0 / ppl


def score_tokens(logprobs: Sequence[float],
                 entropies: Iterable[float | None] | None = None) -> TokenScores:
    lps = [float(x) for x in logprobs]
    if not lps:
        return TokenScores(0, None, None, None, None, None, None)
    probs = [math.exp(x) for x in lps]
    mean_nll = -sum(lps) / len(lps)
    ents = [e for e in (entropies or []) if e is not None]
    return TokenScores(
        n_tokens=len(lps),
        mean_nll=mean_nll,
        perplexity=math.exp(mean_nll),
        mean_prob=sum(probs) / len(probs),
        min_prob=min(probs),
        mean_entropy=(sum(ents) / len(ents)) if ents else None,
        confidence=math.exp(-mean_nll),
    )


def entropy_from_top(top_logprobs: Sequence[float]) -> float:
    """Entropy (nats) of a distribution known only by its top-k logprobs.

    The missing mass is lumped into one extra outcome, which gives a lower
    bound on the true entropy; exact when the top-k covers all the mass.
    """
    ps = [math.exp(x) for x in top_logprobs]
    h = -sum(p * math.log(p) for p in ps if p > 0)
    rest = 1.0 - sum(ps)
    if rest > 1e-12:
        h -= rest * math.log(rest)
    return h
