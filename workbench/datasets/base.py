"""Records shared by importers, the knowledge layer, methods and evaluation."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Passage:
    id: str
    title: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Triple:
    head: str
    relation: str
    tail: str
    source: str | None = None      # passage id a triple was extracted from, if any

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Entity:
    id: str
    name: str
    aliases: list[str] = field(default_factory=list)
    type: str = ""


@dataclass
class Question:
    id: str
    question: str
    answers: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    hops: int | None = None
    type: str = ""                 # single | bridge | comparison | unanswerable | dataset-specific
    answerable: bool = True
    topic_entities: list[str] = field(default_factory=list)
    decomposition: list[dict[str, Any]] = field(default_factory=list)
    gold_titles: list[str] = field(default_factory=list)
    gold_path: list[list[str]] = field(default_factory=list)
    answer_entities: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)   # domain, question_type, query_time...
    split: str = ""                # train | dev | test (see datasets/splits.py)

    @property
    def gold_answers(self) -> list[str]:
        return list(self.answers) + [a for a in self.aliases if a not in self.answers]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Question":
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        extra = {k: v for k, v in d.items() if k not in cls.__dataclass_fields__}
        q = cls(**known)
        q.meta.update(extra)
        return q
