"""CogGRAG's knowledge-first prompts on the real SmolLM2-135M over a demo KG question: the
prompt cache serves T to every reasoning, verification and re-think call after the first."""
from __future__ import annotations

import pytest

from workbench import config as C
from workbench.execution import run_to_end
from workbench.methods.base import RunContext
from workbench.methods.coggrag.method import CogConfig, CogGRAG

from tests.test_methods_kg_real import COG_SMALL, _well_formed

ONE_CALL = {**COG_SMALL, "local_extraction": "one_call"}


@pytest.fixture(scope="module")
def demo():
    from workbench.datasets import load_dataset
    ds = load_dataset("demo")
    return ds, ds.kg()


@pytest.fixture(scope="module")
def embedder():
    from workbench.knowledge.dense import get_embedder
    return get_embedder()


def _run(llm, demo, embedder, **over):
    ds, kg = demo
    q = ds.question("q014")
    ctx = RunContext(llm=llm, config=C.build(CogConfig, {**ONE_CALL, **over}), kg=kg,
                     embedder=embedder, gold=q, dataset="demo", seed=0)
    tr = run_to_end(CogGRAG(), ctx, q.question)
    _well_formed(tr, "0")
    return tr


def test_knowledge_first_prompts_let_the_cache_serve_the_knowledge_once(default_llm, demo,
                                                                        embedder):
    """Reasoning, verification and re-think carry the same knowledge T. With T first under
    one system line, every such call after the first starts from the cached T; with each
    call's own role line first, a call of another kind than the one before evaluates T
    again."""
    fresh, cached = {}, {}
    for layout in ("paper", "knowledge_first"):
        tr = _run(default_llm, demo, embedder, prompt_layout=layout)
        calls = [c for c in tr.llm_calls.values()
                 if c["purpose"] in ("reason", "verify", "rethink")]
        assert len(calls) >= 2
        fresh[layout] = sum(c["prompt_tokens"] - c["cached_prompt_tokens"] for c in calls)
        cached[layout] = [c["cached_prompt_tokens"] for c in calls[1:]]
        if layout == "knowledge_first":   # T comes word for word before anything else
            assert len({c["prompt"][:c["prompt"].index("Completed reasoning:")]
                        for c in calls}) == 1
    assert fresh["knowledge_first"] < fresh["paper"], fresh
    # every call after the first starts from the cached T (at least one 64-token block)
    assert min(cached["knowledge_first"]) >= 64, cached
