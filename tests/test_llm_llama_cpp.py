"""The llama.cpp backend against the real default model (SmolLM2-135M-Instruct)."""
import json
import math

import pytest

from workbench.llm.base import (ContextOverflowError, GenParams, GenRequest, GrammarError,
                                ModelFileError)
from workbench.llm.gguf import read_header
from workbench.llm.llama_cpp_backend import LlamaCppBackend
from workbench.llm.registry import DEFAULT_MODEL, describe, list_models, resolve

from tests.conftest import FAST_MODEL

Q = [{"role": "user", "content": "Who directed the film Inception?"}]


def test_generate_returns_tokens_with_logprobs(default_llm):
    c = default_llm.generate(Q, GenParams(max_tokens=24))
    assert c.text and c.completion_tokens == len(c.tokens) > 0
    assert "".join(t.piece for t in c.tokens) == c.text
    assert all(t.logprob is not None and t.logprob <= 0 for t in c.tokens)
    assert all(t.entropy is not None and t.entropy >= 0 for t in c.tokens)
    assert "<|im_start|>user\nWho directed the film Inception?" in c.prompt   # exact prompt kept
    assert c.prompt_tokens > 10 and c.latency_ms > 0
    s = c.scores()
    assert s.perplexity == pytest.approx(math.exp(-sum(c.logprobs) / len(c.logprobs)))
    assert 0 < s.confidence <= 1


def test_a_looping_generation_stops_after_the_cycles_first_turn(default_llm):
    counting = "1 2 3 4 1 2 3 4 1 2 3 4"          # SmolLM2 goes on counting in a cycle
    off = default_llm.generate(counting, GenParams(max_tokens=60, chat=False, loop_stop=0))
    assert off.finish_reason == "length" and off.text.startswith(" 1 2 3 4 1 2 3 4")
    on = default_llm.generate(counting, GenParams(max_tokens=60, chat=False))
    assert on.finish_reason == "loop" and on.text == " 1 2 3 4"
    # what it keeps is the start of the unchecked generation, token for token
    assert [t.id for t in on.tokens] == [t.id for t in off.tokens[:len(on.tokens)]]
    assert on.completion_tokens == len(on.tokens) < off.completion_tokens
    # the same in a shared batch, beside a request that does not loop
    both = default_llm.generate_many(
        [GenRequest(counting, GenParams(max_tokens=60, chat=False)),
         GenRequest(Q, GenParams(max_tokens=16))], max_batch=2)
    assert (both[0].finish_reason, both[0].text) == ("loop", " 1 2 3 4")
    assert both[1].finish_reason in ("stop", "length") and both[1].text


def test_a_json_output_its_schema_bounds_is_not_cut_as_a_loop(default_llm):
    """A repeated list item trips the loop check; where the schema caps the list the
    grammar ends it, so the output is let run and parses, where a cut one would not."""
    counting = "Counting: [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4]\nAgain: "
    items = {"enum": [1, 2, 3, 4]}
    capped = default_llm.generate(counting, GenParams(
        max_tokens=80, chat=False, json_schema={"type": "array", "maxItems": 12,
                                                "items": items}))
    assert capped.finish_reason == "stop" and json.loads(capped.text) == [1, 2, 3, 4] * 3
    open_ended = default_llm.generate(counting, GenParams(
        max_tokens=80, chat=False, json_schema={"type": "array", "items": items}))
    assert open_ended.finish_reason == "loop" and open_ended.text == "[1, 2, 3, 4, "


def test_greedy_is_deterministic_and_logprobs_match_a_recomputation(default_llm):
    a = default_llm.generate(Q, GenParams(max_tokens=12))
    b = default_llm.generate(Q, GenParams(max_tokens=12))
    assert a.text == b.text
    assert [t.logprob for t in a.tokens] == pytest.approx([t.logprob for t in b.tokens], abs=1e-3)
    # teacher-forcing the generated text reproduces its logprobs
    sc = default_llm.score(Q, a.text)
    assert len(sc.tokens) == len(a.tokens)
    assert sc.logprobs == pytest.approx(a.logprobs, abs=0.05)


def test_prefix_cache_is_reused_on_consecutive_calls(default_llm):
    system = {"role": "system", "content": "You answer questions about films. " * 30}
    default_llm.generate([system, {"role": "user", "content": "Name a studio."}], GenParams(max_tokens=2))
    c2 = default_llm.generate([system, {"role": "user", "content": "Name a city."}], GenParams(max_tokens=2))
    assert c2.cached_prompt_tokens > 150


def test_json_schema_constrains_output(default_llm):
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 30},
                                               "confident": {"type": "boolean"}},
              "required": ["answer", "confident"]}
    c = default_llm.generate(Q, GenParams(max_tokens=60, json_schema=schema))
    obj = json.loads(c.text)
    assert set(obj) == {"answer", "confident"} and isinstance(obj["confident"], bool)


def test_gbnf_grammar_constrains_output(default_llm):
    c = default_llm.generate([{"role": "user", "content": "Is Paris in France?"}],
                             GenParams(max_tokens=4, grammar='root ::= "yes" | "no"'))
    assert c.text in ("yes", "no")


def test_unsatisfiable_grammar_within_budget_is_reported(default_llm):
    c = default_llm.generate(Q, GenParams(max_tokens=3, grammar='root ::= "a" [a-z]{20,30}'))
    assert c.finish_reason == "grammar_incomplete"


def test_bad_grammar_is_a_clear_error(default_llm):
    with pytest.raises(GrammarError, match="grammar"):
        default_llm.generate(Q, GenParams(max_tokens=3, grammar="root ::= ("))


def test_context_overflow_names_the_fix(default_llm):
    long = [{"role": "user", "content": "film " * 5000}]
    with pytest.raises(ContextOverflowError, match="Raise n_ctx"):
        default_llm.generate(long, GenParams(max_tokens=10))


def test_score_prefers_the_fact(default_llm):
    good = default_llm.score(Q, "Christopher Nolan directed Inception.").scores().perplexity
    bad = default_llm.score(Q, "Bananas are a kind of submarine.").scores().perplexity
    assert good < bad


def test_plain_completion_mode(default_llm):
    c = default_llm.generate("The capital of France is", GenParams(max_tokens=5, chat=False))
    assert c.prompt == "The capital of France is" and c.completion_tokens > 0


def test_missing_truncated_and_non_gguf_files(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        LlamaCppBackend(tmp_path / "nope.gguf")
    txt = tmp_path / "x.gguf"
    txt.write_text("not a model at all")
    with pytest.raises(ModelFileError, match="not a GGUF"):
        LlamaCppBackend(txt)
    src = resolve(FAST_MODEL)
    cut = tmp_path / "cut.gguf"
    with src.open("rb") as f:
        cut.write_bytes(f.read(src.stat().st_size // 2))
    with pytest.raises(ModelFileError, match="truncated"):
        LlamaCppBackend(cut)
    head = tmp_path / "head.gguf"
    with src.open("rb") as f:
        head.write_bytes(f.read(200))
    with pytest.raises(ModelFileError, match="truncated"):
        read_header(head)


def test_registry_lists_bundled_models_with_metadata_and_verified_hashes():
    entries = {e.name: e for e in list_models()}
    e = entries[FAST_MODEL]
    assert e.quantization == "Q4_1" and e.context_length == 8192 and e.chat_template
    assert len(e.sha256) == 64 and e.size_bytes > 50_000_000 and e.verified
    assert describe(resolve(FAST_MODEL)).sha256 == e.sha256   # cached value agrees
    d = entries[DEFAULT_MODEL]
    assert DEFAULT_MODEL == "qwen2.5-coder-1.5b" and d.verified and d.quality == "good"
    assert d.quantization == "Q4_K_M" and d.size_bytes == 1_117_320_768 and d.chat_template
    small = entries["qwen2.5-coder-0.5b"]
    assert small.verified and small.size_bytes == 491_400_064


def test_unknown_model_name_is_clear():
    with pytest.raises(ModelFileError, match="neither a bundled model"):
        resolve("no-such-model")
