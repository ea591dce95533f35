"""A batched CRP-RAG run on the real SmolLM2 model is reproducible: the same question, model
state and batch plans give the same trace, down to every token and logprob.

Each run starts from the same prompt cache (one throw-away call first): llama.cpp's numbers
depend on which sequences share a step and on what the cache holds, not on chance.
"""
from __future__ import annotations

import pytest

from tests.test_methods_batched import batch_sizes, signature
from workbench import trace as T
from workbench.llm import batching
from workbench.llm.base import GenParams
from workbench.methods.embeddings import HashEmbedder
from workbench.execution import execute

# small budgets; two samples per sink so graph construction has calls to batch
OVER = {"retriever": "bm25", "samples_per_sink": 2, "max_iterations": 1, "max_nodes": 3,
        "top_k": 2, "passage_chars": 200, "gen_max_tokens": 32, "summary_max_tokens": 16,
        "eval_max_tokens": 8, "step_max_tokens": 8, "answer_max_tokens": 24, "batch_size": 4}


def _question():
    try:
        from workbench.datasets import load_dataset
        ds = load_dataset("demo")
    except (ImportError, LookupError, FileNotFoundError, ValueError) as e:
        pytest.skip(f"demo world not available: {e}")
    qs = [q for q in ds.questions if q.answerable and q.answers and (q.hops or 0) >= 2]
    if not qs or not ds.passages:
        pytest.skip("the demo world has no multi-hop question or no passages")
    return qs[0]


def _run(llm, q, plans=None):
    from workbench.workspace import build_context
    llm.generate("Zebras", GenParams(max_tokens=1, chat=False))     # the same cache each time
    m, ctx = build_context("crp-rag", llm=llm, dataset="demo", overrides=OVER,
                           question_id=q.id)
    ctx.embedder = HashEmbedder()        # merging only; the point here is the model
    ctx.batch_plans = plans
    return list(execute(m, ctx, q.question))


def test_a_batched_crp_rag_run_is_reproducible(default_llm):
    q = _question()
    a = _run(default_llm, q)
    assert [e.data["status"] for e in a if e.type == T.RUN_FINISHED][0] in ("finished",
                                                                            "refused")
    assert max(batch_sizes(a)) > 1
    modes = {e.data["batch"]["mode"] for e in a if e.type == T.LLM_CALL and e.data.get("batch")}
    assert "llama_cpp" in modes
    # a re-run given the plans the first one recorded groups its calls as that run did
    plans = batching.plans_from_records([e.data for e in a if e.type == T.LLM_CALL])
    assert len(plans) == len({e.data["batch"]["call"] for e in a
                              if e.type == T.LLM_CALL and e.data.get("batch")})
    c = _run(default_llm, q, plans)
    assert signature(c) == signature(a)
