"""Train / dev / test splits of a dataset's questions.

Anything a method learns or calibrates (FRAG's router, PAR-RAG's exemplar store, CRP-RAG's
tau_ppl, CogGRAG's epsilon) is fitted on a named split, and evaluation refuses to score it on
the questions it saw (:mod:`workbench.eval.leakage`). So every question carries a split:

* from the source where it has one: the record's own ``split`` field, or the file it came
  from (``train.json``, ``*_dev.jsonl``, ``validation-*.parquet`` ...);
* otherwise a seeded split: a question's split is a pure function of its id and the seed
  (a hash, not a shuffle), so importing more of the same source later never moves a
  question that was already placed. The seed and ratios go into the dataset's manifest.

A source that names only one split (a HotpotQA dev file, say) gets a seeded split as well;
its own label is kept in ``question.meta["source_split"]``.
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any, Iterable, Sequence

SPLITS = ("train", "dev", "test")
DEFAULT_RATIOS = {"train": 0.4, "dev": 0.1, "test": 0.5}
DEFAULT_SEED = 0
ALL = ("", "all", None)

_ALIASES = {"train": "train", "training": "train",
            "dev": "dev", "val": "dev", "valid": "dev", "validation": "dev",
            "test": "test", "testing": "test"}
_NAME_RE = re.compile(r"(?:^|[^a-z])(train(?:ing)?|dev|val(?:id(?:ation)?)?|test(?:ing)?)"
                      r"(?=$|[^a-z])")


def normalise(name: Any) -> str:
    """``validation`` -> ``dev`` and so on; other names are kept (lower-cased)."""
    s = str(name or "").strip().lower()
    return _ALIASES.get(s, s)


def from_name(filename: str) -> str:
    """The split a source file's name announces (``hotpot_dev_distractor_v1.json`` -> dev),
    or ``""``. The last match wins (``train/validation-0.parquet`` -> dev)."""
    found = _NAME_RE.findall(str(filename).lower())
    return normalise(found[-1]) if found else ""


def seeded(qid: str, seed: int = DEFAULT_SEED,
           ratios: dict[str, float] | None = None) -> str:
    """The split of question ``qid`` under ``seed``: a hash of both, cut by the ratios."""
    ratios = ratios or DEFAULT_RATIOS
    h = hashlib.sha256(f"{seed}:{qid}".encode("utf-8")).digest()
    u = int.from_bytes(h[:8], "big") / 2.0 ** 64
    total = sum(ratios.values()) or 1.0
    acc = 0.0
    for name, r in ratios.items():
        acc += r / total
        if u < acc:
            return name
    return list(ratios)[-1]


def assign(questions: Sequence[Any], seed: int = DEFAULT_SEED,
           ratios: dict[str, float] | None = None) -> dict[str, Any]:
    """Give every question a split (in place); returns what the manifest records.

    Source splits are kept when the source names at least two; otherwise every question
    gets a seeded split and a source label moves to ``meta["source_split"]``.
    """
    ratios = dict(ratios or DEFAULT_RATIOS)
    for q in questions:
        q.split = normalise(q.split)
    named = {q.split for q in questions if q.split}
    if len(named) >= 2:
        info: dict[str, Any] = {"source": "source files"}
    else:
        for q in questions:
            if q.split:
                q.meta["source_split"] = q.split
            q.split = seeded(q.id, seed, ratios)
        info = {"source": "seeded", "seed": seed, "ratios": ratios}
        if named:
            info["source_split"] = next(iter(named))
    info["counts"] = dict(sorted(Counter(q.split for q in questions).items()))
    return info


def select(questions: Iterable[Any], split: str | None) -> list[Any]:
    """The questions of ``split`` (all of them for None / "" / "all")."""
    qs = list(questions)
    if split in ALL:
        return qs
    want = normalise(split)
    out = [q for q in qs if q.split == want]
    if not out:
        have = sorted({q.split for q in qs if q.split})
        raise LookupError(f"no questions in split {split!r}; this dataset has "
                          f"{', '.join(have) or 'no splits'}")
    return out


def select_many(questions: Iterable[Any], spec: str | None,
                known: Iterable[Any] | None = None) -> list[Any]:
    """The questions of a comma-separated list of splits (``"dev,test"``), in their order;
    all of them when one name is None / "" / "all". Each name is checked as :func:`select`
    checks it, against ``known`` (default: ``questions``), so that a split the dataset lacks
    is named with those it has even where ``questions`` is only a slice of it."""
    qs = list(questions)
    names = [n.strip() for n in (spec or "").split(",") if n.strip()]
    if not names or any(n.lower() in ALL for n in names):
        return qs
    pool = qs if known is None else list(known)
    for n in names:
        select(pool, n)
    want = {normalise(n) for n in names}
    return [q for q in qs if q.split in want]


def counts(questions: Iterable[Any]) -> dict[str, int]:
    return dict(sorted(Counter(q.split or "?" for q in questions).items()))


def parse_ref(ref: str, default_split: str = "train") -> tuple[str, str]:
    """``"demo:train"`` -> ("demo", "train"); ``"demo"`` -> ("demo", default_split)."""
    ref = (ref or "").strip()
    if not ref:
        raise ValueError("empty question-set reference; write DATASET:SPLIT, e.g. demo:train")
    name, _, split = ref.partition(":")
    return name.strip(), normalise(split) or default_split
