"""Grammar checked on the likeliest tokens first (grammar_sampler.py) against llama.cpp's check
of the whole vocabulary, on the real SmolLM2 model in this process (the switch is a backend
attribute, which a model worker would not expose)."""
import json
from types import SimpleNamespace

import numpy as np
import pytest

from workbench.llm import grammar_sampler
from workbench.llm.base import GenParams, GenRequest
from workbench.llm.llama_cpp_backend import LlamaCppBackend
from workbench.llm.registry import resolve
from workbench.methods.prompts import answer_span
from workbench.methods.crp_rag import prompts as crp_rag

from tests.conftest import FAST_MODEL

Q = "Where was the director of the film Inception born?"
STEP = crp_rag.GEN_SCHEMA


@pytest.fixture(scope="module")
def llm():
    be = LlamaCppBackend(resolve(FAST_MODEL), n_ctx=4096, max_batch=4)
    yield be


@pytest.fixture
def tally(monkeypatch):
    """Steps and whole-vocabulary checks of every candidate-first sampler, as each closes."""
    counts = {"samplers": 0, "steps": 0, "full": 0}
    real = grammar_sampler.CandidateGrammarSampler.close

    def close(self):
        if self._grammar:
            counts["samplers"] += 1
            counts["steps"] += self.steps
            counts["full"] += self.full_checks
        real(self)

    monkeypatch.setattr(grammar_sampler.CandidateGrammarSampler, "close", close)
    return counts


def _requests():
    return [
        GenRequest(crp_rag.gen(Q, []), GenParams(max_tokens=48, temperature=0.8, seed=3,
                                                 json_schema=STEP)),
        GenRequest(crp_rag.gen(Q, ["Find the director of Inception."]),
                   GenParams(max_tokens=48, temperature=0.8, seed=5, json_schema=STEP)),
        GenRequest(answer_span.messages(Q, "Christopher Nolan directed it; he was born in "
                                           "London."),
                   GenParams(max_tokens=32, json_schema=answer_span.SCHEMA)),
        GenRequest([{"role": "user", "content": "Is Paris in France? Answer yes or no."}],
                   GenParams(max_tokens=4, grammar='root ::= "yes" | "no"')),
    ]


def _run(llm, candidates, req):
    llm.grammar_candidates = candidates
    llm.llm.reset()                     # both ways from the same empty cache: same logits
    return llm.generate(req.messages, req.params)


def _ids(c):
    return [t.id for t in c.tokens]


def test_candidates_first_picks_the_tokens_of_the_whole_vocabulary_check(llm, tally):
    for req in _requests():
        full = _run(llm, 0, req)
        fast = _run(llm, grammar_sampler.DEFAULT_CANDIDATES, req)
        assert _ids(fast) == _ids(full), req.params
        assert [t.logprob for t in fast.tokens] == [t.logprob for t in full.tokens]
        assert fast.finish_reason == full.finish_reason
    # one candidate-first sampler per request, and most steps never checked the vocabulary
    assert tally["samplers"] == 4 and tally["full"] < tally["steps"] / 4


def test_a_token_outside_the_candidates_falls_back_to_the_whole_vocabulary(llm, tally):
    # a word the model would not put among its likeliest few next tokens
    req = GenRequest([{"role": "user", "content": "Say hello."}],
                     GenParams(max_tokens=8, grammar='root ::= "xylophone" | "quokka"'))
    full = _run(llm, 0, req)
    fast = _run(llm, 2, req)
    assert fast.text == full.text and fast.text in ("xylophone", "quokka")
    assert tally["full"] >= 1


def test_sampling_with_few_allowed_tokens_keeps_the_tokens_of_the_full_check(llm, monkeypatch):
    # JSON keys and punctuation leave fewer allowed tokens than top-k's 40: the top-p bound
    # decides those steps, and must settle some and pick what the full check picks
    decided = []
    real = grammar_sampler.CandidateGrammarSampler._top_p_settled
    monkeypatch.setattr(grammar_sampler.CandidateGrammarSampler, "_top_p_settled",
                        lambda self, *a: decided.append(real(self, *a)) or decided[-1])
    for seed in range(3):
        req = GenRequest(crp_rag.gen(Q, []), GenParams(max_tokens=48, temperature=0.8,
                                                       seed=seed, json_schema=STEP))
        full = _run(llm, 0, req)
        fast = _run(llm, grammar_sampler.DEFAULT_CANDIDATES, req)
        assert _ids(fast) == _ids(full)
    assert decided.count(True) > 3


def test_top_p_settles_only_when_the_unseen_tokens_cannot_matter():
    settled = lambda logits, n, below, p=0.95: grammar_sampler.CandidateGrammarSampler._top_p_settled(
        SimpleNamespace(top_p=p), np.array(logits, dtype=np.float32), n, below)
    # one candidate holds nearly all the mass: top-p keeps it alone either way
    assert settled([10.0, 2.0], 38, 0.0)
    # two close candidates and 38 unseen tokens just below them: the unseen could be kept
    assert not settled([1.0, 0.9], 38, 0.8)
    # the candidates reach p without the unseen ones, but with them the cut moves
    assert settled([3.0, 0.0], 0, -50.0) and not settled([3.0, 0.0], 38, -1.0)
    # top-p of 1 keeps every token of top-k's set, the unseen ones too
    assert not settled([10.0], 5, -20.0, p=1.0)
    assert not settled([], 40, 0.0)


def test_batched_sequences_use_it_too_with_the_same_tokens(llm, tally):
    reqs = _requests()
    llm.grammar_candidates = 0
    llm.llm.reset()
    full = llm.generate_many(reqs, max_batch=4)
    llm.grammar_candidates = grammar_sampler.DEFAULT_CANDIDATES
    llm.llm.reset()
    fast = llm.generate_many(reqs, max_batch=4)
    assert fast[0].batch["size"] == 4
    assert [_ids(c) for c in fast] == [_ids(c) for c in full]
    assert tally["samplers"] == 4
    assert json.loads(fast[2].text)["answer"]
