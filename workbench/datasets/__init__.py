"""Datasets: import, list and load. Methods and the UI use only this API.

- :func:`import_dataset` runs an importer and stores the result under
  ``paths.sub("datasets", NAME)/`` (``manifest.json``, ``questions.jsonl``,
  ``passages.jsonl``, ``kg/``). It writes into a temporary folder and renames it into
  place at the end, so a failed or interrupted import leaves nothing half-written.
- :func:`list_datasets` lists the built-in ``demo`` world (read in place from
  ``data/demo/``) and the imported datasets.
- :func:`load_dataset` gives a :class:`Dataset` (cached per process) with questions,
  passages, ``kg()`` and ``retriever(kind, **opts)``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import paths
from . import splits
from .base import Entity, Passage, Question, Triple
from .importers import IMPORTERS, KIND_ALIASES, Imported, read_generic
from .io import ImportProblem, Problems, read_jsonl, write_jsonl

DEMO = "demo"
MANIFEST_VERSION = 1
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")

__all__ = ["Dataset", "list_datasets", "load_dataset", "import_dataset", "remove_dataset",
           "dataset_dir", "ImportProblem", "KINDS", "Passage", "Question", "Triple", "Entity"]

KINDS = tuple(IMPORTERS)


class DatasetNotFound(LookupError):
    pass


def datasets_root() -> Path:
    return paths.sub("datasets")


def dataset_dir(name: str) -> Path:
    return datasets_root() / name


def _check_name(name: str) -> str:
    if not _NAME_RE.match(name or ""):
        raise ValueError(f"dataset name {name!r}: use letters, digits, '.', '_' or '-' "
                         f"(start with a letter or digit, at most 80 characters)")
    if name == DEMO:
        raise ValueError("'demo' is the built-in dataset; choose another name")
    return name


def default_name(kind: str, path: str | Path) -> str:
    p = Path(path)
    stem = p.name
    for _ in range(3):
        if Path(stem).suffix.lower() in (".bz2", ".gz", ".xz", ".json", ".jsonl", ".parquet"):
            stem = Path(stem).stem
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-.") or "data"
    name = stem if kind.lower() in stem.lower() else f"{kind}-{stem}"
    return name[:80]


# ------------------------------------------------------------------ import

def import_dataset(kind: str, path: str | Path, name: str | None = None, *,
                   on_error: str = "stop", replace: bool = False,
                   echo: Callable[[str], None] | None = None, **opts: Any) -> dict[str, Any]:
    """Import ``path`` as dataset ``name``; returns the manifest.

    ``on_error``: ``"stop"`` raises :class:`ImportProblem` (naming file and line) at the
    first malformed record and writes nothing; ``"skip"`` skips bad records and lists
    them in the manifest. ``opts`` go to the importer (``corpus``, ``limit``,
    ``chunk_words``, ``chunk_overlap``, ``evidence_kg``, ``progress``).
    """
    kind = KIND_ALIASES.get(kind.lower(), kind.lower())
    if kind not in IMPORTERS:
        raise ValueError(f"unknown dataset kind {kind!r}; choose from {', '.join(IMPORTERS)}")
    src = Path(path).expanduser()
    if not src.exists():
        raise FileNotFoundError(f"{src}: no such file or folder")
    name = _check_name(name or default_name(kind, src))
    dest = dataset_dir(name)
    if dest.exists() and not replace:
        raise FileExistsError(f"dataset {name!r} already exists at {dest}; pass --replace "
                              f"(replace=True) or choose another --name")
    problems = Problems(on_error, echo=echo)
    t0 = time.perf_counter()
    opts = {k: v for k, v in opts.items() if v is not None}
    data: Imported = IMPORTERS[kind](src, problems, **opts)
    if not data.questions and not data.passages and data.kg is None and not data.triples:
        raise ImportProblem(f"{src}: nothing to import (no valid questions, passages or "
                            f"triples){' - ' + str(problems.count) + ' records skipped' if problems.count else ''}")
    manifest = _write(name, kind, src, data, problems, time.perf_counter() - t0, replace)
    _DATASETS.pop(name, None)
    return manifest


def _write(name: str, kind: str, src: Path, data: Imported, problems: Problems,
           import_s: float, replace: bool) -> dict[str, Any]:
    from ..knowledge.kg import KnowledgeGraph
    from ..knowledge.text import corpus_hash
    root = datasets_root()
    tmp = root / f".tmp-{name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    split_info = splits.assign(data.questions)
    try:
        nq = write_jsonl(tmp / "questions.jsonl", (q.to_dict() for q in data.questions))
        npass = write_jsonl(tmp / "passages.jsonl", (p.to_dict() for p in data.passages))
        kg = data.kg
        if kg is None and data.triples:
            kg = KnowledgeGraph.from_triples(data.triples, data.entities)
        counts = {"questions": nq, "passages": npass, "entities": 0, "triples": 0,
                  "relations": 0}
        if kg is not None:
            kg.save(tmp / "kg")
            counts.update(entities=kg.n_entities, triples=kg.n_triples,
                          relations=len(kg.relations))
        manifest = {
            "name": name, "kind": kind, "source": str(src.resolve()),
            "sources": [str(Path(s).resolve()) for s in data.sources],
            "created": time.time(),
            "created_iso": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "counts": counts,
            "corpus_hash": corpus_hash((p.id, p.title, p.text) for p in data.passages)
            if data.passages else None,
            "splits": split_info,
            "import_s": round(import_s, 3),
            "on_error": problems.on_error, **problems.summary(),
            "info": data.info, "version": MANIFEST_VERSION,
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
        dest = dataset_dir(name)
        old = None
        if dest.exists():
            if not replace:
                raise FileExistsError(f"dataset {name!r} appeared while importing; not "
                                      f"overwriting it")
            old = root / f".old-{name}-{uuid.uuid4().hex[:8]}"
            dest.rename(old)
        tmp.rename(dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return manifest
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def remove_dataset(name: str) -> None:
    _check_name(name)
    d = dataset_dir(name)
    if not (d / "manifest.json").is_file():
        raise DatasetNotFound(f"no dataset {name!r}")
    trash = datasets_root() / f".old-{name}-{uuid.uuid4().hex[:8]}"
    d.rename(trash)
    shutil.rmtree(trash, ignore_errors=True)
    _DATASETS.pop(name, None)


# ------------------------------------------------------------------ listing

def _demo_manifest() -> dict[str, Any] | None:
    d = paths.DEMO_DIR
    if not any((d / f"{s}.jsonl").is_file() for s in ("questions", "passages", "triples")):
        return None
    counts = {}
    for stem, key in (("questions", "questions"), ("passages", "passages"),
                      ("entities", "entities"), ("triples", "triples")):
        f = d / f"{stem}.jsonl"
        counts[key] = sum(1 for line in open(f, encoding="utf-8") if line.strip()) \
            if f.is_file() else 0
    return {"name": DEMO, "kind": "demo", "source": str(d), "builtin": True,
            "counts": counts, "created": None, "path": str(d)}


def list_datasets() -> list[dict[str, Any]]:
    """One dict per dataset: name, kind, counts, source, created, path, builtin."""
    out = []
    demo = _demo_manifest()
    if demo:
        out.append(demo)
    root = datasets_root()
    for d in sorted(root.iterdir()):
        if d.name.startswith(".") or not (d / "manifest.json").is_file():
            continue
        try:
            m = json.loads((d / "manifest.json").read_text())
        except (OSError, json.JSONDecodeError):
            out.append({"name": d.name, "kind": "?", "error": "unreadable manifest.json",
                        "path": str(d), "builtin": False, "counts": {}})
            continue
        m["path"], m["builtin"] = str(d), False
        m.pop("problems", None)
        out.append(m)
    return out


# ------------------------------------------------------------------ loading

class Dataset:
    """Questions, passages, KG and retrievers of one dataset (lazy; cached per process)."""

    def __init__(self, name: str, path: Path, manifest: dict[str, Any], builtin: bool = False):
        self.name = name
        self.path = Path(path)
        self.manifest = manifest
        self.builtin = builtin
        self._questions: list[Question] | None = None
        self._passages: list[Passage] | None = None
        self._qindex: dict[str, Question] | None = None
        self._kg: Any = None
        self._kg_loaded = False
        self._retrievers: dict[tuple, Any] = {}
        self._lock = threading.RLock()
        self._demo_data: Imported | None = None

    def __repr__(self) -> str:
        c = self.manifest.get("counts", {})
        return (f"Dataset({self.name!r}, questions={c.get('questions')}, "
                f"passages={c.get('passages')}, triples={c.get('triples')})")

    @property
    def kind(self) -> str:
        return self.manifest.get("kind", "")

    def _demo(self) -> Imported:
        if self._demo_data is None:
            self._demo_data = read_generic(self.path, Problems("stop"))
        return self._demo_data

    @property
    def questions(self) -> list[Question]:
        with self._lock:
            if self._questions is None:
                if self.builtin:
                    self._questions = list(self._demo().questions)
                else:
                    f = self.path / "questions.jsonl"
                    self._questions = [Question.from_dict(d) for d in read_jsonl(f)] \
                        if f.is_file() else []
                if any(not q.split for q in self._questions):
                    # imported before questions had splits: the same seeded rule as import
                    self.manifest["splits"] = {**splits.assign(self._questions),
                                               "assigned": "on load"}
            return self._questions

    def split(self, name: str | None) -> list[Question]:
        """The questions of one split (``train``/``dev``/``test``; None or "all": every one)."""
        try:
            return splits.select(self.questions, name)
        except LookupError as e:
            raise LookupError(f"dataset {self.name!r}: {e}") from None

    @property
    def split_counts(self) -> dict[str, int]:
        return splits.counts(self.questions)

    @property
    def passages(self) -> list[Passage]:
        with self._lock:
            if self._passages is None:
                if self.builtin:
                    self._passages = list(self._demo().passages)
                else:
                    f = self.path / "passages.jsonl"
                    self._passages = [Passage(id=d["id"], title=d.get("title", ""),
                                              text=d.get("text", ""), meta=d.get("meta") or {})
                                      for d in read_jsonl(f)] if f.is_file() else []
            return self._passages

    def question(self, qid: str) -> Question:
        if self._qindex is None:
            self._qindex = {q.id: q for q in self.questions}
        try:
            return self._qindex[qid]
        except KeyError:
            raise KeyError(f"dataset {self.name!r} has no question {qid!r}") from None

    def passage(self, pid: str) -> Passage | None:
        if not hasattr(self, "_pindex"):
            self._pindex = {p.id: p for p in self.passages}
        return self._pindex.get(pid)

    @property
    def has_passages(self) -> bool:
        return bool(self.manifest.get("counts", {}).get("passages")) or \
            (self._passages is not None and bool(self._passages))

    @property
    def has_kg(self) -> bool:
        if self.builtin:
            return (self.path / "triples.jsonl").is_file()
        return (self.path / "kg").is_dir()

    @property
    def corpus_hash(self) -> str:
        h = self.manifest.get("corpus_hash")
        if not h:
            from ..knowledge.text import corpus_hash
            h = corpus_hash((p.id, p.title, p.text) for p in self.passages)
            self.manifest["corpus_hash"] = h
        return h

    def kg(self):
        """The dataset's :class:`~workbench.knowledge.kg.KnowledgeGraph`, or None."""
        with self._lock:
            if not self._kg_loaded:
                from ..knowledge.kg import KnowledgeGraph
                t0 = time.perf_counter()
                if self.builtin:
                    d = self._demo()
                    self._kg = KnowledgeGraph.from_triples(d.triples, d.entities) \
                        if d.triples else None
                elif (self.path / "kg").is_dir():
                    self._kg = KnowledgeGraph.load(self.path / "kg")
                else:   # a KG built from the corpus with `python -m workbench kg build`
                    from ..knowledge.built_kgs import load_built_kg
                    self._kg = load_built_kg(self.name)
                if self._kg is not None:
                    self._kg.load_s = time.perf_counter() - t0
                    from ..knowledge.descriptions import EntityDescriptions
                    self._kg.descriptions = EntityDescriptions(lambda: self.passages)
                self._kg_loaded = True
            return self._kg

    def embedder(self, model: str | None = None):
        """The process-wide :class:`~workbench.knowledge.dense.Embedder` (MiniLM by default)."""
        from ..knowledge.dense import get_embedder
        return get_embedder(model)

    def retriever(self, kind: str = "bm25", **opts: Any):
        """A cached retriever over the passages.

        kinds and options:
        - ``bm25``: ``k1`` (1.5), ``b`` (0.75), ``variant`` ("okapi" | "lucene"), ``epsilon``;
        - ``dense``: ``model`` (None = all-MiniLM-L6-v2, or a local model folder),
          ``batch_size``;
        - ``hybrid``: ``fusion`` ("rrf" | "weighted"), ``rrf_k``, ``weights`` (bm25, dense),
          ``depth``, plus the bm25/dense options;
        - any kind: ``rerank`` = path of a local cross-encoder folder to rerank the top
          ``rerank_candidates`` (20).
        """
        if not self.passages:
            raise LookupError(f"dataset {self.name!r} has no passages to retrieve from")
        key = (kind, tuple(sorted((k, _hashable(v)) for k, v in opts.items())))
        with self._lock:
            got = self._retrievers.get(key)
            if got is None:
                got = self._retrievers[key] = self._build_retriever(kind, dict(opts))
            return got

    def retriever_built(self, kind: str = "bm25") -> bool:
        """Whether :meth:`retriever` with default options would load an index (in memory or
        cached on disk) rather than build one; False for a kind it does not know."""
        with self._lock:
            if (kind, ()) in self._retrievers:
                return True
        if not self.passages:
            return False
        if kind == "bm25":
            from ..knowledge.bm25 import BM25Params
            return bm25_cache_path(self.corpus_hash, BM25Params()).is_file()
        if kind == "dense":
            from ..knowledge.dense import cached_embeddings_file
            f = cached_embeddings_file(self.corpus_hash)
            return f is not None and f.is_file()
        if kind == "hybrid":
            return self.retriever_built("bm25") and self.retriever_built("dense")
        return False

    def _build_retriever(self, kind: str, opts: dict[str, Any]):
        from ..knowledge import hybrid
        rerank = opts.pop("rerank", None)
        cand = int(opts.pop("rerank_candidates", 20))
        if rerank:
            base = self.retriever(kind, **opts)
            return hybrid.Reranker(base, rerank, candidates=cand)
        bm25_keys = ("k1", "b", "variant", "epsilon")
        dense_keys = ("model", "batch_size")
        if kind == "bm25":
            _no_extra(opts, bm25_keys, kind)
            return _bm25(self, **opts)
        if kind == "dense":
            _no_extra(opts, dense_keys, kind)
            return _dense(self, **opts)
        if kind == "hybrid":
            _no_extra(opts, bm25_keys + dense_keys + ("fusion", "rrf_k", "weights", "depth"),
                      kind)
            b = self.retriever("bm25", **{k: opts[k] for k in bm25_keys if k in opts})
            d = self.retriever("dense", **{k: opts[k] for k in dense_keys if k in opts})
            return hybrid.HybridRetriever(
                [b, d], fusion=opts.get("fusion", hybrid.DEFAULT_FUSION),
                rrf_k=float(opts.get("rrf_k", hybrid.DEFAULT_RRF_K)),
                weights=opts.get("weights"), depth=int(opts.get("depth", hybrid.DEFAULT_DEPTH)))
        raise ValueError(f"unknown retriever kind {kind!r}; choose bm25, dense or hybrid")

    def context_passages(self, question: Question | str) -> list[Passage]:
        """The passages that came with a question (HotpotQA distractors, CRAG pages)."""
        q = self.question(question) if isinstance(question, str) else question
        ids = q.meta.get("context_ids") or []
        return [p for p in (self.passage(i) for i in ids) if p is not None]


def _hashable(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


def _no_extra(opts: dict[str, Any], allowed: Sequence[str], kind: str) -> None:
    bad = set(opts) - set(allowed)
    if bad:
        raise ValueError(f"unknown option(s) for the {kind} retriever: {sorted(bad)}; "
                         f"known: {sorted(allowed)}")


def bm25_cache_path(corpus_hash: str, params) -> Path:
    return paths.cache("bm25") / f"{corpus_hash}-{params.key()}.npz"


def _bm25(ds: Dataset, **opts: Any):
    from ..knowledge.bm25 import BM25Index, BM25Params, BM25Retriever
    params = BM25Params(**opts)
    f = bm25_cache_path(ds.corpus_hash, params)
    if f.is_file():
        try:
            idx = BM25Index.load(f)
            if idx.n_docs == len(ds.passages):
                r = BM25Retriever(ds.passages, params, index=idx)
                r.cache_path, r.cached = f, True
                return r
        except (ValueError, OSError, KeyError):
            pass
    r = BM25Retriever(ds.passages, params, show_progress=len(ds.passages) > 50_000)
    r.index.save(f)
    r.cache_path, r.cached = f, False
    return r


def _dense(ds: Dataset, model: str | None = None, batch_size: int = 32):
    from ..knowledge.dense import DenseRetriever, get_embedder
    return DenseRetriever(ds.passages, get_embedder(model), corpus_hash=ds.corpus_hash,
                          batch_size=int(batch_size))


_DATASETS: dict[str, tuple[float, Dataset]] = {}
_DS_LOCK = threading.Lock()


def load_dataset(name: str) -> Dataset:
    """The dataset ``name`` ("demo" or an imported one); the same object per process."""
    if name == DEMO:
        m = _demo_manifest()
        if m is None:
            raise DatasetNotFound(f"the built-in demo world is missing ({paths.DEMO_DIR})")
        with _DS_LOCK:
            got = _DATASETS.get(DEMO)
            if got is None:
                got = _DATASETS[DEMO] = (0.0, Dataset(DEMO, paths.DEMO_DIR, m, builtin=True))
            return got[1]
    d = dataset_dir(name) if _NAME_RE.match(name or "") else None
    mf = d / "manifest.json" if d else None
    if mf is None or not mf.is_file():
        known = ", ".join(x["name"] for x in list_datasets()) or "none"
        raise DatasetNotFound(f"no dataset {name!r} (known: {known}); import one with "
                              f"`python -m workbench import KIND PATH --name {name}`")
    mtime = mf.stat().st_mtime
    with _DS_LOCK:
        got = _DATASETS.get(name)
        if got is not None and got[0] == mtime and got[1].path == d:
            return got[1]
        ds = Dataset(name, d, json.loads(mf.read_text()))
        _DATASETS[name] = (mtime, ds)
        return ds


def clear_cache() -> None:
    """Forget loaded datasets (tests switch WORKBENCH_HOME between cases)."""
    with _DS_LOCK:
        _DATASETS.clear()


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
