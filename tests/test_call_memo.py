"""The in-run call memo: a byte-identical greedy call is answered by the first one, at no
cost and pointing at it; sampled calls always reach the model."""
from __future__ import annotations

from dataclasses import dataclass

from workbench import trace as T
from workbench.config import knob
from workbench.llm import batching
from workbench.llm.base import GenParams, GenRequest
from workbench.llm.memo import CallMemo
from workbench.llm.scripted import ScriptedBackend
from workbench.methods.base import Method, RunContext
from workbench.methods.batched import together
from workbench.execution import run_to_end

MSG = [{"role": "user", "content": "Who directed Psycho?"}]


def _backend() -> ScriptedBackend:
    return ScriptedBackend().add("", "Alfred Hitchcock", logprob=-0.2)


def test_identical_greedy_call_is_answered_by_the_first_at_zero_cost():
    be = _backend()
    memo = CallMemo(be)
    first = memo.generate(MSG, GenParams(max_tokens=8))
    again = memo.generate(MSG, GenParams(max_tokens=8))
    assert len(be.calls) == 1 and memo.hits == 1
    assert first.call_id and first.reused_from is None
    assert again.reused_from == first.call_id and again.call_id is None
    assert again.text == first.text and again.logprobs == first.logprobs
    assert (again.prompt_tokens, again.completion_tokens, again.latency_ms) == (0, 0, 0.0)
    assert again.to_record()["reused_from"] == first.call_id
    assert "reused_from" not in first.to_record()


def test_sampled_calls_and_other_parameters_reach_the_model():
    be = _backend()
    memo = CallMemo(be)
    sampled = GenParams(max_tokens=8, temperature=0.8, seed=7)
    a = memo.generate(MSG, sampled)
    b = memo.generate(MSG, sampled)           # same seed: still a new draw by the method's wish
    memo.generate(MSG, GenParams(max_tokens=8))
    memo.generate(MSG, GenParams(max_tokens=9))                           # other budget
    memo.generate(MSG, GenParams(max_tokens=8, json_schema={"type": "object"}))  # other grammar
    memo.generate([{"role": "user", "content": "Who directed Psycho? "}], GenParams(max_tokens=8))
    assert len(be.calls) == 6 and memo.hits == 0
    assert a.reused_from is None and b.reused_from is None


def test_generate_many_runs_each_distinct_request_once_and_narrows_a_given_plan():
    be = _backend()
    memo = CallMemo(be)
    seen = memo.generate(MSG, GenParams(max_tokens=8))
    other = [{"role": "user", "content": "Who wrote Psycho?"}]
    reqs = [GenRequest(MSG, GenParams(max_tokens=8)),          # memo hit
            GenRequest(other, GenParams(max_tokens=8)),        # runs
            GenRequest(other, GenParams(max_tokens=8)),        # repeats request 1
            GenRequest(other, GenParams(max_tokens=8, temperature=0.7, seed=1))]   # runs
    got = batching.generate_many(memo, reqs, plan=[[0, 1], [2, 3]])
    assert len(be.calls) == 3 and memo.hits == 2
    assert got[0].reused_from == seen.call_id
    assert got[2].reused_from == got[1].call_id and got[1].reused_from is None
    assert got[3].reused_from is None and got[3].batch["members"] == [1]   # plan [[0], [1]]
    assert [c.text for c in got] == ["Alfred Hitchcock"] * 4


@dataclass
class _Cfg:
    n: int = knob(2, "repeats")


class _Repeats(Method):
    """Asks the same greedy question twice (once inside a batch of two), and samples twice."""
    name = "repeats"
    Config = _Cfg

    def run(self, ctx, question):
        yield T.node_added("q", "question", question)
        msgs = [{"role": "user", "content": question}]
        a = yield from ctx.generate("ask", msgs, GenParams(max_tokens=8), node_id="q")

        def item():
            return (yield from ctx.generate("ask", msgs, GenParams(max_tokens=8), node_id="q"))
        yield from together(ctx, [item(), item()], 2)
        for s in range(2):
            yield from ctx.generate("sample", msgs, GenParams(max_tokens=8, temperature=0.9,
                                                              seed=s), node_id="q")
        yield T.answer(a.text, node_id="q")


def test_the_runner_memoises_every_method_and_the_trace_shows_the_reuse():
    be = _backend()
    tr = run_to_end(_Repeats(), RunContext(llm=be, config=_Cfg()), "Who directed Psycho?")
    calls = list(tr.llm_calls.items())
    assert len(be.calls) == 3            # one greedy call, two samples
    first_id = calls[0][0]
    assert [c.get("reused_from") for _, c in calls] == [None, first_id, first_id, None, None]
    assert all(c["latency_ms"] == 0 and c["prompt_tokens"] == 0
               for _, c in calls if c.get("reused_from"))
    tot = tr.summary["totals"]
    assert tot["llm_calls"] == 3 and tot["reused_calls"] == 2
    assert tr.summary["by_phase"]["-"]["llm_calls"] == 3
    assert tr.meta["call_memo"] is True


def test_the_memo_can_be_turned_off_per_run():
    be = _backend()
    ctx = RunContext(llm=be, config=_Cfg(), extra={"call_memo": False})
    tr = run_to_end(_Repeats(), ctx, "Who directed Psycho?")
    assert len(be.calls) == 5
    assert not any(c.get("reused_from") for c in tr.llm_calls.values())
    assert tr.summary["totals"]["llm_calls"] == 5 and tr.summary["totals"]["reused_calls"] == 0
    assert tr.meta["call_memo"] is False
    be2 = _backend()
    run_to_end(_Repeats(), RunContext(llm=be2, config=_Cfg()), "Who?", memo=False)
    assert len(be2.calls) == 5
