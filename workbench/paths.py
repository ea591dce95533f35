"""Where the workbench keeps its store, indexes and caches.

``WORKBENCH_HOME`` moves everything (tests point it at a temporary folder).
"""
from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEMO_DIR = PROJECT_ROOT / "data" / "demo"


def home() -> Path:
    env = os.environ.get("WORKBENCH_HOME")
    if env:
        p = Path(env).expanduser()
    else:
        from platformdirs import user_data_dir
        p = Path(user_data_dir("rag-workbench", appauthor=False))
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError as e:      # a file where the home folder should be
        e.fix = "point WORKBENCH_HOME at a folder (the workbench keeps its store and caches there)"
        raise
    return p


def sub(*parts: str) -> Path:
    p = home().joinpath(*parts)
    p.mkdir(parents=True, exist_ok=True)
    return p


def cache(*parts: str) -> Path:
    """Content-addressed caches (embeddings, BM25 matrices, hashes): under the home folder,
    or under ``WORKBENCH_CACHE`` when set, so several homes (tests) can share them safely."""
    env = os.environ.get("WORKBENCH_CACHE")
    p = (Path(env).expanduser() if env else home() / "cache").joinpath(*parts)
    p.mkdir(parents=True, exist_ok=True)
    return p


def shared_data_dir() -> Path | None:
    """The real dataset samples beside the project (absent in a user's clone)."""
    p = PROJECT_ROOT.parent / "shared" / "data"
    return p if p.is_dir() else None
