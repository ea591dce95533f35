"""The answer trail follows the gold answer string through a wrong run's stages."""
import pytest

from workbench.eval.runner import EvalRunner, EvalSpec
from workbench.llm.scripted import ScriptedBackend
from workbench.store import Store
from workbench.triage import answer_trail as A

from tests.test_eval_helpers import N_QUESTIONS, ToyDataset, answer_rules, toy_methods


def test_trail_marks_the_stages_that_held_the_answer_in_order_of_first_use():
    steps = [("propose", "Find the director of Psycho."), ("retrieval", "Psycho ... Alfred "
             "Hitchcock directed it."), ("aggregate", "Psycho is a 1960 film."),
             ("retrieval", "Hitchcock was born in London."), ("reason", "He was born in Leytonstone."),
             ("answer_span", "Leytonstone")]
    t = A.trail(steps, ["London"], "Where was the director of Psycho born?")
    assert t.stages == ["propose", "retrieval", "aggregate", "reason", "answer_span"]
    assert t.held == ["retrieval"] and t.reason == ""
    # whole tokens, normalised: "Londoner" does not hold "London"; "london." does
    assert A.trail([("reason", "A Londoner.")], ["London"], "q?").held == []
    assert A.trail([("reason", "in london.")], ["London"], "q?").held == ["reason"]
    assert A.stage_of("llm_call", "integrate:retry") == "integrate"
    assert A.stage_of("retrieved", None) == "retrieval"


@pytest.mark.parametrize("golds, question, why", [
    (["yes"], "Are both films American?", "a yes/no answer"),
    (["Vertigo"], "Which came out first, Psycho or Vertigo?", "the gold answer is in the question"),
    ([], "Who?", "no gold answer"),
    (["1958"], "When did Vertigo come out?", ""),
])
def test_untraceable_answers_have_no_trail(golds, question, why):
    assert A.untraceable(golds, question) == why
    t = A.trail([("reason", " ".join(golds) or "x")], golds, question)
    assert t.reason == why and (t.held == [] if why else t.held == ["reason"])


def test_funnel_over_a_stored_eval(tmp_path):
    """toy-rag retrieves item i's passage (it holds colour i) and then answers wrongly for odd
    i ("purple") or UNKNOWN: the trail holds at retrieval and drops at the answer."""
    st = Store(tmp_path / "s.duckdb")
    r = EvalRunner.new(st, EvalSpec("toy", ["toy-rag", "toy-llm"], judge="off"),
                       backend=ScriptedBackend.from_table(answer_rules(), default="grey"),
                       dataset=ToyDataset(), method_classes=toy_methods())
    r.run()
    wrong = {m: st.query("SELECT count(*) AS n FROM eval_items WHERE eval_id = ? AND method = ? "
                         "AND NOT correct", [r.eval_id, m])[0]["n"]
             for m in ("toy-rag", "toy-llm")}
    assert 0 < wrong["toy-rag"] < N_QUESTIONS
    rows = {x["series"]: x for x in A.funnel(st, r.eval_id)}
    rag, llm = rows["toy-rag"], rows["toy-llm"]
    assert rag["n"] == wrong["toy-rag"] and llm["n"] == wrong["toy-llm"]
    assert [(s["stage"], s["held"]) for s in rag["stages"]] == [("retrieval", rag["n"]),
                                                                 ("answer", 0)]
    assert [(s["stage"], s["held"]) for s in llm["stages"]] == [("answer", 0)]
    text = "\n".join(A.lines(list(rows.values())))
    assert f"toy-rag: {rag['n']} runs: retrieval {rag['n']} > answer 0" in text
