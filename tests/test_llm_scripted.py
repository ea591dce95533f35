import pytest

from workbench.llm.base import ContextOverflowError, GenParams, LLMError
from workbench.llm.scripted import ScriptedBackend


def test_rules_match_in_order_and_count():
    be = ScriptedBackend().add("plan", {"steps": ["a"]}, times=1).add("plan", "second").add("", "fallback")
    assert be.generate("make a plan").json() == {"steps": ["a"]}
    assert be.generate("make a plan").text == "second"
    assert be.generate("other").text == "fallback"


def test_logprobs_are_steerable():
    be = ScriptedBackend().add("x", "one two three", logprobs=[-1.0, -2.0, -3.0])
    c = be.generate("x")
    assert c.logprobs == [-1.0, -2.0, -3.0]
    assert c.scores().mean_nll == pytest.approx(2.0)


def test_unmatched_prompt_raises_without_default():
    with pytest.raises(LLMError, match="no rule"):
        ScriptedBackend().generate("hello")


def test_max_tokens_and_context_limit():
    be = ScriptedBackend(default="a b c d e")
    c = be.generate("p", GenParams(max_tokens=2))
    assert c.text == "a b" and c.finish_reason == "length"
    small = ScriptedBackend(default="x", n_ctx=5)
    with pytest.raises(ContextOverflowError):
        small.generate("one two three four", GenParams(max_tokens=4))
