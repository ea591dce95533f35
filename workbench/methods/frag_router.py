"""FRAG's reasoning-aware module: guess from the question text alone whether the
shortest reasoning path is short (SIMPLE, <= delta = 2 hops) or long (COMPLEX, >= 3).

The paper's fine-tuned DeBERTaV3 classifier is not published (spec frag.md §3.4, A16),
so this module provides the spec's local substitutes behind one interface:

* ``tfidf_lr`` (default): TF-IDF word 1-2-grams plus a few structural counts
  (relative-clause markers, nested "X of the Y" chains, comparative/superlative cues,
  capitalised entity spans, token count) and a logistic regression, trained with
  scikit-learn on questions whose hop counts are known: template questions generated
  from relation chains of the demo KG (labels from KG shortest paths, as in the paper),
  the demo world's hand-written questions, and any imported dataset whose questions
  carry a hop count. Held-out accuracy (5-fold over the hand-written questions, and on
  them for a model trained without them) is stored with the model.
* ``heuristic``: no training: score = #relative-clause markers + #nested-of chains +
  #comparative/superlative cues + (#entity spans - 1); COMPLEX iff score >= 2.

The trained model is saved as plain JSON (vocabulary, idf, weights; no pickle) under
``paths.sub("models", "frag_router")``; :func:`load_router` trains it on first use when
it is absent, and ``python -m workbench frag train-router`` retrains it.
"""
from __future__ import annotations

import hashlib
import json
import math
import random
import re
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

DELTA = 2                       # SIMPLE iff min hops <= DELTA (spec A1)
MODEL_FILE = "router.json"
FORMAT_VERSION = 1

_REL = re.compile(r"\b(that|which|who|whose|whom|where|when)\b", re.I)
_OF_CHAIN = re.compile(r"\bof\s+(?:the|a|an|its|his|her|their)?\s*\w+(?:\s+\w+)?\s+of\b", re.I)
_OF = re.compile(r"\bof\b", re.I)
_CMP = re.compile(r"\b(\w+est|most|least|more|less|\w+er than|first|last|largest|biggest|"
                  r"oldest|youngest|earliest|latest)\b", re.I)
_POSS = re.compile(r"'s\b")
_CAPS = re.compile(r"(?:(?<=\s)|^)([A-Z][\w'\-]*(?:\s+(?:of|the|de|and|&)?\s*[A-Z][\w'\-]*)*)")
_WH = {"what", "which", "who", "whom", "whose", "where", "when", "how", "in", "is", "was",
       "did", "does", "do", "are", "name", "the", "a", "an"}

EXTRA_FEATURES = ("rel_markers", "of_chains", "of_count", "possessives", "cmp_cues",
                  "entity_spans", "tokens")


def normalise_question(q: str) -> str:
    """As in the released code: first character upper-cased, '?' appended if missing."""
    q = " ".join(str(q).split())
    if not q:
        return q
    q = q[0].upper() + q[1:]
    return q if q.endswith("?") else q + "?"


def entity_spans(q: str) -> list[str]:
    """Capitalised spans (a cheap stand-in for the linker), the leading wh-word dropped."""
    out = []
    for m in _CAPS.finditer(q):
        span = m.group(1).strip()
        words = span.split()
        while words and words[0].lower() in _WH:
            words = words[1:]
        if words:
            out.append(" ".join(words))
    return out


def structural_features(q: str) -> dict[str, float]:
    toks = q.split()
    return {
        "rel_markers": float(len(_REL.findall(q))),
        "of_chains": float(len(_OF_CHAIN.findall(q))),
        "of_count": float(len(_OF.findall(q))),
        "possessives": float(len(_POSS.findall(q))),
        "cmp_cues": float(len(_CMP.findall(q))),
        "entity_spans": float(len(entity_spans(q))),
        "tokens": float(len(toks)),
    }


@dataclass
class HopEstimate:
    label: str                     # "simple" | "complex"
    p_complex: float
    estimator: str                 # tfidf_lr | heuristic | oracle | manual
    source: str                    # classifier | heuristic | oracle | manual
    threshold: float = 0.5
    features: dict[str, float] = field(default_factory=dict)
    model_info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- estimators ---

class HeuristicRouter:
    name = "heuristic"
    cutoff = 2.0

    def score(self, question: str) -> tuple[float, dict[str, float]]:
        f = structural_features(question)
        s = f["rel_markers"] + f["of_chains"] + f["cmp_cues"] + max(f["entity_spans"] - 1, 0) \
            + f["possessives"]
        return s, f

    def estimate(self, question: str, threshold: float = 0.5) -> HopEstimate:
        s, f = self.score(question)
        # a pseudo-probability so the UI can draw the same bar: 0.5 at the cut-off
        p = 1.0 / (1.0 + math.exp(-(s - self.cutoff + 0.5) * 1.5))
        return HopEstimate("complex" if s >= self.cutoff else "simple", round(p, 4),
                           self.name, "heuristic", threshold, {"score": s, **f},
                           {"cutoff": self.cutoff})


class TfidfLRRouter:
    """Inference in numpy from a JSON model; training through scikit-learn."""
    name = "tfidf_lr"

    def __init__(self, model: dict[str, Any]):
        self.model = model
        self.vocab: dict[str, int] = model["vocabulary"]
        self.idf = model["idf"]
        self.coef = model["coef"]
        self.intercept = float(model["intercept"])
        self.extra_mean = model["extra_mean"]
        self.extra_scale = model["extra_scale"]
        self._analyzer = None

    @property
    def info(self) -> dict[str, Any]:
        return {k: v for k, v in self.model.items()
                if k not in ("vocabulary", "idf", "coef", "train_data")}

    def _analyze(self, text: str) -> list[str]:
        if self._analyzer is None:
            from sklearn.feature_extraction.text import TfidfVectorizer
            self._analyzer = TfidfVectorizer(ngram_range=(1, 2), lowercase=True).build_analyzer()
        return self._analyzer(text)

    def p_complex(self, question: str) -> tuple[float, dict[str, float]]:
        q = normalise_question(question)
        counts = Counter(t for t in self._analyze(q) if t in self.vocab)
        vec = {self.vocab[t]: c * self.idf[self.vocab[t]] for t, c in counts.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        z = self.intercept + sum(self.coef[i] * v / norm for i, v in vec.items())
        f = structural_features(q)
        n_tfidf = len(self.vocab)
        for j, name in enumerate(EXTRA_FEATURES):
            z += self.coef[n_tfidf + j] * (f[name] - self.extra_mean[j]) / self.extra_scale[j]
        return 1.0 / (1.0 + math.exp(-z)), f

    def estimate(self, question: str, threshold: float = 0.5) -> HopEstimate:
        p, f = self.p_complex(question)
        return HopEstimate("complex" if p >= threshold else "simple", round(p, 4), self.name,
                           "classifier", threshold, f, self.info)


# --- training data ---

@dataclass
class LabelledQuestion:
    text: str
    hops: int
    source: str                     # e.g. "demo", "template:demo", "hotpotqa"

    @property
    def label(self) -> int:
        return 1 if self.hops > DELTA else 0


def humanise_relation(rel: str) -> str:
    """``film.film.directed_by`` -> ``directed by`` (the last segment, underscores as spaces)."""
    last = rel.rsplit(".", 1)[-1]
    return last.replace("_", " ").strip() or rel


def _undirected_adj(kg: Any) -> dict[str, list[tuple[str, str, str]]]:
    return {e: kg.neighbors(e) for e in kg.entity_ids()}


def _bfs_dist(adj: dict[str, list], src: str, limit: int) -> dict[str, int]:
    dist = {src: 0}
    q = deque([src])
    while q:
        v = q.popleft()
        if dist[v] >= limit:
            continue
        for _, w, _ in adj.get(v, ()):
            if w not in dist:
                dist[w] = dist[v] + 1
                q.append(w)
    return dist


_T1 = ["What is the {r1} of {s}?", "Which {r1} does {s} have?", "Name the {r1} of {s}.",
       "{s} has what {r1}?", "Who or what is the {r1} of {s}?"]
_T1_IN = ["{s} is the {r1} of what?", "What has {s} as its {r1}?", "Which entity has {r1} {s}?"]


def _render_chain(start: str, rels: list[tuple[str, str]], rng: random.Random) -> str:
    """A question for a relation chain; ``rels`` are (relation text, direction)."""
    r = [t for t, _ in rels]
    if len(r) == 1:
        tmpl = rng.choice(_T1_IN if rels[0][1] == "in" else _T1)
        return tmpl.format(s=start, r1=r[0])
    style = rng.randrange(3)
    if style == 0:                  # nested of-chain
        inner = start
        for t in r:
            inner = f"the {t} of {inner}"
        return f"What is {inner}?"
    if style == 1:                  # relative clauses
        q = f"the entity that is the {r[0]} of {start}"
        for t in r[1:-1]:
            q = f"the one which is the {t} of {q}"
        return f"What is the {r[-1]} of {q}?"
    parts = f"{start}'s {r[0]}"     # possessive chain
    for t in r[1:]:
        parts = f"{parts}'s {t}"
    return f"What is {parts}?"


def template_questions(kg: Any, *, per_hop: int = 60, max_hops: int = 4, seed: int = 0,
                       source: str = "template:demo") -> list[LabelledQuestion]:
    """Questions rendered from 1..max_hops relation chains (random walks) over ``kg``.

    The label is the KG shortest-path distance between the start and the end entity
    (traversing edges in both directions, as the workbench's FRAG does by default), so
    a walk whose end is closer than its length gets the shorter, true hop count.
    """
    adj = _undirected_adj(kg)
    named = [e for e in sorted(adj) if _name(kg, e) and not _is_cvt(kg, e)]
    rng = random.Random(seed)
    out: list[LabelledQuestion] = []
    seen: set[str] = set()
    for L in range(1, max_hops + 1):
        made, tries = 0, 0
        while made < per_hop and tries < per_hop * 40 and named:
            tries += 1
            s = rng.choice(named)
            path = [s]
            rels: list[tuple[str, str]] = []
            v = s
            ok = True
            for _ in range(L):
                nxt = [(r, w, d) for r, w, d in adj.get(v, ()) if w not in path]
                if not nxt:
                    ok = False
                    break
                r, w, d = rng.choice(nxt)
                rels.append((humanise_relation(r), d))
                path.append(w)
                v = w
            if not ok or _is_cvt(kg, v) or not _name(kg, v):
                continue
            hops = _bfs_dist(adj, s, L).get(v, L)
            if hops < 1:
                continue
            text = _render_chain(_name(kg, s), rels, rng)
            if text in seen:
                continue
            seen.add(text)
            out.append(LabelledQuestion(text, hops, source))
            made += 1
    return out


def _name(kg: Any, eid: str) -> str:
    try:
        return kg.name(eid) or ""
    except Exception:
        return ""


def _is_cvt(kg: Any, eid: str) -> bool:
    try:
        ent = kg.entity(eid)
    except Exception:
        return False
    if ent is None:
        return False
    return bool(getattr(ent, "type", "") == "cvt" or
                (isinstance(ent, dict) and ent.get("is_cvt")))


def dataset_questions(names: Iterable[str]) -> list[LabelledQuestion]:
    """Questions with a known hop count from the named datasets (missing ones are skipped)."""
    out = []
    try:
        from ..datasets import load_dataset
    except ImportError:
        return out
    for name in names:
        try:
            ds = load_dataset(name)
        except Exception:
            continue
        kg = None
        try:
            kg = ds.kg() if getattr(ds, "has_kg", False) else None
        except Exception:
            kg = None
        for q in getattr(ds, "questions", []) or []:
            if not q.question or getattr(q, "answerable", True) is False:
                continue
            h = None
            if kg is not None and q.topic_entities and q.answer_entities:
                from .frag import kg_min_hops      # the paper's label: KG shortest path
                h = kg_min_hops(kg, q.topic_entities, q.answer_entities)
            if h is None:
                h = q.hops
            if h and h > 0:
                out.append(LabelledQuestion(q.question, int(h), name))
    return out


def _available_datasets() -> list[str]:
    try:
        from ..datasets import list_datasets
        return [d["name"] for d in list_datasets() if d.get("name")]
    except Exception:
        return ["demo"]


def collect_training_data(*, demo_kg: Any = None, datasets: Sequence[str] | None = None,
                          per_hop: int = 60, seed: int = 0
                          ) -> tuple[list[LabelledQuestion], list[LabelledQuestion]]:
    """``(generated + imported questions, demo hand-written questions)``."""
    if demo_kg is None:
        try:
            from ..datasets import load_dataset
            demo_kg = load_dataset("demo").kg()
        except Exception:
            demo_kg = None
    gen = template_questions(demo_kg, per_hop=per_hop, seed=seed) if demo_kg is not None else []
    names = list(datasets) if datasets is not None else _available_datasets()
    demo = dataset_questions([n for n in names if n == "demo"])
    other = dataset_questions([n for n in names if n != "demo"])
    return gen + other, demo


# --- training ---

def _fit(train: list[LabelledQuestion], seed: int = 0, C: float = 4.0) -> dict[str, Any]:
    import numpy as np
    from scipy import sparse
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    texts = [normalise_question(x.text) for x in train]
    y = np.array([x.label for x in train])
    if len(set(y.tolist())) < 2:
        raise ValueError("router training data has a single class; need both simple and "
                         "complex questions (is the demo KG there?)")
    vec = TfidfVectorizer(ngram_range=(1, 2), lowercase=True, min_df=1, sublinear_tf=False)
    X = vec.fit_transform(texts)
    extra = np.array([[structural_features(t)[n] for n in EXTRA_FEATURES] for t in texts])
    mean = extra.mean(axis=0)
    scale = extra.std(axis=0)
    scale[scale == 0] = 1.0
    Xf = sparse.hstack([X, sparse.csr_matrix((extra - mean) / scale)]).tocsr()
    clf = LogisticRegression(C=C, max_iter=2000, class_weight="balanced", random_state=seed)
    clf.fit(Xf, y)
    return {
        "vocabulary": {k: int(v) for k, v in vec.vocabulary_.items()},
        "idf": [float(v) for v in vec.idf_],
        "coef": [float(v) for v in clf.coef_[0]],
        "intercept": float(clf.intercept_[0]),
        "extra_mean": [float(v) for v in mean],
        "extra_scale": [float(v) for v in scale],
    }


def _accuracy(model: dict[str, Any], data: list[LabelledQuestion]) -> float | None:
    if not data:
        return None
    r = TfidfLRRouter({**model, "threshold": 0.5})
    ok = sum((r.p_complex(x.text)[0] >= 0.5) == bool(x.label) for x in data)
    return round(ok / len(data), 4)


def heuristic_accuracy(data: list[LabelledQuestion]) -> float | None:
    if not data:
        return None
    h = HeuristicRouter()
    return round(sum((h.score(x.text)[0] >= h.cutoff) == bool(x.label) for x in data) / len(data), 4)


def feedback_file(out_dir: Path | None = None) -> Path:
    return (out_dir or default_dir()) / "feedback.jsonl"


def add_feedback(question: str, hops: int, out_dir: Path | None = None) -> None:
    """FRAG-F: remember a (question, hop count read from the LLM's chosen path) sample."""
    f = feedback_file(out_dir)
    f.parent.mkdir(parents=True, exist_ok=True)
    with f.open("a") as fh:
        fh.write(json.dumps({"question": question, "hops": int(hops),
                             "t": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")


def load_feedback(out_dir: Path | None = None) -> list[LabelledQuestion]:
    f = feedback_file(out_dir)
    out = []
    if f.exists():
        for line in f.read_text().splitlines():
            try:
                d = json.loads(line)
                out.append(LabelledQuestion(d["question"], int(d["hops"]), "feedback"))
            except (ValueError, KeyError):
                continue
    return out


def train_router(out_dir: Path | None = None, *, demo_kg: Any = None,
                 datasets: Sequence[str] | None = None, per_hop: int = 60, seed: int = 0,
                 include_demo: bool = True, evaluate: bool = True
                 ) -> tuple[TfidfLRRouter, dict[str, Any]]:
    """Train, evaluate and save the TF-IDF + LR router; returns it and its report.

    FRAG-F feedback samples saved beside the model are added to the training data.
    """
    t0 = time.perf_counter()
    base, demo = collect_training_data(demo_kg=demo_kg, datasets=datasets, per_hop=per_hop,
                                       seed=seed)
    base = base + load_feedback(out_dir)
    report: dict[str, Any] = {"n_generated_or_imported": len(base), "n_demo": len(demo)}
    # held-out: a model that never saw the hand-written questions, tested on them
    if evaluate and base and len({x.label for x in base}) == 2:
        m0 = _fit(base, seed)
        report["heldout_demo_accuracy"] = _accuracy(m0, demo)
    # 5-fold cross-validation with the hand-written questions in training
    if evaluate and include_demo and len(demo) >= 10:
        rng = random.Random(seed)
        idx = list(range(len(demo)))
        rng.shuffle(idx)
        folds = [idx[i::5] for i in range(5)]
        ok = n = 0
        for f in folds:
            test = [demo[i] for i in f]
            train = base + [demo[i] for i in idx if i not in set(f)]
            m = _fit(train, seed)
            a = _accuracy(m, test) or 0.0
            ok += a * len(test)
            n += len(test)
        report["cv5_demo_accuracy"] = round(ok / n, 4) if n else None
    train = base + (demo if include_demo else [])
    model = _fit(train, seed)
    report["train_accuracy"] = _accuracy(model, train)
    report["heuristic_demo_accuracy"] = heuristic_accuracy(demo)
    srcs = Counter(x.source for x in train)
    labels = Counter("complex" if x.label else "simple" for x in train)
    data_hash = hashlib.sha256(json.dumps([(x.text, x.hops) for x in train]).encode()).hexdigest()
    model.update({
        "train_data": [[x.text, x.hops, x.source] for x in train if x.source != "feedback"],
        "format": FORMAT_VERSION, "kind": "tfidf_lr", "delta": DELTA, "threshold": 0.5,
        "extra_features": list(EXTRA_FEATURES), "ngram_range": [1, 2],
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "n_train": len(train),
        "sources": dict(srcs), "labels": dict(labels), "data_hash": data_hash[:16],
        "include_demo": include_demo, "seed": seed, "report": report,
        "train_seconds": round(time.perf_counter() - t0, 3),
    })
    path = (out_dir or default_dir()) / MODEL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(model))
    tmp.replace(path)
    _CACHE[str(path)] = TfidfLRRouter(model)
    report["path"] = str(path)
    report["sources"] = dict(srcs)
    report["labels"] = dict(labels)
    report["train_seconds"] = model["train_seconds"]
    return TfidfLRRouter(model), report


def adapt_router(out_dir: Path | None = None, seed: int = 0) -> TfidfLRRouter:
    """FRAG-F fast adaptation: refit on the saved model's own training questions plus every
    feedback sample (for TF-IDF + LR, refitting is the cheap equivalent of fine-tuning)."""
    d = out_dir or default_dir()
    f = d / MODEL_FILE
    old = json.loads(f.read_text()) if f.exists() else None
    if old is None or not old.get("train_data"):
        return train_router(d, seed=seed, evaluate=False)[0]
    base = [LabelledQuestion(t, int(h), src) for t, h, src in old["train_data"]]
    fb = load_feedback(d)
    model = _fit(base + fb, seed)
    keep = {k: v for k, v in old.items() if k not in ("vocabulary", "idf", "coef", "intercept",
                                                       "extra_mean", "extra_scale")}
    model.update(keep)
    model.update({"n_feedback": len(fb), "adapted_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                  "n_train": len(base) + len(fb)})
    tmp = f.with_suffix(".tmp")
    tmp.write_text(json.dumps(model))
    tmp.replace(f)
    r = TfidfLRRouter(model)
    _CACHE[str(f)] = r
    return r


def default_dir() -> Path:
    from .. import paths
    return paths.sub("models", "frag_router")


_CACHE: dict[str, TfidfLRRouter] = {}


def load_router(path: Path | None = None, *, auto_train: bool = True) -> TfidfLRRouter | None:
    """The saved router (trained now if absent and ``auto_train``); None if impossible."""
    f = (path or default_dir()) / MODEL_FILE
    key = str(f)
    if key in _CACHE and f.exists():
        return _CACHE[key]
    if f.exists():
        try:
            model = json.loads(f.read_text())
            if model.get("format") == FORMAT_VERSION:
                _CACHE[key] = TfidfLRRouter(model)
                return _CACHE[key]
        except (ValueError, KeyError):
            pass            # damaged file: retrain below
    if not auto_train:
        return None
    try:
        r, _ = train_router(f.parent, evaluate=False)   # `frag train-router` reports accuracy
    except (ValueError, LookupError):
        return None
    _CACHE[key] = r
    return r


def clear_cache() -> None:
    _CACHE.clear()
