"""Stored KG builds (``kg build``): where they live, which exist, loading one, and what a
reader must know about a partial one.

Apart from :mod:`~workbench.knowledge.kg_build` (the extraction itself, which reads
dataset passages) so that the dataset registry can fall back to a built KG without
importing the builder, which imports the dataset types back.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .. import paths


def build_root() -> Path:
    return paths.sub("kg")


def build_dir(dataset: str, corpus_hash: str, model_sha: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", dataset)
    return build_root() / f"{safe}-{corpus_hash[:10]}-{(model_sha or 'unknown')[:12]}"


def built_kgs(dataset_name: str | None = None) -> list[dict[str, Any]]:
    """Metadata of the built KGs (newest first), optionally for one dataset."""
    out = []
    root = build_root()
    for d in root.iterdir():
        mf = d / "meta.json"
        if not (d.is_dir() and mf.is_file() and (d / "kg").is_dir()):
            continue
        try:
            m = json.loads(mf.read_text())
        except (OSError, ValueError):
            continue
        if dataset_name is not None and m.get("dataset") != dataset_name:
            continue
        m["path"] = str(d)
        out.append(m)
    out.sort(key=lambda m: -float(m.get("updated", 0)))
    return out


def load_built_kg(dataset_name: str, model_sha: str | None = None):
    """The built KG of ``dataset_name`` (for ``model_sha``, else the newest), or None.

    ``Dataset.kg()`` should fall back to this when the dataset has no KG of its own.
    """
    from .kg import KnowledgeGraph
    for m in built_kgs(dataset_name):
        if model_sha and not str(m.get("model_sha256", "")).startswith(model_sha[:12]):
            continue
        kg = KnowledgeGraph.load(Path(m["path"]) / "kg")
        kg.build = m
        return kg
    return None


def partial_note(kg: Any) -> str | None:
    """What a reader must know about answers from a KG built from part of its corpus."""
    m = getattr(kg, "build", None) or {}
    done, total = int(m.get("passages_done") or 0), int(m.get("passages_total") or 0)
    if not m or m.get("corpus_complete") or done >= total:
        return None
    how = (f"those that came with {m['selection']}" if m.get("selection")
           else "built with --limit, or interrupted")
    return (f"This knowledge graph was extracted by {m.get('model', 'the LLM')} from {done} of "
            f"the {total} passages of {m.get('dataset')} ({how}): facts "
            f"in the other passages are not in it, while the text methods search all of them. "
            f"Run `python -m workbench kg build {m.get('dataset')}` to extract the rest.")
