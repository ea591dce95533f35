"""What every retriever returns, so the UI can show why a passage was retrieved."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class Hit:
    id: str
    title: str
    text: str
    retriever: str          # "bm25" | "dense" | "hybrid-rrf" | "hybrid-weighted" | "rerank" | "kg"
    score: float            # the retriever's raw score
    rank: int               # 1-based
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class Retriever(Protocol):
    name: str

    def search(self, query: str, k: int = 5) -> list[Hit]:
        ...
