"""The prefix store: recent prompts kept as sequences of the model's context (llm/prefix_store.py)."""
import pytest

from workbench.llm.base import GenParams, GenRequest
from workbench.llm.prefix_store import ALIGN, common_prefix, trie_size

from tests.conftest import FAST_MODEL

SUMMARY = {"role": "system", "content": "You summarise passages about films. Keep every name, "
           "studio and year; drop opinions. " * 8}
VERDICT = {"role": "system", "content": "You judge whether a summary answers the question. "
           "Reply yes or no, then one reason. " * 8}
QUESTIONS = ["Who directed Inception?", "Which studio made My Neighbor Totoro?",
             "When was Alien released?"]


def test_common_prefix_and_trie_size():
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix([], [1]) == 0 and common_prefix([7, 8], [7, 8]) == 2
    # two prompts sharing 2 tokens occupy 2 + 1 + 2 cells; a prompt inside another adds none
    assert trie_size([[1, 2, 3], [1, 2, 4, 5]]) == 5
    assert trie_size([[1, 2, 3], [1, 2], [9]]) == 4


def _fast_model_path():
    from workbench.llm.base import LLMError
    from workbench.llm.registry import resolve
    try:
        return resolve(FAST_MODEL)
    except LLMError as e:
        pytest.skip(f"the bundled model {FAST_MODEL} is not installed: {e}")


@pytest.fixture(scope="module")
def backends():
    from workbench.llm.llama_cpp_backend import LlamaCppBackend
    path = _fast_model_path()
    cached = LlamaCppBackend(path, n_ctx=1024, max_batch=4, prefix_cache_tokens=2048)
    plain = LlamaCppBackend(path, n_ctx=1024, max_batch=4, prefix_cache_tokens=0)
    yield cached, plain
    cached.close()
    plain.close()


def _ids(c):
    return [t.id for t in c.tokens]


def _stable_tokens(be, system):
    a = be.tokenize(be.render([system, {"role": "user", "content": QUESTIONS[0]}])[0])
    b = be.tokenize(be.render([system, {"role": "user", "content": QUESTIONS[1]}])[0])
    return common_prefix(a, b)


def test_interleaved_kinds_are_served_from_kept_prefixes_with_the_same_greedy_output(backends):
    cached, plain = backends
    p = GenParams(max_tokens=12)
    calls = [(system, q) for q in QUESTIONS[:2] for system in (SUMMARY, VERDICT)]
    got = [cached.generate([s, {"role": "user", "content": q}], p) for s, q in calls]
    ref = [plain.generate([s, {"role": "user", "content": q}], p) for s, q in calls]
    assert [_ids(c) for c in got] == [_ids(c) for c in ref]
    # without kept prefixes, each call shares only the chat template's opening with the one
    # before (another kind); with them, the second call of each kind starts from its first
    assert [c.cache for c in ref[2:]] == ["previous", "previous"]
    assert all(c.cached_prompt_tokens < 20 for c in ref[1:])
    for c, system in zip(got[2:], (SUMMARY, VERDICT)):
        stable = _stable_tokens(cached, system)
        assert c.cache == "prefix" and stable - ALIGN < c.cached_prompt_tokens <= stable
        rec = c.to_record()
        assert rec["cache"] == "prefix" and rec["cached_prompt_tokens"] == c.cached_prompt_tokens
    assert got[0].cache == "none" and got[0].cached_prompt_tokens == 0


def test_a_batch_group_restores_its_shared_prefix_from_the_store(backends):
    cached, _ = backends
    cached.generate([SUMMARY, {"role": "user", "content": "Name a studio."}], GenParams(max_tokens=2))
    cached.generate([VERDICT, {"role": "user", "content": "Name a city."}], GenParams(max_tokens=2))
    reqs = [GenRequest([SUMMARY, {"role": "user", "content": q}], GenParams(max_tokens=4))
            for q in QUESTIONS]
    got = cached.generate_many(reqs)
    assert {c.batch["mode"] for c in got} == {"llama_cpp"}
    assert got[0].batch["prefix_cache"] == "prefix" and got[0].cache == "prefix"
    assert got[0].batch["prefix_from_cache"] >= _stable_tokens(cached, SUMMARY) - ALIGN


def test_least_recently_used_prompts_are_evicted_under_the_budget():
    from workbench.llm.llama_cpp_backend import LlamaCppBackend
    path = _fast_model_path()
    be = LlamaCppBackend(path, n_ctx=1024, max_batch=1, prefix_cache_tokens=320)
    try:
        store = be.prefix_store
        kinds = [SUMMARY, VERDICT, {"role": "system", "content": "You propose the next step "
                                    "of a plan as one short question about a film. " * 8}]
        for system in kinds:
            be.generate([system, {"role": "user", "content": "Go."}], GenParams(max_tokens=1))
            assert store.cells() <= 320
        assert store.stats.evicted >= 1
        # the newest kind is kept; the oldest is gone, so it starts from scratch again
        newest = be.tokenize(be.render([kinds[2], {"role": "user", "content": "Go."}])[0])
        assert store.kept()[0] == newest[:len(newest) // ALIGN * ALIGN]
        again = be.generate([kinds[0], {"role": "user", "content": "Stop."}], GenParams(max_tokens=1))
        assert again.cache != "prefix" and again.cached_prompt_tokens < 20
        assert be.info.extra["prefix_cache"]["budget_tokens"] == 320
    finally:
        be.close()
