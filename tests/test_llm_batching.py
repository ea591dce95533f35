"""generate_many/score_many contract on the scripted backend, batch plans, and the run context."""
import json
import pickle

import pytest

from workbench import trace as T
from workbench.llm import batching
from workbench.llm.base import (Completion, ContextOverflowError, GenParams, GenRequest, GrammarError,
                                LLMError, ScoreRequest, Token)
from workbench.llm.scripted import ScriptedBackend
from workbench.methods.base import RunContext


def _scripted() -> ScriptedBackend:
    # stateful rules (times=) and a prompt-dependent one: results depend on call order
    return (ScriptedBackend(default="unknown")
            .add("plan", "first plan", times=1, logprobs=[-1.0, -2.0])
            .add("plan", "later plan")
            .add("echo", lambda p: p.upper()[-12:])
            .add("json", {"a": 1}))


REQS = [GenRequest("make a plan", GenParams(max_tokens=8)),
        GenRequest("echo this please", GenParams(max_tokens=2)),
        GenRequest("make a plan", GenParams(stop=["plan"])),
        GenRequest("json please"),
        GenRequest("something else")]


def _same(a: Completion, b: Completion) -> None:
    assert (a.text, a.finish_reason, a.prompt, a.prompt_tokens, a.params) == \
        (b.text, b.finish_reason, b.prompt, b.prompt_tokens, b.params)
    assert [(t.id, t.piece, t.logprob) for t in a.tokens] == [(t.id, t.piece, t.logprob) for t in b.tokens]


def test_scripted_generate_many_is_generate_one_by_one_in_order():
    one, many = _scripted(), _scripted()
    expected = [one.generate(r.messages, r.params) for r in REQS]
    got = many.generate_many(REQS, max_batch=2)
    assert len(got) == len(REQS)
    for a, b in zip(expected, got):
        _same(a, b)
    assert [c["prompt"] for c in many.calls] == [c["prompt"] for c in one.calls]
    assert got[0].text == "first plan" and got[2].text == "later "   # order-dependent rule, stop cut


def test_plan_is_recorded_in_every_completion_and_reconstructed():
    got = _scripted().generate_many(REQS, max_batch=2)
    assert [c.batch["members"] for c in got] == [[0, 1], [0, 1], [2, 3], [2, 3], [4]]
    assert [c.batch["slot"] for c in got] == [0, 1, 0, 1, 0]
    assert {c.batch["mode"] for c in got} == {"sequential"} and len({c.batch["call"] for c in got}) == 1
    recs = [c.to_record() for c in got]
    assert json.loads(json.dumps(recs))[3]["batch"]["size"] == 2
    assert batching.plans_from_records(recs) == [[[0, 1], [2, 3], [4]]]
    # records of plain generate calls carry no batch entry and are skipped
    assert "batch" not in _scripted().generate("x").to_record()
    assert batching.plans_from_records([None, {"output": "x"}] + recs) == [[[0, 1], [2, 3], [4]]]


def test_a_recorded_plan_is_followed_and_results_stay_in_request_order():
    be = _scripted()
    got = be.generate_many(REQS[:4], plan=[[3, 1], [0, 2]])
    assert [c.prompt for c in got] == [r.messages for r in REQS[:4]]
    assert [c["prompt"] for c in be.calls] == ["json please", "echo this please", "make a plan", "make a plan"]
    assert got[3].batch["members"] == [3, 1] and got[3].batch["slot"] == 0
    assert batching.plans_from_records([c.to_record() for c in got]) == [[[3, 1], [0, 2]]]


@pytest.mark.parametrize("plan", [[[0, 1]], [[0], [0, 1, 2]], [[0, 1, 2], []], [[0, 1, 5]]])
def test_a_plan_that_does_not_cover_the_requests_is_refused(plan):
    with pytest.raises(LLMError, match="exactly once"):
        _scripted().generate_many(REQS[:3], plan=plan)


def test_score_many_matches_score():
    be = ScriptedBackend(default="a b c")
    reqs = [ScoreRequest("ctx one", "x y"), ScoreRequest([{"role": "user", "content": "q"}], "z")]
    got = be.score_many(reqs)
    want = [ScriptedBackend(default="a b c").score(r.context, r.continuation) for r in reqs]
    assert [(s.context, s.continuation, s.logprobs) for s in got] == \
        [(s.context, s.continuation, s.logprobs) for s in want]
    assert got[1].batch["slot"] == 1


def test_errors_propagate_with_the_request():
    be = ScriptedBackend(default="x", n_ctx=5)
    with pytest.raises(ContextOverflowError):
        be.generate_many([GenRequest("a", GenParams(max_tokens=1)),
                          GenRequest("one two three four", GenParams(max_tokens=4))])


def test_requests_results_and_errors_pickle():
    """They cross a process boundary when the model runs in a worker process."""
    got = _scripted().generate_many(REQS[:2])
    back = pickle.loads(pickle.dumps((REQS, got, [ScoreRequest("c", "d")])))
    assert back[0] == REQS and back[1][0].batch == got[0].batch and back[1][1].text == got[1].text
    e = pickle.loads(pickle.dumps(ContextOverflowError(900, 200, 1024, request=3)))
    assert isinstance(e, ContextOverflowError) and (e.prompt_tokens, e.request) == (900, 3)
    assert str(e).startswith("Request 3 of the batch: Prompt is 900 tokens")
    assert "Raise n_ctx" in str(pickle.loads(pickle.dumps(ContextOverflowError(1, 2, 3))))
    g = pickle.loads(pickle.dumps(GrammarError("bad grammar")))
    assert isinstance(g, GrammarError) and str(g) == "bad grammar"


class _OnlyGenerate:
    """A backend (or a proxy to one) with no generate_many of its own."""

    def __init__(self):
        self.inner = _scripted()

    def generate(self, messages, params=None):
        return self.inner.generate(messages, params)

    def score(self, context, continuation):
        return self.inner.score(context, continuation)


def test_generic_fallback_for_a_backend_without_batching():
    got = batching.generate_many(_OnlyGenerate(), REQS, max_batch=3)
    want = [_scripted().generate(r.messages, r.params) for r in [REQS[0]]]
    _same(got[0], want[0])
    assert [c.batch["size"] for c in got] == [3, 3, 3, 2, 2]
    sc = batching.score_many(_OnlyGenerate(), [ScoreRequest("a", "b c")])
    assert sc[0].continuation == "b c" and sc[0].batch["mode"] == "sequential"


def _ctx(be, **kw) -> RunContext:
    return RunContext(llm=be, config=None, **kw)


def _drain(gen):
    events = []
    while True:
        try:
            events.append(next(gen))
        except StopIteration as stop:
            return events, stop.value


def test_run_context_generate_many_yields_one_event_per_request_in_order():
    ctx = _ctx(_scripted(), max_batch=2)
    ctx.phase = "verify"
    nodes = ["n1", "n2", None, "n4", "n5"]
    events, comps = _drain(ctx.generate_many("verify", REQS, node_ids=nodes, prompt_version="3"))
    assert [e.type for e in events] == [T.LLM_CALL] * 5
    assert [e.node_id for e in events] == nodes
    assert [e.data["prompt"] for e in events] == [r.messages for r in REQS]
    assert [e.data["output"] for e in events] == [c.text for c in comps]
    assert all(e.data["purpose"] == "verify" and e.data["phase"] == "verify" and
               e.data["prompt_version"] == "3" and e.llm_call_id == e.data["call_id"] for e in events)
    assert batching.plans_from_records([e.data for e in events]) == [[[0, 1], [2, 3], [4]]]
    tr = T.Trace.fold([T.node_added("n1", "step", "a")] + events)
    assert tr.nodes["n1"].llm_calls == [events[0].llm_call_id]


def test_run_context_replays_recorded_plans_call_by_call():
    ctx = _ctx(_scripted(), batch_plans=[[[1, 0]], [[0], [1, 2]]])
    e1, _ = _drain(ctx.generate_many(["a", "b"], REQS[:2]))
    e2, _ = _drain(ctx.generate_many("c", REQS[2:5]))
    assert batching.plans_from_records([e.data for e in e1 + e2]) == [[[1, 0]], [[0], [1, 2]]]
    assert [e.data["purpose"] for e in e1] == ["a", "b"] and ctx.batch_plans == []
    with pytest.raises(ValueError, match="2 requests but 1 purposes"):
        _drain(ctx.generate_many(["a"], REQS[:2]))
    assert _drain(ctx.generate_many("none", [])) == ([], [])


def test_generate_json_many_retries_failures_together_then_marks_them():
    be = (ScriptedBackend()
          .add("good", {"v": 1})
          .add("flaky", "not json", times=1).add("flaky", {"v": 2})
          .add("broken", "never json"))
    ctx = _ctx(be)
    schema = {"type": "object", "properties": {"v": {"type": "integer"}}}
    reqs = [GenRequest(p, GenParams(max_tokens=10)) for p in ("good", "flaky", "broken")]
    events, objs = _drain(ctx.generate_json_many("judge", reqs, schema, node_ids=["a", "b", "c"]))
    assert objs == [{"v": 1}, {"v": 2}, None]
    calls = [e for e in events if e.type == T.LLM_CALL]
    assert [(e.node_id, e.data["purpose"]) for e in calls] == [
        ("a", "judge"), ("b", "judge"), ("c", "judge"), ("b", "judge:retry"), ("c", "judge:retry")]
    assert all(c["params"]["json_schema"] == schema for c in be.calls)
    assert be.calls[3]["params"]["max_tokens"] == 31 and be.calls[3]["params"]["temperature"] == 0.0
    fails = [e for e in events if e.type == T.NODE_ADDED]
    assert len(fails) == 1 and fails[0].data["state"] == "parse_failed"
    assert fails[0].data["parents"] == ["c"] and len(fails[0].data["attrs"]["errors"]) == 2
    # validation failures count as parse failures
    _, objs = _drain(_ctx(ScriptedBackend(default='{"v": 1}')).generate_json_many(
        "j", reqs[:1], [schema], validate=lambda o: o["missing"]))
    assert objs == [None]


def test_token_records_survive_a_batch_record():
    c = Completion("a", [Token(1, "a", -0.1, 0.2)], "p", 1, 1, 1.0, "stop", "m", {},
                   batch={"call": "batch_x", "group": 0, "members": [0], "slot": 0})
    assert c.to_record()["batch"]["call"] == "batch_x" and c.to_record()["tokens"] == [[1, "a", -0.1, 0.2]]
