"""A generation caught in a loop is stopped, and what it keeps is the cycle's first turn."""
import dataclasses

from workbench.llm.base import GenParams
from workbench.llm.replay import CallReplay
from workbench.llm.repetition import bounds_output, first_loop_cut, loop_cut
from workbench.methods.coggrag import prompts as cog
from workbench.llm.scripted import Rule, ScriptedBackend

SENTENCE = list(range(100, 125))          # a 25-token sentence


def test_a_sentence_said_three_times_is_cut_after_its_first_copy():
    ids = [1, 2, 3] + SENTENCE * 3
    assert loop_cut(ids, 24) == 3 + 25
    assert loop_cut(ids[:-1], 24) is None          # the third copy is not complete yet


def test_a_sentence_said_twice_is_not_a_loop():
    assert loop_cut([1, 2] + SENTENCE * 2, 24) is None
    assert first_loop_cut([1, 2] + SENTENCE * 2 + [7, 8, 9], 24) is None


def test_a_short_block_must_cover_the_minimum_before_it_counts():
    # "the the the": 3 copies of one token are not enough, 24 are
    assert loop_cut([5] + [9] * 23, 24) is None
    assert loop_cut([5] + [9] * 24, 24) == 2
    # a 4-token block needs 6 copies to cover 24 tokens
    block = [1, 2, 3, 4]
    assert loop_cut([0] + block * 5, 24) is None
    assert loop_cut([0] + block * 6, 24) == 5


def test_the_cycle_counts_from_where_it_began():
    # the first copy differs only in its opening token: the cycle began just after it
    first = [999] + SENTENCE[1:]
    ids = first + SENTENCE * 3
    keep = loop_cut(ids, 24)
    assert keep == 1 + 25      # the differing token, then one turn of the cycle
    assert ids[:keep] == first + SENTENCE[:1]


def test_zero_turns_the_check_off():
    assert loop_cut(SENTENCE * 5, 0) is None
    assert first_loop_cut(SENTENCE * 5, 0) is None


def test_first_loop_cut_finds_where_a_run_without_the_check_would_have_stopped():
    ids = [1] + SENTENCE * 6 + [2, 3]
    assert first_loop_cut(ids, 24) == 1 + 25
    assert loop_cut(ids, 24) is None               # its end is no longer a loop


def _stored(text_ids, params):
    """An llm_call record as an eval stored it before GenParams had loop_stop."""
    be = ScriptedBackend([Rule("", "x")])
    comp = be.generate("q", params)
    p = {k: v for k, v in comp.params.items() if k != "loop_stop"}
    return dataclasses.asdict(comp) | {
        "params": p, "output": "".join(f"<{i}>" for i in text_ids), "call_id": "c_old",
        "tokens": [[i, f"<{i}>", -0.1, 0.1] for i in text_ids]}


def test_a_call_stored_before_the_check_replays_unless_it_looped():
    inner = ScriptedBackend([Rule("", "fresh")])
    clean = _stored([1, 2, 3], GenParams(max_tokens=8))
    assert CallReplay(inner, [clean]).generate("q", GenParams(max_tokens=8)).replayed_from \
        == "c_old"
    looped = _stored([1] + SENTENCE * 3, GenParams(max_tokens=8))
    rp = CallReplay(inner, [looped])
    got = rp.generate("q", GenParams(max_tokens=8))
    assert got.replayed_from is None and got.text == "fresh"
    # with the check off the stored call is the same call
    assert rp.generate("q", GenParams(max_tokens=8, loop_stop=0)).replayed_from is None
    off = CallReplay(inner, [dict(looped, params=looped["params"] | {"loop_stop": 0})])
    assert off.generate("q", GenParams(max_tokens=8, loop_stop=0)).replayed_from == "c_old"


def test_the_settings_loop_stop_is_set_on_every_generation_of_a_run(isolated_home, monkeypatch):
    """A run built the one way (workspace.build_context) sets the Settings' loop stop on
    single calls and batched ones, so each call records it."""
    from workbench import settings as settings_mod
    from workbench.execution import run_to_end
    from workbench.llm.base import GenRequest
    from workbench.llm.repetition import DEFAULT_LOOP_STOP
    from workbench.methods.base import Method
    from workbench.workspace import build_context

    @dataclasses.dataclass
    class NoKnobs:
        pass

    class TwoCalls(Method):
        name, kind, Config = "toy-two-calls", "none", NoKnobs

        def run(self, ctx, question):
            yield from ctx.generate("one", question)
            yield from ctx.generate_many("many", [GenRequest(question, GenParams())] * 2)
            yield from ctx.generate_json("json", question, {"type": "object"})

    assert settings_mod.load().loop_stop == DEFAULT_LOOP_STOP
    monkeypatch.setenv("WORKBENCH_LOOP_STOP", "0")
    assert settings_mod.load().loop_stop == 0
    be = ScriptedBackend([Rule("", "{}")])
    m, ctx = build_context(TwoCalls(), llm=be, dataset=_Docs())
    assert ctx.extra["loop_stop"] == 0
    run_to_end(m, ctx, "q?", memo=False)
    assert [c["params"]["loop_stop"] for c in be.calls] == [0, 0, 0, 0]
    monkeypatch.setenv("WORKBENCH_LOOP_STOP", "40")
    be.calls.clear()
    m, ctx = build_context(TwoCalls(), llm=be, dataset=_Docs())
    run_to_end(m, ctx, "q?", memo=False)
    assert {c["params"]["loop_stop"] for c in be.calls} == {40}


class _Docs:
    """A dataset with nothing to retrieve, for a method that retrieves nothing."""
    name = "docs"
    passages: list = []

    def question(self, qid):
        return None


def test_a_schema_bounds_the_output_when_every_list_and_string_has_a_most_length():
    short = {"type": "string", "maxLength": 60}
    assert bounds_output({"type": "array", "maxItems": 3, "items": short})
    assert bounds_output({"type": "object", "properties": {"a": short, "b": {"enum": [1, 2]},
                                                           "c": {"type": "boolean"}}})
    assert not bounds_output({"type": "array", "items": short})              # no maxItems
    assert not bounds_output({"type": "array", "maxItems": 3, "items": {"type": "string"}})
    assert not bounds_output({"type": "string", "maxLength": 9, "pattern": "a+"})
    assert not bounds_output({"type": "object", "properties": {"a": short},
                              "additionalProperties": True})
    assert not bounds_output({"type": "integer"}) and not bounds_output(None)
    # CogGRAG's extraction and reasoning schemas are bounded, so their calls finish
    for schema in (cog.schema_local_map(3, 6), cog.schema_global(8), cog.schema_answers(2),
                   cog.schema_answers(2, echo=False), cog.schema_decompose(3)):
        assert bounds_output(schema)
        assert GenParams(json_schema=schema).loop_tokens() == 0
    assert GenParams().loop_tokens() == GenParams().loop_stop > 0


def test_a_bounded_json_call_cut_by_the_old_rule_is_made_again_not_replayed():
    schema = cog.schema_global(4)
    params = GenParams(max_tokens=8, json_schema=schema)
    inner = ScriptedBackend([Rule("", '{"subgraph": [["a", "b", "c"]]}')])
    stored = ScriptedBackend([Rule("", "x")]).generate("q", params).to_record() | {
        "call_id": "c_cut", "finish_reason": "loop"}
    got = CallReplay(inner, [stored]).generate("q", params)
    assert got.replayed_from is None and got.text.startswith('{"subgraph"')
    whole = stored | {"finish_reason": "stop"}
    assert CallReplay(inner, [whole]).generate("q", params).replayed_from == "c_cut"
