"""What a method learned or calibrated, and on which questions.

A method whose behaviour depends on something fitted to questions (FRAG's router,
PAR-RAG's exemplar store and hop estimator, CRP-RAG's tau_ppl) describes that state as a
:class:`FitRecord`: the kind of artefact, its name, the dataset and split it was fitted on,
the ids and text hashes of those questions, and a hash of the data. Methods expose them
through ``Method.fitted_state(config)``; evaluation compares them with the questions it is
about to score (:mod:`workbench.eval.leakage`), and every run records the artefacts it used
(an ``artefact_used`` event).

A question-set reference is ``DATASET:SPLIT`` (``demo:train``).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from .. import trace as T

ARTEFACT_EVENT = "artefact_used"


def text_hash(text: str) -> str:
    """A short hash of a question's normalised text (case, spaces and punctuation ignored),
    so the same question under another dataset name or id is still recognised."""
    norm = " ".join(re.sub(r"[^\w\s]", " ", str(text).lower()).split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:12]


@dataclass
class FitRecord:
    kind: str                           # frag_router | par_exemplars | crp_tau_ppl ...
    name: str                           # what a user sets or sees (an artefact name, a value)
    dataset: str
    split: str
    question_ids: list[str] = field(default_factory=list)
    text_hashes: list[str] = field(default_factory=list)
    data_hash: str = ""
    supervision: str = "gold"           # gold labels | llm-feedback (no gold, FRAG-F)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def fitted_on(self) -> str:
        return f"{self.dataset}:{self.split}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FitRecord":
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

    def summary(self) -> dict[str, Any]:
        """The record without its id lists (what a run's event carries)."""
        return {"kind": self.kind, "name": self.name, "fitted_on": self.fitted_on,
                "n_questions": len(self.question_ids), "data_hash": self.data_hash,
                "supervision": self.supervision, **self.extra}

    def saw(self, questions: Iterable[Any], dataset: str) -> list[str]:
        """Ids of ``questions`` (from ``dataset``) that this state was fitted on."""
        ids = set(self.question_ids) if dataset == self.dataset else set()
        hashes = set(self.text_hashes)
        return [q.id for q in questions if q.id in ids or text_hash(q.question) in hashes]

    def event(self, node_id: str | None, question: Any = None, dataset: str = "",
              **info: Any) -> T.Event:
        """The run's record of this artefact; ``saw_question`` when the run's own question
        (a dataset question) is among the ones it was fitted on."""
        saw = None
        if question is not None:
            saw = bool(self.saw([question], dataset))
        return T.custom(ARTEFACT_EVENT, node_id, **self.summary(), saw_question=saw, **info)


def record(kind: str, name: str, dataset: str, split: str, questions: Sequence[Any],
           supervision: str = "gold", data: Any = None, **extra: Any) -> FitRecord:
    """A record over ``questions`` (objects with ``id`` and ``question``); ``data`` is
    anything else the fitted state depends on (it goes into the hash)."""
    ids = [q.id for q in questions]
    hashes = sorted({text_hash(q.question) for q in questions})
    blob = json.dumps([ids, hashes, data], sort_keys=True, default=str)
    return FitRecord(kind, name, dataset, split, ids, hashes,
                     hashlib.sha256(blob.encode()).hexdigest()[:16], supervision, extra)


def load_questions(ref: str) -> tuple[str, str, list[Any]]:
    """``"demo:train"`` -> (dataset name, split, its questions)."""
    from ..datasets import load_dataset, splits
    name, split = splits.parse_ref(ref)
    return name, split, load_dataset(name).split(split)


def collect(events: Iterable[T.Event | dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``artefact_used`` payloads of a run's events (or of its trace's log)."""
    out = []
    for e in events:
        typ, data = (e.type, e.data) if isinstance(e, T.Event) else (e.get("type"), e.get("data"))
        if typ == ARTEFACT_EVENT:
            out.append(dict(data or {}))
    return out
