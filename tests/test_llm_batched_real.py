"""generate_many/score_many of the llama.cpp backend against the real SmolLM2 model.

``default_llm`` serves the model from a worker process, so these calls also cross the
worker's pipe: requests, completions and errors as pickled data.
"""
import json

import numpy as np
import pytest

from workbench.llm import batching
from workbench.llm.base import (ContextOverflowError, GenParams, GenRequest, GrammarError, LLMError,
                                ScoreRequest)
from workbench.llm.prefix_store import aligned, eval_start

SYSTEM = {"role": "system", "content": "You answer questions about films and cities briefly."}
QUESTIONS = ["Who directed the film Inception?", "What is the capital of France?",
             "Name a famous painter.", "In which year did the Second World War end?"]


def _reqs(max_tokens=16, **kw):
    return [GenRequest([SYSTEM, {"role": "user", "content": q}], GenParams(max_tokens=max_tokens, **kw))
            for q in QUESTIONS]


def _ids(comps):
    return [[t.id for t in c.tokens] for c in comps]


def test_each_sequence_follows_its_own_grammar_or_schema(default_llm):
    person = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}},
              "required": ["name"]}
    year = {"type": "object", "properties": {"year": {"type": "integer"}, "sure": {"type": "boolean"}},
            "required": ["year", "sure"]}
    reqs = _reqs(max_tokens=40)
    reqs[0].params.json_schema = person
    reqs[1].params.grammar = 'root ::= "Paris" | "Lyon" | "Nice"'
    reqs[3].params.json_schema = year
    got = default_llm.generate_many(reqs)
    assert {c.batch["mode"] for c in got} == {"llama_cpp"} and got[0].batch["size"] == 4
    assert set(json.loads(got[0].text)) == {"name"}
    assert got[1].text in ("Paris", "Lyon", "Nice")
    assert got[2].text and not got[2].text.lstrip().startswith("{")      # unconstrained
    obj = json.loads(got[3].text)
    assert set(obj) == {"year", "sure"} and isinstance(obj["year"], int) and isinstance(obj["sure"], bool)
    for c in got:
        assert "".join(t.piece for t in c.tokens) == c.text and c.completion_tokens == len(c.tokens)
        assert all(t.logprob <= 0 and t.entropy >= 0 for t in c.tokens)


def test_batched_logprobs_match_a_teacher_forced_score(default_llm):
    reqs = _reqs(max_tokens=12)
    got = default_llm.generate_many(reqs)
    own, other = [], []
    for i, (r, c) in enumerate(zip(reqs, got)):
        assert c.tokens
        sc = default_llm.score(r.messages, c.text)
        assert [t.id for t in sc.tokens] == [t.id for t in c.tokens]
        own.append(np.abs(np.array(sc.logprobs) - np.array(c.logprobs)).mean())
        if i < 2:   # the same text under another question: what a mix-up of sequences gives
            wrong = default_llm.score(reqs[i + 2].messages, c.text)
            other.append(np.abs(np.array(wrong.logprobs) - np.array(c.logprobs)).mean())
    # kernels of a 4-row batch round differently from the one-row path: close, not equal
    assert max(own) < 0.1, own
    assert min(other) > 3 * max(own), (own, other)
    # score_many agrees with score in the same way
    many = default_llm.score_many([ScoreRequest(r.messages, c.text) for r, c in zip(reqs, got)])
    for c, s in zip(got, many):
        assert len(s.tokens) == len(c.tokens) and s.batch["size"] == 4
        assert np.abs(np.array(s.logprobs) - np.array(c.logprobs)).mean() < 0.1


def test_stop_strings_and_max_tokens_per_sequence(default_llm):
    reqs = _reqs(max_tokens=30)
    reqs[0].params.max_tokens = 3
    reqs[1].params.stop = ["Paris"]
    reqs[2].params.stop = [" ", "\n"]
    got = default_llm.generate_many(reqs)
    assert got[0].completion_tokens == 3 and got[0].finish_reason == "length"
    assert "Paris" not in got[1].text and got[1].finish_reason == "stop"
    assert " " not in got[2].text and "\n" not in got[2].text and got[2].finish_reason == "stop"
    assert got[3].completion_tokens <= 30
    # the same requests one by one stop in the same places
    alone = [default_llm.generate(r.messages, r.params) for r in reqs[:3]]
    assert [c.finish_reason for c in alone] == [c.finish_reason for c in got[:3]]


def test_a_batched_call_is_reproducible(default_llm):
    system = {"role": "system", "content": SYSTEM["content"] + " Films have directors." * 12}
    reqs = [GenRequest([system, {"role": "user", "content": q}], GenParams(max_tokens=16))
            for q in QUESTIONS]
    a = default_llm.generate_many(reqs)
    b = default_llm.generate_many(reqs)                 # prefix now cached
    default_llm.generate("Something else entirely", GenParams(max_tokens=4, chat=False))
    c = default_llm.generate_many(reqs, plan=[g for g in batching.plans_from_records(
        [x.to_record() for x in a])[0]])                # cache changed; the recorded plan
    assert _ids(a) == _ids(b) == _ids(c)
    assert [x.logprobs for x in a] == [x.logprobs for x in b] == [x.logprobs for x in c]
    # cut where evaluating the rest gives what evaluating all of it gives (llm/prefix_store.py)
    p = b[0].batch["shared_prefix_tokens"]
    assert b[0].batch["prefix_from_cache"] == eval_start(p, p, 512) > 0


def test_batch_size_one_is_exactly_generate(default_llm):
    reqs = _reqs(max_tokens=12)
    alone = [default_llm.generate(r.messages, r.params) for r in reqs[:2]]
    got = default_llm.generate_many(reqs[:2], max_batch=1)
    assert [c.batch["mode"] for c in got] == ["single", "single"]
    assert _ids(got) == _ids(alone) and [c.logprobs for c in got] == [c.logprobs for c in alone]


def test_a_shared_prefix_is_evaluated_once_and_then_reused(default_llm):
    system = {"role": "system", "content": "You answer questions about films and their studios. " * 20}
    reqs = [GenRequest([system, {"role": "user", "content": q}], GenParams(max_tokens=2))
            for q in QUESTIONS]
    prompt_lens = [len(default_llm.tokenize(default_llm.render(r.messages)[0])) for r in reqs]
    default_llm.generate("Zebras", GenParams(max_tokens=1, chat=False))   # nothing useful cached
    first = default_llm.generate_many(reqs)
    p = first[0].batch["shared_prefix_tokens"]
    assert p > 150 and first[0].batch["prefix_from_cache"] <= 1
    # the prefix once, then each prompt's own part: tokens put into llama_decode batches
    assert first[0].batch["prompt_tokens_evaluated"] == \
        sum(prompt_lens) - 3 * p - first[0].batch["prefix_from_cache"]
    second = default_llm.generate_many(reqs)             # prefix left in the cache
    cached = eval_start(p, p, 512)
    assert cached > 100 and second[0].batch["prefix_from_cache"] == cached
    assert second[0].batch["prompt_tokens_evaluated"] == sum(prompt_lens) - 3 * p - cached
    # and a plain generate after a batch reuses it too
    single = [system, {"role": "user", "content": "Name a studio."}]
    got = default_llm.generate(single, GenParams(max_tokens=2))
    n = len(default_llm.tokenize(default_llm.render(single)[0]))
    assert got.cached_prompt_tokens == eval_start(aligned(p), n, 512) > 100


def test_generate_after_a_batch_is_unchanged(default_llm):
    q = [{"role": "user", "content": "Who directed the film Inception?"}]
    before = default_llm.generate(q, GenParams(max_tokens=12))
    default_llm.generate_many(_reqs(max_tokens=8))
    after = default_llm.generate(q, GenParams(max_tokens=12))
    assert [t.id for t in after.tokens] == [t.id for t in before.tokens]
    assert after.logprobs == pytest.approx(before.logprobs, abs=1e-4)


def test_overflow_and_bad_grammar_name_the_request_before_anything_runs(default_llm):
    reqs = _reqs(max_tokens=8)
    reqs[2] = GenRequest([{"role": "user", "content": "film " * 5000}], GenParams(max_tokens=8))
    with pytest.raises(ContextOverflowError, match="Request 2 of the batch.*Raise n_ctx") as e:
        default_llm.generate_many(reqs)
    assert e.value.request == 2 and e.value.prompt_tokens > 4096
    reqs = _reqs(max_tokens=8)
    reqs[1].params.grammar = "root ::= ("
    with pytest.raises(GrammarError, match="Request 1 of the batch"):
        default_llm.generate_many(reqs)
    with pytest.raises(ContextOverflowError, match="Request 0"):
        default_llm.score_many([ScoreRequest("x", "film " * 5000)])


def test_requests_that_do_not_fit_together_are_split_into_groups(default_llm):
    # each may need 1,500 cells: two fit in n_ctx=4096 together, three do not
    reqs = _reqs(max_tokens=1500, grammar='root ::= "yes" | "no"')
    got = default_llm.generate_many(reqs)
    assert [c.batch["members"] for c in got] == [[0, 1], [0, 1], [2, 3], [2, 3]]
    assert all(c.text in ("yes", "no") for c in got)
    with pytest.raises(LLMError, match="more KV cells than n_ctx"):
        default_llm.generate_many(reqs, plan=[[0, 1, 2], [3]])
    with pytest.raises(LLMError, match="at most 8 together"):
        default_llm.generate_many(_reqs() * 3, plan=[list(range(9)), list(range(9, 12))])


def test_score_many_groups_and_single(default_llm):
    reqs = [ScoreRequest([SYSTEM, {"role": "user", "content": QUESTIONS[0]}], " Christopher Nolan."),
            ScoreRequest([SYSTEM, {"role": "user", "content": QUESTIONS[0]}], " Bananas are submarines."),
            ScoreRequest("plain context", "")]
    got = default_llm.score_many(reqs)
    assert got[0].scores().perplexity < got[1].scores().perplexity
    assert got[2].tokens == [] and got[0].continuation == " Christopher Nolan."
    one = default_llm.score_many(reqs[:1])
    assert one[0].batch["mode"] == "single"
    # a group of one is a plain score (which itself rounds a little differently with the
    # number of context tokens it finds cached)
    alone = default_llm.score(reqs[0].context, reqs[0].continuation)
    assert one[0].logprobs == pytest.approx(alone.logprobs, abs=0.25)


def test_a_model_loaded_without_batching_runs_generate_many_one_by_one():
    from workbench.llm.llama_cpp_backend import LlamaCppBackend
    from workbench.llm.registry import resolve
    be = LlamaCppBackend(resolve("smollm2-135m"), n_ctx=512, n_threads=1, max_batch=1)
    try:
        # prompt and multi-sequence batches keep to the thread count asked for
        assert be.llm.context_params.n_threads_batch == 1 and be._engine is None
        got = be.generate_many(_reqs(max_tokens=3)[:2], max_batch=4)
        assert [c.batch["mode"] for c in got] == ["single", "single"]
        assert [c.batch["members"] for c in got] == [[0], [1]]
    finally:
        be.close()


def test_statistics_beside_the_next_decode_change_nothing_but_the_time():
    """``overlap`` computes each step's log-probabilities while the next step decodes in a
    second thread: the same tokens, log-probabilities, entropies and endings as the plain
    loop, for greedy, sampled, grammar-bound and stop-string sequences of mixed lengths; and
    greedy rows taken by argmax match their sampler chains."""
    from workbench.llm.llama_cpp_backend import LlamaCppBackend
    from workbench.llm.registry import resolve
    reqs = _reqs(max_tokens=20)
    reqs[1].params = GenParams(max_tokens=20, temperature=0.8, seed=7)
    reqs[2].params = GenParams(max_tokens=20, json_schema={
        "type": "object", "properties": {"painter": {"type": "string"}}, "required": ["painter"]})
    reqs[3].params = GenParams(max_tokens=20, stop=["."])
    got = {}
    be = LlamaCppBackend(resolve("smollm2-135m"), n_ctx=2048, max_batch=4, overlap=False)
    try:
        for on in (False, True, False):
            be._engine.overlap = on
            got.setdefault(on, []).append(be.generate_many(reqs, max_batch=4))
        be._engine.greedy_argmax = False        # every row through its sampler chain
        chains = be.generate_many(reqs, max_batch=4)
    finally:
        be.close()
    plain, over = got[False][0], got[True][0]
    assert [c.batch["mode"] for c in over] == ["llama_cpp"] * 4
    assert _ids(over) == _ids(plain) and _ids(over) == _ids(got[False][1])
    assert [c.logprobs for c in over] == [c.logprobs for c in plain]
    assert [[t.entropy for t in c.tokens] for c in over] == \
        [[t.entropy for t in c.tokens] for c in plain]
    assert [c.finish_reason for c in over] == [c.finish_reason for c in plain]
    assert over[2].text.lstrip().startswith("{")          # the grammar held
    assert len({len(c.tokens) for c in over}) > 1        # sequences ended at different steps
    assert all(len(c.logprobs) == len(c.tokens) for c in over)
    # np.argmax for the greedy rows picks what the greedy sampler chain picks
    assert _ids(chains) == _ids(plain)
    assert [c.logprobs for c in chains] == [c.logprobs for c in plain]
