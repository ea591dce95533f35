"""FRAG's reasoning-aware module: guess from the question text alone whether the
shortest reasoning path is short (SIMPLE, <= delta = 2 hops) or long (COMPLEX, >= 3).

The paper's fine-tuned DeBERTaV3 classifier is not published (spec frag.md §3.4, A16),
so this module provides the spec's local substitutes behind one interface:

* ``tfidf_lr`` (default): TF-IDF word 1-2-grams plus a few structural counts
  (relative-clause markers, nested "X of the Y" chains, comparative/superlative cues,
  capitalised entity spans, token count) and a logistic regression, trained with
  scikit-learn on questions with known hop counts: template questions rendered from
  relation chains of the training dataset's KG (labels from KG shortest paths, as in the
  paper) and the questions of ONE named split (``demo:train`` by default). The paper keeps
  its training questions apart from the test sets; so does this: the router records what
  it was fitted on, evaluation refuses to score it on those questions, and its report gives
  the accuracy on the split it saw and on the splits it did not.
* ``heuristic``: no training: score = #relative-clause markers + #nested-of chains +
  #comparative/superlative cues + (#entity spans - 1); COMPLEX iff score >= 2.

A trained router is saved as plain JSON (vocabulary, idf, weights, its training questions
and a :class:`~workbench.methods.fitted.FitRecord`; no pickle) under
``paths.sub("models", "frag_router")/NAME.json``. :func:`load_router` takes an artefact
name or a ``DATASET:SPLIT`` reference, training the latter on first use. FRAG-F never
rewrites a saved router: it adapts a copy (:func:`adapted_copy`).
"""
from __future__ import annotations

import json
import math
import random
import re
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .. import fitted
from .kg import is_cvt, kg_min_hops, namer

DELTA = 2                       # SIMPLE iff min hops <= DELTA (spec A1)
FORMAT_VERSION = 2
DEFAULT_TRAIN = "demo:train"

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
                if k not in ("vocabulary", "idf", "coef", "train_data", "fitted_on")}

    @property
    def record(self) -> fitted.FitRecord | None:
        d = self.model.get("fitted_on")
        return fitted.FitRecord.from_dict(d) if d else None

    @property
    def train_data(self) -> list["LabelledQuestion"]:
        return [LabelledQuestion(t, int(h), src) for t, h, src in self.model.get("train_data", [])]

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
    source: str                     # e.g. "demo:train", "template:demo", "feedback"

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
    name = namer(kg)
    named = [e for e in sorted(adj) if name(e) != e and not is_cvt(kg, e)]
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
            if not ok or is_cvt(kg, v) or name(v) == v:
                continue
            hops = _bfs_dist(adj, s, L).get(v, L)
            if hops < 1:
                continue
            text = _render_chain(name(s), rels, rng)
            if text in seen:
                continue
            seen.add(text)
            out.append(LabelledQuestion(text, hops, source))
            made += 1
    return out


# --- training ---

def _fit(train: list[LabelledQuestion], seed: int = 0, C: float = 4.0) -> dict[str, Any]:
    import numpy as np
    from scipy import sparse
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    texts = [normalise_question(x.text) for x in train]
    y = np.array([x.label for x in train])
    if len(set(y.tolist())) < 2:
        raise ValueError("router training data has a single class; it needs both simple and "
                         "complex questions (a training set with a KG, or hop labels)")
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


def artefact_name(ref: str) -> str:
    """The artefact name of a router trained on ``ref``: ``demo:train`` -> ``demo-train``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", ref.strip()).strip("-")


def labelled_questions(questions: Sequence[Any], kg: Any = None,
                       source: str = "") -> list[LabelledQuestion]:
    """Dataset questions with a hop count: the KG shortest path from a topic entity to an
    answer entity where the KG has both (the paper's label), else the dataset's ``hops``.
    Unanswerable questions are left out."""
    out = []
    for q in questions:
        if not q.question or getattr(q, "answerable", True) is False:
            continue
        h = None
        if kg is not None and q.topic_entities and q.answer_entities:
            h = kg_min_hops(kg, q.topic_entities, q.answer_entities)
        h = h or q.hops
        if h and h > 0:
            out.append(LabelledQuestion(q.question, int(h), source or "dataset"))
    return out


def accuracy(router: Any, data: Sequence[LabelledQuestion], threshold: float = 0.5
             ) -> float | None:
    """Share of ``data`` routed to its label's pipeline (either estimator)."""
    if not data:
        return None
    ok = sum((router.estimate(x.text, threshold).label == "complex") == bool(x.label)
             for x in data)
    return round(ok / len(data), 4)


def train_router(ref: str = DEFAULT_TRAIN, *, out_dir: Path | None = None,
                 name: str | None = None, per_hop: int = 60, seed: int = 0,
                 templates: bool = True) -> tuple[TfidfLRRouter, dict[str, Any]]:
    """Train the TF-IDF + LR router on the questions of ``ref`` (``DATASET:SPLIT``) plus
    template questions from that dataset's KG, save it, and report its routing accuracy on
    the split it saw (in-sample) and on the dataset's other splits (held out)."""
    from ...datasets import load_dataset
    t0 = time.perf_counter()
    ds_name, split, qs = fitted.load_questions(ref)
    ds = load_dataset(ds_name)
    kg = ds.kg() if ds.has_kg else None
    gen = template_questions(kg, per_hop=per_hop, seed=seed, source=f"template:{ds_name}") \
        if (kg is not None and templates) else []
    own = labelled_questions(qs, kg, f"{ds_name}:{split}")
    train = gen + own
    name = name or artefact_name(ref)
    model = _fit(train, seed)
    router = TfidfLRRouter(model)
    report: dict[str, Any] = {"train": ref, "n_templates": len(gen), "n_questions": len(own),
                              "in_sample_accuracy": accuracy(router, own)}
    heldout: dict[str, Any] = {}
    others = set() if split in ("", "all") else {q.split for q in ds.questions} - {split}
    for other in sorted(others):
        data = labelled_questions(ds.split(other), kg)
        heldout[other] = {"n": len(data), "accuracy": accuracy(router, data),
                          "heuristic_accuracy": accuracy(HeuristicRouter(), data)}
    report["heldout"] = heldout
    report["template_accuracy"] = accuracy(router, gen)
    rec = fitted.record("frag_router", name, ds_name, split, qs,
                        data=[[x.text, x.hops] for x in train], per_hop=per_hop, seed=seed,
                        n_templates=len(gen))
    model.update({
        "train_data": [[x.text, x.hops, x.source] for x in train],
        "format": FORMAT_VERSION, "kind": "tfidf_lr", "name": name, "delta": DELTA,
        "threshold": 0.5, "extra_features": list(EXTRA_FEATURES), "ngram_range": [1, 2],
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "n_train": len(train),
        "sources": dict(Counter(x.source for x in train)),
        "labels": dict(Counter("complex" if x.label else "simple" for x in train)),
        "seed": seed, "report": report, "fitted_on": rec.to_dict(),
        "train_seconds": round(time.perf_counter() - t0, 3)})
    path = save(model, out_dir)
    report.update(path=str(path), name=name, sources=model["sources"], labels=model["labels"],
                  train_seconds=model["train_seconds"])
    return _CACHE[str(path)], report


def save(model: dict[str, Any], out_dir: Path | None = None) -> Path:
    model["name"] = artefact_name(model["name"])
    path = (out_dir or default_dir()) / f"{model['name']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(model))
    tmp.replace(path)
    _CACHE[str(path)] = TfidfLRRouter(model)
    return path


def adapted_copy(router: TfidfLRRouter, samples: Sequence[LabelledQuestion], *,
                 name: str | None = None, record: fitted.FitRecord | None = None,
                 seed: int = 0) -> TfidfLRRouter:
    """FRAG-F's fast adaptation, on a copy: refit on the router's own training questions plus
    the feedback samples (for TF-IDF + LR, refitting is the cheap equivalent of the paper's
    3-epoch fine-tune). The original router and its file are untouched."""
    model = _fit(router.train_data + list(samples), seed)
    keep = {k: v for k, v in router.model.items()
            if k not in ("vocabulary", "idf", "coef", "intercept", "extra_mean", "extra_scale")}
    model.update(keep)
    model.update({"name": name or f"{router.model.get('name', 'router')}-feedback",
                  "base": router.model.get("name"), "n_feedback": len(samples),
                  "feedback": [[x.text, x.hops] for x in samples],
                  "adapted_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                  "train_data": [[x.text, x.hops, x.source] for x in
                                 router.train_data + list(samples)]})
    if record is not None:
        model["fitted_on"] = record.to_dict()
    return TfidfLRRouter(model)


def default_dir() -> Path:
    from ... import paths
    return paths.sub("models", "frag_router")


_CACHE: dict[str, TfidfLRRouter] = {}


def load_router(name: str = DEFAULT_TRAIN, *, out_dir: Path | None = None,
                auto_train: bool = True) -> TfidfLRRouter | None:
    """The saved router called ``name`` (``demo-train``, or a FRAG-F artefact), or the one
    trained on the question set ``name`` (``demo:train``; trained now if absent and
    ``auto_train``). None when it cannot be had."""
    d = out_dir or default_dir()
    f = d / f"{artefact_name(name)}.json"
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
            pass            # damaged or older file: retrain below
    if not auto_train or ":" not in name:
        return None
    try:
        r, _ = train_router(name, out_dir=d)
    except (ValueError, LookupError):
        return None
    return r


def clear_cache() -> None:
    _CACHE.clear()
