"""Shared fixtures: every test gets its own WORKBENCH_HOME so stores and caches never mix."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Fast real-model tests use the smallest bundled model; a few end-to-end tests per method
# family run the default model (the ``default_model_llm`` fixture).
FAST_MODEL = "smollm2-135m"


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


def _isolated(name: str, **kw):
    from workbench.llm.base import LLMError
    from workbench.llm.isolated import IsolatedBackend
    from workbench.llm.registry import resolve
    try:
        return IsolatedBackend(resolve(name), name=name, **kw)
    except LLMError as e:
        pytest.skip(f"the bundled model {name} is not installed: {e}")


@pytest.fixture(scope="session")
def default_llm():
    """SmolLM2-135M-Instruct (fast), loaded once per test session in a worker process, so a
    native crash fails a test instead of ending the test run."""
    be = _isolated(FAST_MODEL, n_ctx=4096)
    yield be
    be.close()


@pytest.fixture(scope="session")
def default_model_llm():
    """The workbench's default model (what users get), once per test session."""
    from workbench.llm.registry import DEFAULT_MODEL
    be = _isolated(DEFAULT_MODEL, n_ctx=4096)
    yield be
    be.close()
