"""Shared fixtures: every test gets its own WORKBENCH_HOME so stores and caches never mix."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    """Content-addressed caches (embeddings of the demo corpus take ~25 s) shared by the session."""
    return tmp_path_factory.mktemp("wbcache")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch, shared_cache):
    home = tmp_path / "wbhome"
    monkeypatch.setenv("WORKBENCH_HOME", str(home))
    monkeypatch.setenv("WORKBENCH_CACHE", str(shared_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield home


@pytest.fixture(scope="session")
def default_llm():
    """The real default model (SmolLM2-135M-Instruct), loaded once per test session."""
    from workbench.llm.llama_cpp_backend import LlamaCppBackend
    from workbench.llm.registry import DEFAULT_MODEL, resolve
    return LlamaCppBackend(resolve(DEFAULT_MODEL), n_ctx=4096)
