"""Embeddings for merges and similarity: the model's embedder or a hashing fallback."""
from __future__ import annotations

import hashlib
import re
from typing import Any, Sequence

import numpy as np


class HashEmbedder:
    """Deterministic bag-of-words/char-trigram hashing embedder (L2-normalised).

    Used when no dense model is available (and in tests); its similarity scale differs
    from MiniLM's, so merge thresholds are not comparable across embedders.
    """
    name = "hash-embedder"

    def __init__(self, dim: int = 512):
        self.dim = dim

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        words = re.findall(r"\w+", text.lower())
        feats = words + [w[i:i + 3] for w in words for i in range(max(1, len(w) - 2))]
        for f in feats:
            h = int.from_bytes(hashlib.md5(f.encode()).digest()[:4], "little")
            v[h % self.dim] += 1.0 if (h >> 31) & 1 else -1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def encode(self, texts: str | Sequence[str], **_: Any) -> np.ndarray:
        if isinstance(texts, str):
            return self._vec(texts)
        return np.stack([self._vec(t) for t in texts]) if len(texts) else \
            np.zeros((0, self.dim), np.float32)


def embedder_of(ctx: Any) -> Any:
    """The run's embedder, or the hashing fallback when the dataset/knowledge layer has none."""
    emb = getattr(ctx, "embedder", None)
    if emb is None:
        emb = ctx.extra.get("_fallback_embedder")
        if emb is None:
            emb = ctx.extra["_fallback_embedder"] = HashEmbedder()
    return emb


def embedder_name(emb: Any) -> str:
    return str(getattr(emb, "name", type(emb).__name__))


def cosine_matrix(vecs: np.ndarray) -> np.ndarray:
    v = np.asarray(vecs, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    n = np.linalg.norm(v, axis=1, keepdims=True)
    n[n == 0] = 1.0
    v = v / n
    return v @ v.T
