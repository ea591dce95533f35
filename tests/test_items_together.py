"""Several eval items on one model (eval --items-together K): concurrent single calls of
different items run as one generate_many/score_many batch, each item gets its own result or
its own error, and an eval gives the same answers as one run item by item."""
import threading

import pytest

from workbench.eval.runner import EvalRunner, EvalSpec
from workbench.llm import batching
from workbench.llm.base import Completion, GenParams, LLMError, ScoredText, Token
from workbench.llm.items_together import ItemsTogether
from workbench.llm.scripted import ScriptedBackend
from workbench.store import Store

from tests.test_eval_helpers import ToyDataset, answer_rules, toy_methods


class Recording:
    """A backend that answers each prompt with its upper-case echo and records the size of
    every batch it ran; a prompt holding 'overflow' fails (alone or in a batch)."""

    info = ScriptedBackend().info

    def __init__(self):
        self.batches: list[int] = []
        self.singles = 0

    def _one(self, prompt: str) -> Completion:
        if "overflow" in prompt:
            raise LLMError(f"the prompt does not fit the context: {prompt}")
        return Completion(text=prompt.upper(), tokens=[], prompt=prompt, prompt_tokens=1,
                          completion_tokens=0, latency_ms=0.0, finish_reason="stop",
                          model="recording", params={})

    def generate(self, messages, params=None, on_token=None):
        self.singles += 1
        return self._one(messages)

    def generate_many(self, requests, **kw):
        self.batches.append(len(requests))
        return batching.run_plan(requests, batching.resolve_plan(len(requests), kw.get(
            "max_batch"), None), "llama_cpp", lambda rs: [self._one(r.messages) for r in rs])

    def score(self, context, continuation):
        return ScoredText(context, continuation,
                          [Token(i, w, -0.5) for i, w in enumerate(continuation.split())], 0.0)

    def score_many(self, requests, **kw):
        self.batches.append(len(requests))
        return batching.run_plan(requests, [list(range(len(requests)))], "llama_cpp",
                                 lambda rs: [self.score(r.context, r.continuation) for r in rs])

    def count_tokens(self, text):
        return len(text.split())


def _at_once(fn, args):
    """Run ``fn(arg)`` for every arg on threads started together; results (or errors) in order."""
    out: list = [None] * len(args)
    start = threading.Barrier(len(args))

    def go(i):
        start.wait()
        try:
            out[i] = fn(args[i])
        except Exception as e:      # noqa: the test reads it
            out[i] = e
    ts = [threading.Thread(target=go, args=(i,)) for i in range(len(args))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    return out


def test_concurrent_single_calls_run_as_one_batch_each_item_gets_its_own_answer():
    inner = Recording()
    be = ItemsTogether(inner, 4, gather_s=0.5)
    prompts = [f"item {i}" for i in range(4)]
    out = _at_once(lambda p: be.generate(p, GenParams(max_tokens=4)), prompts)
    assert [c.text for c in out] == [p.upper() for p in prompts]
    assert inner.batches == [4] and inner.singles == 0
    assert all(c.batch["across_items"] and c.batch["size"] == 4 for c in out)
    # not replayable: a re-run does not take these as a plan
    assert batching.plans_from_records([c.to_record() for c in out]) == []


def test_more_items_than_the_batch_run_in_several_batches():
    inner = Recording()
    be = ItemsTogether(inner, 2, gather_s=0.5)
    out = _at_once(lambda p: be.generate(p), [f"q{i}" for i in range(5)])
    assert [c.text for c in out] == [f"Q{i}" for i in range(5)]
    assert max(inner.batches) <= 2 and sum(inner.batches) + inner.singles == 5


def test_a_lone_call_runs_alone_after_the_gather_wait():
    inner = Recording()
    be = ItemsTogether(inner, 4, gather_s=0.01)
    assert be.generate("alone").text == "ALONE"
    assert inner.batches == [] and inner.singles == 1


def test_a_failing_request_fails_its_own_item_only():
    inner = Recording()
    be = ItemsTogether(inner, 3, gather_s=0.5)
    out = _at_once(lambda p: be.generate(p), ["a", "overflow b", "c"])
    assert out[0].text == "A" and out[2].text == "C"
    assert isinstance(out[1], LLMError) and "does not fit" in str(out[1])


def test_scorings_of_items_run_together_and_a_method_batch_passes_through():
    inner = Recording()
    be = ItemsTogether(inner, 3, gather_s=0.5)
    out = _at_once(lambda c: be.score("ctx", c), ["x", "x y", "x y z"])
    assert [len(s.logprobs) for s in out] == [1, 2, 3] and inner.batches == [3]
    from workbench.llm.base import GenRequest
    res = be.generate_many([GenRequest("m1", GenParams()), GenRequest("m2", GenParams())])
    assert [c.text for c in res] == ["M1", "M2"] and not res[0].batch.get("across_items")


@pytest.mark.parametrize("workers", [1, 2])
def test_eval_items_together_give_the_answers_of_one_by_one(tmp_path, workers):
    st = Store(tmp_path / "s.duckdb")
    spec = EvalSpec(dataset="toy", methods=["toy-rag", "toy-llm"], judge="off")

    def run(k):
        r = EvalRunner.new(st, spec, backend=ScriptedBackend.from_table(answer_rules(),
                                                                        default="grey"),
                           dataset=ToyDataset(), method_classes=toy_methods(),
                           workers=workers if k > 1 else 1, items_together=k)
        assert r.run().status == "finished"
        return r.eval_id
    one, four = run(1), run(4)
    q = ("SELECT i.question_id, i.method, i.correct, r.answer FROM eval_items i JOIN runs r "
         "USING (run_id) WHERE i.eval_id = ? ORDER BY 1, 2")
    assert st.query(q, [one]) == st.query(q, [four])
    calls = [e.data for row in st.query("SELECT run_id FROM eval_items WHERE eval_id = ?",
                                        [four])
             for e in st.events(row["run_id"]) if e.type == "llm_call"]
    assert any((c.get("batch") or {}).get("across_items") for c in calls)
