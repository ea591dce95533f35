"""The prefix store: copies of recent prompts' KV cells (llm/prefix_store.py)."""
import pytest

from workbench.llm.base import GenParams, GenRequest
from workbench.llm.prefix_store import (ALIGN, AUTO, DEFAULT_BUDGET_TOKENS, WHOLE, aligned,
                                        cache_plan, common_prefix, eval_start)

from tests.conftest import FAST_MODEL

SUMMARY = {"role": "system", "content": "You summarise passages about films. Keep every name, "
           "studio and year; drop opinions. " * 8}
VERDICT = {"role": "system", "content": "You judge whether a summary answers the question. "
           "Reply yes or no, then one reason. " * 8}
QUESTIONS = ["Who directed Inception?", "Which studio made My Neighbor Totoro?",
             "When was Alien released?"]


def test_common_prefix_and_alignment():
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix([], [1]) == 0 and common_prefix([7, 8], [7, 8]) == 2
    assert [aligned(n) for n in (0, 31, 32, 63, 545)] == [0, 0, 32, 32, 544]
    # the first batch after the cached part, up to the next multiple of 512, holds at least
    # 32 tokens, unless it is the one a whole evaluation has too
    assert eval_start(545, 556, 512) == 512          # [544, 556) would hold 12
    assert eval_start(530, 600, 512) == 512          # at a batch boundary: as a whole one
    assert eval_start(610, 624, 512) == 576 and eval_start(610, 700, 512) == 608
    assert eval_start(500, 520, 512) == 480          # [480, 512) then [512, 520), as whole
    assert eval_start(20, 30, 512) == 0


def test_the_automatic_setting_keeps_prompts_on_a_cpu_and_uses_nothing_cached_with_offload():
    # on an H200 restoring a kept prompt took longer than evaluating it (docs/gpu.md, run 5),
    # and starting from anything cached changed the output (run 6)
    from workbench.settings import Settings
    assert Settings().prefix_cache_tokens == AUTO
    assert cache_plan(AUTO, False) == cache_plan(None, False) == (DEFAULT_BUDGET_TOKENS, True)
    assert cache_plan(AUTO, True) == cache_plan(None, True) == (0, False)
    assert cache_plan(WHOLE, False) == cache_plan(WHOLE, True) == (0, False)
    assert cache_plan(2048, True) == (2048, True) and cache_plan(0, False) == (0, True)


def test_the_backend_asks_the_build_whether_layers_are_offloaded(monkeypatch):
    import llama_cpp
    from workbench.llm.llama_cpp_backend import LlamaCppBackend
    path = _fast_model_path()
    cpu = LlamaCppBackend(path, n_ctx=512, max_batch=1)
    assert cpu.prefix_store.budget == DEFAULT_BUDGET_TOKENS
    assert cpu.info.extra["prefix_cache"]["reuse"] is True
    # a CPU-only build ignores n_gpu_layers: offloading nothing, it keeps prompts as a CPU does
    offload = llama_cpp.llama_supports_gpu_offload()
    asked = LlamaCppBackend(path, n_ctx=512, max_batch=1, n_gpu_layers=-1)
    assert asked.info.extra["prefix_cache"]["reuse"] is (not offload)
    # where the build offloads, nothing cached is used unless a budget is set
    monkeypatch.setattr(llama_cpp, "llama_supports_gpu_offload", lambda: True)
    gpu = LlamaCppBackend(path, n_ctx=512, max_batch=1, n_gpu_layers=-1)
    assert gpu.prefix_store is None and gpu.info.extra["prefix_cache"]["reuse"] is False
    assert LlamaCppBackend(path, n_ctx=512, max_batch=1, n_gpu_layers=-1,
                           prefix_cache_tokens=640).prefix_store.budget == 640


def test_every_prompt_whole_uses_nothing_cached_and_gives_the_same_output():
    """WHOLE: a call right after one with the same long prefix evaluates its prompt from
    position 0 (on a GPU that is what makes its output independent of the call before)."""
    from workbench.llm.llama_cpp_backend import LlamaCppBackend
    path = _fast_model_path()
    system = {"role": "system", "content": "The studio in Burbank released the film. " * 12}
    calls = [[system, {"role": "user", "content": q}] for q in ("Who?", "When?", "Where?")]
    p = GenParams(max_tokens=6)
    outs = {}
    for setting in (0, WHOLE):
        be = LlamaCppBackend(path, n_ctx=1024, max_batch=1, prefix_cache_tokens=setting)
        got = [be.generate(m, p) for m in calls]
        be.close()
        outs[setting] = [[(t.id, t.logprob) for t in c.tokens] for c in got]
        if setting == WHOLE:
            assert [(c.cached_prompt_tokens, c.cache) for c in got] == [(0, "none")] * 3
        else:
            assert all(c.cached_prompt_tokens >= 64 and c.cache == "previous" for c in got[1:])
    assert outs[0] == outs[WHOLE]        # on a CPU the cut reuse changes no bit


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
    # the same tokens and the same log-probabilities to the last bit as evaluating each
    # prompt whole: what was restored is what a fresh evaluation computes
    assert [_ids(c) for c in got] == [_ids(c) for c in ref]
    assert [c.logprobs for c in got] == [c.logprobs for c in ref]
    # without kept prefixes, each call shares only the chat template's opening with the one
    # before (another kind), shorter than the cut; with them, the second call of each kind
    # starts from its first
    assert [c.cache for c in ref[1:]] == ["none"] * 3
    assert all(c.cached_prompt_tokens == 0 for c in ref)
    for c, system in zip(got[2:], (SUMMARY, VERDICT)):
        stable = _stable_tokens(cached, system)
        n = len(cached.tokenize(cached.render([system, {"role": "user", "content": QUESTIONS[1]}])[0]))
        assert c.cache == "prefix" and c.cached_prompt_tokens == eval_start(stable, n, 512) > 100
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
    p = got[0].batch["shared_prefix_tokens"]
    assert got[0].batch["prefix_from_cache"] == eval_start(p, p, 512) > 64


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


def test_a_call_gives_what_a_fresh_evaluation_gives_whatever_was_cached(backends):
    _fresh_or_cached(*backends)


def test_the_same_holds_for_a_qwen_model_whose_output_an_uncut_prefix_changes():
    """Qwen2.5-Coder-0.5B (the default model's family): restored uncut, the prefix of this
    test changes the log-probabilities in their third decimal, so this test fails without
    the cut (checked with ALIGN = 1)."""
    from workbench.llm.base import LLMError
    from workbench.llm.llama_cpp_backend import LlamaCppBackend
    from workbench.llm.registry import resolve
    try:
        path = resolve("qwen2.5-coder-0.5b")
    except LLMError as e:
        pytest.skip(f"the bundled model qwen2.5-coder-0.5b is not installed: {e}")
    cached = LlamaCppBackend(path, n_ctx=1024, max_batch=4, prefix_cache_tokens=2048)
    plain = LlamaCppBackend(path, n_ctx=1024, max_batch=4, prefix_cache_tokens=0)
    try:
        _fresh_or_cached(cached, plain)
    finally:
        cached.close()
        plain.close()


def _fresh_or_cached(cached, plain):
    """Prompts longer than one evaluation batch (512 tokens), sharing a prefix whose length
    is not a multiple of the cut: from the previous call, from a kept prompt, or from
    nothing, the output is the same to the last bit."""
    long = {"role": "system", "content": "Passages about films, their studios and years. " * 60}
    a = [long, {"role": "user", "content": "Which studio made the film? Answer briefly."}]
    b = [long, {"role": "user", "content": "Which year was it? Answer briefly."}]
    other = [VERDICT, {"role": "user", "content": "Is Paris in France?"}]
    p = GenParams(max_tokens=10)
    shared = common_prefix(*(cached.tokenize(cached.render(m)[0]) for m in (a, b)))
    assert shared > 512 and shared % ALIGN, shared
    plain.generate("Zebras", GenParams(max_tokens=1, chat=False))
    fresh = plain.generate(a, p)
    assert fresh.cached_prompt_tokens == 0
    cached.generate(b, p)
    cached.generate(other, p)
    after_kept = cached.generate(a, p)                  # b's prompt is a kept one
    cached.generate(b, p)
    after_prev = cached.generate(a, p)                  # b's prompt is sequence 0's
    n = len(cached.tokenize(cached.render(a)[0]))
    for c in (after_kept, after_prev):
        assert _ids(c) == _ids(fresh) and c.logprobs == fresh.logprobs
        assert c.cached_prompt_tokens == eval_start(shared, n, 512) > 512
    assert after_kept.cache == "prefix" and after_prev.cache == "previous"
