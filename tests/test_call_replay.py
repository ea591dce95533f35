"""eval --reuse-calls: calls whose prompt and parameters match a stored call of an earlier
eval come back from the store; a changed knob re-runs only the calls it changes."""
import dataclasses
import json
from dataclasses import dataclass

import pytest

from workbench import trace as T
from workbench.config import knob
from workbench.methods.base import Method
from workbench.eval.runner import EvalRunner, EvalSpec, get_eval
from workbench.llm.base import GenParams, LLMError, ScoreRequest
from workbench.llm.replay import (CallReplay, load_calls, reuse_counts, reuse_note,
                                  runs_with_reused_calls)
from workbench.llm.scripted import Rule, ScriptedBackend
from workbench.store import Store

from tests.test_eval_helpers import N_QUESTIONS, ToyDataset, answer_rules, toy_methods


@pytest.fixture(autouse=True)
def _toy_events():
    """The toy judge's own event type, declared while these tests run (strict events)."""
    from workbench.events import EventSpec, declared
    with declared(EventSpec("scored", "The toy judge's summed log-probabilities.",
                            ("logprobs",), source="tests")):
        yield


ANSWERS = ("SELECT i.question_id, i.method, i.correct, r.answer FROM eval_items i JOIN runs r "
           "USING (run_id) WHERE i.eval_id = ? ORDER BY 1, 2")


@dataclass
class AskConfig:
    prefix: str = knob("Q:", "what the prompt starts with")


class Ask(Method):
    """One call whose prompt holds a knob's value."""
    name = "toy-ask"
    kind = "none"
    Config = AskConfig

    def run(self, ctx, question):
        out = yield from ctx.generate("answer", f"{ctx.config.prefix} {question}", node_id="q")
        yield T.answer(out.text.strip(), node_id="q")


class Judge(Method):
    """One call, then a teacher-forced scoring of two verdicts after it (CogGRAG's p_right
    pattern)."""
    name = "toy-judge"
    kind = "none"
    Config = AskConfig

    def run(self, ctx, question):
        out = yield from ctx.generate("answer", f"{ctx.config.prefix} {question}", node_id="q")
        got = yield from ctx.score_many([ScoreRequest(out.prompt + out.text, w)
                                         for w in (" [right]", " [wrong]")],
                                        purpose="verdict", node_id="q")
        yield T.custom("scored", "q", logprobs=[sum(sc.logprobs) for sc in got])
        yield T.answer(out.text.strip(), node_id="q")


def _eval(st, be, methods=("toy-rag", "toy-ask"), **spec_kw):
    spec = EvalSpec(dataset="toy", methods=list(methods), judge="off", **spec_kw)
    r = EvalRunner.new(st, spec, backend=be, dataset=ToyDataset(),
                       method_classes=toy_methods() | {"toy-ask": Ask, "toy-judge": Judge})
    assert r.run().status == "finished"
    return r.eval_id


def _backend():
    return ScriptedBackend.from_table(answer_rules(), default="grey")


def test_an_unchanged_eval_is_answered_from_the_store_without_a_model_call(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    first = _eval(st, _backend())
    be = _backend()
    again = _eval(st, be, reuse_calls=first)
    assert be.calls == []
    assert st.query(ANSWERS, [first]) == st.query(ANSWERS, [again])
    n = 2 * N_QUESTIONS
    assert reuse_counts(st, again) == (n, n) and reuse_counts(st, first) == (0, n)
    spec = get_eval(st, again)["spec"]
    assert f"{n} of {n} LLM calls answered from the stored calls of eval {first}" in \
        reuse_note(st, again, spec)
    # the stored record names the call it was answered from, tokens included
    calls = [e.data for row in st.query("SELECT run_id FROM runs WHERE eval_id = ?", [again])
             for e in st.events(row["run_id"]) if e.type == "llm_call"]
    originals = {c["call_id"] for c in load_calls(st, first)[0]}
    assert all(c["replayed_from"] in originals for c in calls)


def test_reuse_chains_through_an_eval_that_reused_calls(tmp_path):
    """The second eval replayed toy-rag's calls from the first and made toy-ask's anew;
    a third naming only the second needs no model call, and every replayed call names the
    call the model made."""
    st = Store(tmp_path / "s.duckdb")
    first = _eval(st, _backend())
    second = _eval(st, _backend(), reuse_calls=first, sets={"toy-ask.prefix": "Question:"})
    be = _backend()
    third = _eval(st, be, reuse_calls=second, sets={"toy-ask.prefix": "Question:"})
    assert be.calls == []
    assert st.query(ANSWERS, [second]) == st.query(ANSWERS, [third])
    made = {c["call_id"] for eid in (first, second) for c in load_calls(st, eid)[0]}
    fresh = {e.data["call_id"] for row in st.query("SELECT run_id FROM runs WHERE eval_id IN "
                                                   "(?, ?)", [first, second])
             for e in st.events(row["run_id"])
             if e.type == "llm_call" and not e.data.get("replayed_from")}
    assert made == fresh
    replayed = [e.data["replayed_from"] for row in
                st.query("SELECT run_id FROM runs WHERE eval_id = ?", [third])
                for e in st.events(row["run_id"]) if e.type == "llm_call"]
    assert len(replayed) == 2 * N_QUESTIONS and set(replayed) <= fresh


def test_a_changed_knob_reruns_only_the_calls_whose_prompt_it_changes(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    first = _eval(st, _backend())
    be = _backend()
    changed = _eval(st, be, reuse_calls=first, sets={"toy-ask.prefix": "Question:"})
    # toy-ask's prompt holds the knob: every one of its calls is new; toy-rag's are not
    assert len(be.calls) == N_QUESTIONS
    assert all(c["prompt"].startswith("Question: ") for c in be.calls)
    assert reuse_counts(st, changed) == (N_QUESTIONS, 2 * N_QUESTIONS)


def _events(st, eval_id, type_):
    return [e for row in st.query("SELECT run_id FROM runs WHERE eval_id = ? ORDER BY "
                                  "question_id", [eval_id])
            for e in st.events(row["run_id"]) if e.type == type_]


def test_scorings_are_stored_and_replayed_by_context_and_continuation(tmp_path):
    """Each scoring is an ``llm_score`` event; an eval that reuses calls answers it from the
    store (no model scoring, the same log-probabilities), and a changed context scores anew."""
    st = Store(tmp_path / "s.duckdb")
    be = _backend()
    be.rules[:0] = [Rule("<score> [right]", "x", logprob=-0.5), Rule("<score> [wrong]", "y z")]
    first = _eval(st, be, methods=["toy-judge"])
    made = _events(st, first, T.LLM_SCORE)
    assert len(made) == 2 * N_QUESTIONS
    assert {e.data["purpose"] for e in made} == {"verdict"} and all(e.node_id == "q" for e in made)
    assert all(len(e.data["context_sha256"]) == 64 and e.data["tokens"] for e in made)

    be2 = _backend()
    again = _eval(st, be2, methods=["toy-judge"], reuse_calls=first)
    assert be2.calls == []                     # neither the call nor the scorings ran
    replayed = _events(st, again, T.LLM_SCORE)
    assert [e.data["replayed_from"] for e in replayed] == [e.data["score_id"] for e in made]
    assert [e.data["logprobs"] for e in _events(st, again, "scored")] == \
        [e.data["logprobs"] for e in _events(st, first, "scored")]
    assert len(runs_with_reused_calls(st, again)) == N_QUESTIONS

    # a new prompt gives a new call and so a new context: both run on the model
    be3 = _backend()
    _eval(st, be3, methods=["toy-judge"], reuse_calls=first, sets={"toy-judge.prefix": "Qn:"})
    assert sum("<score>" in c["prompt"] for c in be3.calls) == 2 * N_QUESTIONS


def test_parameters_are_part_of_the_match():
    inner = _backend()
    stored = inner.generate("q000", GenParams(max_tokens=8))
    rec = dataclasses.asdict(stored) | {"output": stored.text, "call_id": "c1",
                                        "tokens": [[t.id, t.piece, t.logprob, t.entropy]
                                                   for t in stored.tokens]}
    rp = CallReplay(inner, [rec])
    hit = rp.generate("q000", GenParams(max_tokens=8))
    assert hit.replayed_from == "c1" and hit.text == stored.text
    assert hit.logprobs == stored.logprobs
    miss = rp.generate("q000", GenParams(max_tokens=9))
    assert miss.replayed_from is None and (rp.hits, rp.misses) == (1, 1)


def test_calls_of_another_model_are_refused_at_the_first_call():
    inner = _backend()
    inner.info.sha256 = "b" * 64
    rp = CallReplay(inner, [], model_sha256="a" * 64, source="ev_x")
    with pytest.raises(LLMError, match="another model"):
        rp.generate("q000")


def test_an_unknown_eval_to_reuse_is_a_clear_error(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    with pytest.raises(LookupError, match="eval list"):
        load_calls(st, "ev_nope")


def test_calls_of_several_evals_are_reused_together(tmp_path):
    """A second eval that re-ran one method: together with the first it answers both."""
    st = Store(tmp_path / "s.duckdb")
    first = _eval(st, _backend())
    second = _eval(st, _backend(), sets={"toy-ask.prefix": "Question:"})
    calls, _ = load_calls(st, f"{first}, {second}")
    assert len(calls) == len(load_calls(st, first)[0]) + len(load_calls(st, second)[0])
    be = _backend()
    _eval(st, be, reuse_calls=f"{first},{second}", sets={"toy-ask.prefix": "Question:"})
    assert be.calls == []


def test_a_real_model_eval_reused_gives_the_same_tokens_and_scores(tmp_path):
    """On SmolLM2 through its worker process: the chat template renders the prompt the
    stored call saw, so an unchanged eval reuses every call, with the same answers and the
    same per-token log-probabilities (hence perplexities)."""
    from tests.conftest import FAST_MODEL
    st = Store(tmp_path / "s.duckdb")
    spec = dict(dataset="demo", methods=["standard-rag"], judge="off", limit=2,
                sets={"answer_max_tokens": 8, "retriever": "bm25"})
    backend = {"kind": "settings", "overrides": {"model": FAST_MODEL, "n_ctx": 2048}}

    def run(**kw):
        r = EvalRunner.new(st, EvalSpec(**spec, **kw), backend_spec=backend)
        assert r.run().n_done == 2
        return r.eval_id
    first = run()
    again = run(reuse_calls=first)
    assert reuse_counts(st, again) == (2, 2)
    q = ("SELECT r.question_id, r.answer, e.data FROM runs r JOIN events e USING (run_id) "
         "WHERE r.eval_id = ? AND e.type = 'llm_call' ORDER BY 1")
    a, b = st.query(q, [first]), st.query(q, [again])
    assert [(x["question_id"], x["answer"]) for x in a] == \
        [(x["question_id"], x["answer"]) for x in b]
    tokens = [json.loads(x["data"])["tokens"] for x in a]
    assert tokens and tokens == [json.loads(x["data"])["tokens"] for x in b]


def test_the_evaluate_page_says_an_eval_reused_calls():
    from streamlit.testing.v1 import AppTest
    from tests.test_eval_page import PAGE
    st = Store()
    first = _eval(st, _backend())
    _eval(st, _backend(), reuse_calls=first)      # the newest eval: the page opens on it
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    notes = [i.value for i in at.info]
    assert any(f"stored calls of eval {first}" in n and "do not measure the model" in n
               for n in notes), notes


def test_a_real_model_scoring_replays_from_its_record(default_llm):
    """SmolLM2 in its worker process: a scoring's stored record (a chat context, rendered
    by the model's template, kept as its SHA-256) answers the same scoring with the same
    tokens and log-probabilities, without the model; another continuation goes to it."""
    ctx = [{"role": "user", "content": "Is Paris in France? Answer [right] or [wrong]."}]
    sc = default_llm.score(ctx, "[right]")
    rec = {**sc.to_record(), "score_id": "score_1"}
    assert rec["context_sha256"] and rec["tokens"]

    class Counting:
        info, n = default_llm.info, 0

        def render(self, messages, chat=True):
            return default_llm.render(messages, chat)

        def score(self, context, continuation):
            Counting.n += 1
            return default_llm.score(context, continuation)

    replay = CallReplay(Counting(), [rec])
    got = replay.score(ctx, "[right]")
    assert Counting.n == 0 and got.replayed_from == "score_1"
    assert [(t.id, t.logprob) for t in got.tokens] == [(t.id, t.logprob) for t in sc.tokens]
    other = replay.score_many([ScoreRequest(ctx, "[wrong]"), ScoreRequest(ctx, "[right]")])
    assert Counting.n == 1 and other[0].replayed_from is None
    assert other[1].replayed_from == "score_1"
